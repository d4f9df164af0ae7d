"""matmul_fma.wat from matmul.wat: the same kernel with fused multiply-adds (relaxed SIMD), made by one rule.

`f32x4.relaxed_madd` (Chrome and Edge 114+, Firefox 145+) lowers to one FMA instruction on a CPU that has
them: twice the flops per instruction of the `f32x4.mul` and `f32x4.add` it replaces. The rule rewrites
the block's eight accumulations and nothing else; tests/browser/test_browser_kernel.py checks matmul_fma.wat is
exactly what it makes, so the two texts cannot drift apart.
"""

from __future__ import annotations

import re

ACCUMULATE = re.compile(r"\(f32x4\.add \(local\.get (\$c\d[lh])\) "
                        r"\(f32x4\.mul \(local\.get \$x\) \(local\.get (\$b[lh])\)\)\)")
FUSED_ADDS = 8  # the block's accumulators: 4 rows x 2 vectors
HEADER = """;; matmul.wat with fused multiply-adds: each `f32x4.add (c, f32x4.mul (x, b))` of the block is one
;; `f32x4.relaxed_madd` (relaxed SIMD). Made from matmul.wat by core/browser/fused.py; compiled by
;; `wat2wasm --enable-relaxed-simd matmul_fma.wat -o matmul_fma.wasm`. worker.js takes it where the
;; browser validates it, else matmul.wasm. A block's elements may differ from an edge's in the last bit.
;;
"""


def fused(text: str) -> str:
    """matmul.wat's text with the block's multiply-then-add fused."""
    out, count = ACCUMULATE.subn(r"(f32x4.relaxed_madd (local.get $x) (local.get \2) (local.get \1))", text)
    if count != FUSED_ADDS:
        raise ValueError(f"expected {FUSED_ADDS} accumulations in matmul.wat, found {count}")
    return HEADER + out
