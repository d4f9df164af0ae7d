// C = A @ B for n x n float32 matrices on the GPU: 16 x 16 tiles of A and B staged in workgroup memory.
// One invocation per element of C; a tile past the matrix's edge reads zeros, so any n works.
// A dispatch adds the tiles t0 .. t1 - 1 of the inner dimension (t1 past the last: all of them) to C, or
// writes them over C (add = 0): one dispatch does the whole product; k dispatches of a slice each, every
// one after the last (add = 1 from the second), are the same product as k small dependent steps.
// core/browser/half.py makes the f16 variant (arithmetic in half precision) from this text by one rule.
struct Dims {
  n: u32,
  t0: u32,
  t1: u32,
  add: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

const T: u32 = 16u;
var<workgroup> tile_a: array<f32, 256>;
var<workgroup> tile_b: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
  let n = dims.n;
  let row = g.y;
  let col = g.x;
  var acc = 0.0;
  if (dims.add != 0u && row < n && col < n) {
    acc = c[row * n + col];
  }
  let tiles = min(dims.t1, (n + T - 1u) / T);
  for (var t = dims.t0; t < tiles; t = t + 1u) {
    let ak = t * T + l.x;
    let bk = t * T + l.y;
    var va = 0.0;
    if (row < n && ak < n) {
      va = a[row * n + ak];
    }
    var vb = 0.0;
    if (bk < n && col < n) {
      vb = b[bk * n + col];
    }
    tile_a[l.y * T + l.x] = va;
    tile_b[l.y * T + l.x] = vb;
    workgroupBarrier();
    for (var k = 0u; k < T; k = k + 1u) {
      acc = acc + tile_a[l.y * T + k] * tile_b[k * T + l.x];
    }
    workgroupBarrier();
  }
  if (row < n && col < n) {
    c[row * n + col] = acc;
  }
}
