// RUN: dlc-opt %s --split-input-file --dlexec-split-reductions | FileCheck %s

// A LayerNorm weight gradient: 256 column sums over [16, 128] rows. Split
// over the batch loop: 16 partials per column (a [16, 256] buffer), each an
// f32 sum kept in f64 (codegen's accumulator for an f32 sum), then a 16-step
// f64 sum per column with the same init, rounded once to f32 in the
// combining kernel's epilogue.
#x = affine_map<(b, t, c) -> (b, t, c)>
#o = affine_map<(b, t, c) -> (c)>
// CHECK-LABEL: dlexec.func @column_sums
// CHECK: %[[G:.*]] = dlexec.alloc : memref<256xf32>
// CHECK: %[[P:.*]] = dlexec.alloc : memref<16x256xf64>
// CHECK: dlexec.kernel @dgamma_partial ins(%{{.*}}, %{{.*}} : memref<16x128x256xf32>, memref<16x128x256xf32>) outs(%[[P]] : memref<16x256xf64>)
// CHECK-SAME: iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[ACC:.*]]: f64):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[E:.*]] = arith.extf %[[M]] : f32 to f64
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[ACC]], %[[E]] : f64
// CHECK-NEXT: dlexec.yield %[[S]] : f64
// CHECK: %[[W:.*]] = dlexec.alloc : memref<256xf64>
// CHECK: dlexec.kernel @dgamma ins(%[[P]] : memref<16x256xf64>) outs(%[[W]], %[[G]] : memref<256xf64>, memref<256xf32>)
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK-NEXT: ^bb0(%[[PV:.*]]: f64, %[[ACC2:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: %[[S2:.*]] = arith.addf %[[ACC2]], %[[PV]] : f64
// CHECK-NEXT: dlexec.yield %[[S2]] : f64
// CHECK-NEXT: } epilogue {
// CHECK-NEXT: ^bb0(%{{.*}}: f64, %[[SUM:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[SUM]] : f64 to f32
// CHECK-NEXT: dlexec.yield %[[R]] : f32
dlexec.func @column_sums {
  %x = dlexec.input "x" : memref<16x128x256xf32>
  %y = dlexec.input "y" : memref<16x128x256xf32>
  %g = dlexec.alloc : memref<256xf32>
  dlexec.kernel @dgamma ins(%x, %y : memref<16x128x256xf32>, memref<16x128x256xf32>) outs(%g : memref<256xf32>) attributes {
      indexing_maps = [#x, #x, #o], init = [0.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    dlexec.yield %s : f32
  }
  dlexec.output "g", %g : memref<256xf32>
}

// -----

// BatchNorm statistics over (n, h, w) of [64, 8, 28, 28] with an epilogue
// (rsqrt of the variance times gamma, gamma read by the epilogue): the
// partials reduce (h, w) per (n, c); the combining kernel's epilogue rounds
// the variance to f32 (an epilogue output now) and computes k's epilogue
// from that value, reading gamma.
#x4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#c4 = affine_map<(n, c, h, w) -> (c)>
// CHECK-LABEL: dlexec.func @batch_norm_variance
// CHECK: %[[V:.*]] = dlexec.alloc : memref<8xf32>
// CHECK: %[[R:.*]] = dlexec.alloc : memref<8xf32>
// CHECK: %[[P:.*]] = dlexec.alloc : memref<64x8xf64>
// CHECK: dlexec.kernel @var_partial ins(%{{.*}}, %{{.*}} : memref<64x8x28x28xf32>, memref<8xf32>) outs(%[[P]] : memref<64x8xf64>)
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK-NOT: epilogue
// CHECK: %[[W:.*]] = dlexec.alloc : memref<8xf64>
// CHECK: dlexec.kernel @var ins(%[[P]], %{{.*}} : memref<64x8xf64>, memref<8xf32>) outs(%[[W]], %[[V]], %[[R]] : memref<8xf64>, memref<8xf32>, memref<8xf32>)
// CHECK-SAME: iterator_types = ["reduction", "parallel"]
// CHECK: } epilogue {
// CHECK-NEXT: ^bb0(%{{.*}}: f64, %[[G:.*]]: f32, %[[SUM:.*]]: f64, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[VAR:.*]] = arith.truncf %[[SUM]] : f64 to f32
// CHECK-NEXT: %[[RS:.*]] = math.rsqrt %[[VAR]] : f32
// CHECK-NEXT: %[[SC:.*]] = arith.mulf %[[RS]], %[[G]] : f32
// CHECK-NEXT: dlexec.yield %[[VAR]], %[[SC]] : f32, f32
dlexec.variable @gamma : memref<8xf32> {kind = "parameter"}
dlexec.func @batch_norm_variance {
  %d = dlexec.input "d" : memref<64x8x28x28xf32>
  %gm = dlexec.variable_ref @gamma : memref<8xf32>
  %v = dlexec.alloc : memref<8xf32>
  %r = dlexec.alloc : memref<8xf32>
  dlexec.kernel @var ins(%d, %gm : memref<64x8x28x28xf32>, memref<8xf32>) outs(%v, %r : memref<8xf32>, memref<8xf32>) attributes {
      indexing_maps = [#x4, #c4, #c4, #c4], init = [0.0 : f32], iterator_types = ["reduction", "parallel", "reduction", "reduction"]} {
  ^bb0(%x: f32, %g: f32, %acc: f32, %old: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %sq : f32
    dlexec.yield %s : f32
  } epilogue {
  ^bb0(%x: f32, %g: f32, %var: f32, %old: f32):
    %rs = math.rsqrt %var : f32
    %sc = arith.mulf %rs, %g : f32
    dlexec.yield %sc : f32
  }
  dlexec.output "r", %r : memref<8xf32>
}

// -----

// A column maximum: partials in f32 (exact in any order), combined with
// the same maximumf and init, no epilogue.
#xm = affine_map<(b, t, c) -> (b, t, c)>
#om = affine_map<(b, t, c) -> (c)>
// CHECK-LABEL: dlexec.func @column_max
// CHECK: %[[P:.*]] = dlexec.alloc : memref<16x256xf32>
// CHECK: dlexec.kernel @colmax_partial ins(%{{.*}} : memref<16x128x256xf32>) outs(%[[P]] : memref<16x256xf32>)
// CHECK-SAME: init = [0xFF800000 : f32], iterator_types = ["parallel", "reduction", "parallel"]
// CHECK: dlexec.kernel @colmax ins(%[[P]] : memref<16x256xf32>) outs(%{{.*}} : memref<256xf32>)
// CHECK-SAME: init = [0xFF800000 : f32], iterator_types = ["reduction", "parallel"]
// CHECK-NEXT: ^bb0(%[[PV:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[M:.*]] = arith.maximumf %[[ACC]], %[[PV]] : f32
// CHECK-NEXT: dlexec.yield %[[M]] : f32
// CHECK-NEXT: }
// CHECK-NOT: epilogue
dlexec.func @column_max {
  %x = dlexec.input "x" : memref<16x128x256xf32>
  %m = dlexec.alloc : memref<256xf32>
  dlexec.kernel @colmax ins(%x : memref<16x128x256xf32>) outs(%m : memref<256xf32>) attributes {
      indexing_maps = [#xm, #om], init = [0xFF800000 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.maximumf %acc, %v : f32
    dlexec.yield %r : f32
  }
  dlexec.output "m", %m : memref<256xf32>
}

// -----

// Not split: a single reduction loop (a row sum of 4 long rows), many
// outputs (8192 column sums), few steps (64 rows), a bf16 output, a body
// that reads its accumulator twice, an f64 sum and an f32 product (their
// partials would round differently from the unsplit loop).
#r = affine_map<(i, k) -> (i, k)>
#ri = affine_map<(i, k) -> (i)>
#m = affine_map<(b, t, c) -> (b, t, c)>
#mc = affine_map<(b, t, c) -> (c)>
// CHECK-LABEL: dlexec.func @not_split
// CHECK-NOT: _partial
// CHECK: dlexec.output
dlexec.func @not_split {
  %a = dlexec.input "a" : memref<4x65536xf32>
  %b = dlexec.input "b" : memref<16x128x8192xf32>
  %c = dlexec.input "c" : memref<2x32x256xf32>
  %h = dlexec.input "h" : memref<16x128x256xbf16>
  %t = dlexec.input "t" : memref<16x128x256xf32>
  %dd = dlexec.input "dd" : memref<16x128x256xf64>
  %rd = dlexec.alloc : memref<256xf64>
  %rp = dlexec.alloc : memref<256xf32>
  %ra = dlexec.alloc : memref<4xf32>
  %rb = dlexec.alloc : memref<8192xf32>
  %rc = dlexec.alloc : memref<256xf32>
  %rh = dlexec.alloc : memref<256xbf16>
  %rq = dlexec.alloc : memref<256xf32>
  dlexec.kernel @rows ins(%a : memref<4x65536xf32>) outs(%ra : memref<4xf32>) attributes {
      indexing_maps = [#r, #ri], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    dlexec.yield %s : f32
  }
  dlexec.kernel @many ins(%b : memref<16x128x8192xf32>) outs(%rb : memref<8192xf32>) attributes {
      indexing_maps = [#m, #mc], init = [0.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    dlexec.yield %s : f32
  }
  dlexec.kernel @few ins(%c : memref<2x32x256xf32>) outs(%rc : memref<256xf32>) attributes {
      indexing_maps = [#m, #mc], init = [0.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    dlexec.yield %s : f32
  }
  dlexec.kernel @half ins(%h : memref<16x128x256xbf16>) outs(%rh : memref<256xbf16>) attributes {
      indexing_maps = [#m, #mc], init = [0.0 : bf16], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%x: bf16, %acc: bf16):
    %s = arith.addf %acc, %x : bf16
    dlexec.yield %s : bf16
  }
  dlexec.kernel @twice ins(%t : memref<16x128x256xf32>) outs(%rq : memref<256xf32>) attributes {
      indexing_maps = [#m, #mc], init = [0.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32):
    %m2 = arith.mulf %acc, %x : f32
    %s = arith.addf %acc, %m2 : f32
    dlexec.yield %s : f32
  }
  dlexec.kernel @f64_sum ins(%dd : memref<16x128x256xf64>) outs(%rd : memref<256xf64>) attributes {
      indexing_maps = [#m, #mc], init = [0.0 : f64], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%x: f64, %acc: f64):
    %s = arith.addf %acc, %x : f64
    dlexec.yield %s : f64
  }
  dlexec.kernel @product ins(%t : memref<16x128x256xf32>) outs(%rp : memref<256xf32>) attributes {
      indexing_maps = [#m, #mc], init = [1.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.mulf %acc, %x : f32
    dlexec.yield %s : f32
  }
  dlexec.output "ra", %ra : memref<4xf32>
}
