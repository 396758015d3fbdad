// RUN: dlc-opt %s --split-input-file --dlexec-fuse-gemm-epilogues | FileCheck %s

// Mixed precision (--precision bf16): a bf16 gemm, then the bias add of the
// f32 bias in f32 and one truncf (the GPT's linear layers), with and without
// a ReLU (after or before the truncf): the gemm takes the f32 bias as its C
// row (beta 1, GemmParams::f32_bias: the product and the bias summed in f32,
// Y rounded once) and writes the kernel's buffer through a reshape.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.variable @w : memref<8x4xf32> {kind = "parameter"}
  dlexec.variable @b : memref<8xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @bf16_bias
  dlexec.func @bf16_bias {
    // CHECK: %[[X:.+]] = dlexec.input "x"
    %x = dlexec.input "x" : memref<6x4xbf16>
    %w = dlexec.alloc : memref<8x4xbf16>
    %t = dlexec.alloc : memref<6x8xbf16>
    // CHECK: %[[Y:.+]] = dlexec.alloc : memref<2x3x8xbf16>
    // CHECK-NEXT: %[[B:.+]] = dlexec.variable_ref @b
    // CHECK: %[[V:.+]] = dlexec.reshape %[[Y]] : memref<2x3x8xbf16> to memref<6x8xbf16>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%[[X]], %{{.+}}, %[[B]] : memref<6x4xbf16>, memref<8x4xbf16>, memref<8xf32>) outs(%[[V]] : memref<6x8xbf16>)
    // CHECK-SAME: beta = 1.000000e+00 : f32
    // CHECK-NOT: epilogue
    dlexec.library_call "gemm" ins(%x, %w : memref<6x4xbf16>, memref<8x4xbf16>) outs(%t : memref<6x8xbf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
    %tv = dlexec.reshape %t : memref<6x8xbf16> to memref<2x3x8xbf16>
    %b = dlexec.variable_ref @b : memref<8xf32>
    %y = dlexec.alloc : memref<2x3x8xbf16>
    dlexec.kernel @bias_cast ins(%b, %tv : memref<8xf32>, memref<2x3x8xbf16>) outs(%y : memref<2x3x8xbf16>) attributes {indexing_maps = [#last, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} {
    ^bb0(%bb: f32, %a: bf16, %o: bf16):
      %e = arith.extf %a : bf16 to f32
      %s = arith.addf %bb, %e : f32
      %r = arith.truncf %s : f32 to bf16
      dlexec.yield %r : bf16
    }
    // The ReLU after the truncf, in bf16.
    // CHECK: %[[Y2:.+]] = dlexec.alloc : memref<6x8xbf16>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%[[X]], %{{.+}}, %[[B]] : memref<6x4xbf16>, memref<8x4xbf16>, memref<8xf32>) outs(%[[Y2]] : memref<6x8xbf16>)
    // CHECK-SAME: beta = 1.000000e+00 : f32, epilogue = "relu"
    %t2 = dlexec.alloc : memref<6x8xbf16>
    dlexec.library_call "gemm" ins(%x, %w : memref<6x4xbf16>, memref<8x4xbf16>) outs(%t2 : memref<6x8xbf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
    %y2 = dlexec.alloc : memref<6x8xbf16>
    dlexec.kernel @bias_relu_cast ins(%t2, %b : memref<6x8xbf16>, memref<8xf32>) outs(%y2 : memref<6x8xbf16>) attributes {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: bf16, %bb: f32, %o: bf16):
      %z = arith.constant 0.0 : bf16
      %e = arith.extf %a : bf16 to f32
      %s = arith.addf %e, %bb : f32
      %r = arith.truncf %s : f32 to bf16
      %m = arith.maximumf %r, %z : bf16
      dlexec.yield %m : bf16
    }
    // The ReLU before the truncf, in f32 (f16 operands).
    // CHECK: %[[Y3:.+]] = dlexec.alloc : memref<6x8xf16>
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}}, %[[B]] : memref<6x4xf16>, memref<8x4xf16>, memref<8xf32>) outs(%[[Y3]] : memref<6x8xf16>)
    // CHECK-SAME: beta = 1.000000e+00 : f32, epilogue = "relu"
    // CHECK-NOT: dlexec.kernel
    %xh = dlexec.input "xh" : memref<6x4xf16>
    %wh = dlexec.alloc : memref<8x4xf16>
    %t3 = dlexec.alloc : memref<6x8xf16>
    dlexec.library_call "gemm" ins(%xh, %wh : memref<6x4xf16>, memref<8x4xf16>) outs(%t3 : memref<6x8xf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
    %y3 = dlexec.alloc : memref<6x8xf16>
    dlexec.kernel @bias_relu_f32 ins(%t3, %b : memref<6x8xf16>, memref<8xf32>) outs(%y3 : memref<6x8xf16>) attributes {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f16, %bb: f32, %o: f16):
      %z = arith.constant 0.0 : f32
      %e = arith.extf %a : f16 to f32
      %s = arith.addf %e, %bb : f32
      %m = arith.maximumf %s, %z : f32
      %r = arith.truncf %m : f32 to f16
      dlexec.yield %r : f16
    }
    dlexec.output "y", %y : memref<2x3x8xbf16>
    dlexec.output "y2", %y2 : memref<6x8xbf16>
    dlexec.output "y3", %y3 : memref<6x8xf16>
  }
}

