"""Pass-count analysis reports: ``shadergpgpu report NAME [--quick] [--out DIR]``.

Each report is a module ``shadergpgpu.analysis.reports.NAME`` with ``main(argv) -> int``
(0, or 1 when a plan does not match the pass counter or a target is missed: see
:class:`~shadergpgpu.analysis.reports.common.Checks`). ``svm`` covers the reductions too.
"""
REPORTS = {
    "backprop": "shadergpgpu.analysis.reports.backprop",
    "sgemm": "shadergpgpu.analysis.reports.sgemm",
    "blur": "shadergpgpu.analysis.reports.blur",
    "svm": "shadergpgpu.analysis.reports.svm",
    "sammon": "shadergpgpu.analysis.reports.sammon",
    "model": "shadergpgpu.analysis.reports.model",
}
