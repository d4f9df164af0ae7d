"""The race in the browser's kernels and assets: the WebAssembly bytes are the text's, the kernel is right for
any n and any split of rows among workers (run in Node.js), the JavaScript parses, and the wheel ships it all."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from core.browser import assets
from core.browser.fused import fused
from core.browser.half import half
from core.errors import DashboardError

HERE = Path(assets.__file__).parent
NODE = shutil.which("node")
WAT2WASM = shutil.which("wat2wasm")
# CI installs both (.ci/run): there a missing tool fails the test instead of skipping it
IN_CI = os.environ.get("CI", "").lower() == "true"

RUN_KERNEL = """
const fs = require("fs");
const [wasmPath, dir, n, splits] = process.argv.slice(2);  // relaxed SIMD: node --experimental-wasm-relaxed-simd
const N = Number(n);
WebAssembly.instantiate(fs.readFileSync(wasmPath)).then(({ instance }) => {
  const memory = instance.exports.memory;
  const need = Math.ceil((3 * N * N + 8 * N) * 4 / 65536) - memory.buffer.byteLength / 65536;  // + the packed strip
  if (need > 0) memory.grow(need);
  const f = new Float32Array(memory.buffer, 0, 3 * N * N);
  const raw = fs.readFileSync(dir + "/ab.bin");
  f.set(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)), 0);
  f.fill(NaN, 2 * N * N);  // a row a split forgets stays NaN
  const bounds = JSON.parse(splits);
  for (let i = 0; i + 1 < bounds.length; i++) {
    instance.exports.matmul(N, 0, N * N * 4, 2 * N * N * 4, bounds[i], bounds[i + 1]);
  }
  fs.writeFileSync(dir + "/c.bin", Buffer.from(f.slice(2 * N * N).buffer));
});
"""


KERNELS = ("matmul", "matmul_fma")  # 128-bit SIMD, and the same with relaxed SIMD's fused multiply-add
FLAGS = {"matmul": [], "matmul_fma": ["--enable-relaxed-simd"]}


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_wasm_bytes_are_the_texts_as_the_manifest_records(kernel):
    manifest = assets.manifest()
    text = (HERE / f"{kernel}.wat").read_bytes()
    assert assets.sha256(text) == manifest[f"{kernel}.wat"], f"{kernel}.wat changed: recompile, update manifest.json"
    assert assets.sha256(assets.wasm_bytes(f"{kernel}.wasm")) == manifest[f"{kernel}.wasm"]
    assert assets.wasm_bytes(f"{kernel}.wasm")[:4] == b"\0asm"


def test_the_fused_kernel_is_the_plain_one_with_its_adds_fused():
    assert (HERE / "matmul_fma.wat").read_text() == fused((HERE / "matmul.wat").read_text())
    with pytest.raises(ValueError, match="expected 8 accumulations"):
        fused("(module)")


@pytest.mark.skipif(WAT2WASM is None and not IN_CI, reason="wat2wasm (Debian's wabt) is not installed")
@pytest.mark.parametrize("kernel", KERNELS)
def test_recompiling_the_text_gives_the_shipped_bytes(tmp_path, kernel):
    out = tmp_path / "m.wasm"
    subprocess.run([WAT2WASM, *FLAGS[kernel], str(HERE / f"{kernel}.wat"), "-o", str(out)], check=True, timeout=60)
    assert out.read_bytes() == assets.wasm_bytes(f"{kernel}.wasm")


def _kernel(tmp_path: Path, a: np.ndarray, b: np.ndarray, splits: list[int], kernel: str) -> np.ndarray:
    n = a.shape[0]
    (tmp_path / "ab.bin").write_bytes(np.concatenate([a.ravel(), b.ravel()]).astype(np.float32).tobytes())
    script = tmp_path / "run.js"
    script.write_text(RUN_KERNEL)
    subprocess.run([NODE, "--experimental-wasm-relaxed-simd", str(script), str(HERE / f"{kernel}.wasm"), str(tmp_path),
                    str(n), json.dumps(splits)], check=True, timeout=120)
    return np.frombuffer((tmp_path / "c.bin").read_bytes(), dtype=np.float32).reshape(n, n)


@pytest.mark.skipif(NODE is None and not IN_CI, reason="Node.js is not installed")
@pytest.mark.parametrize("n, splits", [
    (1, [0, 1]), (3, [0, 3]), (5, [0, 2, 5]), (7, [0, 7]), (9, [0, 3, 6, 9]), (13, [0, 4, 8, 12, 13]),
    (17, [0, 5, 17]), (33, [0, 9, 18, 27, 33]), (64, [0, 64]), (67, [0, 17, 34, 51, 67]),
])
@pytest.mark.parametrize("kernel", KERNELS)
def test_the_kernel_is_right_for_sizes_that_are_not_multiples_of_4_and_any_split(tmp_path, n, splits, kernel):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    c = _kernel(tmp_path, a, b, splits, kernel)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.isfinite(c).all(), "a row or column was left out"
    assert np.linalg.norm(c - exact) / np.linalg.norm(exact) < 1e-5


def _fill_source(name: str) -> str:
    source = (HERE / name).read_text()
    body = re.search(r"let x = seed >>> 0;.*?\n  }\n", source, re.S)
    assert body, name
    return body.group(0)


def test_the_workers_and_the_gpu_multiply_the_same_matrices():
    assert _fill_source("worker.js") == _fill_source("race.js")


@pytest.mark.skipif(NODE is None and not IN_CI, reason="Node.js is not installed")
def test_the_javascript_parses(tmp_path):
    module = tmp_path / "race.mjs"
    module.write_text(assets.parts().js)
    subprocess.run([NODE, "--check", str(module)], check=True, timeout=60)
    subprocess.run([NODE, "--check", str(HERE / "worker.js")], check=True, timeout=60)


def test_the_component_gets_its_sizes_kernels_and_messages():
    data = assets.race_data((512, 64, 128), budget_s=1.0, workers=4)
    assert data["sizes"] == [64, 128, 512] and data["workers"] == 4
    assert "@compute" in data["wgsl"] and "onmessage" in data["worker"] and data["wasm"] != data["wasm_fma"]
    assert "https" in data["messages"]["insecure"] and "Chrome or Edge" in data["messages"]["no_webgpu"]
    assert "\n" in assets.parts().js  # one line that looks like a path would be taken for a file name
    with pytest.raises(DashboardError, match="sizes must be chosen"):
        assets.race_data((100,))
    assert data["split_n"] == 128 and assets.race_data((64, 512))["split_n"] == 64
    assert assets.race_data((512, 1024))["split_n"] == 512  # none up to 256: the smallest
    assert data["max_rel_error"] < data["max_rel_error_f16"] and data["wgsl_f16"] == half(data["wgsl"])


def test_the_f16_shader_is_the_float32_one_with_its_arithmetic_in_half_precision():
    text = (HERE / "matmul.wgsl").read_text()
    made = half(text)
    assert made.startswith("enable f16;\n") and "var acc = 0.0h;" in made and "f32(acc);" in made
    body = made.split("fn main", 1)[1]
    assert "array<f32, 256>" not in made and "0.0;" not in body, "a float32 value left in the kernel's arithmetic"
    assert "var<storage, read> a: array<f32>" in made  # memory stays float32: the same buffers as float32's
    with pytest.raises(ValueError, match="expected"):
        half(text.replace("var acc = 0.0;", "var acc: f32 = 0.0;"))


def test_race_js_takes_shader_f16_only_where_the_adapter_offers_it():
    js = (HERE / "race.js").read_text()
    assert '["timestamp-query", "shader-f16"].filter((f) => adapter.features.has(f))' in js
    assert "requiredFeatures: wanted" in js and 'if (wanted.includes("shader-f16")) gpu.pipeline16' in js


def test_the_package_declares_its_assets_for_the_wheel():
    text = (HERE.parent.parent / "pyproject.toml").read_text()
    shipped = re.search(r'"core.browser" = \[(.*?)\]', text)
    assert shipped is not None
    for f in HERE.iterdir():
        if f.suffix not in (".py", ".pyc") and f.is_file():
            assert f'"*{f.suffix}"' in shipped.group(1), f.name


@pytest.mark.slow
def test_the_wheel_ships_the_assets(tmp_path):
    from tests.test_packaging import _build_wheel

    with zipfile.ZipFile(_build_wheel(tmp_path)) as archive:
        names = set(archive.namelist())
    assets_here = {f"core/browser/{f.name}" for f in HERE.iterdir() if f.is_file() and f.suffix != ".pyc"}
    assert assets_here <= names, sorted(assets_here - names)