// -----

// Not folded: the bias rounded to bf16 and added in bf16 (not the f32 sum
// the call computes), and a GELU after the f32 bias add (no such epilogue
// here).

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.variable @b : memref<8xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @bf16_no_fold
  dlexec.func @bf16_no_fold {
    %x = dlexec.input "x" : memref<6x4xbf16>
    %w = dlexec.alloc : memref<8x4xbf16>
    %b = dlexec.variable_ref @b : memref<8xf32>
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}} : memref<6x4xbf16>, memref<8x4xbf16>) outs
    // CHECK: dlexec.kernel @bias_in_bf16
    %t = dlexec.alloc : memref<6x8xbf16>
    dlexec.library_call "gemm" ins(%x, %w : memref<6x4xbf16>, memref<8x4xbf16>) outs(%t : memref<6x8xbf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
    %y = dlexec.alloc : memref<6x8xbf16>
    dlexec.kernel @bias_in_bf16 ins(%t, %b : memref<6x8xbf16>, memref<8xf32>) outs(%y : memref<6x8xbf16>) attributes {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: bf16, %bb: f32, %o: bf16):
      %c = arith.truncf %bb : f32 to bf16
      %s = arith.addf %a, %c : bf16
      dlexec.yield %s : bf16
    }
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}} : memref<6x4xbf16>, memref<8x4xbf16>) outs
    // CHECK: dlexec.kernel @bias_gelu
    %t2 = dlexec.alloc : memref<6x8xbf16>
    dlexec.library_call "gemm" ins(%x, %w : memref<6x4xbf16>, memref<8x4xbf16>) outs(%t2 : memref<6x8xbf16>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
    %y2 = dlexec.alloc : memref<6x8xbf16>
    dlexec.kernel @bias_gelu ins(%t2, %b : memref<6x8xbf16>, memref<8xf32>) outs(%y2 : memref<6x8xbf16>) attributes {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: bf16, %bb: f32, %o: bf16):
      %e = arith.extf %a : bf16 to f32
      %s = arith.addf %e, %bb : f32
      %g = math.erf %s : f32
      %r = arith.truncf %g : f32 to bf16
      dlexec.yield %r : bf16
    }
    dlexec.output "y", %y : memref<6x8xbf16>
    dlexec.output "y2", %y2 : memref<6x8xbf16>
  }
}

// -----

