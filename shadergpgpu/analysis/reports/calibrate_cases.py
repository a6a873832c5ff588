"""The calibration's configurations (:func:`calibration_cases`, a part of ``shadergpgpu
calibrate``, :mod:`.calibrate`): sizes the model's checks in ``benchmarks/model.py`` do
not use, so that the model is judged on configurations it was not fitted to."""
from __future__ import annotations

from .model_cases import (backprop_case, blur_case, elementwise_case, reduction_case,
                          sammon_case, sgemm_case, svm_case)
from .model_random import kmeans_case, rbf_case, reduce_case, sgemm_mnk_case


def calibration_cases(software: bool) -> list:
    """The configurations the kernels' efficiencies are measured on (held out from the
    checks of :func:`.model_cases.default_cases`)."""
    if software:
        return [backprop_case((2, 32, 1), 512, "paper", True),
                backprop_case((2, 32, 1), 512, "paper", False),
                backprop_case((2, 128, 1), 2048, "paper", True),
                backprop_case((2, 128, 1), 512, "fused"),
                backprop_case((4, 96, 3), 384, "fused"),
                backprop_case((2, 512, 1), 2048, "fused"),
                sgemm_case(96), sgemm_case(384),
                # 128 and 192: one level of blocks, as the 256 x 256 check (a 384 x 384
                # image takes two: its carry pass is a few hundred fragments)
                blur_case((128, 128), 2.0), blur_case((192, 192), 3.0),
                blur_case((384, 384), 4.0),
                blur_case((128, 128), 2.0, "exact"), blur_case((384, 384), 4.0, "exact"),
                # iterations apart, so that the call's host work per pass is fitted beside its
                # work per call (each SMO iteration's passes hand over to the rasterizer)
                svm_case(128, 8, 20), svm_case(512, 8, 60),
                sammon_case(128, 8, 4), sammon_case(512, 8, 3),
                elementwise_case(128), elementwise_case(512),
                reduction_case(128), reduction_case(512),
                reduce_case(128, 128, "argmax"), reduce_case(512, 512, "argmax"),
                kmeans_case(256, 4, 4, 3), kmeans_case(2048, 8, 16, 3),
                rbf_case(256, 4), rbf_case(4096, 32),
                sgemm_mnk_case(96, 160, 128, "tile8x4-ubo"),
                sgemm_mnk_case(256, 192, 320, "tile16x2-ubo"),
                # calls whose draws cost next to nothing: each algorithm's host work per call
                # and per pass is fitted apart from what the larger sizes' kernels cost
                backprop_case((2, 8, 1), 64, "fused"), sgemm_case(16),
                blur_case((16, 16), 2.0), blur_case((16, 16), 2.0, "exact")]
    return [backprop_case((2, 32, 1), 512, "paper", True),
            backprop_case((2, 32, 1), 512, "paper", False),
            backprop_case((2, 512, 1), 8192, "paper", True),
            # the accumulating passes of a 1,024-unit layer (a 1 x 1,025 and a 1,024 x 3
            # strip): at N = 8,192 the update's 4,096 of them are the bulk of the device time
            backprop_case((2, 1024, 1), 8192, "paper", True),
            backprop_case((2, 32, 1), 512, "fused"),
            # a 512-unit layer over as many vectors as the 1,024-unit check: the gradient pass's
            # efficiency follows its loop over the vectors as well as its fragments
            backprop_case((2, 512, 1), 16384, "fused"),
            backprop_case((2, 2048, 1), 32768, "fused"),
            backprop_case((32, 128, 10), 2048, "fused"),
            # three sizes: one call's issue time caught behind the device (which would set
            # several times the host work per call from two sizes) does not set the median
            sgemm_case(2048), sgemm_case(3072), sgemm_case(6144),
            blur_case((1024, 1024), 6.0), blur_case((4096, 4096), 12.0),
            blur_case((1024, 1024), 2.0, "exact"), blur_case((4096, 4096), 4.0, "exact"),
            svm_case(2048, 32, 100), svm_case(8192, 16, 50),
            # the check's n bracketed closely: the call's host work grows with n; the
            # update's passes at n = 3,072 are long enough to time one by one
            sammon_case(1536, 16, 5), sammon_case(3072, 16, 4),
            elementwise_case(2048), elementwise_case(8192),
            reduction_case(2048), reduction_case(8192),
            reduce_case(2048, 2048, "argmax"), reduce_case(4000, 4000, "argmax"),
            kmeans_case(4096, 8, 16, 4), kmeans_case(65536, 4, 8, 3),
            rbf_case(4096, 16), rbf_case(65536, 32),
            sgemm_mnk_case(1024, 1536, 2048, "tile8x4-ubo"),
            sgemm_mnk_case(2048, 2048, 1024, "tile16x2-ubo"),
            # calls whose draws cost next to nothing: the host work per call of the algorithms
            # that wait for the device inside a call is fitted from these (a large call's
            # residual holds device time the model misses)
            sgemm_case(16), kmeans_case(128, 2, 2, 2), rbf_case(64, 4),
            sammon_case(64, 4, 2), svm_case(64, 4, 5)]
