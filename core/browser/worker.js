// One Web Worker of the race in the browser: the WebAssembly SIMD kernel (matmul.wat) on its own copy of
// A and B, timing its rows of C = A @ B. The page's main thread never multiplies: it only posts messages.
// Messages in: {type: "init", wasm, fma}, {type: "setup", n}, {type: "run", n, r0, r1, reps}, {type: "result", n}.
// init takes the fused multiply-add kernel (matmul_fma.wasm, relaxed SIMD) where this browser validates it.
"use strict";
let kernel = null;

// The same matrices in every worker and on the GPU: a fixed linear congruential sequence in [-1, 1).
function fill(f32, count, seed) {
  let x = seed >>> 0;
  for (let i = 0; i < count; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    f32[i] = x / 2147483648 - 1;
  }
}

function setup(n) {
  const bytes = (3 * n * n + 8 * n) * 4; // A, B, C and the kernel's packed strip of B
  const memory = kernel.exports.memory;
  const missing = Math.ceil((bytes - memory.buffer.byteLength) / 65536);
  if (missing > 0) memory.grow(missing);
  const view = new Float32Array(memory.buffer, 0, 2 * n * n);
  fill(view.subarray(0, n * n), n * n, 12345);
  fill(view.subarray(n * n), n * n, 67890);
}

self.onmessage = async (event) => {
  const m = event.data;
  try {
    if (m.type === "init") {
      const fused = WebAssembly.validate(m.fma);
      const { instance } = await WebAssembly.instantiate(fused ? m.fma : m.wasm);
      kernel = instance;
      self.postMessage({ type: "ready", fused });
    } else if (m.type === "setup") {
      setup(m.n);
      self.postMessage({ type: "ready" });
    } else if (m.type === "run") {
      const n = m.n;
      const t0 = performance.now();
      for (let r = 0; r < m.reps; r++) kernel.exports.matmul(n, 0, n * n * 4, 2 * n * n * 4, m.r0, m.r1);
      self.postMessage({ type: "done", ms: performance.now() - t0 });
    } else if (m.type === "result") {
      const n = m.n;
      const c = new Float32Array(kernel.exports.memory.buffer, 2 * n * n * 4, n * n).slice();
      self.postMessage({ type: "result", c }, [c.buffer]);
    }
  } catch (error) {
    self.postMessage({ type: "error", message: String(error && error.message || error) });
  }
};
