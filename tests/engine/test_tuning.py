"""Tuning as values: every tuning dataclass is frozen, refuses bad values naming the field, has
defaults per device kind, and a value set for some calls never reaches the next ones (the
caches of programs and prepared passes key on the values they used). Also Device's grouped
parameters (Limits, CacheBounds)."""
import dataclasses

import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.algorithms.backprop import BackpropTuning
from shadergpgpu.algorithms.blur import BlurTuning, gaussian_blur
from shadergpgpu.algorithms.sammon import SammonTuning
from shadergpgpu.algorithms.sgemm import SgemmTuning, sgemm
from shadergpgpu.algorithms.svm import SvmTuning
from shadergpgpu.ops import reduce as R
from shadergpgpu.ops.sort import sort_pairs
from shadergpgpu.ops.tuning import ReduceTuning, SortTuning

from tests.reference import assert_close

ALL = [sg.EngineTuning, BlurTuning, SgemmTuning, SvmTuning, BackpropTuning, SammonTuning,
       SortTuning, ReduceTuning]

#: a bad value per class: (field, value, what the message says)
BAD = {sg.EngineTuning: ("pbo_min_bytes", -1, "integer >= 0"),
       BlurTuning: ("flush_passes", 1, "True or False"),
       SgemmTuning: ("host_blocks", 2.5, "integer"),
       SvmTuning: ("fuse_gain", "yes", "True or False"),
       BackpropTuning: ("ubo_chunk", (128, 32), "low <= high"),
       SammonTuning: ("tile_jb", 12, "8, 16 or 32"),
       SortTuning: ("fold_log2", 6, "from 1 to 5"),
       ReduceTuning: ("arg_fetch_batch", -2, "integer >= 0")}


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_tuning_is_a_frozen_dataclass_with_defaults_per_kind(cls):
    t = cls()
    assert dataclasses.is_dataclass(t) and isinstance(t, sg.Tuning)
    name = dataclasses.fields(t)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(t, name, getattr(t, name))
    for kind in ("software", "hardware"):
        d = cls.defaults(kind)
        assert isinstance(d, cls) and d == t.for_kind(kind)
        assert all(getattr(d, f) is not None for f in cls.HARDWARE)   # resolved per kind
        assert hash(d) == hash(cls.defaults(kind))                      # usable as a cache key
    with pytest.raises(ValueError, match="kind"):
        cls.defaults("gpu")
    with pytest.raises(TypeError):
        t.replace(no_such_field=1)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_bad_values_are_refused_naming_the_field(cls):
    field, value, what = BAD[cls]
    with pytest.raises(ValueError, match=f"{cls.__name__}.{field} must be .*{what}"):
        cls(**{field: value})
    with pytest.raises(ValueError, match=f"{cls.__name__}.{field}"):
        cls().replace(**{field: value})


def test_the_kinds_differ_where_the_renderers_do():
    assert sg.EngineTuning.defaults("software").pbo is False
    assert sg.EngineTuning.defaults("hardware").pbo is True
    assert SvmTuning.defaults("software").direct and not SvmTuning.defaults("hardware").direct
    sw, hw = BackpropTuning.defaults("software"), BackpropTuning.defaults("hardware")
    assert (sw.ubo, sw.buffers) == (False, True) and (hw.ubo, hw.buffers) == (True, False)
    assert SammonTuning.defaults("hardware").stress_on_host is True
    # a value leaves what it does not set to the device's kind
    assert BackpropTuning(ubo_forward=False).for_kind("software").buffers is True


def test_device_tuning_api(dev):
    before = dev.tuning(SgemmTuning)
    kind = SgemmTuning.kind_of(dev)
    assert before == SgemmTuning.defaults(kind)
    with dev.tuned(SgemmTuning, host_blocks=2) as t:
        assert dev.tuning(SgemmTuning) is t and t.host_blocks == 2
        with dev.tuned(SgemmTuning(host_blocks=5)):          # nested blocks restore in turn
            assert dev.tuning(SgemmTuning).host_blocks == 5
        assert dev.tuning(SgemmTuning).host_blocks == 2
    assert dev.tuning(SgemmTuning) == before
    with pytest.raises(ValueError, match="SgemmTuning.host_blocks"):
        dev.tuned(SgemmTuning, host_blocks=-1).__enter__()
    with pytest.raises(TypeError, match="Tuning"):
        dev.tune({"host_blocks": 2})
    assert dev.tuning(SgemmTuning) == before
    with sg.Device(tuning=[SgemmTuning(host_blocks=3), BlurTuning(flush_passes=False)]) as d:
        assert d.tuning(SgemmTuning).host_blocks == 3 and not d.tuning(BlurTuning).flush_passes
        assert dev.tuning(BlurTuning).flush_passes          # other devices keep their own
        assert d.tune(SgemmTuning, host_blocks=4).host_blocks == 3
        d.untune(SgemmTuning)
        assert d.tuning(SgemmTuning) == SgemmTuning.defaults(kind)