// Mixed precision's bias gradient: dBias = the f32 column sum of a bf16 dY
// (extf then addf into an f32 accumulator) beside the bf16 weight gradient
// dW = x^T dY, which reads dY as op(B): bgrad_b with an f32 dBias (summed
// in f32, not rounded to bf16). An f16 dY folds as bgrad_a the same way.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  // CHECK-LABEL: dlexec.func @bf16_bgrad_f32
  dlexec.func @bf16_bgrad_f32 {
    %x = dlexec.input "x" : memref<6x4xbf16>
    %dy = dlexec.input "dy" : memref<2x3x8xbf16>
    %db = dlexec.alloc : memref<8xf32>
    // CHECK-NOT: dlexec.kernel
    dlexec.kernel @bias_grad ins(%dy : memref<2x3x8xbf16>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id3, #last], init = [0.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
    ^bb0(%a: bf16, %acc: f32):
      %e = arith.extf %a : bf16 to f32
      %s = arith.addf %acc, %e : f32
      dlexec.yield %s : f32
    }
    %v = dlexec.reshape %dy : memref<2x3x8xbf16> to memref<6x8xbf16>
    %dw = dlexec.alloc : memref<4x8xbf16>
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}} : memref<6x4xbf16>, memref<6x8xbf16>) outs(%{{.+}}, %{{.+}} : memref<4x8xbf16>, memref<8xf32>)
    // CHECK-SAME: epilogue = "bgrad_b"
    dlexec.library_call "gemm" ins(%x, %v : memref<6x4xbf16>, memref<6x8xbf16>) outs(%dw : memref<4x8xbf16>) {trans_a = true, trans_b = false}
    dlexec.output "dw", %dw : memref<4x8xbf16>
    dlexec.output "db", %db : memref<8xf32>
  }

  // CHECK-LABEL: dlexec.func @f16_bgrad_a_f32
  dlexec.func @f16_bgrad_a_f32 {
    %x = dlexec.input "x" : memref<2x4xf16>
    %dy = dlexec.input "dy" : memref<2x8xf16>
    %dw = dlexec.alloc : memref<8x4xf16>
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}} : memref<2x8xf16>, memref<2x4xf16>) outs(%{{.+}}, %{{.+}} : memref<8x4xf16>, memref<8xf32>)
    // CHECK-SAME: epilogue = "bgrad_a"
    // CHECK-NOT: dlexec.kernel
    dlexec.library_call "gemm" ins(%dy, %x : memref<2x8xf16>, memref<2x4xf16>) outs(%dw : memref<8x4xf16>) {trans_a = true, trans_b = false}
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @bias_grad ins(%dy : memref<2x8xf16>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id, #col], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
    ^bb0(%a: f16, %acc: f32):
      %e = arith.extf %a : f16 to f32
      %s = arith.addf %e, %acc : f32
      dlexec.yield %s : f32
    }
    dlexec.output "dw", %dw : memref<8x4xf16>
    dlexec.output "db", %db : memref<8xf32>
  }
}

// -----

// No fold where the accumulator's update is not exactly extf(element) +
// accumulator: a sum of squares, and a sum rounded to bf16 at every step.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  // CHECK-LABEL: dlexec.func @bf16_bgrad_no_fold
  dlexec.func @bf16_bgrad_no_fold {
    %x = dlexec.input "x" : memref<2x4xbf16>
    %dy = dlexec.input "dy" : memref<2x8xbf16>
    %dw = dlexec.alloc : memref<8x4xbf16>
    // CHECK: dlexec.library_call "gemm"
    // CHECK-NOT: epilogue
    // CHECK: dlexec.kernel @scaled_sum
    dlexec.library_call "gemm" ins(%dy, %x : memref<2x8xbf16>, memref<2x4xbf16>) outs(%dw : memref<8x4xbf16>) {trans_a = true, trans_b = false}
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @scaled_sum ins(%dy : memref<2x8xbf16>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id, #col], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
    ^bb0(%a: bf16, %acc: f32):
      %e = arith.extf %a : bf16 to f32
      %t = arith.mulf %e, %e : f32
      %s = arith.addf %t, %acc : f32
      dlexec.yield %s : f32
    }
    dlexec.output "dw", %dw : memref<8x4xbf16>
    dlexec.output "db", %db : memref<8xf32>
  }

  // CHECK-LABEL: dlexec.func @bf16_rounded_sum_no_fold
  dlexec.func @bf16_rounded_sum_no_fold {
    %x = dlexec.input "x" : memref<2x4xbf16>
    %dy = dlexec.input "dy" : memref<2x8xbf16>
    %dw = dlexec.alloc : memref<8x4xbf16>
    // CHECK: dlexec.library_call "gemm"
    // CHECK-NOT: epilogue
    // CHECK: dlexec.kernel @bf16_sum
    dlexec.library_call "gemm" ins(%dy, %x : memref<2x8xbf16>, memref<2x4xbf16>) outs(%dw : memref<8x4xbf16>) {trans_a = true, trans_b = false}
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @bf16_sum ins(%dy : memref<2x8xbf16>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id, #col], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
    ^bb0(%a: bf16, %acc: f32):
      %t = arith.truncf %acc : f32 to bf16
      %s = arith.addf %a, %t : bf16
      %e = arith.extf %s : bf16 to f32
      dlexec.yield %e : f32
    }
    dlexec.output "dw", %dw : memref<8x4xbf16>
    dlexec.output "db", %db : memref<8xf32>
  }
}
