"""The audit of 2026-11-25, case by case: each silent wrong result and each unacceptable failure
it found, as a regression test (docs/reliability.md lists them with their status)."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.ops import reduce as R
from shadergpgpu.ops.elementwise import ElementwiseKernel

from tests.kernels_for_tests import ROW_SUMS
from tests.reference import assert_close

CONST = "void main() { OUT = vec4(a); }"



def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


# ---- 1. kernels with the same source share a program, and its uniform state -----------------
def test_equal_source_elementwise_kernels_keep_their_own_uniforms():
    k1 = ElementwiseKernel("float32 x, float32 a", "float32 y", "y = a * x")
    k2 = ElementwiseKernel("float32 x, float32 a", "float32 y", "y = a * x")
    x = np.ones(4)
    np.testing.assert_array_equal(k1(x, 2.0), 2.0 * x)
    np.testing.assert_array_equal(k2(x, 3.0), 3.0 * x)
    np.testing.assert_array_equal(k1(x, 2.0), 2.0 * x)


def test_total_alternating_layouts(dev):
    a = dev.array(np.ones(400))
    u = dev.array(np.ones(25), packed=False)
    assert [R.total(dev, a), R.total(dev, u), R.total(dev, a)] == [400.0, 25.0, 400.0]
    a.release()
    u.release()


def test_equal_source_declared_kernels_and_prepared_passes(dev):
    k1 = sg.Kernel(source=CONST, uniforms={"a": "float"})
    k2 = sg.Kernel(source=CONST, uniforms={"a": "float"})
    o1, o2 = dev.empty((2, 4)), dev.empty((2, 4))
    p1 = dev.prepare(k1, o1, uniforms={"a": 1.0})
    p2 = dev.prepare(k2, o2, uniforms={"a": 2.0})
    for _ in range(2):
        p1.run()
        k2(o2, a=5.0)
        p2.run()
        p1.run()
        assert (o1.get() == 1.0).all() and (o2.get() == 2.0).all()
    o1.release()
    o2.release()


def test_negative_zero_uniform_is_written(dev):
    k = sg.Kernel(source="void main() { OUT = vec4(1.0 / a); }", uniforms={"a": "float"})
    with dev.empty((1, 4)) as o:
        k(o, a=0.0)
        assert np.isposinf(o.get()).all()
        k(o, a=-0.0)
        assert np.isneginf(o.get()).all()


# ---- 4. prepared passes never draw with what is gone -----------------------------------------
def test_prepared_pass_refuses_released_output_and_spares_new_arrays(dev):
    out, p = _const_pass(dev)
    out.release()
    z = dev.array(np.full((4, 4), 5.0))     # may take the released texture from the pool
    with pytest.raises(ValueError, match="output 'OUT'.*released"):
        p.run()
    np.testing.assert_array_equal(z.get(), 5.0)
    new = dev.empty((4, 4))
    p.bind(OUT=new).run()                    # a live output makes it work again
    np.testing.assert_array_equal(new.get(), 2.0)
    np.testing.assert_array_equal(z.get(), 5.0)
    z.release()
    new.release()


def test_prepared_pass_refuses_released_input(dev):
    K = sg.Kernel(source="void main() { ivec2 g = OUT_grid(); OUT = X_texel(g.x, g.y); }",
                  inputs={"X": sg.In(like="OUT")})
    x = dev.array(np.arange(8.0))
    out = dev.empty_like(x)
    p = dev.prepare(K, out, inputs={"X": x})
    x.release()
    other = dev.array(np.full(8, 7.0))
    with pytest.raises(ValueError, match="input 'X'.*released"):
        p.run()
    out.release()
    other.release()


def _const_pass(d, a=2.0):
    """A 4x4 output and a prepared pass filling it with uniform ``a``."""
    out = d.zeros((4, 4))
    return out, d.prepare(sg.Kernel(source=CONST, uniforms={"a": "float"}), out,
                          uniforms={"a": a})


def test_prepared_pass_survives_framebuffer_eviction():
    with sg.Device(caches=sg.CacheBounds(framebuffers=4)) as d:
        out, p = _const_pass(d)
        others = [d.zeros((i + 1, 3)) for i in range(70)]   # 70 other framebuffers
        p.run()
        np.testing.assert_array_equal(out.get(), 2.0)
        for o in others:
            np.testing.assert_array_equal(o.get(), 0.0)


def test_prepared_pass_and_reduction_survive_program_eviction():
    d = sg.Device(caches=sg.CacheBounds(programs=2))
    try:
        out, p = _const_pass(d)
        rk = sg_reduction()
        x = d.array(np.arange(12.0).reshape(3, 4))
        assert_close(float(rk(x, 2.0).get()[0]), 132.0, rtol=1e-6, atol=1e-12)
        for i in range(6):
            Ki = sg.Kernel(source=f"void main() {{ OUT = vec4({i}.0); }}")
            with d.empty((2, 2)) as o:
                Ki(o)
                np.testing.assert_array_equal(o.get(), float(i))
        p.run(a=3.0)
        np.testing.assert_array_equal(out.get(), 3.0)
        assert_close(float(rk(x, 3.0).get()[0]), 198.0, rtol=1e-6, atol=1e-12)
    finally:
        d.release()


def sg_reduction():
    from shadergpgpu.ops.reduce import ReductionKernel
    return ReductionKernel("float32 x, float32 s", "float32 y", "x * s", "a + b", "y = a",
                           identity=0)


def test_trim_keeps_prepared_passes_working(dev):
    K = sg.Kernel(source=CONST, uniforms={"a": "float"})
    with dev.empty((3, 3)) as out:
        p = dev.prepare(K, out, uniforms={"a": 4.0})
        dev.trim()
        p.run()
        np.testing.assert_array_equal(out.get(), 4.0)


# ---- 5. two devices in one process -------------------------------------------------------------
def test_two_devices_bind_and_run_in_their_own_context():
    d1 = sg.Device()
    d2 = sg.Device(caches=sg.CacheBounds(pool_bytes=0))   # deletes what its arrays release
    try:
        K = sg.Kernel(source=CONST, uniforms={"a": "float"})
        out1, out2 = d1.zeros((4, 4)), d1.zeros((4, 4))
        p = d1.prepare(K, out1, uniforms={"a": 2.0})
        p.run()
        x = d2.zeros((5, 5))
        d2.fill(x, 7.0)
        y = d2.empty((6, 2))                  # a framebuffer made in d2's context
        d2.fill(y, 1.0)
        p.bind(OUT=out2)
        p.run(a=5.0)
        np.testing.assert_array_equal(out1.get(), 2.0)
        np.testing.assert_array_equal(out2.get(), 5.0)
        np.testing.assert_array_equal(x.get(), 7.0)
        # releasing d2's array while d1 is current deletes nothing of d1's
        d1.fill(out1, 3.0)
        x.release()
        y.release()
        d2.trim()
        np.testing.assert_array_equal(out1.get(), 3.0)
        with pytest.raises(ValueError, match="another device"):
            p.bind(OUT=d2.zeros((4, 4)))
    finally:
        d2.release()
        d1.release()


# ---- 6. split loops with min/max: slices add, then blend once ---------------------------------
@pytest.mark.parametrize("blend,slices,fill,expected", [
    ("min", 1, 100.0, 8.0), ("min", 2, 100.0, 8.0), ("min", 3, 5.0, 5.0),
    ("max", 4, 1.0, 8.0), ("max", 2, 9.0, 9.0), ("add", 3, 100.0, 108.0), (False, 3, 100.0, 8.0)])
def test_split_loop_blend(dev, blend, slices, fill, expected):
    x = dev.array(np.ones((1, 8)))
    # without float blending (ES 3.0, WebGL2) the same modes accumulate by ping-pong passes
    how = {"blend": blend} if dev.float_blending or not blend else {"accumulate": blend}
    with dev.empty((1, 1)) as out:
        dev.fill(out, fill)
        dev.run(ROW_SUMS, out, inputs={"X": x}, slices=slices, **how)
        assert out.get()[0, 0] == expected
    x.release()


@pytest.mark.parametrize("blend", ["min", "max"])
def test_split_loop_blend_forced_by_loop_cap(blend):
    d = sg.Device(limits=sg.Limits(loop_cap=12))
    try:
        x = d.array(np.ones((2, 8)))
        out = d.empty((1, 2))
        d.fill(out, 100.0 if blend == "min" else 1.0)
        how = {"blend": blend} if d.float_blending else {"accumulate": blend}
        p = d.prepare(ROW_SUMS, out, inputs={"X": x}, **how)
        assert p.passes_per_run > 1
        before = d.counter.total
        p.run()
        assert d.counter.total - before == p.passes_per_run
        np.testing.assert_array_equal(out.get(), 8.0)
    finally:
        d.release()


def test_split_loop_blend_without_float_blending():
    d = sg.Device(profile="webgl2", limits=sg.Limits(loop_cap=12))
    try:
        x = d.array(np.ones((1, 8)))
        out = d.empty((1, 1))
        d.fill(out, 100.0)
        d.run(ROW_SUMS, out, inputs={"X": x}, accumulate="min")
        assert out.get()[0, 0] == 8.0
    finally:
        d.release()


# ---- 9. dropped and released devices -----------------------------------------------------------
def test_dropped_devices_are_freed():
    d = sg.Device()
    d.array(np.ones((64, 64)))
    del d
    gc.collect()
    r0 = _rss_mb()
    for _ in range(60):
        d = sg.Device()
        a = d.array(np.ones((64, 64)))
        del d, a
    gc.collect()
    assert _rss_mb() - r0 <= 20.0


def test_released_device_refuses_clearly():
    d = sg.Device()
    a = d.array(np.ones(3))
    d.release()
    d.release()                                  # idempotent
    with pytest.raises(RuntimeError, match="Device has been released"):
        d.array(np.ones(3))
    with pytest.raises(RuntimeError, match="Device has been released"):
        a.get()
    a.release()                                  # a no-op: the context took the texture


def test_device_as_context_manager():
    with sg.Device() as d:
        np.testing.assert_array_equal(d.array(np.arange(3.0)).get(), np.arange(3.0))
    assert d.released


# ---- 11. trim releases every cache ------------------------------------------------------------
def test_trim_after_random_shape_blurs_returns_to_idle():
    from shadergpgpu.algorithms.blur import gaussian_blur
    rng = np.random.default_rng(0)
    d = sg.Device()
    try:
        idle = d.memory()
        r0 = _rss_mb()
        for _ in range(100):
            h, w = (int(v) for v in rng.integers(8, 96, 2))
            gaussian_blur(rng.random((h, w), dtype=np.float32), 1.5, device=d)
        grown = d.memory()
        assert grown["resource_bytes"] > 0
        d.trim()
        m = d.memory()
        assert m["live_bytes"] == idle["live_bytes"] and m["idle_bytes"] == 0
        assert m["resources"] == m["compiled"] == m["programs"] == m["framebuffers"] == 0
        assert _rss_mb() - r0 < 60.0
    finally:
        d.release()


def test_cache_bounds_are_settable():
    from shadergpgpu.algorithms.blur import BlurTuning
    d = sg.Device(caches=sg.CacheBounds(programs=2, framebuffers=2, resources=1, pool_bytes=0),
                  tuning=BlurTuning(recipe_cache_bytes=1 << 20))
    try:
        for i in range(5):
            k = sg.Kernel(source=f"void main() {{ OUT = vec4({i}.0); }}")
            with d.empty((i + 1, 2)) as o:
                k(o)
                np.testing.assert_array_equal(o.get(), float(i))
        m = d.memory()
        assert m["compiled"] <= 2 and m["framebuffers"] <= 2 and m["idle_bytes"] == 0
        assert d.tuning(BlurTuning).recipe_cache_bytes == 1 << 20
    finally:
        d.release()


# ---- threads: each thread its own default device; a device refuses a foreign thread -----------
def test_threads_each_get_their_own_default_device():
    import threading
    k = ElementwiseKernel("float32 x, float32 a", "float32 y", "y = a * x")
    results, errors, devices = {}, [], {}

    def work(t):
        try:
            devices[t] = sg.get_device()
            for i in range(20):
                x = np.arange(50.0) + t
                np.testing.assert_array_equal(k(x, float(i)), np.float32(i) * x.astype(np.float32))
                assert R.total(devices[t], devices[t].array(x)) == float(x.sum())
            results[t] = True
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(results) == 4 and len({id(d) for d in devices.values()}) == 4
    assert all(d is not sg.get_device() for d in devices.values())


def test_device_used_from_another_thread_refuses_clearly():
    import threading
    d = sg.Device()
    a = d.array(np.arange(4.0))
    caught = []

    def other():
        try:
            d.array(np.ones(3))
        except RuntimeError as e:
            caught.append(str(e))
        a.release()            # releasing from another thread is safe: given back later

    try:
        th = threading.Thread(target=other, name="worker-1")
        th.start()
        th.join()
        assert caught and "worker-1" in caught[0] and "get_device" in caught[0]
        b = d.array(np.arange(3.0))            # the owner thread takes the texture back
        np.testing.assert_array_equal(b.get(), np.arange(3.0))
        assert d.memory()["live_arrays"] == 1
    finally:
        d.release()


def test_dropping_a_device_while_another_is_current_spares_the_other():
    b = sg.Device()
    try:
        bx = b.array(np.arange(16.0))
        k = ElementwiseKernel("float32 x", "float32 y", "y = x + 1.0")
        for _ in range(5):
            a = sg.Device()
            ax = a.array(np.ones(100))
            ay = k(ax)
            k(bx).release()                    # b is current when a is collected
            del a, ax, ay
            gc.collect()
            np.testing.assert_array_equal(k(bx).get(), np.arange(16.0) + 1)
            np.testing.assert_array_equal(bx.get(), np.arange(16.0))
    finally:
        b.release()


def test_pass_set_after_trim_while_another_device_is_current():
    """Found by the sequence test: set() rebuilt a dropped program and framebuffer in whatever
    context was current."""
    d1, d2 = sg.Device(), sg.Device()
    try:
        K = sg.Kernel(source="void main() { ivec2 g = OUT_grid(); OUT = a * X_texel(g.x, g.y) + b; }",
                      inputs={"X": sg.In(like="OUT")}, uniforms={"a": "float", "b": "float"})
        x = d2.array(np.arange(8.0).reshape(2, 4))
        out = d2.empty_like(x)
        p = d2.prepare(K, out, inputs={"X": x}, uniforms={"a": 2.0, "b": 0.0})
        d2.trim()
        d1.trim()                     # d1 current
        p.set(b=1.0)
        p.run()
        np.testing.assert_array_equal(out.get(), 2.0 * np.arange(8.0).reshape(2, 4) + 1.0)
    finally:
        d1.release()
        d2.release()
