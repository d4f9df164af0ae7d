// The race on the student's own laptop: WebGPU against WebAssembly SIMD in 1 and k Web Workers.
// The browser measures; the server judges (core/browser/judge.py): this sends raw per-call samples, the
// adapter's facts and the user agent, never a statistic or a verdict. Loaded by st.components.v2 as an
// ES module; `data` comes from core/browser/assets.py (sizes, budget, the kernels, the messages).
//
// Timing, per size and series: one warm-up call (never a sample), then calibration (never samples either)
// of the calls per sample, so a sample lasts at least data.min_sample_ms (well above performance.now()'s
// 0.1 ms steps); then data.samples samples, each awaited: the workers' replies, or
// queue.onSubmittedWorkDone() on the GPU. Each GPU kernel's result is checked against the CPU's first (its
// own tolerance: float32, or f16); a wrong one is not timed. GPU series: "webgpu float32"; "webgpu f16" where
// the adapter offers shader-f16; at data.split_n "webgpu split dispatches", the float32 product as one small
// dependent dispatch per 16-wide slice of the inner dimension. submit() alone (without waiting) is timed once
// per size: the "forgot to wait" figure. Where the adapter offers timestamp queries, each GPU sample also
// carries the GPU's own time (beginning to end of its pass). A lost device ends the run with the sizes
// finished before it; globalThis.__gvcLoseDeviceAt = n (set by a test only) destroys the device at size n.

const RUNS = (globalThis.__gvcBrowserRaces ??= new Map()); // a run outlives the page's reruns

function runId() {
  if (globalThis.crypto?.randomUUID) {
    try {
      return crypto.randomUUID(); // missing on insecure pages
    } catch (error) { /* fall through */ }
  }
  const bytes = new Uint8Array(16);
  if (globalThis.crypto?.getRandomValues) crypto.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function fill(count, seed) { // the workers' sequence (worker.js), for the GPU's copy of A and B
  const f32 = new Float32Array(count);
  let x = seed >>> 0;
  for (let i = 0; i < count; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    f32[i] = x / 2147483648 - 1;
  }
  return f32;
}

function relError(c, ref) {
  let diff = 0, norm = 0;
  for (let i = 0; i < ref.length; i++) {
    const d = c[i] - ref[i];
    diff += d * d;
    norm += ref[i] * ref[i];
  }
  return Math.sqrt(diff / (norm || 1));
}

// ---- the CPU: k workers, each a kernel of its own
class Workers {
  constructor(k, data) {
    const url = URL.createObjectURL(new Blob([data.worker], { type: "text/javascript" }));
    const bytes = (b64) => Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0)).buffer;
    this.pool = Array.from({ length: k }, () => new Worker(url));
    this.ready = Promise.all(this.pool.map((w) => this.ask(w, { type: "init", wasm: bytes(data.wasm), fma: bytes(data.wasm_fma) })))
      .then((replies) => { this.kernel = replies[0].fused ? "WebAssembly SIMD, fused multiply-add" : "WebAssembly SIMD"; });
  }
  ask(worker, message) {
    return new Promise((resolve, reject) => {
      worker.onmessage = (event) => event.data.type === "error" ? reject(new Error(event.data.message)) : resolve(event.data);
      worker.postMessage(message);
    });
  }
  async setup(n) { await Promise.all(this.pool.map((w) => this.ask(w, { type: "setup", n }))); }
  async time(n, k, reps) { // ms per call of k workers splitting C's rows, wall clock over all of them
    const rows = Math.ceil(n / k), t0 = performance.now();
    await Promise.all(this.pool.slice(0, k).map((w, i) =>
      this.ask(w, { type: "run", n, r0: Math.min(n, i * rows), r1: Math.min(n, (i + 1) * rows), reps })));
    return (performance.now() - t0) / reps;
  }
  async result(n, k) { // C as the last run left it: worker i holds rows [i * rows, (i + 1) * rows)
    const rows = Math.ceil(n / k), parts = await Promise.all(this.pool.slice(0, k).map((w) => this.ask(w, { type: "result", n })));
    const c = parts[0].c;
    parts.forEach((part, i) => c.set(part.c.subarray(i * rows * n, Math.min(n, (i + 1) * rows) * n), i * rows * n));
    return c;
  }
  close() { this.pool.forEach((w) => w.terminate()); }
}

// ---- the GPU: why it is missing, or a device and its pipelines
function software(facts) { // SwiftShader and the like: the CPU drawing, no GPU (core/results/browser.py's rule)
  return facts.fallback || /swiftshader|software/i.test(`${facts.architecture} ${facts.vendor}`);
}

