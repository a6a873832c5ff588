"""What :meth:`Device.run <shadergpgpu.engine.device.Device.run>` remembers per call signature.

A call of a signature seen before skips the checks that the signature decides: the kernel, the
layouts, blend, rect, slices, defines and the uniform names decide the compiled program, the
uniform types, the viewport and the limits; the arrays' identity and the uniform values do not.
:class:`CallSignature` holds what the full checks decided. :class:`QuickCall` is the fast path of
a plain call (output arrays, device-array inputs, no blend, rect, slices or defines), found by
one dictionary lookup on the kernel and the argument names (a few per set of names, one per set
of layouts, e.g. the levels of a reduction). It checks what can change between calls (the
arrays alive, on the device, of the remembered layouts, no array both read and written; the
uniform values' types), writes only the uniforms whose values changed, and counts its draws in
one :class:`~shadergpgpu.engine.counter.Tally` (and reports them to the device's listeners,
:mod:`.observe`, while any is attached). Anything it does not cover returns False before
drawing, and the full path runs and says what is wrong.

Inside a capture (:mod:`.capture`) ``Device.run`` records prepared passes instead, and a
capture's replay draws through :meth:`Pass.run <shadergpgpu.engine.passes.Pass.run>`'s own fast
path. Outside one, this memo stays the fast path of a repeated call: the same call through a
captured pass would bind its arrays anew each time (:meth:`Pass.bind` checks layouts and
feedback and rebuilds its tables), which costs more than the memo's identity checks.
"""
from __future__ import annotations

from .arrays import DeviceArray
from .counter import STALE
from .kernels import check_uniform

_NONE = object()

#: Fast paths kept per kernel and argument names (one per set of layouts, newest first).
QUICK_LAYOUTS = 4


def arrays_live(dev, inputs: dict, outs: dict) -> bool:
    """The per-call checks of a known signature: every array alive and on ``dev``, no array
    both read and written (False: the full checks run and say what is wrong)."""
    for a in outs.values():
        if a._released or a.device is not dev:
            return False
    for a in inputs.values():
        if getattr(a, "released", False) or getattr(a, "device", dev) is not dev:
            return False
        for o in outs.values():
            if a is o:
                return False
    return True


class UniformReads(dict):
    """Uniform values as a call's loop and split functions see them, noting the names they
    read (all of them, for anything that goes over every value)."""

    __slots__ = ("read",)

    def __init__(self, vals: dict):
        super().__init__(vals)
        self.read = set()

    def _all(self):
        self.read.update(dict.keys(self))

    def __getitem__(self, name):
        self.read.add(name)
        return dict.__getitem__(self, name)

    def get(self, name, default=None):
        self.read.add(name)
        return dict.get(self, name, default)

    def __contains__(self, name):
        self.read.add(name)
        return dict.__contains__(self, name)

    def __iter__(self):
        self._all()
        return dict.__iter__(self)

    def keys(self):
        self._all()
        return dict.keys(self)

    def values(self):
        self._all()
        return dict.values(self)

    def items(self):
        self._all()
        return dict.items(self)

    def copy(self):
        self._all()
        return dict(dict.items(self))

    def __eq__(self, other):
        self._all()
        return dict.__eq__(self, other)

    def __ne__(self, other):
        self._all()
        return dict.__ne__(self, other)

    __hash__ = None

    def __repr__(self):
        self._all()
        return dict.__repr__(self)

    def __or__(self, other):
        self._all()
        return dict(dict.items(self)) | other

    def __ror__(self, other):
        self._all()
        return other | dict(dict.items(self))

    def pop(self, name, *default):
        self._all()
        return dict.pop(self, name, *default)

    def popitem(self):
        self._all()
        return dict.popitem(self)

    def setdefault(self, name, default=None):
        self._all()
        return dict.setdefault(self, name, default)


class CallSignature:
    """What one call signature decided (see :meth:`Device.run`): the compiled kernel, the
    defines, uniform types and defaults, the layouts' shape uniforms, the viewport, and the
    loop cuts per set of uniform values (they are functions of them)."""

    __slots__ = ("dev", "kernel", "layouts", "defs", "slices", "compiled", "types", "defaults",
                 "shapes", "out_names", "viewport", "frags", "mode", "_plans", "_fixed",
                 "_used", "fbo", "fbo_textures", "fbo_epoch", "size")

    def __init__(self, dev, kernel, layouts, defs, slices, size=None):
        self.dev, self.kernel, self.layouts, self.defs = dev, kernel, layouts, defs
        self.slices = slices
        self.size = size            # the drawn rectangle (w, h); None: the whole output
        self._plans: dict = {}
        self._used: tuple = ()      # the uniforms the plans read so far (their cache key)
        self.fbo = self.fbo_textures = None
        self.fbo_epoch = -1
        # no loop, no split: the plan does not depend on the values
        self._fixed = [] if kernel.loop is None and kernel.split is None else None

    def plan(self, vals: dict) -> list:
        """The loop cuts for these uniform values: computed once per values of the uniforms
        that the kernel's loop and split functions read (once for all values when they read
        none), as the signature fixes the layouts and defines."""
        if self._fixed is not None:
            return self._fixed
        used = self._used
        try:
            key = tuple([vals.get(n, _NONE) for n in used])
            got = self._plans.get(key)
        except TypeError:
            key = got = None
        if got is None:
            k, d = self.kernel, self.defs
            reads = UniformReads(vals)
            got = k.slices(self.layouts, reads, d, self.dev.loop_cap, self.slices or 1)
            new = reads.read.difference(used)
            if new:     # a value not read before decides this plan: key on it from now on
                used = self._used = used + tuple(sorted(new, key=repr))
                self._plans.clear()
                try:
                    key = tuple([vals.get(n, _NONE) for n in used])
                    hash(key)
                except TypeError:
                    key = None
            if key is not None:
                if len(self._plans) >= 64:
                    self._plans.clear()
                self._plans[key] = got
        return got

    def finish(self, c, uniforms, layouts, viewport, frags, mode) -> None:
        k = self.kernel
        self.compiled = c
        self.types = {n: t for n, (t, _) in k.uniforms.items()}
        self.defaults = {n: d for n, (_, d) in k.uniforms.items()
                         if n not in uniforms and d is not None}
        self.shapes = [(f"sg_{n}_shape", a.shape_uniform) for n, a in layouts.items()]
        self.out_names = tuple(k.outputs)
        self.viewport, self.frags, self.mode = viewport, frags, mode


