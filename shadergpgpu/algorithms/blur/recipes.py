"""Prepared passes reused by repeated calls, and the recipe cache of each device.

Repeated calls
--------------
The passes of a blur are prepared once per device and image layout (and border, schedule,
tiling; for the exact method also sigma) and kept with their work arrays
(``dev.resource("blur/recipes")``, least recently used first out within
:func:`recipe_cache_bytes` of work arrays per device: the device's
:attr:`BlurTuning.recipe_cache_bytes <.tuning.BlurTuning>`, read on every call), for images up
to :data:`RECIPE_MAX_TEXELS` texels: a
repeated call allocates only its result and draws prepared passes (a new sigma of the recursive
method sets its coefficients again). On llvmpipe this spares most of a small blur's time per
call (the Python work per pass), up to about 256 x 256 grayscale. On a GPU it
also saves allocating the work arrays again (the texture pool keeps only a bounded amount of
idle memory): a 4096 x 4096 image blur holds about 1 GiB of them, within the default bound of
1.25 GiB (a recipe larger than the bound is used once and released); :func:`clear_cache`
hands that memory back. A recipe flushes after each pass
(:attr:`BlurTuning.flush_passes <.tuning.BlurTuning>`), so that the GPU starts on the first
pass while the host draws the others.
"""
from __future__ import annotations

from collections import OrderedDict

from ...engine import validation
from ...engine.arrays import DeviceArray
from ...engine.capture import capture
from .coefficients import iir_uniforms
from .tuning import BlurTuning

# Images up to this many texels (4096 x 4096) reuse prepared passes and work arrays between
# calls (see Recipe), within recipe_cache_bytes(dev) of work arrays per device (a recipe
# larger than that is used once and released). Keeping the work arrays matters on a GPU: the
# engine's texture pool keeps only a bounded amount of idle textures, so a 4096 x 4096 blur
# would allocate its ~1 GiB of planes and summaries again on every call. clear_cache(dev)
# hands the memory back.
RECIPE_MAX_TEXELS = 1 << 24


def clear_cache(device=None) -> None:
    """Release the prepared passes and work arrays that repeated blurs keep on ``device``
    (default: the process-wide one)."""
    dev = validation.pick_device(device, [])
    recipe_cache(dev).release()


def recipe_cache_bytes(dev) -> int:
    """The bound on the work arrays ``dev``'s recipe cache keeps (the device's
    :attr:`BlurTuning.recipe_cache_bytes <.tuning.BlurTuning>`)."""
    return dev.tuning(BlurTuning).recipe_cache_bytes


def recipe_cache(dev) -> "RecipeCache":
    """The device's recipe cache, created on first use, within :func:`recipe_cache_bytes` as
    the device's tuning sets it now (a smaller bound drops recipes at once)."""
    cache = dev.resource("blur/recipes", lambda: RecipeCache(recipe_cache_bytes(dev)))
    cache.bound(recipe_cache_bytes(dev))
    return cache


class Recipe:
    """The passes and work arrays of one blur (image layout and shape, sigma, method, border,
    schedule, tiling), captured once (:func:`~shadergpgpu.engine.capture.capture`: the pass
    builders run on the device with nothing drawn) and replayed for each call on an image of
    that layout: one allocation (the result) and one prepared draw per pass instead of dev.run's
    checks and the work arrays' allocations. The image and the new result are the capture's
    slots, bound to the passes that use them; the other outputs are bound again each run (their
    framebuffers may have been evicted from the device's cache). A recursive blur's recipe
    serves every sigma: the filter coefficients of its line passes (the steps tagged with
    (0: sigma_y / 1: sigma_x, steps per line)) are set again when sigma changes."""

    def __init__(self, cap, x, out, sigmas):
        cap.slots(x=x, out=out)
        cap.disown(out)
        self.capture = cap
        self.sigmas = sigmas
        self.out_layout, self.out_shape = out.layout, tuple(out.shape)
        self.nbytes = cap.nbytes
        out.release()

    @classmethod
    def record(cls, dev, x, sigmas, build) -> "Recipe":
        """Capture ``build(dev)``'s passes (it returns the result array)."""
        with capture(dev, draw=False, own_arrays=True) as cap:
            out = build(dev)
        return cls(cap, x, out, sigmas)

    @property
    def steps(self) -> list:
        return self.capture.steps

    def run(self, dev, x, sigmas) -> DeviceArray:
        coefficients = None
        if sigmas != self.sigmas:
            def coefficients(step):
                return None if step.tag is None else \
                    iir_uniforms(sigmas[step.tag[0]], step.tag[1])
        self.sigmas = None  # until every pass has run with the new coefficients
        out = dev.alloc(self.out_layout, self.out_shape)
        try:
            self.capture.replay(coefficients, flusher(dev), x=x, out=out)
        except BaseException:
            out.release()
            raise
        self.sigmas = sigmas
        return out

    def release(self) -> None:
        self.capture.release()


def flusher(dev):
    """The device's flush where recipes flush (:attr:`BlurTuning.flush_passes
    <.tuning.BlurTuning>`, not while timing), else None."""
    return dev.flush if dev.tuning(BlurTuning).flush_passes and not dev.timing else None


class RecipeCache:
    """Recipes of one device, least recently used first out, within ``max_bytes`` of work
    arrays (held as ``dev.resource("blur/recipes")``; released with the device)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self._items.values())

    def get(self, key):
        r = self._items.get(key)
        if r is not None:
            self._items.move_to_end(key)
        return r

    def bound(self, max_bytes: int) -> None:
        """Keep at most ``max_bytes`` of work arrays from now on (dropping recipes over it)."""
        if max_bytes != self.max_bytes:
            self.max_bytes = max_bytes
            self._shrink(0)

    def put(self, key, recipe: Recipe) -> None:
        self._items[key] = recipe
        self._shrink(1)

    def _shrink(self, keep: int) -> None:
        total = sum(r.nbytes for r in self._items.values())
        while total > self.max_bytes and len(self._items) > keep:
            _, old = self._items.popitem(last=False)
            total -= old.nbytes
            old.release()

    def release(self) -> None:
        for r in self._items.values():
            r.release()
        self._items.clear()


# the names api.py and the package import
_Recipe, _RecipeCache, _recipe_cache, _flusher = Recipe, RecipeCache, recipe_cache, flusher
