"""The f16 variant of matmul.wgsl, made by one rule so the two shaders cannot drift apart.

Where the adapter offers `shader-f16`, race.js also times the product in half precision: the same tiled
kernel with `enable f16;`, its workgroup tiles, its products and its running sum in f16. A and B stay
float32 in memory (the same buffers as the float32 kernel's, converted as a tile is loaded) and C is written
back as float32, so the series measures f16 arithmetic and half the workgroup memory, not half the
traffic. Its result is checked against the CPU's float32 product with `MAX_REL_ERROR_F16`: inputs rounded
to f16 and a running sum in f16 differ from float32 by about 1e-3 at n = 64 to 5e-3 at n = 1024 (a numpy
model of the kernel's order of operations); a wrong kernel differs by about 1. Real WebGPU implementations agree
(Chromium, wgpu-native and Dawn on Mesa's lavapipe: 1.23e-3 at n = 64, 4.71e-3 at 1024; docs/classroom.md,
tests/e2e/test_browser_f16.py, bench/webgpu_native.py).
"""

from __future__ import annotations

MAX_REL_ERROR_F16 = 2e-2
# (what, by what, how many times): every float32 value the kernel computes with, and nothing else
RULE = (
    ("var<workgroup> tile_a: array<f32, 256>;", "var<workgroup> tile_a: array<f16, 256>;", 1),
    ("var<workgroup> tile_b: array<f32, 256>;", "var<workgroup> tile_b: array<f16, 256>;", 1),
    ("var acc = 0.0;", "var acc = 0.0h;", 1),
    ("acc = c[row * n + col];", "acc = f16(c[row * n + col]);", 1),
    ("var va = 0.0;", "var va = 0.0h;", 1),
    ("var vb = 0.0;", "var vb = 0.0h;", 1),
    ("va = a[row * n + ak];", "va = f16(a[row * n + ak]);", 1),
    ("vb = b[bk * n + col];", "vb = f16(b[bk * n + col]);", 1),
    ("c[row * n + col] = acc;", "c[row * n + col] = f32(acc);", 1),
)
HEADER = ("enable f16;\n"
          "// matmul.wgsl in half precision, made by core/browser/half.py (only where `shader-f16` is offered).\n")


def half(text: str) -> str:
    """matmul.wgsl's text with its arithmetic in f16."""
    for old, new, count in RULE:
        if (found := text.count(old)) != count:
            raise ValueError(f"expected {old!r} {count} time(s) in matmul.wgsl, found {found}")
        text = text.replace(old, new)
    return HEADER + text
