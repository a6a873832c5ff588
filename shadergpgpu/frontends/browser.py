"""Run a trace bundle, or read the WebGL2 limits, in a real browser: headless Chromium.

The browser loads ``shadergpgpu/web/replay.html`` (with ``player.js``) from a small HTTP server
on 127.0.0.1 that this module starts; the page replays the bundle and POSTs its readbacks back.
Nothing beyond the standard library and a Chromium binary is needed. The binary is found as
``$SHADERGPGPU_CHROMIUM``, ``chromium``, ``chromium-browser``, ``google-chrome`` (Debian:
``apt-get install chromium``); without one, :class:`BrowserNotFound` says so.
"""
from __future__ import annotations

import http.server
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path

import numpy as np

from ..engine.errors import ShaderGPGPUError

#: WebGL2 on Mesa llvmpipe through ANGLE, headless, with no network chatter
FLAGS = ("--headless", "--use-gl=angle", "--use-angle=gl-egl", "--ignore-gpu-blocklist",
         "--no-sandbox", "--disable-gpu-sandbox", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-quic", "--disable-extensions", "--mute-audio")


class BrowserNotFound(ShaderGPGPUError, FileNotFoundError):
    """No Chromium binary to run a page in."""


class BrowserError(ShaderGPGPUError, RuntimeError):
    """The page failed in the browser (the message carries the browser's error)."""


def web_folder() -> Path:
    """The folder holding ``player.js`` and ``replay.html``."""
    return Path(str(resources.files("shadergpgpu") / "web"))


def find_chromium() -> str | None:
    env = os.environ.get("SHADERGPGPU_CHROMIUM")
    if env:
        return env if Path(env).exists() or shutil.which(env) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(name)
        if p:
            return p
    return None


def _parse_result(raw: bytes) -> tuple[dict, list[np.ndarray]]:
    if raw[:8] != b"SGRESULT":
        raise BrowserError("the page posted something that is not a result")
    n = struct.unpack("<I", raw[8:12])[0]
    meta = json.loads(raw[12:12 + n])
    start = 12 + n + (-(12 + n)) % 4
    flat = np.frombuffer(raw[start:], dtype="<f4")
    out, off = [], 0
    for k in meta.get("lengths", []):
        out.append(flat[off:off + k].copy())
        off += k
    return meta, out


def run_page(page: str, files: dict[str, bytes | Path], query: str = "",
             timeout: float = 180.0) -> tuple[dict, list[np.ndarray]]:
    """Serve ``files`` (URL path -> bytes or file) and the web folder, open ``page?query`` in
    headless Chromium and wait for the page's POST to ``/result``: (metadata, float32 arrays).
    A page that posts ``{"ok": false, "error": ...}`` raises :class:`BrowserError`."""
    exe = find_chromium()
    if exe is None:
        raise BrowserNotFound("no Chromium found to run the page (install Debian's 'chromium' "
                              "package, or set SHADERGPGPU_CHROMIUM to a Chromium binary)")
    web = web_folder()
    served = {f"/{p.name}": p for p in web.iterdir() if p.is_file()}
    served.update(files)
    got: dict = {}
    done = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            path = self.path.split("?", 1)[0]
            body = served.get(path)
            if body is None:
                self.send_error(404)
                return
            data = body.read_bytes() if isinstance(body, Path) else body
            self.send_response(200)
            kind = {".html": "text/html", ".js": "text/javascript"}.get(
                Path(path).suffix, "application/octet-stream")
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802
            n = int(self.headers.get("Content-Length", 0))
            got["raw"] = self.rfile.read(n)
            self.send_response(200)
            self.end_headers()
            done.set()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{page.lstrip('/')}"
    if query:
        url += "?" + query
    profile = tempfile.mkdtemp(prefix="sg-chromium-")
    proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        t0 = time.monotonic()
        while not done.wait(0.1):
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")[-2000:]
                raise BrowserError(f"Chromium exited ({proc.returncode}) before the page "
                                   f"answered:\n{err}")
            if time.monotonic() - t0 > timeout:
                raise BrowserError(f"the page did not answer within {timeout:.0f} s")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
        server.shutdown()
        server.server_close()
        shutil.rmtree(profile, ignore_errors=True)
    meta, arrays = _parse_result(got["raw"])
    if not meta.get("ok"):
        raise BrowserError("the page failed in the browser: " + str(meta.get("error")))
    return meta, arrays


def replay(bundle, timeout: float = 180.0) -> tuple[list[np.ndarray], dict]:
    """Replay a saved bundle (path) in headless Chromium: (readbacks shaped as the host read
    them, the page's metadata with ``ms``, the replay's wall time in the page). The bundle is
    checked first (:func:`shadergpgpu.engine.trace.load`: lengths, checksums, format,
    references): a damaged one raises :class:`~shadergpgpu.engine.trace.BundleError` (a
    ValueError) before any browser starts, and ``player.js`` checks it again in the page."""
    from ..engine.trace import load, unpack_reads
    path = Path(bundle)
    meta, _ = load(path)
    if find_chromium() is None:
        raise BrowserNotFound("no Chromium found to replay in (install Debian's 'chromium' "
                              "package, or set SHADERGPGPU_CHROMIUM to a Chromium binary)")
    page, raws = run_page("replay.html", {"/bundle.sgtrace": path}, "bundle=/bundle.sgtrace",
                          timeout)
    if len(raws) != len(meta["reads"]):
        raise BrowserError(f"the browser read back {len(raws)} arrays, the trace has "
                           f"{len(meta['reads'])}")
    return unpack_reads(meta, raws), page


def limits(timeout: float = 60.0) -> dict:
    """The browser's WebGL2 limits (texture size, draw buffers, texture units, float
    blending, precision ...)."""
    meta, _ = run_page("replay.html", {}, "limits=1", timeout)
    return meta["limits"]
