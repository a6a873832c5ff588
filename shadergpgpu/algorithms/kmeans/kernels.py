"""The k-means kernels, each declared once (sources under ``shaders/algorithms/kmeans/``).

One Lloyd iteration is four of them:

* :data:`ASSIGN` (and :data:`ASSIGN_MERGE`, which continues the search of the passes before it
  when the loop over the centroids is cut within the loop cap): the nearest centroid of every
  point and its squared distance, one fragment per four points;
* :data:`PARTIAL`: per centroid and block of points, the sums of ``x - C[c]`` over the block's
  points labelled ``c``, their count and how many changed label;
* :data:`FINALIZE`: the new centroids ``C + sum / count`` from the partial rows, and per texel
  the squared shift, the empty-cluster flag and the changed labels (``STAT``);
* :data:`STATUS`: the sum of ``STAT`` into one texel, the only thing the host reads per
  iteration (a split range: cut across blended passes past the loop cap).
"""
from __future__ import annotations

from ...engine.kernels import In, Split, declare
from ...ops.rbf import DATA_INPUTS

#: a packed vector with one value per point (labels, distances), as ``RBFData.vector`` makes
_VECTOR = In(packed=True, order="row")
#: the centroids (and what has their layout): k x d, row order, packed
_CENTROIDS = In(packed=True, order="row")
HINT = ("n_clusters x ceil(n_features / 4) is too large for one pass on this device even "
         "cut by centroids")

#: nearest centroid among [c_lo, c_hi) for every point (LAB: index, DIST: squared distance);
#: a fragment runs (c_hi - c_lo) x (ceil(d / 4) + 1) loop iterations
ASSIGN = declare("algorithms/kmeans/assign.frag",
                 inputs={"XC": DATA_INPUTS["XC"], "C": _CENTROIDS},
                 outputs=("LAB", "DIST"), uniforms={"c_lo": "int", "c_hi": "int"},
                 defines={"MERGE": 0},
                 loop=lambda a: (a.uniforms["c_hi"] - a.uniforms["c_lo"]) * (a.C.grid_w + 1),
                 name="kmeans/assign", hint=HINT)
#: the same, continuing from the best distance PD and label PL of the passes before it
ASSIGN_MERGE = declare("algorithms/kmeans/assign.frag",
                       inputs={"XC": DATA_INPUTS["XC"], "C": _CENTROIDS,
                               "PD": In(like="LAB"), "PL": In(like="LAB")},
                       outputs=("LAB", "DIST"), uniforms={"c_lo": "int", "c_hi": "int"},
                       defines={"MERGE": 1},
                       loop=lambda a: (a.uniforms["c_hi"] - a.uniforms["c_lo"]) *
                       (a.C.grid_w + 1),
                       name="kmeans/assign_merge", hint=HINT)
#: partial sums per (centroid, block of blk point texels): PART is (k nb) x (d + 2)
PARTIAL = declare("algorithms/kmeans/partial.frag",
                  inputs={"LAB": _VECTOR, "OLD": In(like="LAB"), "XR": DATA_INPUTS["XR"],
                          "C": _CENTROIDS},
                  outputs=("PART",), uniforms={"nb": "int", "blk": "int"},
                  loop=lambda a: a.uniforms["blk"], name="kmeans/partial",
                  hint="too many points for the blocks of this device's loop cap")
#: new centroids (OUT) and per-texel status terms (STAT) from the nb partial rows per centroid
FINALIZE = declare("algorithms/kmeans/finalize.frag",
                   inputs={"PART": In(packed=True, order="row"), "C": In(like="OUT")},
                   outputs=("OUT", "STAT"), uniforms={"nb": "int"},
                   loop=lambda a: a.uniforms["nb"], name="kmeans/finalize",
                   hint="too many points for the blocks of this device's loop cap")
#: (shift, empty clusters, changed labels, 0): STAT summed into one texel
STATUS = declare("algorithms/kmeans/status.frag", inputs={"STAT": _CENTROIDS},
                 split=Split("t", length=lambda a: a.STAT.n_texels, cost=1),
                 name="kmeans/status")
