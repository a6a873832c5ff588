"""Blur an image on the GPU with the recursive (sigma-independent) or exact Gaussian.

    python demos/blur_image.py photo.png -o blurred.png --sigma 8
    python demos/blur_image.py -o blurred.png --sigma 8          # makes its own test image
    python demos/blur_image.py --sigma 4 --window                # sweep sigma in a window

Reads and writes with pillow (8-bit grayscale, RGB or RGBA; other modes are converted to RGB).
Prints the time, the passes and, for small images, the difference to scipy.
"""
import argparse
import sys
import time

import numpy as np

import shadergpgpu as sg
from shadergpgpu.algorithms.blur import BORDERS, METHODS, SCHEDULES, gaussian_blur


def test_image(h=384, w=512):
    """Shapes, stripes of rising frequency and soft shading, RGB uint8."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 0.5 + 0.5 * np.sin(xx * (1 + 6 * yy / h) / 12.0)
    g = ((xx // 32 + yy // 32) % 2).astype(np.float64)
    b = np.clip(1.2 - np.hypot(xx - w * 0.65, yy - h * 0.45) / (0.3 * h), 0, 1)
    img = np.stack([r, 0.3 + 0.5 * g, b], -1)
    img[h // 6: h // 6 + 4, :, :] = 1.0
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def load(path):
    from PIL import Image
    im = Image.open(path)
    if im.mode not in ("L", "RGB", "RGBA"):
        im = im.convert("RGB")
    return np.asarray(im)


def save(path, arr):
    from PIL import Image
    Image.fromarray(arr).save(path)


def window_loop(img, sigma, method, border, schedule):
    try:
        from shadergpgpu.frontends.window import Viewer
        dev = sg.Device(backend="glfw-visible")
    except Exception as e:  # no GLFW, no display
        print(f"error: --window needs GLFW and a display ({e})", file=sys.stderr)
        return 1
    h, w = img.shape[:2]
    view = Viewer(dev, title=f"Gaussian blur ({method})", size=(w, h))
    x = dev.image(img.astype(np.float32) / 255.0) if img.ndim == 3 else \
        dev.array(img.astype(np.float32) / 255.0)
    t = 0
    while True:
        s = sigma * (1.0 + 0.9 * np.sin(t / 40.0))  # sigma sweeps around the value asked for
        y = gaussian_blur(x, max(s, 0.3), method=method, border=border, schedule=schedule)
        alive = view.show(y, vmin=0.0, vmax=1.0)
        y.release()
        if not alive:
            break
        t += 1
    x.release()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", nargs="?", help="image file (default: a generated test image)")
    ap.add_argument("-o", "--output", default="blurred.png")
    ap.add_argument("--sigma", type=float, nargs="+", default=[4.0],
                    help="one value or two (sigma_y sigma_x)")
    ap.add_argument("--method", choices=METHODS, default="recursive")
    ap.add_argument("--border", choices=BORDERS, default="reflect")
    ap.add_argument("--schedule", choices=SCHEDULES, default="hv")
    ap.add_argument("--window", action="store_true", help="show the blur live in a GLFW window")
    a = ap.parse_args(argv)
    if len(a.sigma) not in (1, 2):
        ap.error("--sigma takes one or two values")
    sigma = a.sigma[0] if len(a.sigma) == 1 else tuple(a.sigma)
    img = load(a.input) if a.input else test_image()
    if a.window:
        return window_loop(img, a.sigma[0], a.method, a.border, a.schedule)

    dev = sg.Device()
    print(f"device: {dev.caps.renderer}")
    print(f"image: {img.shape} {img.dtype}" + ("" if a.input else " (generated test image)"))
    gaussian_blur(img, sigma, method=a.method, border=a.border, schedule=a.schedule, device=dev)
    dev.counter.reset()
    t0 = time.perf_counter()
    out = gaussian_blur(img, sigma, method=a.method, border=a.border, schedule=a.schedule,
                        device=dev)
    t = time.perf_counter() - t0
    passes = dev.counter.snapshot()
    print(f"{a.method} blur, sigma {sigma}, border {a.border}"
          + (f", schedule {a.schedule}" if a.method == "recursive" else "")
          + f": {t * 1e3:.1f} ms (with upload and readback), "
          f"{sum(v['passes'] for v in passes.values())} passes")
    if img.size <= 4_000_000:
        from scipy.ndimage import gaussian_filter
        s = (sigma, sigma) if np.isscalar(sigma) else sigma
        ref = gaussian_filter(img.astype(np.float64), s + (0,) * (img.ndim - 2),
                              mode=a.border, truncate=4.0)
        ref = np.clip(np.rint(ref), 0, 255)
        print(f"max difference to scipy.ndimage.gaussian_filter: "
              f"{int(np.abs(out.astype(int) - ref.astype(int)).max())} (of 255)")
    save(a.output, out)
    print(f"wrote {a.output}")
    dev.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
