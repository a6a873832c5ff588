"""A non-editable install from a built wheel finds its shaders and runs a kernel."""
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import numpy as np, shadergpgpu as sg
from shadergpgpu.engine.programs import shaders_root
root = shaders_root()
print("MODULE", sg.__file__)
print("SHADERS", root)
dev = sg.Device()
x = dev.array(np.arange(7.0)); y = dev.empty_like(x)
sg.builtin.SAXPY(y, X=x, Y=x, alpha=2.0)
assert np.array_equal(y.get(), 3 * np.arange(7.0, dtype=np.float32)), y.get()
print("KERNEL OK")
"""


@pytest.mark.slow
def test_wheel_ships_shaders_and_runs(tmp_path):
    wheels = tmp_path / "wheels"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                        str(ROOT)], capture_output=True, text=True)
    if r.returncode != 0 and "No matching distribution" in (r.stderr + r.stdout):
        pytest.skip("the build backend could not be fetched (offline)")
    assert r.returncode == 0, r.stderr + r.stdout
    (wheel,) = wheels.glob("shadergpgpu-*.whl")
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert "shadergpgpu/shaders/engine/saxpy.frag" in names
    assert "shadergpgpu/shaders/common/fullscreen.vert" in names
    # shaders used only by tests or benchmarks do not ship
    assert not any("ceiling_" in n or "mrt_scale" in n or "gather_flat" in n for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # install the wheel itself (no deps) into the fresh venv
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile",
                        "--target", purelib, str(wheel)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # dependencies (moderngl, numpy) come from this environment, appended *after* the venv's own
    # site-packages, so the venv's shadergpgpu wins over any checkout or editable install
    deps = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]]]
    (Path(purelib) / "zz_test_deps.pth").write_text("\n".join(dict.fromkeys(deps)) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([str(py), "-c", SCRIPT], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "KERNEL OK" in out
    module = Path(out.split("MODULE ")[1].splitlines()[0])
    shaders = Path(out.split("SHADERS ")[1].splitlines()[0])
    assert Path(purelib) in module.parents, out
    assert Path(purelib) in shaders.parents, out
