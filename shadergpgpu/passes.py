"""Render passes: the pass counter and prepared (reusable) passes.

Every kernel run is one render pass: bind input textures, set uniforms, attach 1..8 output
textures to a framebuffer, set the viewport (whole output or a sub-rectangle) and the blend
mode, draw one triangle covering the viewport. The :class:`PassCounter` records each pass under
the current phase label (``with device.phase("forward"): ...``), with the number of fragments
shaded and, when timing is on, the GPU time from timer queries. The pass-count reports read it.
"""
from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager

BLEND_MODES = (None, "add", "max", "min")

# The Device whose GL context is current (several devices may share a process; the library is
# not thread-safe: use a device from the thread that made it).
current_device = [None]


def blend_mode(blend) -> str | None:
    if blend is True:
        return "add"
    if blend is False or blend is None:
        return None
    if blend not in BLEND_MODES:
        raise ValueError(f"blend must be False, True/'add', 'max' or 'min', got {blend!r}")
    return blend


class PassCounter:
    """Counts passes, fragments and (optionally) GPU nanoseconds per phase label."""

    def __init__(self):
        self.label = "default"
        self.passes: dict[str, int] = defaultdict(int)
        self.fragments: dict[str, int] = defaultdict(int)
        self.gpu_ns: dict[str, int] = defaultdict(int)

    @contextmanager
    def phase(self, label: str):
        previous, self.label = self.label, str(label)
        try:
            yield self
        finally:
            self.label = previous

    def record(self, fragments: int, gpu_ns: int | None = None, count: int = 1) -> None:
        """Record ``count`` passes of ``fragments`` fragments each under the current label."""
        label = self.label
        self.passes[label] += count
        self.fragments[label] += fragments * count
        if gpu_ns is not None:
            self.gpu_ns[label] += gpu_ns

    def reset(self) -> None:
        self.passes.clear()
        self.fragments.clear()
        self.gpu_ns.clear()

    @property
    def total(self) -> int:
        return sum(self.passes.values())

    def snapshot(self) -> dict:
        """Plain-dict copy: {label: {"passes", "fragments", "gpu_ms"}}."""
        out = {}
        for label in self.passes:
            out[label] = {"passes": self.passes[label], "fragments": self.fragments[label],
                          "gpu_ms": self.gpu_ns.get(label, 0) / 1e6}
        return out

    def __repr__(self):
        inner = ", ".join(f"{k}={v}" for k, v in self.passes.items())
        return f"PassCounter({inner})"


class Pass:
    """A prepared render pass: program, framebuffer and bindings resolved once.

    ``run(**uniforms)`` draws with as little Python work per call as the raw moderngl calls
    need; ``bind(name=array)`` swaps an input or output for one of the same layout (ping-pong).
    Made by :meth:`shadergpgpu.device.Device.prepare`.
    """

    def __init__(self, device, kernel, inputs: dict, outputs: dict, uniforms: dict,
                 blend, rect):
        self.device = device
        self.kernel = kernel
        self.inputs = dict(inputs)
        self.outputs = dict(outputs)
        self.blend = blend_mode(blend)
        self.rect = rect
        self.uniforms = {}
        self._ucache = {}
        self._refresh()
        self.set(**uniforms)

    def _refresh(self):
        dev = self.device
        self._binds = [(_binder(self.inputs[n]), u) for n, u in self.kernel.units]
        outs = [self.outputs[n] for n in self.kernel.output_names]
        self._fbo = dev._framebuffer(outs)
        self._viewport, self._fragments = dev._viewport(outs, self.rect)

    def set(self, **uniforms) -> "Pass":
        """Set uniform values that stay until changed."""
        k = self.kernel
        for name, v in uniforms.items():
            u = k.uniform(name)
            if u is not None:
                self._ucache[name] = u
                self.uniforms[name] = (u, v)
                if k.owner is self:
                    u.value = v
        return self

    def bind(self, **arrays) -> "Pass":
        """Replace inputs/outputs by arrays of the same layout (e.g. swap ping-pong buffers)."""
        for k, a in arrays.items():
            table = self.inputs if k in self.inputs else self.outputs if k in self.outputs else None
            if table is None:
                raise KeyError(f"this pass has no input or output named {k!r}")
            if a.layout != table[k].layout:
                raise ValueError(f"{k}: new array's layout differs from the prepared one")
            table[k] = a
        self.device._check_no_feedback(self.inputs, self.outputs)
        self._refresh()
        return self

    def run(self, **uniforms) -> None:
        # The hot path of every iterative algorithm: this repeats Device._draw inline, with the
        # per-pass state resolved in advance, to stay close to raw moderngl's cost per pass.
        dev = self.device
        if current_device[0] is not dev:
            dev.activate()
        k = self.kernel
        if uniforms:
            cache = self._ucache
            for name, v in uniforms.items():
                u = cache.get(name)
                if u is None:
                    self.set(**{name: v})
                    continue
                self.uniforms[name] = (u, v)
                u.value = v
        if k.owner is not self:  # another pass or run() used this program since: restore ours
            for u, v in self.uniforms.values():
                u.value = v
            k.owner = self
        for use, unit in self._binds:
            use(unit)
        if self.blend is not dev._blend or self._viewport is not None or dev.timing:
            dev._draw(k, self._fbo, self._viewport, self.blend, self._fragments)
            return
        self._fbo.use()
        k.vao.render(4, 3)
        c = dev.counter
        label = c.label
        c.passes[label] += 1
        c.fragments[label] += self._fragments

    __call__ = run

    def repeat(self, name: str, values) -> int:
        """Run the pass once per value of uniform ``name`` (e.g. a loop index); returns the count.

        Same result as ``for v in values: self.run(**{name: v})``, and each draw is still one
        counted render pass, but inputs, framebuffer, viewport and blend mode are bound once and
        each further pass costs one uniform write and one draw (for long multipass loops such as
        one accumulating pass per training vector). With ``timing=True`` it runs pass by pass.
        """
        values = list(values)
        if not values:
            return 0
        u = self.kernel.uniform(name)
        if self.device.timing or u is None or len(values) == 1:
            for v in values:
                self.run(**{name: v})
            return len(values)
        self.run(**{name: values[0]})
        render = self.kernel.vao.render
        for v in values[1:]:
            u.value = v
            render(4, vertices=3)
        self.uniforms[name] = (u, values[-1])
        self.device.counter.record(self._fragments, count=len(values) - 1)
        return len(values)


def _binder(arr):
    """The cheapest callable that binds ``arr`` to a texture unit."""
    tex = getattr(arr, "texture", None)
    return tex.use if tex is not None and type(arr).__name__ == "DeviceArray" else arr.bind
