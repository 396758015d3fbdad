// RUN: dlc-opt %s --split-input-file --dlexec-fuse-sibling-reductions | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlexec-fuse-sibling-reductions --dlexec-split-reductions | FileCheck %s --check-prefix=SPLIT

// A LayerNorm's bias and weight gradients: column sums of dy and of dy * u
// over the same [16, 128] rows. One kernel at the second's place reads dy
// once (dy, the common input with the same map, is one operand) and keeps
// both accumulators: outputs, maps, init and yields are the first kernel's,
// then the second's.
#x = affine_map<(b, t, c) -> (b, t, c)>
#o = affine_map<(b, t, c) -> (c)>
// CHECK-LABEL: dlexec.func @layer_norm_grads
// CHECK-NOT: @dbeta
// CHECK: dlexec.kernel @dgamma ins(%[[DY:[0-9a-z_]+]], %[[U:[0-9a-z_]+]] : memref<16x128x256xf32>, memref<16x128x256xf32>) outs(%[[DB:[0-9a-z_]+]], %[[DG:[0-9a-z_]+]] : memref<256xf32>, memref<256xf32>)
// CHECK-SAME: indexing_maps = [#{{map[0-9]*}}, #{{map[0-9]*}}, #[[O:map[0-9]*]], #[[O]]]
// CHECK-SAME: init = [0.000000e+00 : f32, 0.000000e+00 : f32]
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %[[ACC1:.+]]: f32, %[[ACC2:.+]]: f32):
// CHECK-NEXT: %[[S1:.+]] = arith.addf %[[ACC1]], %[[A]] : f32
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[S2:.+]] = arith.addf %[[ACC2]], %[[P]] : f32
// CHECK-NEXT: dlexec.yield %[[S1]], %[[S2]] : f32, f32
// CHECK-NOT: dlexec.kernel
// The split then makes one kernel of partials and one combining kernel for
// both (was two of each).
// SPLIT-LABEL: dlexec.func @layer_norm_grads
// SPLIT: dlexec.kernel @dgamma_partial ins(%{{.*}}, %{{.*}} : memref<16x128x256xf32>, memref<16x128x256xf32>) outs(%{{.*}}, %{{.*}} : memref<16x256xf64>, memref<16x256xf64>)
// SPLIT: dlexec.kernel @dgamma ins(%{{.*}}, %{{.*}} : memref<16x256xf64>, memref<16x256xf64>) outs(
// SPLIT-NOT: dlexec.kernel
dlexec.func @layer_norm_grads {
  %dy = dlexec.input "dy" : memref<16x128x256xf32>
  %u = dlexec.input "u" : memref<16x128x256xf32>
  %db = dlexec.alloc : memref<256xf32>
  dlexec.kernel @dbeta ins(%dy : memref<16x128x256xf32>) outs(%db : memref<256xf32>) attributes {
      indexing_maps = [#x, #o], init = [0.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    dlexec.yield %s : f32
  }
  %dg = dlexec.alloc : memref<256xf32>
  dlexec.kernel @dgamma ins(%dy, %u : memref<16x128x256xf32>, memref<16x128x256xf32>) outs(%dg : memref<256xf32>) attributes {
      indexing_maps = [#x, #x, #o], init = [0.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    dlexec.yield %s : f32
  }
  dlexec.output "db", %db : memref<256xf32>
  dlexec.output "dg", %dg : memref<256xf32>
}

// -----

// Three sums of one input (a sum, a maximum, a sum of squares over rows):
// one kernel with three outputs.
#r = affine_map<(i, j) -> (i, j)>
#ro = affine_map<(i, j) -> (i)>
// CHECK-LABEL: dlexec.func @three_siblings
// SPLIT-LABEL: dlexec.func @three_siblings
// CHECK: dlexec.kernel @sq ins(%{{[0-9a-z_]+}} : memref<64x100xf32>) outs(%{{[0-9a-z_]+}}, %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : memref<64xf32>, memref<64xf32>, memref<64xf32>)
// CHECK-SAME: init = [0.000000e+00 : f32, 0xFF800000 : f32, 0.000000e+00 : f32]
// CHECK: dlexec.yield %{{.+}}, %{{.+}}, %{{.+}} : f32, f32, f32
// CHECK-NOT: dlexec.kernel
dlexec.func @three_siblings {
  %x = dlexec.input "x" : memref<64x100xf32>
  %s = dlexec.alloc : memref<64xf32>
  dlexec.kernel @sum ins(%x : memref<64x100xf32>) outs(%s : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    dlexec.yield %t : f32
  }
  %m = dlexec.alloc : memref<64xf32>
  dlexec.kernel @max ins(%x : memref<64x100xf32>) outs(%m : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0xFF800000 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.maximumf %acc, %a : f32
    dlexec.yield %t : f32
  }
  %q = dlexec.alloc : memref<64xf32>
  dlexec.kernel @sq ins(%x : memref<64x100xf32>) outs(%q : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%a: f32, %acc: f32):
    %p = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %p : f32
    dlexec.yield %t : f32
  }
  dlexec.output "s", %s : memref<64xf32>
  dlexec.output "m", %m : memref<64xf32>
  dlexec.output "q", %q : memref<64xf32>
}

// -----

// -----

// No common input: not siblings.
#r = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
#ro = affine_map<(i, j) -> (i)>
// CHECK-LABEL: dlexec.func @no_common_input
// CHECK: dlexec.kernel @a 
// CHECK: dlexec.kernel @b 
dlexec.func @no_common_input {
  %x = dlexec.input "x" : memref<64x64xf32>
  %y = dlexec.input "y" : memref<64x64xf32>
  %o1 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @a ins(%x : memref<64x64xf32>) outs(%o1 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    dlexec.yield %t : f32
  }
  %o2 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @b ins(%y : memref<64x64xf32>) outs(%o2 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    dlexec.yield %t : f32
  }
  dlexec.output "o1", %o1 : memref<64xf32>
  dlexec.output "o2", %o2 : memref<64xf32>
}

// -----

// The second reads the first's output (a row sum, then a row sum of x scaled by it).
#r = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
#ro = affine_map<(i, j) -> (i)>
// CHECK-LABEL: dlexec.func @reads_the_output
// CHECK: dlexec.kernel @a 
// CHECK: dlexec.kernel @b 
dlexec.func @reads_the_output {
  %x = dlexec.input "x" : memref<64x64xf32>
  %o1 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @a ins(%x : memref<64x64xf32>) outs(%o1 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    dlexec.yield %t : f32
  }
  %o2 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @b ins(%x, %o1 : memref<64x64xf32>, memref<64xf32>) outs(%o2 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %s: f32, %acc: f32):
    %p = arith.mulf %v, %s : f32
    %t = arith.addf %acc, %p : f32
    dlexec.yield %t : f32
  }
  dlexec.output "o2", %o2 : memref<64xf32>
}

