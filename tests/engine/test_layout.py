"""Layout shape math (no GL) and device round trips through every layout."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pathlib import Path

import shadergpgpu as sg
from shadergpgpu.engine.builtin import COPY
from shadergpgpu.engine.errors import TooLargeError
from shadergpgpu.engine.layout import Layout, layout_for

GATHER_FLAT = sg.Kernel("gather_flat.frag", root=Path(__file__).resolve().parents[1] / "shaders",
                        inputs=("X",))
dims = st.integers(min_value=1, max_value=70)
orders = st.sampled_from(["row", "col"])


@settings(max_examples=200, deadline=None)
@given(rows=dims, cols=dims, packed=st.booleans(), order=orders,
       max_size=st.sampled_from([3, 7, 16, 16384]))
def test_pack_unpack_round_trip(rows, cols, packed, order, max_size):
    try:
        lay = Layout(rows, cols, packed, order, max_size)
    except TooLargeError:
        assert (rows if order == "row" else cols) * -(-(cols if order == "row" else rows)
                                                      // (4 if packed else 1)) > max_size ** 2
        return
    a = np.random.default_rng(rows * 131 + cols).standard_normal((rows, cols)).astype(np.float32)
    img = lay.pack_array(a)
    assert img.shape == (lay.tex_h, lay.tex_w, 4)
    assert lay.tex_w <= max_size and lay.tex_h <= max_size
    np.testing.assert_array_equal(lay.unpack_array(img), a)
    # texel_of agrees with the packed image for a few elements
    for r, c in [(0, 0), (rows - 1, cols - 1), (rows // 2, cols // 3)]:
        x, y, k = lay.texel_of(r, c)
        assert img[y, x, k] == a[r, c]
    # padding is zero
    assert np.count_nonzero(img) <= a.size


def test_packed_texel_holds_four_consecutive_row_elements():
    a = np.arange(2 * 9, dtype=np.float32).reshape(2, 9)
    img = Layout(2, 9, packed=True, order="row").pack_array(a)
    assert img.shape == (2, 3, 4)
    np.testing.assert_array_equal(img[1, 1], a[1, 4:8])
    np.testing.assert_array_equal(img[1, 2], [a[1, 8], 0, 0, 0])
    col = Layout(2, 9, packed=True, order="col").pack_array(a)
    assert col.shape == (9, 1, 4)
    np.testing.assert_array_equal(col[5, 0], [a[0, 5], a[1, 5], 0, 0])


def test_wrapping_shape():
    lay = Layout(1, 1000, packed=True, max_size=16)
    assert lay.wrapped and lay.grid_w == 250 and lay.tex_size == (16, 16)
    assert not Layout(4, 64, packed=True, max_size=16).wrapped


def test_layout_errors():
    with pytest.raises(ValueError, match="order"):
        Layout(2, 2, order="diagonal")
    with pytest.raises(ValueError, match="rows"):
        Layout(0, 2)
    with pytest.raises(TooLargeError, match="does not fit"):
        Layout(100, 100, packed=False, max_size=16)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        layout_for((2, 3, 4))
    with pytest.raises(ValueError, match="empty"):
        layout_for((0, 3))


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 41), cols=st.integers(1, 41), packed=st.booleans(), order=orders,
       wrap=st.booleans())
def test_device_round_trip_and_copy_kernel(dev, small_dev, rows, cols, packed, order, wrap):
    d = small_dev if wrap else dev
    a = np.random.default_rng(rows + 1000 * cols).standard_normal((rows, cols))
    try:
        x = d.array(a, packed=packed, order=order)
    except TooLargeError:
        assert wrap
        return
    with x, d.empty_like(x) as y:
        np.testing.assert_array_equal(x.get(), a.astype(np.float32))
        # the copy kernel walks the output grid through the generated accessors
        d.run(COPY, y, inputs={"X": x})
        np.testing.assert_array_equal(y.get(), a.astype(np.float32))


@pytest.mark.parametrize("shape", [(1,), (7,), (1, 1), (3, 5), (1000,)])
def test_element_accessors(small_dev, shape):
    """X_at / X_get read the logical element for every layout (checked by an elementwise map)."""
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 0.5 - 3
    for packed in (True, False):
        for order in ("row", "col"):
            try:
                x = small_dev.array(a, packed=packed, order=order)
            except TooLargeError:
                continue
            out = small_dev.empty(x.layout.rows * x.layout.cols, packed=True)
            small_dev.run(GATHER_FLAT, out, inputs={"X": x})
            np.testing.assert_array_equal(out.get(), a.reshape(-1).astype(np.float32))
            x.release()
            out.release()


def test_wrapped_vector_width_and_height():
    from shadergpgpu.engine.layout import Layout
    a = Layout.wrapped_vector(4 * 1000, 128, 16384)       # 1000 texels: 128 wide, 8 rows
    assert (a.tex_w, a.tex_h) == (128, 8) and a.n_texels == 1000
    b = Layout.wrapped_vector(4 * 100_000, 128, 16384)    # too many for 128 rows: widened
    assert b.tex_w == 782 and b.tex_h <= b.tex_w and b.tex_w * b.tex_h >= 100_000
    c = Layout.wrapped_vector(10, 128, 16384)             # shorter than one row: not wrapped
    assert (c.tex_w, c.tex_h) == (3, 1)
