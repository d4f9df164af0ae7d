"""The race's WGSL kernels outside the browser, on WebGPU implementations that offer `shader-f16`: right?

race.js's shaders (core/browser/matmul.wgsl, its f16 variant from core/browser/half.py) run as race.js runs
them: A and B from its generator, one dispatch of (n / 16)² workgroups, or one dependent dispatch per 16-wide
slice of the inner dimension ("webgpu split dispatches"); C read back and compared with numpy's float64
product by race.js's relative error, against the page's tolerances. It checks compilation and results, not
speed: on a software driver (Mesa's lavapipe here) the times mean nothing and are only printed. The
implementation is the `wgpu` package (wgpu-native, its naga compiler) or, with --dawn, `wgpudawn` (Dawn, the
WGSL compiler of Chrome). Neither is a dependency of the project: install one in a virtual environment of its own,
with numpy and pydantic (core/browser/payload.py's import), and point Vulkan at the driver, e.g.

    python3 -m venv /tmp/wgpu && /tmp/wgpu/bin/pip install wgpu numpy pydantic
    VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json /tmp/wgpu/bin/python bench/webgpu_native.py

Writes bench/results/webgpu_native.json: the adapter's facts and a list of {series, n, parts, rel_error,
tolerance, ok, seconds}. Exits 1 if a result is wrong or the adapter offers no shader-f16.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.browser.half import MAX_REL_ERROR_F16, half  # noqa: E402
from core.browser.payload import MAX_REL_ERROR  # noqa: E402

TILE = 16


def fill(count: int, seed: int) -> np.ndarray:
    """race.js's fill(): the workers' sequence, x -> 1664525 x + 1013904223 mod 2^32, as x / 2^31 - 1."""
    out, x = np.empty(count, np.float32), seed
    for i in range(count):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = x / 2147483648 - 1
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="64,100,128,256", help="matrix sizes n, comma-separated")
    parser.add_argument("--dawn", action="store_true", help="wgpudawn (Dawn) instead of wgpu (wgpu-native)")
    args = parser.parse_args()
    if args.dawn:
        import wgpudawn as wgpu
    else:
        import wgpu
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    info = {k: v for k, v in dict(adapter.info).items() if isinstance(v, str | int)}
    features = sorted(adapter.features)
    print("adapter:", info)
    if "shader-f16" not in features:
        print("this adapter offers no shader-f16:", features)
        return 1
    device = adapter.request_device_sync(required_features=["shader-f16"])
    text = (ROOT / "core/browser/matmul.wgsl").read_text()
    pipelines = {name: device.create_compute_pipeline(layout="auto", compute={
        "module": device.create_shader_module(code=code), "entry_point": "main"})
        for name, code in (("float32", text), ("f16", half(text)))}
    use, points = wgpu.BufferUsage, []
    print(f"{'series':26s} {'n':>5s} {'parts':>5s} {'rel. error':>10s} {'tolerance':>9s}  result {'seconds':>8s}")
    for n in (int(s) for s in args.sizes.split(",")):
        a, b = fill(n * n, 12345), fill(n * n, 67890)
        expected = (a.reshape(n, n).astype(np.float64) @ b.reshape(n, n).astype(np.float64)).ravel()
        buf_a = device.create_buffer_with_data(data=a, usage=use.STORAGE)
        buf_b = device.create_buffer_with_data(data=b, usage=use.STORAGE)
        groups = -(-n // TILE)
        for series, pipeline, parts, tolerance in (("webgpu float32", pipelines["float32"], 1, MAX_REL_ERROR),
                                                   ("webgpu f16", pipelines["f16"], 1, MAX_REL_ERROR_F16),
                                                   ("webgpu split dispatches", pipelines["float32"], groups,
                                                    MAX_REL_ERROR)):
            buf_c = device.create_buffer(size=n * n * 4, usage=use.STORAGE | use.COPY_SRC)
            per, binds = -(-groups // parts), []
            for i in range(parts):  # race.js's Dims: n, the tiles t0 .. t1 - 1, add to C after the first
                dims = np.array([n, i * per, 0xFFFFFFFF if parts == 1 else (i + 1) * per, int(i > 0)], np.uint32)
                buf_d = device.create_buffer_with_data(data=dims, usage=use.UNIFORM)
                binds.append(device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
                    {"binding": j, "resource": {"buffer": buf, "offset": 0, "size": buf.size}}
                    for j, buf in enumerate((buf_a, buf_b, buf_c, buf_d))]))
            encoder = device.create_command_encoder()
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            for bind in binds:
                compute.set_bind_group(0, bind)
                compute.dispatch_workgroups(groups, groups)
            compute.end()
            began = time.perf_counter()
            device.queue.submit([encoder.finish()])
            c = np.frombuffer(device.queue.read_buffer(buf_c), np.float32).astype(np.float64)
            seconds = time.perf_counter() - began
            error = float(np.sqrt(((c - expected) ** 2).sum() / (expected ** 2).sum()))
            ok = error <= tolerance
            points.append({"series": series, "n": n, "parts": parts, "rel_error": error, "tolerance": tolerance,
                           "ok": ok, "seconds": seconds})
            print(f"{series:26s} {n:5d} {parts:5d} {error:10.3g} {tolerance:9.0e}  {'right' if ok else 'WRONG':6s} "
                  f"{seconds:8.3f}")
    out = ROOT / "bench/results/webgpu_native.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"implementation": "wgpudawn" if args.dawn else "wgpu", "adapter": info,
                               "features": features, "points": points}, indent=1))
    print("wrote", out.relative_to(ROOT))
    return 0 if all(p["ok"] for p in points) else 1


if __name__ == "__main__":
    sys.exit(main())
