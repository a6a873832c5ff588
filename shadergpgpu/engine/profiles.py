"""Device profiles: the limits of a legacy or mobile GPU, as data, enforced on the real context.

A profile (a JSON file in ``shadergpgpu/profiles/``, or a path) lists the limits that change
what an algorithm may do (texture size, render targets, float32 rendering and blending, the
loop cap, uniform components, texture units, buffer textures, the GLSL dialect) with a source
for each number. ``Device(profile="webgl2")`` (or ``SHADERGPGPU_PROFILE``) keeps running on the
real GL context but behaves as that GPU: arrays wrap at its texture size, passes with more
outputs than its draw buffers, blended passes without float blending, too many inputs or buffer
textures where it has none are refused, and loops are budgeted by its cap. ``native`` (the
default) is the device itself. A limit of ``null`` means "as the real device".
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

LIMIT_KEYS = ("max_texture_size", "max_draw_buffers", "float32_render", "float32_blend",
              "loop_cap", "max_fragment_uniform_components", "max_texture_units",
              "buffer_textures", "glsl")
DIALECTS = ("330", "300 es", "310 es", "110")


@dataclass(frozen=True)
class Profile:
    """A device profile: ``limits`` (None = as probed), optional ``speeds``, ``sources``."""

    name: str
    description: str = ""
    limits: dict = field(default_factory=dict)
    speeds: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    path: str = ""
    #: "gpu" or "software" for a profile measured by ``shadergpgpu calibrate`` (what kind of
    #: renderer it describes: kernels chosen for speed follow it, see
    #: ``Device.plans_for_software``); "" for the built-in ones
    kind: str = ""

    def limit(self, key: str):
        return self.limits.get(key)

    @property
    def glsl(self) -> str:
        return self.limits.get("glsl") or "330"

    @property
    def is_native(self) -> bool:
        return all(self.limits.get(k) is None for k in LIMIT_KEYS if k != "glsl")

    def format(self) -> str:
        lines = [f"{self.name}: {self.description}"]
        for k in LIMIT_KEYS:
            v = self.limits.get(k)
            lines.append(f"  {k:<34} {'(as the device)' if v is None else v}")
        for k, v in self.speeds.items():
            lines.append(f"  {k:<34} {v}")
        return "\n".join(lines)


def _folder() -> Path:
    try:
        p = Path(str(resources.files("shadergpgpu") / "profiles"))
        if p.is_dir():
            return p
    except (ModuleNotFoundError, TypeError):  # pragma: no cover
        pass
    return Path(__file__).resolve().parent.parent / "profiles"


def names() -> list[str]:
    """Built-in profile names."""
    return sorted(p.stem for p in _folder().glob("*.json"))


def _validate(data: dict, where: str) -> Profile:
    if not isinstance(data, dict) or "name" not in data or "limits" not in data:
        raise ValueError(f"{where}: a profile is a JSON object with 'name' and 'limits'")
    limits = dict(data["limits"])
    unknown = set(limits) - set(LIMIT_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown limit(s) {sorted(unknown)}; known: "
                         + ", ".join(LIMIT_KEYS))
    for k in ("max_texture_size", "max_draw_buffers", "loop_cap",
              "max_fragment_uniform_components", "max_texture_units"):
        v = limits.get(k)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise ValueError(f"{where}: limit {k} must be a positive integer or null, got {v!r}")
    for k in ("float32_render", "float32_blend", "buffer_textures"):
        v = limits.get(k)
        if v is not None and not isinstance(v, bool):
            raise ValueError(f"{where}: limit {k} must be true, false or null, got {v!r}")
    if limits.get("glsl") not in (None,) + DIALECTS:
        raise ValueError(f"{where}: glsl must be one of {DIALECTS}, got {limits.get('glsl')!r}")
    kind = str(data.get("kind") or "")
    if kind not in ("", "gpu", "software"):
        raise ValueError(f"{where}: kind must be 'gpu' or 'software', got {kind!r}")
    return Profile(name=str(data["name"]), description=str(data.get("description", "")),
                   limits=limits, speeds=dict(data.get("speeds") or {}),
                   sources=dict(data.get("sources") or {}), path=where, kind=kind)


def load(profile) -> Profile:
    """A :class:`Profile` from a built-in name, a JSON file path, or a Profile."""
    if isinstance(profile, Profile):
        return profile
    if profile is None:
        profile = "native"
    p = Path(str(profile))
    if p.suffix == ".json" and p.is_file():
        return _validate(json.loads(p.read_text()), str(p))
    f = _folder() / f"{str(profile).strip().lower()}.json"
    if not f.is_file() and str(profile).strip().lower() == "native":
        return Profile("native", "the real device, as probed")
    if not f.is_file():
        raise ValueError(f"unknown device profile {profile!r}; built in: {', '.join(names())} "
                         "(or give a path to a .json profile)")
    return _validate(json.loads(f.read_text()), f"profiles/{f.name}")
