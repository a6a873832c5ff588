"""Pass-count analysis reports: ``shadergpgpu report NAME [--quick] [--out DIR]``.

Each report is a module ``shadergpgpu.frontends.reports.NAME`` with ``main(argv) -> int``.
"""
REPORTS = {
    "backprop": "shadergpgpu.frontends.reports.backprop",
    "sgemm": "shadergpgpu.frontends.reports.sgemm",
    "blur": "shadergpgpu.frontends.reports.blur",
    "svm": "shadergpgpu.frontends.reports.svm",
    "reduce": "shadergpgpu.frontends.reports.svm",
    "sammon": "shadergpgpu.frontends.reports.sammon",
}
