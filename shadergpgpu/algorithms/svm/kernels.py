"""The SMO kernels, each declared once: the first levels of the selection reductions (I_up /
I_low arg-max, the second-order partner with the gain on the fly), the objective pass (the
second-order gain and the kernel row of i), the gradient and alpha updates with the fused RBF
kernel rows (host step, device step, and the split paths past the loop cap). Sources live under
``shaders/algorithms/svm/``. The objective, update and step kernels take a DIRECT define
(texel indexing without the shape uniforms' divisions; :attr:`BinarySMO.direct` chooses it).
"""
from __future__ import annotations

from ...engine.kernels import In, Split, declare
from ...ops import reduce as _reduce
from ...ops.rbf import DATA_INPUTS

_VEC = {"G": In(packed=True, order="row"), "A": In(like="G"), "Y": In(like="G")}
_SETS = {"C": "float"}
#: the CPU renderer's variant of the kernels that take it (BinarySMO.direct)
_CPU = {"DIRECT": 0}
#: first selection levels (arg-max reductions computing I_up / I_low values on the fly)
SELECT_PAIR = _reduce.arg_kernels("algorithms/svm/select_pair.frag", _VEC, _SETS,
                                  name="svm/select_pair", dual=True, defines=_CPU)
SELECT_UP = _reduce.arg_kernels("algorithms/svm/select_up.frag", _VEC, _SETS,
                                name="svm/select_up", defines=_CPU)
SELECT_LOW = _reduce.arg_kernels("algorithms/svm/select_low.frag", _VEC, _SETS,
                                 name="svm/select_low", defines=_CPU)
_FEATURES = lambda a: a.XR.grid_w  # noqa: E731  (feature texels one fragment walks)
HINT = "X has too many features (n_features) for one pass on this device"
#: first level of the second-order partner selection computing the gain on the fly (the
#: kernel row of i for the level's FANIN texels: FANIN x (feature texels + 1) loop steps)
SELECT_SECOND = _reduce.arg_kernels(
    "algorithms/svm/select_second.frag",
    dict(DATA_INPUTS, **_VEC, SEL=In(packed=True, order="row")), {"C": "float", "gamma": "float"},
    name="svm/select_second", loop=lambda a: a.defines["FANIN"] * (a.XR.grid_w + 1),
    defines=_CPU)


_OUT_VEC = {"G": In(like="OUT"), "A": In(like="OUT"), "Y": In(like="OUT"),
            "RES": In(packed=True, order="row")}
#: second-order gain of every point against i (read from RES on the device), fused RBF walk;
#: the kernel row K(x_t, x_i) goes to KI (the device step reads K_ij there)
OBJECTIVE = declare("algorithms/svm/objective.frag", inputs=dict(DATA_INPUTS, **_OUT_VEC),
                    outputs=("OUT", "KI"), uniforms={"gamma": "float", "C": "float"},
                    defines={"FROM_D2": 0, **_CPU}, loop=_FEATURES, name="svm/objective",
                    hint=HINT)
#: split path (past the loop cap): partial squared distances to i, then the gain from them
OBJECTIVE_D2 = declare("algorithms/svm/objective_d2.frag",
                       inputs=dict(DATA_INPUTS, RES=In(packed=True, order="row")),
                       split=Split("d4", length=_FEATURES, cost=1), name="svm/objective_d2")
OBJECTIVE_FROM_D2 = declare("algorithms/svm/objective.frag",
                            inputs=dict(_OUT_VEC, D=In(like="OUT")),
                            uniforms={"gamma": "float", "C": "float"},
                            defines={"FROM_D2": 1, **_CPU},
                            name="svm/objective_from_d2")
_UPD_UNI = {"h": "int", "l": "int", "gamma": "float", "ch": "float", "cl": "float",
            "a_h": "float", "a_l": "float"}
_UPD_VEC = {"G": In(like="OUT0"), "A": In(like="OUT0"), "Y": In(like="OUT0")}
#: gradient and alpha update with the fused kernel rows of (h, l) (host step: uniforms)
UPDATE = declare("algorithms/svm/update.frag", inputs=dict(DATA_INPUTS, **_UPD_VEC), outputs=2,
                 uniforms=_UPD_UNI, defines={"FROM_D2": 0, "FROM_STEP": 0, **_CPU},
                 loop=_FEATURES,
                 name="svm/update", hint=HINT)
#: split path: the update from distances computed by ops.rbf's split pair kernel
UPDATE_FROM_D2 = declare("algorithms/svm/update.frag",
                         inputs=dict(_UPD_VEC, DH=In(like="OUT0"), DL=In(like="OUT0")),
                         outputs=2, uniforms=_UPD_UNI,
                         defines={"FROM_D2": 1, "FROM_STEP": 0, **_CPU},
                         name="svm/update_from_d2")
#: device step: every fragment of the update solves the two-variable step from the selection
#: results RES (step.glsl) and the state texel of A; K_ij from a walk over the features of
#: x_i, x_j (KSRC 0), the kernel row KI of the objective pass (1) or the distances D (2)
_STEP_UNI = {"gamma": "float", "tol": "float", "C": "float", "max_iter": "float",
             "state_texel": "int"}
_RES = {"RES": In(packed=True, order="row")}
_KSRC_IN = {0: {}, 1: {"KI": In()}, 2: {"D": In()}}
UPDATE_STEP = {
    ksrc: declare("algorithms/svm/update.frag",
                  inputs=dict(DATA_INPUTS, **_UPD_VEC, **_RES, **_KSRC_IN[ksrc]), outputs=2,
                  uniforms=_STEP_UNI,
                  defines={"FROM_D2": 0, "FROM_STEP": 1, "KSRC": ksrc, "SECOND_ORDER": 1,
                           **_CPU},
                  loop=(lambda a: 2 * a.XR.grid_w) if ksrc == 0 else _FEATURES,
                  name=f"svm/update_step{ksrc}", hint=HINT)
    for ksrc in (0, 1, 2)}
UPDATE_STEP_FROM_D2 = declare("algorithms/svm/update.frag",
                              inputs=dict(_UPD_VEC, DH=In(like="OUT0"), DL=In(like="OUT0"),
                                          **_RES, **_KSRC_IN[2]),
                              outputs=2, uniforms=_STEP_UNI,
                              defines={"FROM_D2": 1, "FROM_STEP": 1, "KSRC": 2,
                                       "SECOND_ORDER": 1, **_CPU},
                              name="svm/update_step_from_d2")
#: device step, split path: distances to the selected pair (read from RES)
PAIR_D2_STEP = declare("algorithms/svm/pair_d2_step.frag", inputs=dict(DATA_INPUTS, **_RES),
                       outputs=2, defines={"SECOND_ORDER": 1, **_CPU},
                       split=Split("d4", length=_FEATURES, cost=1), name="svm/pair_d2_step",
                       hint=HINT)