// -----

// A kernel between them overwrites the first's input, which the merged kernel would read after it.
#r = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
#ro = affine_map<(i, j) -> (i)>
// CHECK-LABEL: dlexec.func @input_overwritten
// CHECK: dlexec.kernel @fill 
// CHECK: dlexec.kernel @a 
// CHECK: dlexec.kernel @overwrite 
// CHECK: dlexec.kernel @b 
dlexec.func @input_overwritten {
  %x = dlexec.input "x" : memref<64x64xf32>
  %v1 = dlexec.alloc : memref<64x64xf32>
  dlexec.kernel @fill ins(%x : memref<64x64xf32>) outs(%v1 : memref<64x64xf32>) attributes {
      indexing_maps = [#r, #r], iterator_types = ["parallel", "parallel"]} {
  ^bb0(%v: f32, %out: f32):
    dlexec.yield %v : f32
  }
  %o1 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @a ins(%v1 : memref<64x64xf32>) outs(%o1 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    dlexec.yield %t : f32
  }
  dlexec.kernel @overwrite ins(%x : memref<64x64xf32>) outs(%v1 : memref<64x64xf32>) attributes {
      indexing_maps = [#r, #r], iterator_types = ["parallel", "parallel"]} {
  ^bb0(%v: f32, %out: f32):
    %n = arith.negf %v : f32
    dlexec.yield %n : f32
  }
  %o2 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @b ins(%v1 : memref<64x64xf32>) outs(%o2 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0xFF800000 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.maximumf %acc, %v : f32
    dlexec.yield %t : f32
  }
  dlexec.output "o1", %o1 : memref<64xf32>
  dlexec.output "o2", %o2 : memref<64xf32>
}

// -----

// The same input under another map: a row and a column sum of a square matrix.
#r = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
#ro = affine_map<(i, j) -> (i)>
// CHECK-LABEL: dlexec.func @other_map
// CHECK: dlexec.kernel @a 
// CHECK: dlexec.kernel @b 
dlexec.func @other_map {
  %x = dlexec.input "x" : memref<64x64xf32>
  %o1 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @a ins(%x : memref<64x64xf32>) outs(%o1 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    dlexec.yield %t : f32
  }
  %o2 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @b ins(%x : memref<64x64xf32>) outs(%o2 : memref<64xf32>) attributes {
      indexing_maps = [#t, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    dlexec.yield %t : f32
  }
  dlexec.output "o1", %o1 : memref<64xf32>
  dlexec.output "o2", %o2 : memref<64xf32>
}

// -----

// Other loop sizes: a common [64] input read along rows of 64 x 64 and of 64 x 32.
#r = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
#ro = affine_map<(i, j) -> (i)>
// CHECK-LABEL: dlexec.func @other_loops
// CHECK: dlexec.kernel @a 
// CHECK: dlexec.kernel @b 
dlexec.func @other_loops {
  %x = dlexec.input "x" : memref<64x64xf32>
  %z = dlexec.input "z" : memref<64x32xf32>
  %c = dlexec.input "c" : memref<64xf32>
  %o1 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @a ins(%x, %c : memref<64x64xf32>, memref<64xf32>) outs(%o1 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %s: f32, %acc: f32):
    %p = arith.mulf %v, %s : f32
    %t = arith.addf %acc, %p : f32
    dlexec.yield %t : f32
  }
  %o2 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @b ins(%z, %c : memref<64x32xf32>, memref<64xf32>) outs(%o2 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %s: f32, %acc: f32):
    %p = arith.mulf %v, %s : f32
    %t = arith.addf %acc, %p : f32
    dlexec.yield %t : f32
  }
  dlexec.output "o1", %o1 : memref<64xf32>
  dlexec.output "o2", %o2 : memref<64xf32>
}

// -----

// A kernel with an epilogue (an output computed after the reduction) stays as it is.
#r = affine_map<(i, j) -> (i, j)>
#t = affine_map<(i, j) -> (j, i)>
#ro = affine_map<(i, j) -> (i)>
// CHECK-LABEL: dlexec.func @epilogue
// CHECK: dlexec.kernel @a 
// CHECK: dlexec.kernel @b 
dlexec.func @epilogue {
  %x = dlexec.input "x" : memref<64x64xf32>
  %o1 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @a ins(%x : memref<64x64xf32>) outs(%o1 : memref<64xf32>) attributes {
      indexing_maps = [#r, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32):
    %t = arith.addf %acc, %v : f32
    dlexec.yield %t : f32
  }
  %o2 = dlexec.alloc : memref<64xf32>
  %o3 = dlexec.alloc : memref<64xf32>
  dlexec.kernel @b ins(%x : memref<64x64xf32>) outs(%o2, %o3 : memref<64xf32>, memref<64xf32>) attributes {
      indexing_maps = [#r, #ro, #ro], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
  ^bb0(%v: f32, %acc: f32, %sq: f32):
    %p = arith.mulf %v, %v : f32
    %t = arith.addf %acc, %p : f32
    dlexec.yield %t : f32
  } epilogue {
  ^bb0(%v: f32, %acc: f32, %sq: f32):
    %r = math.sqrt %acc : f32
    dlexec.yield %r : f32
  }
  dlexec.output "o1", %o1 : memref<64xf32>
  dlexec.output "o3", %o3 : memref<64xf32>
}