def test_device_groups_its_parameters():
    with sg.Device(limits=sg.Limits(max_texture_size=32, loop_cap=50),
                   caches=sg.CacheBounds(programs=3, framebuffers=2, resources=4,
                                         pool_bytes=0)) as d:
        assert d.max_texture_size == 32 and d.loop_cap == 50 and d.cache_size == 3
        assert d._fbos.size == 2 and d._resources.size == 4 and d.pool.max_idle_bytes == 0
        assert d._pbos.idle_bytes == sg.CacheBounds().pbo_idle_bytes
    for bad, match in ((dict(limits=sg.Limits), "Limits"), (dict(caches=(1, 2)), "CacheBounds")):
        with pytest.raises(TypeError, match=match):
            sg.Device(**bad)
    with pytest.raises(ValueError, match="Limits.loop_cap"):
        sg.Limits(loop_cap=0)
    with pytest.raises(ValueError, match="CacheBounds.programs"):
        sg.CacheBounds(programs=0)
    for gone in ("max_texture_size", "loop_cap", "cache_size", "recipe_cache_bytes",
                 "window_size", "title"):
        with pytest.raises(TypeError):
            sg.Device(**{gone: 16})


def test_sammon_cache_choice_follows_the_tuning(dev):
    """cache="auto" keeps the distances up to SammonTuning.cache_auto_bytes."""
    from shadergpgpu.algorithms.sammon import Sammon, fit_geometry
    assert fit_geometry(dev, 64, 5, 2, Sammon()).cached
    with dev.tuned(SammonTuning, cache_auto_bytes=4 * 64 * 64 - 1):
        assert not fit_geometry(dev, 64, 5, 2, Sammon()).cached
    assert fit_geometry(dev, 64, 5, 2, Sammon()).cached


def _arg_keys(d):
    return {k[6] for k in d._resources._d if k[:2] == ("sg.reduce", "arg")}


def test_sequence_a_tuning_does_not_leak_into_the_next_call(dev):
    """Calls with a tuning set for them, then without, then with again: every call runs as
    its own tuning says, and what it prepared under one value is not reused under another."""
    rng = np.random.default_rng(41)
    default_reduce = dev.tuning(ReduceTuning)
    for step in range(3):
        # arg-reductions: the prepared chain is keyed by the tuning it was made under
        x = rng.integers(-3, 4, size=777).astype(np.float32)
        strict = step % 2 == 0
        with dev.tuned(ReduceTuning, scan_strict=not strict):
            assert R.argmin(dev, x) == (float(x.min()), int(np.argmin(x)))
        assert R.argmin(dev, x) == (float(x.min()), int(np.argmin(x)))
        assert {default_reduce, default_reduce.replace(scan_strict=False)} <= _arg_keys(dev)
        # the sort's fold passes: the pass count follows the tuning of each call
        X = dev.array(rng.standard_normal((2, 300)))
        for fold in (1, None, 5):
            dev.counter.reset()
            if fold is None:
                for a in sort_pairs(X):
                    a.release()
                assert dev.counter.total == 1 + sum(-(-(b - 2) // 3) for b in range(4, 10))
            else:
                with dev.tuned(SortTuning(fold_log2=fold)):
                    for a in sort_pairs(X):
                        a.release()
                assert dev.counter.total == 1 + sum(-(-(b - 2) // fold)
                                                     for b in range(4, 10))
        X.release()
        # the blur's recipes: flushing or not, the same prepared recipe and the same result
        img = rng.random((17, 23)).astype(np.float32)
        with dev.tuned(BlurTuning, flush_passes=False):
            a = gaussian_blur(img, 2.0, device=dev)
        b = gaussian_blur(img, 2.0, device=dev)
        np.testing.assert_array_equal(a, b)
        # sgemm's fragment order: a tuned call and the next untuned one, both exact
        A, B = rng.uniform(-1, 1, (40, 9)), rng.uniform(-1, 1, (9, 18))
        with dev.tuned(SgemmTuning, ubo_quad_order=not strict):
            c1 = sgemm(A, B, variant="tile8x4-ubo", device=dev)
        c2 = sgemm(A, B, variant="tile8x4-ubo", device=dev)
        assert_close(c1, A @ B, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(c1, c2)
    assert dev.tuning(ReduceTuning) == default_reduce
    assert dev.tuning(SgemmTuning) == SgemmTuning.defaults(SgemmTuning.kind_of(dev))
