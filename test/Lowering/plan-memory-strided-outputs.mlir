// RUN: dlc-opt %s --split-input-file --dlexec-plan-memory --dlexec-verify-memory-plan | FileCheck %s

// A dense block's concatenation: the pooled block input and a convolution's
// output are copied into their channel slots of one buffer. Both producers
// accept strided outputs (conv2d_forward, max_pool2d), so they write their
// slots through dlexec.subview views, the kernel that also reads the pooled
// input reads it from its slot, and no copy kernel remains.

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#slot0 = affine_map<(d0, d1, d2, d3) -> (d0, d1 mod 12, d2, d3)>
#slot1 = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 4, d2, d3)>
// CHECK: #[[SLOT0:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 mod 12, d2, d3)>
// CHECK-LABEL: dlexec.func @dense_block
dlexec.func @dense_block {
  %x = dlexec.input "x" : memref<2x4x8x8xf32>
  %w = dlexec.input "w" : memref<8x4x3x3xf32>
  // CHECK: %[[R:.+]] = dlexec.alloc {{.*}} : memref<2x12x4x4xf32>
  // CHECK: %[[S0:.+]] = dlexec.subview %[[R]] {offsets = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 1, 1>} : memref<2x12x4x4xf32> to memref<2x4x4x4xf32>
  // CHECK: dlexec.builtin_kernel @pool "max_pool2d" ins(%{{.*}} : memref<2x4x8x8xf32>) outs(%[[S0]] : memref<2x4x4x4xf32>)
  %p = dlexec.alloc : memref<2x4x4x4xf32>
  dlexec.builtin_kernel @pool "max_pool2d" ins(%x : memref<2x4x8x8xf32>) outs(%p : memref<2x4x4x4xf32>) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
  // The reader of the pooled input reads its slot of R.
  // CHECK: dlexec.kernel @relu ins(%[[R]] : memref<2x12x4x4xf32>)
  // CHECK-SAME: indexing_maps = [#[[SLOT0]], #{{.+}}]
  %a = dlexec.alloc : memref<2x4x4x4xf32>
  dlexec.kernel @relu ins(%p : memref<2x4x4x4xf32>) outs(%a : memref<2x4x4x4xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %in, %z : f32
    dlexec.yield %r : f32
  }
  // CHECK: %[[S1:.+]] = dlexec.subview %[[R]] {offsets = array<i64: 0, 4, 0, 0>, strides = array<i64: 1, 1, 1, 1>} : memref<2x12x4x4xf32> to memref<2x8x4x4xf32>
  // CHECK: dlexec.library_call "conv2d_forward" ins(%{{.*}}, %{{.*}} : memref<2x4x4x4xf32>, memref<8x4x3x3xf32>) outs(%[[S1]] : memref<2x8x4x4xf32>)
  %c = dlexec.alloc : memref<2x8x4x4xf32>
  dlexec.library_call "conv2d_forward" ins(%a, %w : memref<2x4x4x4xf32>, memref<8x4x3x3xf32>) outs(%c : memref<2x8x4x4xf32>) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
  %r = dlexec.alloc : memref<2x12x4x4xf32>
  dlexec.kernel @concat0 ins(%p : memref<2x4x4x4xf32>) outs(%r : memref<2x12x4x4xf32>) attributes {indexing_maps = [#id, #slot0], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    dlexec.yield %in : f32
  }
  dlexec.kernel @concat1 ins(%c : memref<2x8x4x4xf32>) outs(%r : memref<2x12x4x4xf32>) attributes {indexing_maps = [#id, #slot1], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    dlexec.yield %in : f32
  }
  // CHECK-NOT: @concat
  // CHECK: dlexec.output "r", %[[R]]
  dlexec.output "r", %r : memref<2x12x4x4xf32>
}

// -----

// The copy must stay: the pooled input is also read after the copy by a
// kernel, and a kernel between the copy and that reader overwrites the
// slot, so the reader would see the overwritten elements.

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#slot0 = affine_map<(d0, d1, d2, d3) -> (d0, d1 mod 12, d2, d3)>
#all = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: dlexec.func @slot_overwritten
dlexec.func @slot_overwritten {
  %x = dlexec.input "x" : memref<2x4x8x8xf32>
  %y = dlexec.input "y" : memref<2x12x4x4xf32>
  // CHECK-NOT: dlexec.subview
  // CHECK: dlexec.builtin_kernel @pool "max_pool2d" ins(%{{.*}} : memref<2x4x8x8xf32>) outs(%[[P:.+]] : memref<2x4x4x4xf32>)
  %p = dlexec.alloc : memref<2x4x4x4xf32>
  dlexec.builtin_kernel @pool "max_pool2d" ins(%x : memref<2x4x8x8xf32>) outs(%p : memref<2x4x4x4xf32>) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
  %r = dlexec.alloc : memref<2x12x4x4xf32>
  // CHECK: dlexec.kernel @concat0 ins(%[[P]] : memref<2x4x4x4xf32>)
  dlexec.kernel @concat0 ins(%p : memref<2x4x4x4xf32>) outs(%r : memref<2x12x4x4xf32>) attributes {indexing_maps = [#id, #slot0], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    dlexec.yield %in : f32
  }
  %o = dlexec.alloc : memref<2x12x4x4xf32>
  dlexec.kernel @use ins(%r : memref<2x12x4x4xf32>) outs(%o : memref<2x12x4x4xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    dlexec.yield %in : f32
  }
  dlexec.kernel @overwrite ins(%y : memref<2x12x4x4xf32>) outs(%r : memref<2x12x4x4xf32>) attributes {indexing_maps = [#id, #all], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    dlexec.yield %in : f32
  }
  %a = dlexec.alloc : memref<2x4x4x4xf32>
  // CHECK: dlexec.kernel @late ins(%[[P]] : memref<2x4x4x4xf32>)
  dlexec.kernel @late ins(%p : memref<2x4x4x4xf32>) outs(%a : memref<2x4x4x4xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    dlexec.yield %n : f32
  }
  dlexec.output "o", %o : memref<2x12x4x4xf32>
  dlexec.output "r", %r : memref<2x12x4x4xf32>
  dlexec.output "a", %a : memref<2x4x4x4xf32>
}

// -----

// A gemm does not write strided outputs: its result is still copied.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d0, d1 + 4)>
// CHECK-LABEL: dlexec.func @gemm_keeps_copy
dlexec.func @gemm_keeps_copy {
  %a = dlexec.input "a" : memref<4x8xf32>
  %b = dlexec.input "b" : memref<8x4xf32>
  %g = dlexec.alloc : memref<4x4xf32>
  // CHECK: dlexec.library_call "gemm" {{.*}} outs(%[[G:.+]] : memref<4x4xf32>)
  dlexec.library_call "gemm" ins(%a, %b : memref<4x8xf32>, memref<8x4xf32>) outs(%g : memref<4x4xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32}
  %r = dlexec.alloc : memref<4x8xf32>
  // CHECK: dlexec.kernel @concat ins(%[[G]] : memref<4x4xf32>)
  dlexec.kernel @concat ins(%g : memref<4x4xf32>) outs(%r : memref<4x8xf32>) attributes {indexing_maps = [#id2, #col], iterator_types = ["parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    dlexec.yield %in : f32
  }
  dlexec.output "r", %r : memref<4x8xf32>
}
