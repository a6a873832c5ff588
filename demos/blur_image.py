"""Blur an image on the GPU with the recursive (sigma-independent) or exact Gaussian.

    python demos/blur_image.py photo.png -o out/blurred.png --sigma 8
    python demos/blur_image.py --sigma 8             # own test image, writes out/blurred.png
    python demos/blur_image.py --sigma 4 --window    # sweep sigma in a window

Reads and writes with pillow (8-bit grayscale, RGB or RGBA; other modes are converted to RGB).
Prints the time, the passes and the difference to scipy (skipped when the CPU reference would
take too long, e.g. for a very large sigma).
"""
import sys
import time

import numpy as np

import _demo  # demos/_demo.py: argument checks, output folder, optional packages

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import blur as blur_mod  # noqa: E402
from shadergpgpu.algorithms.blur import BORDERS, METHODS, SCHEDULES  # noqa: E402

# The scipy reference runs while pixels x filter taps stay below this (a few seconds on two
# CPU cores); past it the comparison is skipped with a message.
REFERENCE_TAPS = 4e8


def test_image(h=384, w=512):
    """Shapes, stripes of rising frequency and soft shading, RGB uint8."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 0.5 + 0.5 * np.sin(xx * (1 + 6 * yy / h) / 12.0)
    g = ((xx // 32 + yy // 32) % 2).astype(np.float64)
    b = np.clip(1.2 - np.hypot(xx - w * 0.65, yy - h * 0.45) / (0.3 * h), 0, 1)
    img = np.stack([r, 0.3 + 0.5 * g, b], -1)
    img[h // 6: h // 6 + 4, :, :] = 1.0
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def load(parser, path):
    """The image at ``path`` as a uint8 array, or a one-line error if pillow cannot read it."""
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(path) as im:
            if im.mode not in ("L", "RGB", "RGBA"):
                im = im.convert("RGB")
            arr = np.asarray(im)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        parser.fail(f"{str(path)!r} is not an image pillow can read ({why})")
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    return arr


def save(path, arr):
    from PIL import Image
    Image.fromarray(arr).save(path)


def window_loop(img, sigma, method, border, schedule):
    from shadergpgpu.frontends.window import Viewer
    try:
        dev = sg.Device(backend="glfw-visible")
    except sg.CapabilityError as e:  # no display
        _demo.fail(f"--window needs a display: {str(e).splitlines()[0]}")
    h, w = img.shape[:2]
    view = Viewer(dev, title=f"Gaussian blur ({method})", size=(w, h))
    print("sigma sweeps around the value asked for; close the window to exit")
    x = dev.image(img.astype(np.float32) / 255.0) if img.ndim == 3 else \
        dev.array(img.astype(np.float32) / 255.0)
    t = 0
    while True:
        s = max(sigma * (1.0 + 0.9 * np.sin(t / 40.0)), 0.3)
        y = sg.gaussian_blur(x, s, method=method, border=border, schedule=schedule)
        alive = view.show(y, vmin=0.0, vmax=1.0,
                          title=f"Gaussian blur ({method}, {border} border): sigma {s:.2f}")
        y.release()
        if not alive:
            break
        t += 1
    x.release()
    return 0


def parse(argv=None):
    ap = _demo.Parser(description=__doc__.splitlines()[0])
    ap.add_argument("input", nargs="?",
                    help="image file pillow can read (default: a generated test image)")
    ap.add_argument("-o", "--output", default=None,
                    help="output image; its suffix picks the format (default: out/blurred.png)")
    ap.add_argument("--sigma", type=_demo.positive_float, nargs="+", default=[4.0],
                    metavar="SIGMA",
                    help="standard deviation in pixels, > 0: one value, or two (sigma_y "
                         "sigma_x); default 4")
    ap.add_argument("--method", choices=METHODS, default="recursive",
                    help="recursive: cost independent of sigma (default); exact: FIR filter "
                         "truncated at 4 sigma")
    ap.add_argument("--border", choices=BORDERS, default="reflect",
                    help="how the image continues past its edges, as in scipy (default reflect)")
    ap.add_argument("--schedule", choices=SCHEDULES, default="hv",
                    help="pass schedule of the recursive method (default hv)")
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the comparison with scipy.ndimage.gaussian_filter")
    ap.add_argument("--window", action="store_true",
                    help="show the blur live in a GLFW window, sigma sweeping around the value "
                         "(needs the 'window' extra and a display)")
    a = ap.parse_args(argv)
    if len(a.sigma) not in (1, 2):
        ap.fail(f"--sigma takes one or two values, got {len(a.sigma)}")
    big = max(a.sigma)
    limit = getattr(blur_mod, "MAX_RECURSIVE_SIGMA", None)
    if a.method == "recursive" and limit is not None and big > limit:
        print(f"note: --sigma {big:g} capped at {limit:g}, the recursive method's limit (past "
              "it the blurred image is flat to within float32 rounding anyway)")
        a.sigma = [min(s, limit) for s in a.sigma]
    radius = getattr(blur_mod, "MAX_EXACT_RADIUS", None)
    if a.method == "exact" and radius is not None and int(4 * big + 0.5) > radius:
        ap.fail(f"--sigma {big:g} is too large for --method exact (a kernel radius over "
                f"{radius:,} taps); use --method recursive")
    if a.input is not None:
        a.input = _demo.input_file(ap, a.input, "input image")
    if a.window:
        _demo.need_window()
    else:
        a.output = _demo.output_path(ap, a.output, "blurred.png", _demo.image_suffixes(),
                                     option="--output")
    a.img = load(ap, a.input) if a.input else test_image()
    if not a.no_reference and not a.window and not _demo.have("scipy"):
        print("note: scipy is not installed, so the comparison with scipy is skipped "
              "(pip install 'shadergpgpu[report]')")
        a.no_reference = True
    return a


def main(argv=None):
    _demo.unbuffered()
    a = parse(argv)
    sigma = a.sigma[0] if len(a.sigma) == 1 else tuple(a.sigma)
    img = a.img
    if a.window:
        return window_loop(img, a.sigma[0], a.method, a.border, a.schedule)

    dev = sg.Device()
    print(f"device: {dev.caps.renderer}")
    print(f"image: {img.shape} {img.dtype}" + ("" if a.input else " (generated test image)"))
    sg.gaussian_blur(img, sigma, method=a.method, border=a.border, schedule=a.schedule, device=dev)
    dev.counter.reset()
    t0 = time.perf_counter()
    out = sg.gaussian_blur(img, sigma, method=a.method, border=a.border, schedule=a.schedule,
                        device=dev)
    t = time.perf_counter() - t0
    passes = dev.counter.snapshot()
    print(f"{a.method} blur, sigma {sigma}, border {a.border}"
          + (f", schedule {a.schedule}" if a.method == "recursive" else "")
          + f": {t * 1e3:.1f} ms (with upload and readback), "
          f"{sum(v['passes'] for v in passes.values())} passes")
    if not a.no_reference:
        s = (sigma, sigma) if np.isscalar(sigma) else tuple(sigma)
        taps = img.size * sum(2 * int(4.0 * v + 0.5) + 1 for v in s)
        if taps > REFERENCE_TAPS:
            print(f"scipy reference skipped: sigma {sigma} on this {img.shape[1]}x"
                  f"{img.shape[0]} image needs {taps:.2g} pixel-taps on the CPU (limit "
                  f"{REFERENCE_TAPS:.0e}; --no-reference silences this)")
        else:
            from scipy.ndimage import gaussian_filter
            print("computing the scipy reference on the CPU ...")
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
