"""Uploads and readbacks: every layout kind round-trips exactly through ``set`` / ``get``,
``get(out=...)`` fills the caller's array, ``get(wait=False)`` returns the array as the passes
issued before it left it (later passes do not change it), and bad ``out`` arguments are refused
naming ``out``. The layouts whose texels are the array's bytes take the copy-free path; the
others the packing one: both are covered, on llvmpipe and (the PBO path) on a GPU."""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.engine.builtin import SAXPY
from shadergpgpu.engine import transfer as T
from shadergpgpu.engine.layout import Layout

from tests.reference import assert_close

CASES = [  # (shape, packed, order, max_size)
    ((3, 8), True, "row", None), ((5, 7), True, "row", None), ((4, 6), False, "row", None),
    ((6, 5), True, "col", None), ((1, 400), True, "row", 16), ((1, 396), True, "row", 16),
    ((12,), True, "row", None), ((3,), True, "row", None),
]


@pytest.fixture(scope="module")
def dev():
    d = sg.Device()
    yield d
    d.release()


def _forced(path):
    """The engine tuning of a forced path (None: the device's own)."""
    if path == "default":
        return None
    return sg.EngineTuning(pbo=True, pbo_min_bytes=0, mapped=path == "mapped")


@pytest.fixture(autouse=True, params=["default", "mapped", "buffer"])
def path(request, dev):
    """Every test runs three ways: the device's own path (straight reads on llvmpipe), and the
    GPU's buffer-object paths forced here: page-locked mapped buffers, and moderngl buffers
    (the fallback where the context has no buffer storage)."""
    if request.param == "default":
        yield request.param
    else:
        with dev.tuned(_forced(request.param)):
            yield request.param


def _array(dev, shape, packed, order, max_size, values):
    if max_size is None:
        return dev.array(values, packed=packed, order=order)
    lay = Layout(shape[0], shape[1], packed, order, max_size)
    return dev.alloc(lay, shape).set(values)


@pytest.mark.parametrize("shape,packed,order,max_size", CASES)
def test_round_trip_every_layout(dev, shape, packed, order, max_size):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = _array(dev, shape, packed, order, max_size, a)
    np.testing.assert_array_equal(x.get(), a)
    out = np.full(shape, np.nan, np.float32)
    assert x.get(out=out) is out
    np.testing.assert_array_equal(out, a)
    x.set(a * 3)
    np.testing.assert_array_equal(x.get(wait=False).result(), a * 3)


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 3), (5, 9, 1)])
def test_images_round_trip(dev, shape):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    x = dev.image(a)
    np.testing.assert_array_equal(x.get(), a)
    out = np.empty(shape, np.float32)
    np.testing.assert_array_equal(x.get(out=out), a)


def test_float64_and_strided_inputs_are_converted(dev):
    a = np.random.default_rng(2).standard_normal((8, 16))
    x = dev.array(a[:, ::2])                       # float64, not contiguous
    np.testing.assert_array_equal(x.get(), a[:, ::2].astype(np.float32))
    x.set(a[:, 1::2].T)
    np.testing.assert_array_equal(x.get(), a[:, 1::2].T.astype(np.float32))


def test_the_bytes_path_does_not_keep_the_callers_array(dev):
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    x = dev.array(a)
    a[:] = -1                                     # the upload copied the bytes
    np.testing.assert_array_equal(x.get(), np.arange(32).reshape(4, 8))
    got = x.get()
    got[:] = 7                                    # the result is the caller's own array
    np.testing.assert_array_equal(x.get(), np.arange(32).reshape(4, 8))


def test_readback_in_flight_sees_the_passes_before_it_only(dev):
    a = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    x, y = dev.array(a), dev.array(np.ones((64, 64)))
    pending = y.get(wait=False)
    pending_out = np.empty((64, 64), np.float32)
    second = x.get(out=pending_out, wait=False)
    for _ in range(3):                            # later passes overwrite both
        dev.run(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 2.0})
        dev.run(SAXPY, x, inputs={"X": y, "Y": y}, uniforms={"alpha": 0.5})
    assert "Readback" in repr(pending)
    np.testing.assert_array_equal(pending.result(), np.ones((64, 64)))
    assert pending.done and pending.result() is pending.result()
    assert second.result() is pending_out
    np.testing.assert_array_equal(pending_out, a)
    dropped = x.get(wait=False)                   # never waited for: its buffer goes back
    del dropped


