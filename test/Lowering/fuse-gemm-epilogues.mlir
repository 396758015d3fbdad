// RUN: dlc-opt %s --split-input-file --dlexec-fuse-gemm-epilogues | FileCheck %s

// Forward: a linear layer with a bias row, then a ReLU kernel that is the
// only reader of the gemm's result: the ReLU becomes the call's epilogue, the
// call writes the ReLU's buffer, and the kernel and the intermediate go.

#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  dlexec.variable @w : memref<8x4xf32> {kind = "parameter"}
  dlexec.variable @b : memref<8xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @relu_bias
  dlexec.func @relu_bias {
    // CHECK: %[[X:.+]] = dlexec.input "x"
    %x = dlexec.input "x" : memref<2x4xf32>
    %w = dlexec.variable_ref @w : memref<8x4xf32>
    %b = dlexec.variable_ref @b : memref<8xf32>
    %t = dlexec.alloc : memref<2x8xf32>
    // CHECK: %[[Y:.+]] = dlexec.alloc : memref<2x8xf32>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%[[X]], %{{.+}}, %{{.+}} : {{.*}}) outs(%[[Y]] : memref<2x8xf32>)
    // CHECK-SAME: epilogue = "relu"
    // CHECK-NOT: dlexec.kernel
    // CHECK: dlexec.output "y", %[[Y]]
    dlexec.library_call "gemm" ins(%x, %w, %b : memref<2x4xf32>, memref<8x4xf32>, memref<8xf32>) outs(%t : memref<2x8xf32>) {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
    %y = dlexec.alloc : memref<2x8xf32>
    dlexec.kernel @relu ins(%t : memref<2x8xf32>) outs(%y : memref<2x8xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %a, %z : f32
      dlexec.yield %r : f32
    }
    dlexec.output "y", %y : memref<2x8xf32>
  }
}

// -----

// Not folded: the gemm's result has a second reader (the pre-activation is
// needed); a leaky ReLU (max with 0.01 x) is not a ReLU; a ReLU after a gemm
// that accumulates a full C with beta 0.5 is not cuBLASLt's RELU_BIAS.

#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  dlexec.variable @w : memref<8x4xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @not_relu
  dlexec.func @not_relu {
    %x = dlexec.input "x" : memref<2x4xf32>
    %c = dlexec.input "c" : memref<2x8xf32>
    %w = dlexec.variable_ref @w : memref<8x4xf32>
    %t = dlexec.alloc : memref<2x8xf32>
    // CHECK-NOT: epilogue
    dlexec.library_call "gemm" ins(%x, %w : memref<2x4xf32>, memref<8x4xf32>) outs(%t : memref<2x8xf32>) {trans_b = true}
    %y = dlexec.alloc : memref<2x8xf32>
    // CHECK: dlexec.kernel @relu_shared
    dlexec.kernel @relu_shared ins(%t : memref<2x8xf32>) outs(%y : memref<2x8xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %a, %z : f32
      dlexec.yield %r : f32
    }
    dlexec.output "pre", %t : memref<2x8xf32>
    dlexec.output "y", %y : memref<2x8xf32>
    %t2 = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%x, %w : memref<2x4xf32>, memref<8x4xf32>) outs(%t2 : memref<2x8xf32>) {trans_b = true}
    %y2 = dlexec.alloc : memref<2x8xf32>
    // CHECK: dlexec.kernel @leaky
    dlexec.kernel @leaky ins(%t2 : memref<2x8xf32>) outs(%y2 : memref<2x8xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %s = arith.constant 0.01 : f32
      %l = arith.mulf %a, %s : f32
      %r = arith.maximumf %a, %l : f32
      dlexec.yield %r : f32
    }
    dlexec.output "y2", %y2 : memref<2x8xf32>
    %t3 = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%x, %w, %c : memref<2x4xf32>, memref<8x4xf32>, memref<2x8xf32>) outs(%t3 : memref<2x8xf32>) {trans_b = true, beta = 0.5 : f32}
    %y3 = dlexec.alloc : memref<2x8xf32>
    // CHECK: dlexec.kernel @relu_after_c
    dlexec.kernel @relu_after_c ins(%t3 : memref<2x8xf32>) outs(%y3 : memref<2x8xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %a, %z : f32
      dlexec.yield %r : f32
    }
    dlexec.output "y3", %y3 : memref<2x8xf32>
  }
}