class QuickCall:
    """The fast path of one plain call signature (see the module docstring)."""

    __slots__ = ("memo", "out_layouts", "in_layouts", "planned", "tally", "fbo", "fbo_tex",
                 "fbo_epoch")

    def __init__(self, memo: CallSignature, out_layouts: tuple, in_layouts: tuple):
        self.memo = memo
        self.out_layouts = out_layouts
        self.in_layouts = in_layouts
        self.planned = False        # the last call's values drew in one pass
        self.tally = STALE
        self.fbo = None
        self.fbo_tex = ()           # the output textures of the framebuffer kept
        self.fbo_epoch = -1

    def same_layouts(self, other: "QuickCall") -> bool:
        return self.out_layouts == other.out_layouts and self.in_layouts == other.in_layouts

    def call(self, dev, outs, inputs: dict, uniforms: dict) -> bool:
        """Draw the call (``outs``: the output arrays in the kernel's order) and return True;
        False, with nothing drawn, where the call differs from what the signature's checks
        covered (the full path then runs)."""
        for o, lay in zip(outs, self.out_layouts):
            if type(o) is not DeviceArray or o._released or o.device is not dev or \
                    (o.layout is not lay and o.layout != lay):
                return False
        for a, lay in zip(inputs.values(), self.in_layouts):
            if type(a) is not DeviceArray or a._released or a.device is not dev or \
                    a in outs or (a.layout is not lay and a.layout != lay):
                return False
        memo = self.memo
        c = memo.compiled
        kernel = memo.kernel
        if not c.alive:
            return False    # dropped by the compiled-kernel cache
        st = c.state
        held = st.held
        # another call or pass used the program since (the full path of this signature
        # too: it may have put values whose loop cuts this fast path has not planned)
        fresh = st.owner is not self
        changed = fresh or not self.planned
        put = c.put
        vals = None
        if uniforms:
            types = memo.types
            for name, v in uniforms.items():
                if held.get(name, _NONE) is v:
                    continue    # the program holds this very value (checked when put)
                if not changed:
                    changed = True
                t = types[name]
                tv = type(v)
                if not ((tv is float and t == "float") or
                        (tv is int and t == "int" and -2147483648 <= v <= 2147483647)):
                    try:
                        v = check_uniform(kernel.name, name, t, v)
                    except (TypeError, ValueError):
                        return False        # the full path raises it
                put(name, v)
        if fresh:
            for name, v in memo.defaults.items():
                put(name, v)
            for name, v in memo.shapes:
                put(name, v)
            st.owner = self
        if changed:
            fixed = memo._fixed
            if fixed is None:
                vals = dict(memo.defaults)
                for name in uniforms:
                    vals[name] = held[name]
                try:
                    fixed = memo.plan(vals)
                except Exception:       # e.g. a loop over the cap: the full path raises it
                    self.planned = False
                    return False
            if fixed:                   # cut across passes: the full path draws them
                self.planned = False
                return False
            self.planned = True
        w = dev._written
        if len(outs) == 1:
            texs = outs[0].texture
            if len(w) != 1 or w[0] is not texs:
                dev._note_dependent(kernel, inputs, outs)
            if self.fbo_tex is not texs or self.fbo_epoch != dev._fbo_epoch:
                self.fbo = dev._framebuffer(outs)
                self.fbo_tex = texs
                self.fbo_epoch = dev._fbo_epoch
        else:
            texs = tuple([o.texture for o in outs])
            if w != texs:
                dev._note_dependent(kernel, inputs, outs)
            if self.fbo_tex != texs or self.fbo_epoch != dev._fbo_epoch:
                self.fbo = dev._framebuffer(outs)
                self.fbo_tex = texs
                self.fbo_epoch = dev._fbo_epoch
        for name, unit in c.units:
            inputs[name].texture.use(unit)
        cnt = dev.counter
        if dev._blend is None and not dev.timing and dev.tracer is None:
            self.fbo.use()
            c.vao.mglo.render(4, 3, 0, -1)     # moderngl's render, without its wrapper
            t = self.tally
            if t.label is not cnt.label or t.gen is not cnt._gen:
                t = self.tally = cnt.tally(kernel.name, "draw", memo.frags, ("run",))
            t.n += 1
            if dev._observers:
                self._report(dev, held)
                dev._emit_pass(kernel.name, memo.frags, len(outs), None, "draw")
            return True
        cnt._events[cnt.label, "run"] += 1
        if dev._observers:
            self._report(dev, held)
        dev._draw(c, self.fbo, None, None, memo.frags)
        return True

    def _report(self, dev, held: dict) -> None:
        """Hand the call to the device's listeners (its uniforms as the program holds them)."""
        memo = self.memo
        k = memo.kernel
        dev._emit_call(k, memo.layouts, {n: held.get(n) for n in k.uniforms}, memo.defs,
                       memo.frags, memo.size)
