"""Pass-count analysis reports: ``shadergpgpu report NAME [--quick] [--out DIR]``.

Each report is a module ``shadergpgpu.reports.NAME`` with ``main(argv) -> int``.
"""
REPORTS = {
    "backprop": "shadergpgpu.reports.backprop",
    "sgemm": "shadergpgpu.reports.sgemm",
    "blur": "shadergpgpu.reports.blur",
    "svm": "shadergpgpu.reports.svm",
    "reduce": "shadergpgpu.reports.svm",
    "sammon": "shadergpgpu.reports.sammon",
}
