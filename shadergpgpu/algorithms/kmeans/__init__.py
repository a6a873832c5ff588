"""K-means clustering by Lloyd's algorithm on the device (``sg.KMeans``).

Each iteration is a few fragment passes over state that stays on the device: the assignment of
every point to its nearest centroid (an arg-min over the centroid distances, ranked by the
ops' exact arg-min keys), the centroid update (a two-level reduction per centroid: partial
sums per block of points, then the new centroids), and a status pass whose single texel
(centre shift, empty clusters, changed labels) is all the host reads to decide on convergence.
Shaders: ``shaders/algorithms/kmeans/``. Pass plan: ``kmeans/lloyd``. How this package was
built, as a guide to adding an algorithm: ``docs/adding-an-algorithm.md``.

Files:

* ``estimator.py``: :class:`KMeans`, the scikit-learn estimator (validation, ``n_init`` runs,
  fitted attributes, ``predict``, ``transform``);
* ``lloyd.py``: :class:`LloydRun`, the device state and the prepared passes of one
  iteration, the host's part of an iteration with an empty cluster; :func:`predict_labels`;
* ``kernels.py``: the declared kernels (assign, partial, finalize, status);
* ``sizes.py``: the problem's geometry (layouts, loop cuts, blocks) and the size guard
  :func:`check_fits`;
* ``reference.py``: Lloyd's algorithm in float64 numpy, scikit-learn's steps (the tests'
  reference).
"""
from __future__ import annotations

from . import kernels, sizes  # noqa: F401  (kernels declared)
from .lloyd import LloydRun, predict_labels
from .estimator import KMeans
from .sizes import BLOCK_TEXELS, check_fits, geometry

__all__ = ["BLOCK_TEXELS", "KMeans", "LloydRun", "check_fits", "geometry", "kernels", "sizes",
           "predict_labels"]
