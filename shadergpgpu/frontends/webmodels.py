"""Fitted estimators as programs for the browser: ``sg.export_web(estimator, path, max_rows)``.

The program (:mod:`.webexport`) is the estimator's own prediction recorded on a device under the
``webgl2`` profile, with the user's X as its input; ``shadergpgpu/web/program.js`` runs it on
new data of 1 to ``max_rows`` rows::

    sg.export_web(clf, "model.sgprog", max_rows=1000)
    // in the page (player.js and program.js loaded):
    const p = await SGProgram.load("model.sgprog");
    const out = p.run({X: new Float32Array(n * nFeatures), rows: n});
    out.predict, out.predict_proba                       // Float32Array, row-major

What each estimator's program gives (names of ``out``):

* ``MLPClassifier`` (scikit-learn's or shadergpgpu's): ``predict_proba`` (n x classes) and
  ``predict`` (the class labels; indices into ``program.model.classes`` where the labels are
  not numbers); multilabel: ``predict_proba`` and the 0/1 ``predict`` (n x labels). The forward
  pass is :func:`shadergpgpu.algorithms.backprop.minibatch.predict`, the passes the estimator's
  ``predict`` draws.
* ``MLPRegressor``: ``predict`` (n x outputs).
* ``KMeans`` (shadergpgpu's): ``predict`` (the nearest centre's index): the estimator's own
  assignment passes, the input moved to the fit's units ((x - shift) / scale) by the page.
* ``SVC`` (shadergpgpu's, RBF kernel): ``decision_function`` (as the estimator's
  ``decision_function_shape`` says) and ``predict``: the RBF kernel matrix against the support
  vectors in one pass, the pairwise decision values in one dense layer
  (:func:`~shadergpgpu.algorithms.backprop.minibatch.forward`), libsvm's votes on the host.
  The estimator computes its decision values on the host in float64; the page's float32
  values are within about 1e-6 of their largest magnitude.
* a ``Pipeline`` of a ``StandardScaler`` and one of the networks or SVC: the page scales the
  input as the scaler does ((x - mean_) / scale_ in double precision), then as above.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .webexport import ProgramError, record_program

_DEVICE = None


def _device():
    global _DEVICE
    if _DEVICE is None:
        from ..engine.device import Device
        _DEVICE = Device(profile="webgl2")
    return _DEVICE


def _labels(classes) -> list | None:
    c = np.asarray(classes)
    if c.dtype.kind in "biuf" and np.all(np.asarray(c, np.float32) == c):
        return [float(v) for v in c]
    return None


def _classes_json(classes) -> list:
    c = np.asarray(classes)
    return [v.item() if hasattr(v, "item") else str(v) for v in c] if c.dtype.kind in "biuf" \
        else [str(v) for v in c]


def _is_fitted(est, attr) -> None:
    if not hasattr(est, attr):
        raise ValueError(f"estimator: this {type(est).__name__} is not fitted yet (call fit "
                         "before export_web)")


# ---- the estimators' programs ----------------------------------------------------------------
def _mlp(est, M, dev):
    from ..algorithms.backprop import minibatch as mb
    from sklearn.base import is_classifier
    _is_fitted(est, "coefs_")
    layers = [mb.pack_layer(c, b) for c, b in zip(est.coefs_, est.intercepts_)]
    units = [est.coefs_[0].shape[0]] + [c.shape[1] for c in est.coefs_]
    try:
        mb.check_fits(dev, units, M, 1, {"X": f"max_rows ({M} rows)", "y": "the outputs"})
    except ValueError as e:
        raise ValueError(f"max_rows: {e}") from None
    act, out_act = est.activation, est.out_activation_

    def fn(d, ins):
        mb.predict(d, layers, ins["X"], act, out_act)

    model = {"estimator": type(est).__name__, "n_features": units[0], "layers": units,
             "activation": act, "out_activation": out_act}
    if not is_classifier(est):
        return fn, units[0], ["predict"], [], model
    labels = _labels(est.classes_)
    model["classes"] = _classes_json(est.classes_)
    if out_act == "softmax":
        return fn, units[0], ["predict_proba"], [
            {"name": "predict", "kind": "argmax", "from": "predict_proba", "labels": labels}], model
    if out_act == "logistic" and est.n_outputs_ == 1:
        return fn, units[0], ["output"], [
            {"name": "predict_proba", "kind": "proba2", "from": "output"},
            {"name": "predict", "kind": "threshold", "from": "output", "at": 0.5,
             "labels": labels}], model
    return fn, units[0], ["predict_proba"], [
        {"name": "predict", "kind": "threshold", "from": "predict_proba", "at": 0.5}], model


def _kmeans(est, M, dev):
    from ..algorithms.kmeans.lloyd import predict_labels
    from ..algorithms.kmeans.sizes import check_fits
    _is_fitted(est, "cluster_centers_")
    k, d = est.cluster_centers_.shape
    try:
        check_fits(dev, M, d, k, update=False)
    except ValueError as e:
        raise ValueError(f"max_rows: {e}") from None
    centers = np.asarray(est._centers_device, np.float32)

    def fn(dv, ins):
        predict_labels(dv, ins["X"], centers, check_fits(dv, len(ins["X"]), d, k, update=False))

    shift = np.broadcast_to(np.asarray(est._shift, np.float64), (d,))
    scale = np.broadcast_to(np.asarray(est._scale, np.float64), (d,))
    pre = {"X": {"shift": [float(v) for v in shift], "scale": [float(v) for v in scale]}}
    model = {"estimator": "KMeans", "n_features": d, "n_clusters": k}
    return fn, d, ["predict"], [], model, pre


_RBF_SOURCE = """
void main() {
    ivec2 g = OUT_grid();
    int i = g.x;
    int s0 = 4 * g.y;
    vec4 acc = vec4(0.0);
    for (int t = 0; t < X_GRID_W; ++t) {
        vec4 x = X_texel(i, t);
        vec4 d0 = x - S_texel(min(s0, S_ROWS - 1), t);
        vec4 d1 = x - S_texel(min(s0 + 1, S_ROWS - 1), t);
        vec4 d2 = x - S_texel(min(s0 + 2, S_ROWS - 1), t);
        vec4 d3 = x - S_texel(min(s0 + 3, S_ROWS - 1), t);
        acc += vec4(dot(d0, d0), dot(d1, d1), dot(d2, d2), dot(d3, d3));
    }
    OUT = exp(-gamma * acc) * vec4(OUT_lanes());
}
"""
_RBF = None


def _rbf_kernel():
    global _RBF
    if _RBF is None:
        from ..engine.kernels import In, Kernel
        rows = In(packed=True, order="row")
        _RBF = Kernel(source=_RBF_SOURCE, inputs={"X": rows, "S": rows},
                      uniforms={"gamma": "float"}, loop=lambda a: a.X.grid_w,
                      name="webexport/svc-rbf")
    return _RBF


def _svc(est, M, dev):
    from ..algorithms.backprop import minibatch as mb
    _is_fitted(est, "support_")
    if getattr(est, "kernel", "rbf") != "rbf":
        raise ValueError(f"estimator: SVC(kernel={est.kernel!r}) cannot be exported; the "
                         "program computes the RBF kernel")
    nc = len(est.classes_)
    sv = np.asarray(est.support_vectors_, np.float32)
    d = sv.shape[1]
    starts = np.concatenate([[0], np.cumsum(est.n_support_)])
    pairs = nc * (nc - 1) // 2
    D = np.zeros((len(sv), pairs))
    p = 0
    for a in range(nc):
        for b in range(a + 1, nc):
            sa, sb = slice(starts[a], starts[a + 1]), slice(starts[b], starts[b + 1])
            D[sa, p] = est._dual_coef_ovo[b - 1, sa]
            D[sb, p] = est._dual_coef_ovo[a, sb]
            p += 1
    W = mb.pack_layer(D, est._intercept_ovo)
    gamma = float(est._gamma)
    if M > dev.max_texture_size:
        raise ValueError(f"max_rows: {M} rows are more than the {dev.max_texture_size} "
                         "texture rows of the WebGL2 profile")

    def fn(dv, ins):
        with dv.scope() as s:
            Xd = s.array(ins["X"])
            Sd = s.array(sv)
            K = s.empty((Xd.shape[0], len(sv)))
            _rbf_kernel()(K, X=Xd, S=Sd, gamma=gamma)
            P = mb.forward(dv, [s.array(W)], K, 0, 0, scope=s)
            P.get()

    labels = _labels(est.classes_)
    shape = getattr(est, "decision_function_shape", "ovr")
    if nc == 2:
        post = [{"name": "decision_function", "kind": "neg", "from": "ovo", "col": 0}]
    elif shape == "ovo":
        post = []
    else:
        post = [{"name": "decision_function", "kind": "svc_ovr", "from": "ovo",
                 "n_classes": nc}]
    post.append({"name": "predict", "kind": "svc_vote", "from": "ovo", "n_classes": nc,
                 "labels": labels})
    raw = "decision_function" if (nc > 2 and shape == "ovo") else "ovo"
    if raw == "decision_function":
        for q in post:
            q["from"] = raw
    model = {"estimator": "SVC", "n_features": d, "classes": _classes_json(est.classes_),
             "n_support": [int(v) for v in est.n_support_], "gamma": gamma}
    return fn, d, [raw], post, model


def _unpipe(estimator):
    """(the final estimator, its StandardScaler or None) of a Pipeline; others as they are."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    if not isinstance(estimator, Pipeline):
        return estimator, None
    steps = [s for _, s in estimator.steps if s is not None and s != "passthrough"]
    *before, final = steps
    if len(before) > 1 or (before and not isinstance(before[0], StandardScaler)):
        raise TypeError("estimator: a Pipeline exports as an optional StandardScaler then the "
                        "estimator; got " + " -> ".join(type(s).__name__ for s in steps))
    if before and not hasattr(before[0], "n_features_in_"):
        raise ValueError("estimator: the Pipeline's StandardScaler is not fitted yet (call fit "
                         "before export_web)")
    return final, (before[0] if before else None)


