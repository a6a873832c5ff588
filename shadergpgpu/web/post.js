/* The result of a page driven by shadergpgpu.frontends.browser.run_page: POSTed to /result as
   "SGRESULT", uint32 JSON length, JSON, padding to 4 bytes, float32 data (the arrays,
   concatenated; the JSON's "lengths" says where each ends). */
async function post(meta, arrays) {
  const head = new TextEncoder().encode(JSON.stringify(meta));
  const pad = (4 - ((12 + head.length) % 4)) % 4;
  const total = arrays.reduce((n, a) => n + a.length, 0);
  const buf = new ArrayBuffer(12 + head.length + pad + 4 * total);
  const bytes = new Uint8Array(buf);
  bytes.set(new TextEncoder().encode("SGRESULT"), 0);
  new DataView(buf).setUint32(8, head.length, true);
  bytes.set(head, 12);
  let off = (12 + head.length + pad) / 4;
  const f = new Float32Array(buf);
  for (const a of arrays) { f.set(a, off); off += a.length; }
  await fetch("/result", { method: "POST", body: buf });
}

/* Load a script (e.g. a library the harness serves) into the page; resolves when it has run. */
function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = src;
    s.onload = resolve;
    s.onerror = () => reject(new Error("could not load " + src));
    document.head.appendChild(s);
  });
}
