// RUN: dlc-opt %s --split-input-file --dlexec-remat-persistent-kernels | FileCheck %s

// The bf16 cast of a weight read by the forward gemm and by the backward
// gemm: the backward gemm gets its own cast, right before it.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
module {
  dlexec.variable @w : memref<4x8xf32> {kind = "parameter"}
  dlexec.func @train_step {
    %x = dlexec.input "x" : memref<2x4xbf16>
    %dy = dlexec.input "dy" : memref<2x8xbf16>
    %w = dlexec.variable_ref @w : memref<4x8xf32>
    %c = dlexec.alloc : memref<4x8xbf16>
    dlexec.kernel @k_cast ins(%w : memref<4x8xf32>) outs(%c : memref<4x8xbf16>) attributes {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: bf16):
      %t = arith.truncf %a : f32 to bf16
      dlexec.yield %t : bf16
    }
    %y = dlexec.alloc : memref<2x8xbf16>
    dlexec.library_call "gemm" ins(%x, %c : memref<2x4xbf16>, memref<4x8xbf16>) outs(%y : memref<2x8xbf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
    %dx = dlexec.alloc : memref<2x4xbf16>
    dlexec.library_call "gemm" ins(%dy, %c : memref<2x8xbf16>, memref<4x8xbf16>) outs(%dx : memref<2x4xbf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
    dlexec.output "y", %y : memref<2x8xbf16>
    dlexec.output "dx", %dx : memref<2x4xbf16>
  }
}

// CHECK-LABEL: dlexec.func @train_step
// CHECK: %[[C:.*]] = dlexec.alloc : memref<4x8xbf16>
// CHECK: dlexec.kernel @k_cast ins(%{{.*}} : memref<4x8xf32>) outs(%[[C]] :
// CHECK: dlexec.library_call "gemm" ins(%{{.*}}, %[[C]] :
// CHECK: %[[C2:.*]] = dlexec.alloc : memref<4x8xbf16>
// CHECK-NEXT: dlexec.kernel @k_cast_remat1 ins(%{{.*}} : memref<4x8xf32>) outs(%[[C2]] :
// CHECK: dlexec.library_call "gemm" ins(%{{.*}}, %[[C2]] :

// -----

// An update of @w between the two readers: the second reader must see the
// cast of the old @w, so it keeps the shared cast.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
module {
  dlexec.variable @w : memref<4x8xf32> {kind = "parameter"}
  dlexec.func @train_step {
    %x = dlexec.input "x" : memref<2x4xbf16>
    %dy = dlexec.input "dy" : memref<2x8xbf16>
    %w = dlexec.variable_ref @w : memref<4x8xf32>
    %c = dlexec.alloc : memref<4x8xbf16>
    dlexec.kernel @k_cast ins(%w : memref<4x8xf32>) outs(%c : memref<4x8xbf16>) attributes {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: bf16):
      %t = arith.truncf %a : f32 to bf16
      dlexec.yield %t : bf16
    }
    %y = dlexec.alloc : memref<2x8xbf16>
    dlexec.library_call "gemm" ins(%x, %c : memref<2x4xbf16>, memref<4x8xbf16>) outs(%y : memref<2x8xbf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
    %w2 = dlexec.variable_ref @w : memref<4x8xf32>
    dlexec.kernel @k_update ins(%w2 : memref<4x8xf32>) outs(%w2 : memref<4x8xf32>) attributes {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %h = arith.constant 5.000000e-01 : f32
      %n = arith.mulf %a, %h : f32
      dlexec.yield %n : f32
    }
    %dx = dlexec.alloc : memref<2x4xbf16>
    dlexec.library_call "gemm" ins(%dy, %c : memref<2x8xbf16>, memref<4x8xbf16>) outs(%dx : memref<2x4xbf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
    dlexec.output "y", %y : memref<2x8xbf16>
    dlexec.output "dx", %dx : memref<2x4xbf16>
  }
}

// CHECK-LABEL: dlexec.func @train_step
// CHECK: dlexec.kernel @k_cast
// CHECK: dlexec.kernel @k_update
// CHECK-NOT: k_cast_remat
// CHECK: dlexec.library_call "gemm" ins(%{{.*}}, %{{.*}} : memref<2x8xbf16>, memref<4x8xbf16>)

// -----

// A same-width kernel of persistent state (a transpose) is not a
// low-precision copy: left shared.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
module {
  dlexec.variable @w : memref<4x8xf32> {kind = "parameter"}
  dlexec.func @train_step {
    %x = dlexec.input "x" : memref<2x8xf32>
    %w = dlexec.variable_ref @w : memref<4x8xf32>
    %t = dlexec.alloc : memref<8x4xf32>
    dlexec.kernel @k_t ins(%w : memref<4x8xf32>) outs(%t : memref<8x4xf32>) attributes {indexing_maps = [#tr, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    %y = dlexec.alloc : memref<2x4xf32>
    dlexec.library_call "gemm" ins(%x, %t : memref<2x8xf32>, memref<8x4xf32>) outs(%y : memref<2x4xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
    %y2 = dlexec.alloc : memref<2x4xf32>
    dlexec.library_call "gemm" ins(%x, %t : memref<2x8xf32>, memref<8x4xf32>) outs(%y2 : memref<2x4xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
    dlexec.output "y", %y : memref<2x4xf32>
    dlexec.output "y2", %y2 : memref<2x4xf32>
  }
}

// CHECK-LABEL: dlexec.func @train_step
// CHECK-NOT: remat