def _scaler_step(scaler, cols: int) -> dict:
    """The page's (x - shift) / scale for a fitted StandardScaler (its own arithmetic)."""
    if scaler.n_features_in_ != cols:
        raise ValueError(f"estimator: the StandardScaler takes {scaler.n_features_in_} "
                         f"features, the estimator {cols}")
    mean = scaler.mean_ if scaler.with_mean else None
    scale = scaler.scale_ if scaler.with_std else None
    shift = np.zeros(cols) if mean is None else np.asarray(mean, np.float64)
    div = np.ones(cols) if scale is None else np.asarray(scale, np.float64)
    return {"shift": [float(v) for v in shift], "scale": [float(v) for v in div]}


def estimator_program(estimator, max_rows: int = 1000, device=None) -> bytes:
    """The bytes of ``estimator``'s program (see the module docstring and :func:`export_web`)."""
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from ..algorithms.kmeans import KMeans
    from ..algorithms.svm import SVC
    if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)):
        raise TypeError(f"max_rows must be an integer, got {type(max_rows).__name__}")
    M = int(max_rows)
    if M < 1:
        raise ValueError(f"max_rows must be at least 1, got {M}")
    dev = device if device is not None else _device()
    if M > dev.max_texture_size:
        raise ValueError(f"max_rows: {M} rows are more than a program takes on this device "
                         f"(the {dev.max_texture_size} texture rows of its "
                         f"'{dev.profile.name}' profile): export with max_rows <= "
                         f"{dev.max_texture_size} and run larger inputs in parts")
    estimator, scaler = _unpipe(estimator)
    pre = None
    if isinstance(estimator, (MLPClassifier, MLPRegressor)):
        fn, cols, outs, post, model = _mlp(estimator, M, dev)
    elif isinstance(estimator, KMeans):
        fn, cols, outs, post, model, pre = _kmeans(estimator, M, dev)
    elif isinstance(estimator, SVC):
        fn, cols, outs, post, model = _svc(estimator, M, dev)
    else:
        raise TypeError(f"estimator: export_web takes a fitted MLPClassifier, MLPRegressor, "
                        f"KMeans or SVC, got {type(estimator).__name__}")
    if scaler is not None:
        if pre is not None:
            raise TypeError(f"estimator: a Pipeline of a StandardScaler and a "
                            f"{type(estimator).__name__} cannot be exported (the "
                            f"{type(estimator).__name__} moves its input itself); export the "
                            f"{type(estimator).__name__} fitted on the scaled data")
        pre = {"X": _scaler_step(scaler, cols)}
        model["scaler"] = "StandardScaler"
    try:
        return record_program(fn, {"X": cols}, outs, M, dev, post=post, pre=pre, model=model)
    except ProgramError as e:  # pragma: no cover - the estimators above record as programs
        raise ValueError(f"estimator: {e}") from None


