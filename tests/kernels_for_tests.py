"""Kernels shared by the engine tests (declared once, like a library's kernels)."""
from pathlib import Path

import shadergpgpu as sg

HERE = Path(__file__).resolve().parent / "shaders"

# out[0, r] = sum of row r of X: the loop over columns is a split range
ROWSUM_SOURCE = """
void main() {
    vec4 s = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        int r = OUT_pos(l).y;
        for (int c = cols_begin; c < cols_end; ++c) s[l] += X_at(r, c);
    }
    OUT = s;
}"""


def rowsum_kernel(name: str = "test/rowsum") -> sg.Kernel:
    """A new kernel object with ROWSUM's source (equal sources share one program)."""
    return sg.Kernel(source=ROWSUM_SOURCE, inputs=("X",),
                     split=sg.Split("cols", length=lambda a: a.X.cols, cost=4, extra=4),
                     name=name)


ROW_SUMS = rowsum_kernel()

ACCUMULATE = sg.Kernel("accumulate.frag", root=HERE, inputs={"X": sg.In(like="OUT")},
                       uniforms={"scale": "float"})
MRT_SCALE = sg.Kernel("mrt_scale.frag", root=HERE, inputs={"X": sg.In(like="OUT0")}, outputs=8)
