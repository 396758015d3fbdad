// RUN: dlc-opt %s --split-input-file --dlexec-fuse-reduction-epilogues | FileCheck %s

// BatchNorm's variance over N of [2, 8]: rsqrt(var + eps), its product with
// gamma (a 1x8 view of an [8] parameter) and the running-variance update
// (in place) become the epilogue of the variance reduction, at the place of
// the last of them; the reduction keeps its own output. The relu reads the
// scale over the whole [2, 8]: not an epilogue, it stays.

#x = affine_map<(n, c) -> (n, c)>
#c = affine_map<(n, c) -> (c)>
#id2 = affine_map<(a, b) -> (a, b)>
#id1 = affine_map<(a) -> (a)>
#b = affine_map<(n, c) -> (0, c)>
dlexec.variable @gamma : memref<8xf32> {kind = "parameter"}
dlexec.variable @rv : memref<8xf32> {kind = "buffer"}
// CHECK-LABEL: dlexec.func @batch_norm_forward
dlexec.func @batch_norm_forward {
  %d = dlexec.input "d" : memref<2x8xf32>
  %g = dlexec.variable_ref @gamma : memref<8xf32>
  %rv = dlexec.variable_ref @rv : memref<8xf32>
  %var = dlexec.alloc : memref<8xf32>
  dlexec.kernel @var ins(%d : memref<2x8xf32>) outs(%var : memref<8xf32>) attributes {
      indexing_maps = [#x, #c], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32):
    %h = arith.constant 0.5 : f32
    %sq = arith.mulf %x, %x : f32
    %t = arith.mulf %sq, %h : f32
    %s = arith.addf %acc, %t : f32
    dlexec.yield %s : f32
  }
  %var2 = dlexec.reshape %var : memref<8xf32> to memref<1x8xf32>
  %rstd = dlexec.alloc : memref<1x8xf32>
  dlexec.kernel @rsqrt ins(%var2 : memref<1x8xf32>) outs(%rstd : memref<1x8xf32>) attributes {
      indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} {
  ^bb0(%v: f32, %o: f32):
    %eps = arith.constant 1.0e-5 : f32
    %a = arith.addf %v, %eps : f32
    %r = math.rsqrt %a : f32
    dlexec.yield %r : f32
  }
  %g2 = dlexec.reshape %g : memref<8xf32> to memref<1x8xf32>
  %scale = dlexec.alloc : memref<1x8xf32>
  dlexec.kernel @mul ins(%rstd, %g2 : memref<1x8xf32>, memref<1x8xf32>) outs(%scale : memref<1x8xf32>) attributes {
      indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} {
  ^bb0(%r: f32, %gv: f32, %o: f32):
    %m = arith.mulf %r, %gv : f32
    dlexec.yield %m : f32
  }
  dlexec.kernel @running ins(%rv, %var : memref<8xf32>, memref<8xf32>) outs(%rv : memref<8xf32>) attributes {
      indexing_maps = [#id1, #id1, #id1], iterator_types = ["parallel"]} {
  ^bb0(%old: f32, %v: f32, %o: f32):
    %k = arith.constant 0.9 : f32
    %a = arith.mulf %old, %k : f32
    %n = arith.addf %a, %v : f32
    dlexec.yield %n : f32
  }
  %y = dlexec.alloc : memref<2x8xf32>
  dlexec.kernel @relu ins(%d, %scale : memref<2x8xf32>, memref<1x8xf32>) outs(%y : memref<2x8xf32>) attributes {
      indexing_maps = [#x, #b, #x], iterator_types = ["parallel", "parallel"]} {
  ^bb0(%x: f32, %s: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.mulf %x, %s : f32
    %r = arith.maximumf %m, %z : f32
    dlexec.yield %r : f32
  }
  dlexec.output "y", %y : memref<2x8xf32>
}
// CHECK-NOT: @rsqrt
// CHECK-NOT: @mul
// CHECK:      dlexec.kernel @var ins(%{{[0-9]+}}, %[[G:[0-9]+]], %[[RV:[0-9]+]] : memref<2x8xf32>, memref<1x8xf32>, memref<8xf32>)
// CHECK-SAME:   outs(%[[VAR:[0-9]+]], %[[RSTD:[0-9]+]], %[[SCALE:[0-9]+]], %[[RV]] : memref<8xf32>, memref<1x8xf32>, memref<1x8xf32>, memref<8xf32>)
// CHECK-SAME:   indexing_maps = [#map, #[[B:map[0-9]*]], #[[C:map[0-9]*]], #[[C]], #[[B]], #[[B]], #[[C]]]
// CHECK-SAME:   init = [0.000000e+00 : f32]
// CHECK:        %[[S:.*]] = arith.addf
// CHECK-NEXT:   dlexec.yield %[[S]] : f32
// CHECK-NEXT: } epilogue {
// CHECK-NEXT: ^bb0(%{{[a-z0-9]+}}: f32, %[[GV:[a-z0-9]+]]: f32, %[[OLD:[a-z0-9]+]]: f32, %[[V:[a-z0-9]+]]: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32, %{{[a-z0-9]+}}: f32):
// CHECK:        %[[A:.*]] = arith.addf %[[V]], %{{.*}} : f32
// CHECK-NEXT:   %[[R:.*]] = math.rsqrt %[[A]] : f32
// CHECK-NEXT:   %[[M:.*]] = arith.mulf %[[R]], %[[GV]] : f32
// CHECK:        %[[K:.*]] = arith.mulf %[[OLD]], %{{.*}} : f32
// CHECK-NEXT:   %[[N:.*]] = arith.addf %[[K]], %[[V]] : f32
// CHECK-NEXT:   dlexec.yield %[[R]], %[[M]], %[[N]] : f32, f32, f32
// CHECK-NEXT: }
// CHECK:      dlexec.kernel @relu ins(%{{.*}}, %[[SCALE]]

// -----

// Not fused: a library call between the sum and the doubling reads the sum
// (moving the sum's store past it would change what the call reads).

#x = affine_map<(n, c) -> (n, c)>
#c = affine_map<(n, c) -> (c)>
#id1 = affine_map<(a) -> (a)>
// CHECK-LABEL: dlexec.func @not_fused
dlexec.func @not_fused {
  %d = dlexec.input "d" : memref<4x8xf32>
  %w = dlexec.input "w" : memref<8x8xf32>
  %sum = dlexec.alloc : memref<8xf32>
  dlexec.kernel @sum ins(%d : memref<4x8xf32>) outs(%sum : memref<8xf32>) attributes {
      indexing_maps = [#x, #c], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    dlexec.yield %s : f32
  }
  %s2 = dlexec.reshape %sum : memref<8xf32> to memref<1x8xf32>
  %y = dlexec.alloc : memref<1x8xf32>
  dlexec.library_call "gemm" ins(%s2, %w : memref<1x8xf32>, memref<8x8xf32>) outs(%y : memref<1x8xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
  %p = dlexec.alloc : memref<8xf32>
  dlexec.kernel @twice ins(%sum : memref<8xf32>) outs(%p : memref<8xf32>) attributes {
      indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    %t = arith.addf %v, %v : f32
    dlexec.yield %t : f32
  }
  dlexec.output "y", %y : memref<1x8xf32>
  dlexec.output "p", %p : memref<8xf32>
}
// CHECK:     dlexec.kernel @sum
// CHECK-NOT: epilogue
// CHECK:     dlexec.library_call "gemm"
// CHECK:     dlexec.kernel @twice

// -----

// Not fused: the product runs over 16 elements, the sum has 8 outputs.

#x = affine_map<(n, c) -> (n, c)>
#c = affine_map<(n, c) -> (c)>
#id1 = affine_map<(a) -> (a)>
#half = affine_map<(a) -> (a floordiv 2)>
// CHECK-LABEL: dlexec.func @other_space
dlexec.func @other_space {
  %d = dlexec.input "d" : memref<4x8xf32>
  %sum = dlexec.alloc : memref<8xf32>
  dlexec.kernel @sum ins(%d : memref<4x8xf32>) outs(%sum : memref<8xf32>) attributes {
      indexing_maps = [#x, #c], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    dlexec.yield %s : f32
  }
  %p = dlexec.alloc : memref<16xf32>
  %u = dlexec.input "u" : memref<16xf32>
  dlexec.kernel @spread ins(%sum, %u : memref<8xf32>, memref<16xf32>) outs(%p : memref<16xf32>) attributes {
      indexing_maps = [#half, #id1, #id1], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %t = arith.mulf %v, %w : f32
    dlexec.yield %t : f32
  }
  dlexec.output "p", %p : memref<16xf32>
}
// CHECK:     dlexec.kernel @sum
// CHECK-NOT: epilogue
// CHECK:     dlexec.kernel @spread