def export_web(estimator, path, max_rows: int = 1000, device=None) -> Path:
    """Write a fitted estimator's prediction as a program for the browser (WebGL2).

    Parameters
    ----------
    estimator : fitted MLPClassifier, MLPRegressor (scikit-learn's or shadergpgpu's), KMeans
        or SVC (shadergpgpu's, RBF kernel); or a fitted Pipeline of a StandardScaler and an
        MLPClassifier, MLPRegressor or SVC (the page scales the input as the scaler does).
    path : where to write the program (one file, conventionally ``.sgprog``).
    max_rows : the most rows one ``run`` takes (1 to the WebGL2 profile's texture size).
    device : the Device to record on (default: one under the ``webgl2`` profile).

    Returns
    -------
    pathlib.Path of the program. In a page with ``player.js`` and ``program.js``:
    ``(await SGProgram.load(url)).run({X: Float32Array, rows: n})`` gives the outputs
    (``predict``, ``predict_proba``, ``decision_function``: see :mod:`.webmodels`).

    Raises
    ------
    TypeError
        ``estimator`` of another kind, ``max_rows`` not an integer.
    ValueError
        ``estimator`` not fitted; ``max_rows`` below 1 or beyond what the device holds.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> X = np.random.default_rng(0).random((200, 4))
    >>> clf = sg.MLPClassifier((8,), max_iter=50).fit(X, X[:, 0] > 0.5)   # doctest: +SKIP
    >>> sg.export_web(clf, "model.sgprog", max_rows=100)                  # doctest: +SKIP
    PosixPath('model.sgprog')

    and in a page that loads ``player.js`` and ``program.js``::

        const p = await SGProgram.load("model.sgprog");
        const out = p.run({X: new Float32Array([0.9, 0.1, 0.5, 0.5]), rows: 1});
        out.predict_proba;   // Float32Array [p(False), p(True)]
    """
    raw = estimator_program(estimator, max_rows, device)
    path = Path(path)
    path.write_bytes(raw)
    return path
