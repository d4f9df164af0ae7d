;; matmul.wat with fused multiply-adds: each `f32x4.add (c, f32x4.mul (x, b))` of the block is one
;; `f32x4.relaxed_madd` (relaxed SIMD). Made from matmul.wat by core/browser/fused.py; compiled by
;; `wat2wasm --enable-relaxed-simd matmul_fma.wat -o matmul_fma.wasm`. worker.js takes it where the
;; browser validates it, else matmul.wasm. A block's elements may differ from an edge's in the last bit.
;;
;; C = A @ B for n x n float32 matrices, rows [r0, r1) of C: the CPU half of the race in the browser.
;;
;; Compiled to matmul.wasm by `wat2wasm matmul.wat -o matmul.wasm` (Debian's wabt 1.0.32: SIMD is on by default);
;; tests/test_browser_kernel.py checks the two agree and that the kernel is right for any n. matmul_fma.wat is
;; this text with fused multiply-adds (the test's FUSED rule makes it from this one).
;;
;; Row-major matrices in this instance's memory at byte offsets a, b, c, and 32 n bytes of scratch
;; after C. Each Web Worker runs its own rows. For each strip of 8 columns, B's strip is first packed
;; row after row into the scratch (so the block reads 32 contiguous bytes per k, from L1); the body
;; works in blocks of 4 rows x 8 columns held in eight 128-bit registers: per k, two vectors of the
;; packed strip and four broadcast elements of A's column k make 64 flops from six loads. The rows
;; and columns past the last whole block are summed by a scalar loop in the same order (k ascending,
;; a multiply then an add, no fused multiply-add), so every element of C is the same number
;; whichever path made it.
(module
  (memory (export "memory") 1)

  ;; C[i, j] by one scalar loop over k: the edges past the blocks
  (func $dot (param $n i32) (param $a i32) (param $b i32) (param $i i32) (param $j i32) (result f32)
    (local $k i32) (local $s f32) (local $pa i32) (local $pb i32) (local $row i32)
    (local.set $row (i32.shl (local.get $n) (i32.const 2)))
    (local.set $pa (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $row))))
    (local.set $pb (i32.add (local.get $b) (i32.shl (local.get $j) (i32.const 2))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
        (local.set $s (f32.add (local.get $s)
                               (f32.mul (f32.load (local.get $pa)) (f32.load (local.get $pb)))))
        (local.set $pa (i32.add (local.get $pa) (i32.const 4)))
        (local.set $pb (i32.add (local.get $pb) (local.get $row)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next)))
    (local.get $s))

  ;; C[i..i+4, j..j+8] in eight vector accumulators, from B's columns j..j+8 packed at p (row k at p + 32 k)
  (func $block (param $n i32) (param $a i32) (param $p i32) (param $c i32) (param $i i32) (param $j i32)
    (local $k i32) (local $row i32) (local $pa i32) (local $pb i32) (local $pc i32)
    (local $bl v128) (local $bh v128) (local $x v128)
    (local $c0l v128) (local $c0h v128) (local $c1l v128) (local $c1h v128)
    (local $c2l v128) (local $c2h v128) (local $c3l v128) (local $c3h v128)
    (local.set $row (i32.shl (local.get $n) (i32.const 2)))
    (local.set $pa (i32.add (local.get $a) (i32.mul (local.get $i) (local.get $row))))
    (local.set $pb (local.get $p))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
        (local.set $bl (v128.load (local.get $pb)))
        (local.set $bh (v128.load offset=16 (local.get $pb)))
        (local.set $x (f32x4.splat (f32.load (local.get $pa))))
        (local.set $c0l (f32x4.relaxed_madd (local.get $x) (local.get $bl) (local.get $c0l)))
        (local.set $c0h (f32x4.relaxed_madd (local.get $x) (local.get $bh) (local.get $c0h)))
        (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (local.get $row)))))
        (local.set $c1l (f32x4.relaxed_madd (local.get $x) (local.get $bl) (local.get $c1l)))
        (local.set $c1h (f32x4.relaxed_madd (local.get $x) (local.get $bh) (local.get $c1h)))
        (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (i32.shl (local.get $row) (i32.const 1))))))
        (local.set $c2l (f32x4.relaxed_madd (local.get $x) (local.get $bl) (local.get $c2l)))
        (local.set $c2h (f32x4.relaxed_madd (local.get $x) (local.get $bh) (local.get $c2h)))
        (local.set $x (f32x4.splat (f32.load (i32.add (local.get $pa) (i32.mul (local.get $row) (i32.const 3))))))
        (local.set $c3l (f32x4.relaxed_madd (local.get $x) (local.get $bl) (local.get $c3l)))
        (local.set $c3h (f32x4.relaxed_madd (local.get $x) (local.get $bh) (local.get $c3h)))
        (local.set $pa (i32.add (local.get $pa) (i32.const 4)))
        (local.set $pb (i32.add (local.get $pb) (i32.const 32)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next)))
    (local.set $pc (i32.add (i32.add (local.get $c) (i32.mul (local.get $i) (local.get $row)))
                            (i32.shl (local.get $j) (i32.const 2))))
    (v128.store (local.get $pc) (local.get $c0l))
    (v128.store offset=16 (local.get $pc) (local.get $c0h))
    (local.set $pc (i32.add (local.get $pc) (local.get $row)))
    (v128.store (local.get $pc) (local.get $c1l))
    (v128.store offset=16 (local.get $pc) (local.get $c1h))
    (local.set $pc (i32.add (local.get $pc) (local.get $row)))
    (v128.store (local.get $pc) (local.get $c2l))
    (v128.store offset=16 (local.get $pc) (local.get $c2h))
    (local.set $pc (i32.add (local.get $pc) (local.get $row)))
    (v128.store (local.get $pc) (local.get $c3l))
    (v128.store offset=16 (local.get $pc) (local.get $c3h)))

  ;; B's columns j..j+8, row after row, copied to p: the block then reads 32 contiguous bytes per k
  (func $pack (param $n i32) (param $b i32) (param $p i32) (param $j i32)
    (local $k i32) (local $from i32) (local $row i32)
    (local.set $row (i32.shl (local.get $n) (i32.const 2)))
    (local.set $from (i32.add (local.get $b) (i32.shl (local.get $j) (i32.const 2))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $k) (local.get $n)))
        (v128.store (local.get $p) (v128.load (local.get $from)))
        (v128.store offset=16 (local.get $p) (v128.load offset=16 (local.get $from)))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))
        (local.set $from (i32.add (local.get $from) (local.get $row)))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $next))))

  ;; C[i, j] = dot(i, j) for rows [i0, i1) and columns [j0, n)
  (func $edge (param $n i32) (param $a i32) (param $b i32) (param $c i32)
              (param $i0 i32) (param $i1 i32) (param $j0 i32)
    (local $i i32) (local $j i32)
    (local.set $i (local.get $i0))
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_u (local.get $i) (local.get $i1)))
        (local.set $j (local.get $j0))
        (block $cols_done
          (loop $cols
            (br_if $cols_done (i32.ge_u (local.get $j) (local.get $n)))
            (f32.store
              (i32.add (local.get $c)
                       (i32.shl (i32.add (i32.mul (local.get $i) (local.get $n)) (local.get $j)) (i32.const 2)))
              (call $dot (local.get $n) (local.get $a) (local.get $b) (local.get $i) (local.get $j)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $cols)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows))))

  ;; rows [r0, r1) of C = A @ B; the 32 n bytes after C (at c + 4 n^2) hold a packed strip of B
  (func (export "matmul") (param $n i32) (param $a i32) (param $b i32) (param $c i32)
                          (param $r0 i32) (param $r1 i32)
    (local $i i32) (local $j i32) (local $i4 i32) (local $j8 i32) (local $p i32)
    (local.set $i4 (i32.add (local.get $r0)
                            (i32.and (i32.sub (local.get $r1) (local.get $r0)) (i32.const -4))))
    (local.set $j8 (i32.and (local.get $n) (i32.const -8)))
    (local.set $p (i32.add (local.get $c) (i32.shl (i32.mul (local.get $n) (local.get $n)) (i32.const 2))))
    (block $cols_done
      (loop $block_cols
        (br_if $cols_done (i32.ge_u (local.get $j) (local.get $j8)))
        (call $pack (local.get $n) (local.get $b) (local.get $p) (local.get $j))
        (local.set $i (local.get $r0))
        (block $rows_done
          (loop $block_rows
            (br_if $rows_done (i32.ge_u (local.get $i) (local.get $i4)))
            (call $block (local.get $n) (local.get $a) (local.get $p) (local.get $c) (local.get $i) (local.get $j))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (br $block_rows)))
        (local.set $j (i32.add (local.get $j) (i32.const 8)))
        (br $block_cols)))
    ;; the columns past the last block of 8, for the blocked rows; then the rows past the last block of 4
    (call $edge (local.get $n) (local.get $a) (local.get $b) (local.get $c) (local.get $r0) (local.get $i4) (local.get $j8))
    (call $edge (local.get $n) (local.get $a) (local.get $b) (local.get $c) (local.get $i4) (local.get $r1) (i32.const 0))))