async function openGpu(data) {
  if (!data.gpu) return { state: "skipped", note: data.messages.skipped };
  if (!globalThis.isSecureContext) return { state: "insecure", note: data.messages.insecure.replace("{origin}", location.origin) };
  if (!navigator.gpu) return { state: "no_webgpu", note: data.messages.no_webgpu };
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) return { state: "no_adapter", note: data.messages.no_adapter };
  const info = adapter.info || {};
  const limits = {};
  for (const name of ["maxBufferSize", "maxStorageBufferBindingSize", "maxComputeWorkgroupsPerDimension"]) limits[name] = adapter.limits[name];
  const facts = {
    vendor: info.vendor || "", architecture: info.architecture || "", device: info.device || "",
    description: info.description || "", fallback: info.isFallbackAdapter === true || adapter.isFallbackAdapter === true,
    limits, features: [...adapter.features].sort(),
  };
  // features taken only where offered: the GPU's own clock beside the wall clock, and f16 arithmetic
  const wanted = ["timestamp-query", "shader-f16"].filter((f) => adapter.features.has(f));
  const device = await adapter.requestDevice({ requiredFeatures: wanted,
    requiredLimits: { maxBufferSize: limits.maxBufferSize, maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize } });
  const gpu = { state: "ok", note: "", facts, device, lost: null, stamps: wanted.includes("timestamp-query") };
  device.lost.then((why) => { gpu.lost = why.message || why.reason || "lost"; });
  const pipeline = (code) => device.createComputePipeline({ layout: "auto",
    compute: { module: device.createShaderModule({ code }), entryPoint: "main" } });
  gpu.pipeline = pipeline(data.wgsl);
  if (wanted.includes("shader-f16")) gpu.pipeline16 = pipeline(data.wgsl_f16);
  return gpu;
}

function gpuFits(gpu, n) {
  const bytes = n * n * 4, l = gpu.facts.limits;
  return bytes <= l.maxBufferSize && bytes <= l.maxStorageBufferBindingSize && Math.ceil(n / 16) <= l.maxComputeWorkgroupsPerDimension;
}

function gpuSize(gpu, n) { // buffers for one size; kernel(pipeline, parts) times the product as `parts` dispatches
  const d = gpu.device, bytes = n * n * 4, use = GPUBufferUsage, owned = [];
  const buffer = (usage, size = bytes) => { const b = d.createBuffer({ size, usage }); owned.push(b); return b; };
  const a = buffer(use.STORAGE | use.COPY_DST), b = buffer(use.STORAGE | use.COPY_DST);
  const c = buffer(use.STORAGE | use.COPY_SRC), read = buffer(use.MAP_READ | use.COPY_DST);
  d.queue.writeBuffer(a, 0, fill(n * n, 12345));
  d.queue.writeBuffer(b, 0, fill(n * n, 67890));
  const groups = Math.ceil(n / 16);
  const query = gpu.stamps ? d.createQuerySet({ type: "timestamp", count: 2 }) : null;
  const resolved = query ? buffer(use.QUERY_RESOLVE | use.COPY_SRC, 16) : null;
  const stamped = query ? buffer(use.MAP_READ | use.COPY_DST, 16) : null;
  const alive = () => { if (gpu.lost) throw new Error(`the GPU device was lost: ${gpu.lost}`); };
  const kernel = (pipeline, parts = 1) => {
    const per = Math.ceil(groups / parts); // tiles of the inner dimension per dispatch; each adds to C after the last
    const binds = Array.from({ length: parts }, (_, i) => {
      const dims = buffer(use.UNIFORM | use.COPY_DST, 16);
      d.queue.writeBuffer(dims, 0, new Uint32Array([n, i * per, parts === 1 ? 0xffffffff : (i + 1) * per, i > 0 ? 1 : 0]));
      return d.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [a, b, c, dims].map(
        (buf, j) => ({ binding: j, resource: { buffer: buf } })) });
    });
    const commands = (reps, stamp = false) => {
      const encoder = d.createCommandEncoder();
      const pass = encoder.beginComputePass(stamp && query ? { timestampWrites: { querySet: query,
        beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {});
      pass.setPipeline(pipeline);
      for (let r = 0; r < reps; r++) {
        for (const bind of binds) {
          pass.setBindGroup(0, bind);
          pass.dispatchWorkgroups(groups, groups);
        }
      }
      pass.end();
      if (stamp && query) {
        encoder.resolveQuerySet(query, 0, 2, resolved, 0);
        encoder.copyBufferToBuffer(resolved, 0, stamped, 0, 16);
      }
      return encoder.finish();
    };
    let lastStamp = null; // ms per call by the GPU's timestamps, of the last awaited sample
    const time = async (reps) => { // awaited: ms per call by the wall clock
      alive();
      const work = commands(reps, true), t0 = performance.now();
      d.queue.submit([work]);
      await d.queue.onSubmittedWorkDone();
      const ms = (performance.now() - t0) / reps;
      alive();
      if (stamped) { // read after the clock stopped: the map is not timed
        await stamped.mapAsync(GPUMapMode.READ);
        const [begin, end] = new BigUint64Array(stamped.getMappedRange());
        lastStamp = end > begin ? Number(end - begin) / 1e6 / reps : 0;
        stamped.unmap();
      }
      return ms;
    };
    const unawaited = async (reps) => { // submit() alone, the classic bug; then wait before anything else
      const work = commands(reps), t0 = performance.now();
      d.queue.submit([work]);
      const ms = (performance.now() - t0) / reps;
      await d.queue.onSubmittedWorkDone();
      return ms;
    };
    return { time, unawaited, stamp: () => lastStamp };
  };
  const result = async () => {
    const encoder = d.createCommandEncoder();
    encoder.copyBufferToBuffer(c, 0, read, 0, bytes);
    d.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const out = new Float32Array(read.getMappedRange()).slice();
    read.unmap();
    return out;
  };
  const destroy = () => [...owned, query].forEach((x) => x?.destroy());
  return { kernel, result, destroy, groups };
}