@pytest.mark.parametrize("bad,err,match", [
    (np.empty((4, 8), np.float64), ValueError, "float32 of shape"),
    (np.empty((8, 4), np.float32), ValueError, "float32 of shape"),
    (np.empty((8, 4), np.float32).T, ValueError, "C-contiguous"),
    ([0.0] * 32, TypeError, "out must be a numpy array"),
])
def test_bad_out_is_refused(dev, bad, err, match):
    x = dev.array(np.ones((4, 8)))
    with pytest.raises(err, match=match):
        x.get(out=bad)
    ro = np.empty((4, 8), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        x.get(out=ro)


def test_large_arrays_take_the_buffer_object_path_on_a_gpu(dev):
    """16 MB and more: through a pixel buffer object on a GPU (straight reads on llvmpipe);
    the same results, a readback in flight included."""
    n = 2048
    assert n * n * 4 >= sg.EngineTuning().pbo_min_bytes
    a = np.random.default_rng(5).standard_normal((n, n)).astype(np.float32)
    x = dev.array(a)
    np.testing.assert_array_equal(x.get(), a)
    pending = x.get(wait=False)
    dev.run(SAXPY, x, inputs={"X": dev.array(np.ones((n, n))), "Y": dev.zeros((n, n))},
            uniforms={"alpha": 3.0})
    np.testing.assert_array_equal(pending.result(), a)
    out = np.empty_like(a)
    assert x.get(out=out) is out
    np.testing.assert_array_equal(out, np.full((n, n), 3.0, np.float32))


def _kinds(dev):
    return sorted({type(b).__name__ for b in dev._pbos._free})


def test_buffer_pool_sequence_across_sizes_kinds_and_drops(path):
    """The readback buffers are shared state: reused by size, mapped and moderngl ones kept
    apart, a dropped readback's buffer reused by the next read of that size, and a device
    released with idle mapped buffers. Every read equals what was written just before it."""
    if path == "default":
        pytest.skip("the pool is used on the forced buffer paths")
    d = sg.Device(tuning=_forced(path))
    try:
        rng = np.random.default_rng(7)
        arrays = [d.array(np.zeros(s)) for s in [(8, 8), (3, 5), (16, 4), (8, 8)]]
        sizes = []
        for rnd in range(2):          # the second round reuses the first round's buffers
            mapped = path == "mapped"
            d.tune(sg.EngineTuning, mapped=mapped)
            for step in range(6):
                for x in arrays:
                    a = rng.standard_normal(x.shape).astype(np.float32)
                    x.set(a)
                    if step % 3 == 0:
                        np.testing.assert_array_equal(x.get(), a)
                    elif step % 3 == 1:
                        r = x.get(wait=False)
                        x.set(a + 1)               # after the readback: not in it
                        np.testing.assert_array_equal(r.result(), a)
                    else:
                        dropped = x.get(wait=False)
                        del dropped                 # never waited for
                        np.testing.assert_array_equal(x.get(), a)
                if step == 2:                       # switch kinds mid-sequence
                    d.tune(sg.EngineTuning, mapped=not mapped)
            sizes.append(len(d._pbos._free))
        assert sizes[1] == sizes[0]                 # no growth with repetitions
        # both kinds idle, each reused (mapped buffers where the context has buffer storage:
        # not on an ES context without EXT_buffer_storage)
        assert _kinds(d) == (["Buffer", "MappedBuffer"] if d._pbos.mapped_available()
                             else ["Buffer"])
    finally:
        d.release()


def test_mapping_failure_falls_back_to_moderngl_buffers(path, monkeypatch):
    if path != "mapped":
        pytest.skip("the mapped path only")

    def refuse(self, ctx, nbytes, write=False):
        raise OSError("no buffer storage here")
    monkeypatch.setattr(T.MappedBuffer, "__init__", refuse)
    d = sg.Device(tuning=_forced(path))
    try:
        a = np.arange(40, dtype=np.float32).reshape(5, 8)
        x = d.array(a)
        np.testing.assert_array_equal(x.get(), a)
        np.testing.assert_array_equal(x.get(wait=False).result(), a)
        assert _kinds(d) == ["Buffer"]
    finally:
        d.release()


def test_uploads_are_ordered_with_passes_and_copied_at_once(dev, path):
    """An upload is the caller's bytes at the call (the caller may overwrite them at once), a
    pass issued after it reads them, and the next upload from the same (reused) buffer does
    not reach passes issued before it."""
    n = 48
    rng = np.random.default_rng(11)
    src = rng.standard_normal((n, n)).astype(np.float32)
    x = dev.array(np.zeros((n, n)))
    ys = [dev.empty((n, n)) for _ in range(4)]
    want = []
    for y in ys:
        x.set(src)
        last = src.copy()
        dev.run(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 2.0})  # y = 3 x
        want.append(3.0 * src.copy())
        src += 1.0                       # the caller's array changes right after the upload
    for y, w in zip(ys, want):
        assert_close(y.get(), w, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(x.get(), last)
