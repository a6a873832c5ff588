"""The device state of k-means and the passes of one Lloyd iteration.

:class:`LloydRun` holds everything one fit keeps on the device across iterations (and across
its ``n_init`` runs): the points in both orders (:class:`~shadergpgpu.ops.rbf.RBFData`), three
label vectors (current, previous, and a spare for a cut assignment), two distance vectors,
the centroids (ping-pong), the partial sums, the status terms and the status texel. Its passes
are prepared once per parity (the centroids, and the current and previous labels, swap roles
every iteration), so an iteration is ``A + 3`` prepared passes (see the plan ``kmeans/lloyd``)
and one 1-texel readback:

1. assign (:data:`~.kernels.ASSIGN`, cut into ``A`` passes by the loop cap): labels and
   squared distances of every point;
2. update: :data:`~.kernels.PARTIAL` then :data:`~.kernels.FINALIZE` (the new centroids);
3. status: :data:`~.kernels.STATUS`, read by the host: (shift, empty clusters, changed labels).

The host decides, as scikit-learn's ``_kmeans_single_lloyd`` does: no changed label (strict
convergence) ends the run, else a total squared shift within ``tol``; a run that ends at
iteration ``i`` counts ``i + 1``. An empty cluster (rare) is handled the way scikit-learn's
``_relocate_empty_clusters_dense`` does, on the host: the partial sums, labels and distances
are read back, the farthest points moved into the empty clusters, and the centroids uploaded.
After the last iteration the assignment runs once more on the final centroids: the inertia is
the device sum of its distances (:class:`~shadergpgpu.ops.reduce.SumReduction`), and its
labels are the run's unless the run converged strictly (scikit-learn keeps the last
iteration's labels then and reruns its E-step only otherwise).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ops.rbf import RBFData
from ...ops.reduce import SumReduction
from .kernels import ASSIGN, ASSIGN_MERGE, FINALIZE, PARTIAL, STATUS
from .sizes import Geometry


def assign_passes(dev, XC, C, final: tuple, spare: tuple | None, cuts) -> list:
    """Prepared assignment passes over the centroid ranges ``cuts``: each after the first
    continues from the one before (``ASSIGN_MERGE``); they write ``(dist, labels)`` arrays
    alternately into ``final`` and ``spare`` so that the last one writes ``final``."""
    out, prev = [], None
    for j, (lo, hi) in enumerate(cuts):
        dist, lab = final if (len(cuts) - 1 - j) % 2 == 0 else spare
        u = {"c_lo": lo, "c_hi": hi}
        if prev is None:
            out.append(dev.prepare(ASSIGN, {"LAB": lab, "DIST": dist},
                                   inputs={"XC": XC, "C": C}, uniforms=u))
        else:
            out.append(dev.prepare(ASSIGN_MERGE, {"LAB": lab, "DIST": dist},
                                   inputs={"XC": XC, "C": C, "PD": prev[0], "PL": prev[1]},
                                   uniforms=u))
        prev = (dist, lab)
    return out


def predict_labels(dev, X: np.ndarray, centers: np.ndarray, g: Geometry) -> np.ndarray:
    """Labels of the points ``X`` (float32, n x d) for ``centers`` (float32, k x d): the
    assignment passes on arrays made for this call and released after it."""
    n = len(X)
    arrays = []
    try:
        XC = dev.array(X, packed=True, order="col", name="X")
        arrays.append(XC)
        C = dev.alloc(g.centroids, centers.shape).set(centers)
        arrays.append(C)
        vec = [dev.alloc(g.vector, (n,)) for _ in range(2 if len(g.assign_cuts) == 1 else 4)]
        arrays += vec
        spare = (vec[2], vec[3]) if len(vec) == 4 else None
        with dev.phase("kmeans/predict"):
            for p in assign_passes(dev, XC, C, (vec[0], vec[1]), spare, g.assign_cuts):
                p.run()
        return np.rint(vec[1].get()[:n]).astype(np.int32)
    finally:
        for a in arrays:
            a.release()


@dataclass
class Result:
    """One run: labels (int32), inertia, centers (float64) in the units of the device data,
    the iterations and whether the labels stopped changing (strict convergence)."""

    labels: np.ndarray
    inertia: float
    centers: np.ndarray
    n_iter: int
    strict: bool


@dataclass
class _Step:
    """The prepared passes of one iteration of one parity."""

    assign: list
    partial: object
    finalize: object
    status: object


class LloydRun:
    """The device state of one fit (``X``: the centred, scaled float32 points) and its runs."""

    def __init__(self, dev, X: np.ndarray, g: Geometry):
        self.dev, self.g = dev, g
        self._arrays = []
        self.data = None
        self._sum = None
        try:
            self.data = RBFData(dev, X)
            keep = self._keep
            self.labels = [keep(self.data.vector()) for _ in range(3)]
            self.dist = [keep(self.data.vector()) for _ in range(2)]
            shape = (g.k, g.d)
            self.C = [keep(dev.alloc(g.centroids, shape)) for _ in range(2)]
            self.stat = keep(dev.alloc(g.centroids, shape))
            self.part = keep(dev.alloc(g.part, (g.k * g.nb, g.d + 2)))
            self.status = keep(dev.alloc(g.status, (4,)))
            self._sum = SumReduction(dev, self.dist[0].layout, source=self.dist[0])
            self.steps = [self._prepare(p) for p in (0, 1)]
        except BaseException:
            self.release()
            raise

    def _keep(self, a):
        self._arrays.append(a)
        return a

    def _prepare(self, p: int) -> _Step:
        """Passes of an iteration reading centroids ``C[p]`` and writing ``C[1 - p]``; its
        labels go to ``labels[p]``, the previous ones are ``labels[1 - p]``."""
        dev, g = self.dev, self.g
        cur, old = self.labels[p], self.labels[1 - p]
        spare = (self.dist[1], self.labels[2])
        assign = assign_passes(dev, self.data.cols, self.C[p], (self.dist[0], cur), spare,
                               g.assign_cuts)
        partial = dev.prepare(PARTIAL, {"PART": self.part},
                              inputs={"LAB": cur, "OLD": old, "XR": self.data.rows,
                                      "C": self.C[p]},
                              uniforms={"nb": g.nb, "blk": g.blk})
        finalize = dev.prepare(FINALIZE, {"OUT": self.C[1 - p], "STAT": self.stat},
                               inputs={"PART": self.part, "C": self.C[p]},
                               uniforms={"nb": g.nb})
        status = dev.prepare(STATUS, self.status, inputs={"STAT": self.stat})
        return _Step(assign, partial, finalize, status)

    def run(self, centers: np.ndarray, max_iter: int, tol: float) -> Result:
        """One Lloyd run from ``centers`` (k x d, the device data's units); ``tol`` is the
        absolute bound on the total squared centre shift.

        The stopping rule is scikit-learn's ``_kmeans_single_lloyd``: iteration ``i`` assigns
        and updates, then ends the run where no label changed (strict convergence), else where
        the total squared shift of the centres is at most ``tol``; the run counts ``i + 1``
        iterations (``max_iter`` where neither test ends it). The labels are the last
        iteration's where the run converged strictly, else those of a final assignment to the
        final centres (scikit-learn's last E-step, which it runs only then); the inertia is
        the distances to the final centres."""
        dev = self.dev
        self.C[0].set(np.asarray(centers, np.float32))
        with dev.phase("kmeans/init"):
            dev.fill(self.labels[1], -1.0)     # "previous labels" of the first iteration
        p, strict, n_iter = 0, False, 0
        for i in range(int(max_iter)):
            step = self.steps[p]
            with dev.phase("kmeans/assign"):
                for ps in step.assign:
                    ps.run()
            with dev.phase("kmeans/update"):
                step.partial.run()
                step.finalize.run()
            with dev.phase("kmeans/status"):
                step.status.run()
            shift, empty, changed, _ = (float(v) for v in self.status.get())
            if empty > 0:
                shift = self._relocate(p)
            p, n_iter = 1 - p, i + 1           # the new centres are C[p]
            if changed == 0:
                strict = True
                break
            if shift <= tol:
                break
        # the assignment to the final centres C[p]: their distances give the inertia, and,
        # unless the run converged strictly, its labels are the run's. After strict
        # convergence the run's labels are the last iteration's, labels[1 - p], which this
        # pass leaves as they are (it writes labels[p] and the spare).
        with dev.phase("kmeans/assign"):
            for ps in self.steps[p].assign:
                ps.run()
        with dev.phase("kmeans/inertia"):
            self._sum.run()
        n = self.g.n
        labels = np.rint(self.labels[1 - p if strict else p].get()[:n]).astype(np.int32)
        inertia = float(self._sum.result.get()[0])
        centers = self.C[p].get().astype(np.float64)
        return Result(labels, inertia, centers, n_iter, strict)

    def _relocate(self, p: int) -> float:
        """Finish an iteration that left a cluster empty, as scikit-learn does: move the points
        farthest from their centroids into the empty clusters, average, and place a cluster
        that stays empty (every point sits on its centroid) on the largest cluster's centroid.
        Reads the partial sums, labels and distances; uploads the centroids ``C[1 - p]``;
        returns the total squared shift."""
        g = self.g
        k, d, n = g.k, g.d, g.n
        part = self.part.get().astype(np.float64).reshape(k, g.nb, d + 2).sum(axis=1)
        old = self.C[p].get().astype(np.float64)
        counts = part[:, d].copy()
        sums = part[:, :d] + counts[:, None] * old          # sums of the points themselves
        labels = np.rint(self.labels[p].get()[:n]).astype(np.intp)
        dist = self.dist[0].get()[:n].astype(np.float64)
        x = self.data.host.astype(np.float64)
        empty = np.flatnonzero(counts == 0)
        if dist.max() > 0:
            far = np.argpartition(dist, -len(empty))[:-len(empty) - 1:-1]
            for e, f in zip(empty, far):
                o = labels[f]
                sums[o] -= x[f]
                sums[e] = x[f]
                counts[o] -= 1
                counts[e] = 1
        new = old.copy()
        full = counts > 0
        new[full] = sums[full] * (1.0 / counts[full])[:, None]
        new[~full] = new[np.argmax(counts)]
        new = new.astype(np.float32)
        self.C[1 - p].set(new)
        return float(((new - old) ** 2).sum())

    def release(self) -> None:
        if self._sum is not None:
            self._sum.release()
            self._sum = None
        for a in self._arrays:
            a.release()
        self._arrays = []
        if self.data is not None:
            self.data.release()
            self.data = None