// ---- one series at one size: warm-up, repetitions, samples
async function measure(race, label, n, timeOne) {
  await timeOne(1); // never a sample: first-call costs (compilation, page faults)
  let reps = 1, warm = await timeOne(1); // then as many calls a sample as last min_sample_ms (never samples either)
  while (warm * reps < race.data.min_sample_ms && reps < race.data.max_reps && !race.stopped) {
    reps = Math.min(race.data.max_reps, Math.max(2 * reps, Math.ceil(race.data.min_sample_ms / Math.max(warm, 0.001))));
    warm = await timeOne(reps);
  }
  const times = [];
  for (let s = 0; s < race.data.samples && !race.stopped; s++) {
    race.show(`n = ${n}: ${label}, sample ${s + 1} of ${race.data.samples}`);
    times.push((await timeOne(reps)) / 1000);
  }
  return { warm, reps, times };
}

async function raceSize(race, n) {
  const { data, cpu, gpu } = race;
  const k = race.k;
  await cpu.setup(n);
  race.computed = 0;
  const series = [["wasm 1 worker", 1], ...(k > 1 ? [[`wasm ${k} workers`, k]] : [])];
  for (const [label, count] of series) {
    if (race.slow.has(label) || race.stopped) continue;
    const m = await measure(race, label, n, (reps) => cpu.time(n, count, reps));
    race.computed = count; // who holds this size's C, for the GPU's check
    if (m.times.length >= 3) race.points.push({ series: label, n, times_s: m.times, reps: m.reps });
    if (m.warm * 8 * data.samples / 1000 > data.budget_s) race.slow.add(label); // the next size (about 2n) would overrun
  }
  if (gpu.state !== "ok" || race.slow.has("webgpu") || race.stopped) return;
  if (!gpuFits(gpu, n)) { race.slow.add("webgpu"); race.notes.push(`n = ${n} exceeds this adapter's buffer limits`); return; }
  if (!race.computed) { race.slow.add("webgpu"); race.notes.push(`n = ${n}: no CPU result to check the GPU's against`); return; }
  const sized = gpuSize(gpu, n), expected = await cpu.result(n, race.computed);
  // float32 (with the "forgot to wait" figure), f16 where offered, and at data.split_n the float32 product as
  // one dependent dispatch per 16-wide slice of the inner dimension: the same work, many tiny steps
  const kernels = [["webgpu float32", gpu.pipeline, 1, data.max_rel_error],
    ...(gpu.pipeline16 ? [["webgpu f16", gpu.pipeline16, 1, data.max_rel_error_f16]] : []),
    ...(n === data.split_n && sized.groups > 1 ? [["webgpu split dispatches", gpu.pipeline, sized.groups, data.max_rel_error]] : [])];
  try {
    for (const [label, pipeline, parts, tolerance] of kernels) {
      if (race.stopped) break;
      if (globalThis.__gvcLoseDeviceAt === n) { // a test's hook (tests/e2e): the device lost mid-run, for real
        gpu.device.destroy();
        await gpu.device.lost;
      }
      const timer = sized.kernel(pipeline, parts);
      await timer.time(1);
      const error = relError(await sized.result(), expected);
      if (!(error <= tolerance)) { race.notes.push(`n = ${n}: ${label}'s result differs from the CPU's (${error.toExponential(1)}): not timed`); continue; }
      const stamps = [];
      const m = await measure(race, label, n, async (reps) => {
        const ms = await timer.time(reps);
        if (timer.stamp() !== null) stamps.push(timer.stamp() / 1000);
        return ms;
      });
      const point = { series: label, n, times_s: m.times, reps: m.reps, rel_error: error };
      if (parts > 1) point.dispatches = parts;
      if (label === "webgpu float32") point.unawaited_s = (await timer.unawaited(m.reps)) / 1000;
      if (stamps.length >= m.times.length) point.timestamp_s = stamps.slice(-m.times.length); // the samples' own
      if (m.times.length >= 3 && !gpu.lost) race.points.push(point);
      // a weak GPU must not meet the system's watchdog (about 2 s a dispatch): no size whose call would near it;
      // a software adapter draws on the CPU, out of the watchdog's reach: only the time budget holds it. (The
      // split runs at one size only: the next size's cost is the whole dispatches'.)
      if (parts === 1 && ((m.warm * 8 > data.watchdog_ms && !software(gpu.facts))
          || m.warm * 8 * data.samples / 1000 > data.budget_s)) {
        race.slow.add("webgpu");
      }
    }
  } finally {
    sized.destroy();
  }
}

