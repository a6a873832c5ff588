"""Pass-count analysis reports: ``shadergpgpu report NAME [--quick] [--out DIR]``.

Each report is a module ``shadergpgpu.frontends.reports.NAME`` with ``main(argv) -> int``
(0, or 1 when a plan does not match the pass counter or a target is missed: see
:class:`~shadergpgpu.frontends.reports.common.Checks`). ``svm`` covers the reductions too.
"""
REPORTS = {
    "backprop": "shadergpgpu.frontends.reports.backprop",
    "sgemm": "shadergpgpu.frontends.reports.sgemm",
    "blur": "shadergpgpu.frontends.reports.blur",
    "svm": "shadergpgpu.frontends.reports.svm",
    "sammon": "shadergpgpu.frontends.reports.sammon",
    "model": "shadergpgpu.frontends.reports.model",
}