// -----

// A matmul layer whose bias is added by a kernel (ONNX MatMul + Add, a
// transformer's feed-forward): the bias add with its ReLU, over a [2, 3, 8]
// view of the gemm's [6, 8] result, becomes the gemm's bias row (beta 1)
// and relu epilogue, writing the kernel's buffer through a reshape; a bias
// add alone becomes the bias row without an epilogue.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.variable @w : memref<4x8xf32> {kind = "parameter"}
  dlexec.variable @b : memref<8xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @bias_kernels
  dlexec.func @bias_kernels {
    // CHECK: %[[X:.+]] = dlexec.input "x"
    %x = dlexec.input "x" : memref<6x4xf32>
    %w = dlexec.variable_ref @w : memref<4x8xf32>
    %t = dlexec.alloc : memref<6x8xf32>
    // The kernel's buffer and the bias move up to the call.
    // CHECK: %[[Y:.+]] = dlexec.alloc : memref<2x3x8xf32>
    // CHECK-NEXT: %[[B:.+]] = dlexec.variable_ref @b
    // CHECK: %[[V:.+]] = dlexec.reshape %[[Y]] : memref<2x3x8xf32> to memref<6x8xf32>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%[[X]], %{{.+}}, %[[B]] : memref<6x4xf32>, memref<4x8xf32>, memref<8xf32>) outs(%[[V]] : memref<6x8xf32>)
    // CHECK-SAME: beta = 1.000000e+00 : f32, epilogue = "relu"
    dlexec.library_call "gemm" ins(%x, %w : memref<6x4xf32>, memref<4x8xf32>) outs(%t : memref<6x8xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
    %tv = dlexec.reshape %t : memref<6x8xf32> to memref<2x3x8xf32>
    %b = dlexec.variable_ref @b : memref<8xf32>
    %y = dlexec.alloc : memref<2x3x8xf32>
    dlexec.kernel @bias_relu ins(%b, %tv : memref<8xf32>, memref<2x3x8xf32>) outs(%y : memref<2x3x8xf32>) attributes {indexing_maps = [#last, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} {
    ^bb0(%bb: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %s = arith.addf %bb, %a : f32
      %r = arith.maximumf %s, %z : f32
      dlexec.yield %r : f32
    }
    // CHECK: %[[Y2:.+]] = dlexec.alloc : memref<6x8xf32>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%[[X]], %{{.+}}, %[[B]] : {{.*}}) outs(%[[Y2]] : memref<6x8xf32>)
    // CHECK-SAME: beta = 1.000000e+00 : f32
    // CHECK-NOT: epilogue
    // CHECK-NOT: dlexec.kernel
    // CHECK: dlexec.output "y2", %[[Y2]]
    %t2 = dlexec.alloc : memref<6x8xf32>
    dlexec.library_call "gemm" ins(%x, %w : memref<6x4xf32>, memref<4x8xf32>) outs(%t2 : memref<6x8xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false}
    %y2 = dlexec.alloc : memref<6x8xf32>
    dlexec.kernel @bias ins(%t2, %b : memref<6x8xf32>, memref<8xf32>) outs(%y2 : memref<6x8xf32>) attributes {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %bb: f32, %o: f32):
      %s = arith.addf %a, %bb : f32
      dlexec.yield %s : f32
    }
    dlexec.output "y", %y : memref<2x3x8xf32>
    dlexec.output "y2", %y2 : memref<6x8xf32>
  }
}

// -----

// Backward of y = x W^T + b (W [8, 4]): dW = dY^T x reads dY as op(A) =
// dY^T, so the bias gradient (the column sum of dY, after the gemm in the
// schedule) becomes its bgrad_a epilogue and second output; the gemm that
// reads dY untransposed (dX = dY W) does not qualify.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.variable @w : memref<8x4xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @bgrad_a
  dlexec.func @bgrad_a {
    // CHECK-DAG: %[[X:.+]] = dlexec.input "x"
    // CHECK-DAG: %[[DY:.+]] = dlexec.input "dy"
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.input "dy" : memref<2x8xf32>
    %w = dlexec.variable_ref @w : memref<8x4xf32>
    %dx = dlexec.alloc : memref<2x4xf32>
    // CHECK: dlexec.library_call "gemm" ins(%[[DY]], %{{.+}} : {{.*}}) outs(%{{.+}} : memref<2x4xf32>)
    // CHECK-NOT: epilogue
    dlexec.library_call "gemm" ins(%dy, %w : memref<2x8xf32>, memref<8x4xf32>) outs(%dx : memref<2x4xf32>) {trans_a = false, trans_b = false}
    %dw = dlexec.alloc : memref<8x4xf32>
    // CHECK: %[[DB:.+]] = dlexec.alloc : memref<8xf32>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%[[DY]], %[[X]] : {{.*}}) outs(%[[DW:.+]], %[[DB]] : memref<8x4xf32>, memref<8xf32>)
    // CHECK-SAME: epilogue = "bgrad_a"
    // CHECK-SAME: trans_a = true
    // CHECK-NOT: dlexec.kernel
    // CHECK: dlexec.output "db", %[[DB]]
    dlexec.library_call "gemm" ins(%dy, %x : memref<2x8xf32>, memref<2x4xf32>) outs(%dw : memref<8x4xf32>) {trans_a = true, trans_b = false}
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @bias_grad ins(%dy : memref<2x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id, #col], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      dlexec.yield %s : f32
    }
    dlexec.output "dx", %dx : memref<2x4xf32>
    dlexec.output "dw", %dw : memref<8x4xf32>
    dlexec.output "db", %db : memref<8xf32>
  }
}