async function runRace(race) {
  const { data } = race;
  try {
    performance.mark("gvc-race-start"); // the run's span on the page's timeline (a test checks no long task in it)
    race.show("starting the workers and the GPU ...");
    race.cpu = new Workers(race.k, data);
    await race.cpu.ready;
    try {
      race.gpu = await openGpu(data);
    } catch (error) {
      race.gpu = { state: "error", note: String(error?.message || error) };
    }
    race.showGpu();
    for (const [i, n] of data.sizes.entries()) {
      if (race.stopped) break;
      race.fraction = i / data.sizes.length;
      try {
        await raceSize(race, n);
      } catch (error) { // a lost device rejects what was in flight; its promise may settle a moment later
        if (race.gpu?.device) await Promise.race([race.gpu.device.lost, new Promise((ok) => setTimeout(ok, 500))]);
        if (!race.gpu?.lost) throw error;
      }
      if (race.gpu.lost) { // keep the finished sizes: the run ends here with what it has
        race.gpu.state = "lost";
        race.gpu.note = `${data.messages.lost} (${race.gpu.lost})`;
        race.showGpu();
        break;
      }
      if (race.slow.size >= (race.k > 1 ? 3 : 2)) break;
    }
  } catch (error) {
    race.notes.push(String(error?.message || error));
  } finally {
    race.cpu?.close();
    race.gpu?.device?.destroy?.();
  }
  race.done = true;
  race.fraction = 1;
  race.show(race.points.length ? "done: the server judges it below" : `nothing measured: ${race.notes.join("; ")}`);
  if (!race.points.length) return;
  const gpu = race.gpu || { state: "error", note: "" };
  performance.mark("gvc-race-sent");
  race.send({
    run_id: race.id, user_agent: navigator.userAgent, cores: navigator.hardwareConcurrency || null,
    workers: race.k, kernel: race.cpu?.kernel || "", secure: globalThis.isSecureContext === true, gpu: gpu.state,
    gpu_note: [gpu.note, ...race.notes].filter(Boolean).join("; ").slice(0, 1900), adapter: gpu.facts || null,
    points: race.points, stopped: race.stopped,
  });
}

function view(root) {
  const get = (id) => root.querySelector(`#${id}`);
  return { run: get("gvc-run"), stop: get("gvc-stop"), bar: get("gvc-bar"), status: get("gvc-status"), gpu: get("gvc-gpu") };
}

export default function ({ data, key, parentElement, setStateValue }) {
  const ui = view(parentElement);
  let race = RUNS.get(key);
  const attach = (r) => {
    r.show = (text) => {
      ui.status.textContent = text;
      ui.bar.value = r.fraction;
      ui.run.disabled = !r.done;
      ui.stop.disabled = r.done;
    };
    r.showGpu = () => {
      ui.gpu.textContent = r.gpu?.state === "ok" ? `GPU: ${[r.gpu.facts.vendor, r.gpu.facts.architecture].filter(Boolean).join(" ") || "WebGPU adapter"}${software(r.gpu.facts) ? " (software, not a GPU)" : ""}` : (r.gpu?.note || "");
      ui.gpu.dataset.state = r.gpu?.state || "";
    };
    r.send = (payload) => setStateValue("result", payload);
    r.show(ui.status.textContent || (r.done ? "done" : "running"));
    if (r.gpu) r.showGpu();
  };
  if (race) attach(race);
  ui.run.onclick = () => {
    if (race && !race.done) return;
    // k: as chosen, or (0) this laptop's own logical cores, from 2 to data.max_workers: the marbles
    const k = data.workers || Math.max(2, Math.min(data.max_workers, navigator.hardwareConcurrency || 2));
    race = { id: runId(), data, k, points: [], notes: [], slow: new Set(), stopped: false, done: false, fraction: 0 };
    RUNS.set(key, race);
    attach(race);
    runRace(race);
  };
  ui.stop.onclick = () => { if (race && !race.done) { race.stopped = true; race.show("stopping after this sample ..."); } };
  ui.run.disabled = Boolean(race && !race.done);
  ui.stop.disabled = !race || race.done;
}