// -----

// A matmul-style layer y = x W + b (W [4, 8], GPT's linear layers) over a
// [2, 3, 8] activation: dW = x^T dY reads dY through a [6, 8] view as op(B),
// so the sum of dY over its first two dims becomes a bgrad_b epilogue, even
// with the sum before the gemm in the schedule.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
module {
  // CHECK-LABEL: dlexec.func @bgrad_b_view
  dlexec.func @bgrad_b_view {
    %x = dlexec.input "x" : memref<6x4xf32>
    %dy = dlexec.input "dy" : memref<2x3x8xf32>
    %db = dlexec.alloc : memref<8xf32>
    // CHECK-NOT: dlexec.kernel
    dlexec.kernel @bias_grad ins(%dy : memref<2x3x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id3, #last], init = [0.0 : f32], iterator_types = ["reduction", "reduction", "parallel"]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %acc, %a : f32
      dlexec.yield %s : f32
    }
    %v = dlexec.reshape %dy : memref<2x3x8xf32> to memref<6x8xf32>
    %dw = dlexec.alloc : memref<4x8xf32>
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}} : memref<6x4xf32>, memref<6x8xf32>) outs(%{{.+}}, %{{.+}} : memref<4x8xf32>, memref<8xf32>)
    // CHECK-SAME: epilogue = "bgrad_b"
    dlexec.library_call "gemm" ins(%x, %v : memref<6x4xf32>, memref<6x8xf32>) outs(%dw : memref<4x8xf32>) {trans_a = true, trans_b = false}
    dlexec.output "dw", %dw : memref<4x8xf32>
    dlexec.output "db", %db : memref<8xf32>
  }
}

// -----

// The sum first and its result read before the gemm (the bias's optimizer
// update, here a scale kernel): the fused call runs at the sum's place, so
// the reader still sees dBias; the gemm's operands (a view) move up with it.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#vec = affine_map<(d0) -> (d0)>
module {
  // CHECK-LABEL: dlexec.func @bgrad_hoisted
  dlexec.func @bgrad_hoisted {
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.input "dy" : memref<2x8xf32>
    %db = dlexec.alloc : memref<8xf32>
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}} : memref<2x4xf32>, memref<2x8xf32>) outs(%{{.+}}, %[[DB:.+]] : memref<4x8xf32>, memref<8xf32>)
    // CHECK-SAME: epilogue = "bgrad_b"
    // CHECK-NEXT: %[[S:.+]] = dlexec.alloc : memref<8xf32>
    // CHECK-NEXT: dlexec.kernel @update ins(%[[DB]] : memref<8xf32>)
    // CHECK-NOT: dlexec.library_call
    dlexec.kernel @bias_grad ins(%dy : memref<2x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id, #col], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      dlexec.yield %s : f32
    }
    %scaled = dlexec.alloc : memref<8xf32>
    dlexec.kernel @update ins(%db : memref<8xf32>) outs(%scaled : memref<8xf32>) attributes {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %h = arith.constant 0.5 : f32
      %m = arith.mulf %a, %h : f32
      dlexec.yield %m : f32
    }
    %xv = dlexec.reshape %x : memref<2x4xf32> to memref<2x4xf32>
    %dw = dlexec.alloc : memref<4x8xf32>
    dlexec.library_call "gemm" ins(%xv, %dy : memref<2x4xf32>, memref<2x8xf32>) outs(%dw : memref<4x8xf32>) {trans_a = true, trans_b = false}
    dlexec.output "dw", %dw : memref<4x8xf32>
    dlexec.output "scaled", %scaled : memref<8xf32>
  }
}

// -----

// Not folded: dY is overwritten between the gemm and the sum (the sum reads
// the new values); a sum over the last dim (row sums) is not a bias
// gradient of this gemm; a gemm that reads dY as an untransposed A sums the
// wrong way.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
module {
  // CHECK-LABEL: dlexec.func @no_bgrad
  dlexec.func @no_bgrad {
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.alloc : memref<2x8xf32>
    %dw = dlexec.alloc : memref<8x4xf32>
    // CHECK-NOT: epilogue
    dlexec.library_call "gemm" ins(%dy, %x : memref<2x8xf32>, memref<2x4xf32>) outs(%dw : memref<8x4xf32>) {trans_a = true, trans_b = false}
    // CHECK: dlexec.kernel @overwrite
    dlexec.kernel @overwrite ins(%x : memref<2x4xf32>) outs(%dy : memref<2x8xf32>) attributes {indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    %db = dlexec.alloc : memref<8xf32>
    // CHECK-NOT: epilogue
    // CHECK: dlexec.kernel @bias_grad
    dlexec.kernel @bias_grad ins(%dy : memref<2x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id, #col], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      dlexec.yield %s : f32
    }
    %rs = dlexec.alloc : memref<2xf32>
    // CHECK-NOT: epilogue
    // CHECK: dlexec.kernel @row_sum
    dlexec.kernel @row_sum ins(%dy : memref<2x8xf32>) outs(%rs : memref<2xf32>) attributes {indexing_maps = [#id, #row], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      dlexec.yield %s : f32
    }
    %w = dlexec.input "w" : memref<8x4xf32>
    %dx = dlexec.alloc : memref<2x4xf32>
    dlexec.library_call "gemm" ins(%dy, %w : memref<2x8xf32>, memref<8x4xf32>) outs(%dx : memref<2x4xf32>) {trans_a = false, trans_b = false}
    %db2 = dlexec.alloc : memref<8xf32>
    // CHECK-NOT: epilogue
    // CHECK: dlexec.kernel @bias_grad_untransposed
    dlexec.kernel @bias_grad_untransposed ins(%dy : memref<2x8xf32>) outs(%db2 : memref<8xf32>) attributes {indexing_maps = [#id, #col], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      dlexec.yield %s : f32
    }
    dlexec.output "dw", %dw : memref<8x4xf32>
    dlexec.output "db", %db : memref<8xf32>
    dlexec.output "rs", %rs : memref<2xf32>
    dlexec.output "dx", %dx : memref<2x4xf32>
    dlexec.output "db2", %db2 : memref<8xf32>
  }
}
