// RUN: dlc-opt %s --split-input-file --dlexec-fuse-gemm-epilogues | FileCheck %s

// A two-layer MLP's step: h = relu(x W1^T + b1), y = h W2^T; backward
// dH = dY W2, dZ = select(h > 0, dH, 0), dW1 = dZ^T x with the bias
// gradient db1 (the column sum of dZ). The forward gemm writes the ReLU
// bit-mask (relu_aux: [2, 4] i32, 8 columns rounded up to 128 bits); the dH
// gemm reads it and writes dZ and db1 (drelu_bgrad); the select kernel and
// the column sum go and dW1's gemm is plain. dZ's other reader (dX) still
// reads dZ.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#red = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.variable @w1 : memref<8x4xf32> {kind = "parameter"}
  dlexec.variable @b1 : memref<8xf32> {kind = "parameter"}
  dlexec.variable @w2 : memref<3x8xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @mlp_step
  dlexec.func @mlp_step {
    // CHECK-DAG: %[[X:.+]] = dlexec.input "x"
    // CHECK-DAG: %[[DY:.+]] = dlexec.input "dy"
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.input "dy" : memref<2x3xf32>
    %w1 = dlexec.variable_ref @w1 : memref<8x4xf32>
    %b1 = dlexec.variable_ref @b1 : memref<8xf32>
    %w2 = dlexec.variable_ref @w2 : memref<3x8xf32>
    // CHECK: %[[H:.+]] = dlexec.alloc : memref<2x8xf32>
    // CHECK: %[[AUX:.+]] = dlexec.alloc : memref<2x4xi32>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%[[X]], %{{.+}}, %{{.+}} : memref<2x4xf32>, memref<8x4xf32>, memref<8xf32>) outs(%[[H]], %[[AUX]] : memref<2x8xf32>, memref<2x4xi32>)
    // CHECK-SAME: epilogue = "relu_aux"
    %h = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1, %b1 : memref<2x4xf32>, memref<8x4xf32>, memref<8xf32>) outs(%h : memref<2x8xf32>) {alpha = 1.0 : f32, beta = 1.0 : f32, epilogue = "relu", trans_a = false, trans_b = true}
    %y = dlexec.alloc : memref<2x3xf32>
    dlexec.library_call "gemm" ins(%h, %w2 : memref<2x8xf32>, memref<3x8xf32>) outs(%y : memref<2x3xf32>) {trans_a = false, trans_b = true}
    // CHECK: %[[DZ:.+]] = dlexec.alloc : memref<2x8xf32>
    // CHECK-NEXT: %[[DB:.+]] = dlexec.alloc : memref<8xf32>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%[[DY]], %{{.+}}, %[[AUX]] : memref<2x3xf32>, memref<3x8xf32>, memref<2x4xi32>) outs(%[[DZ]], %[[DB]] : memref<2x8xf32>, memref<8xf32>)
    // CHECK-SAME: epilogue = "drelu_bgrad"
    %dh = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<2x3xf32>, memref<3x8xf32>) outs(%dh : memref<2x8xf32>) {trans_a = false, trans_b = false}
    // CHECK-NOT: dlexec.kernel
    %dz = dlexec.alloc : memref<2x8xf32>
    dlexec.kernel @select ins(%dh, %h : memref<2x8xf32>, memref<2x8xf32>) outs(%dz : memref<2x8xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf ogt, %a, %z : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    // CHECK: dlexec.library_call "gemm" ins(%[[DZ]], %{{.+}} : memref<2x8xf32>, memref<8x4xf32>) outs(%{{.+}} : memref<2x4xf32>)
    %dx = dlexec.alloc : memref<2x4xf32>
    dlexec.library_call "gemm" ins(%dz, %w1 : memref<2x8xf32>, memref<8x4xf32>) outs(%dx : memref<2x4xf32>) {trans_a = false, trans_b = false}
    // dW1's gemm: the bias gradient moved to the dH gemm.
    // CHECK: dlexec.library_call "gemm" ins(%[[DZ]], %[[X]] : memref<2x8xf32>, memref<2x4xf32>) outs(%{{.+}} : memref<8x4xf32>)
    // CHECK-NOT: epilogue
    // CHECK-NOT: dlexec.kernel
    // CHECK: dlexec.output "db", %[[DB]]
    %dw = dlexec.alloc : memref<8x4xf32>
    dlexec.library_call "gemm" ins(%dz, %x : memref<2x8xf32>, memref<2x4xf32>) outs(%dw : memref<8x4xf32>) {trans_a = true, trans_b = false}
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @column_sum ins(%dz : memref<2x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id, #red], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      dlexec.yield %s : f32
    }
    dlexec.output "y", %y : memref<2x3xf32>
    dlexec.output "dx", %dx : memref<2x4xf32>
    dlexec.output "dw", %dw : memref<8x4xf32>
    dlexec.output "db", %db : memref<8xf32>
  }
}

// -----

// Without a bias gradient (the ReLU follows a bias-less gemm, and nothing
// sums dZ): drelu. The mask of 130 columns rounds up to 256 bits, 8 words.
// The compare may be written 0 < h.

#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  dlexec.variable @w1 : memref<130x4xf32> {kind = "parameter"}
  dlexec.variable @w2 : memref<3x130xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @drelu
  dlexec.func @drelu {
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.input "dy" : memref<2x3xf32>
    %w1 = dlexec.variable_ref @w1 : memref<130x4xf32>
    %w2 = dlexec.variable_ref @w2 : memref<3x130xf32>
    // CHECK: %[[AUX:.+]] = dlexec.alloc : memref<2x8xi32>
    // CHECK-NEXT: dlexec.library_call "gemm" {{.*}} outs(%{{.+}}, %[[AUX]] : memref<2x130xf32>, memref<2x8xi32>)
    // CHECK-SAME: epilogue = "relu_aux"
    %h = dlexec.alloc : memref<2x130xf32>
    dlexec.library_call "gemm" ins(%x, %w1 : memref<2x4xf32>, memref<130x4xf32>) outs(%h : memref<2x130xf32>) {epilogue = "relu", trans_b = true}
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}}, %[[AUX]] : memref<2x3xf32>, memref<3x130xf32>, memref<2x8xi32>) outs(%[[DZ:.+]] : memref<2x130xf32>)
    // CHECK-SAME: epilogue = "drelu"
    // CHECK-NOT: dlexec.kernel
    // CHECK: dlexec.output "dz", %[[DZ]]
    %dh = dlexec.alloc : memref<2x130xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<2x3xf32>, memref<3x130xf32>) outs(%dh : memref<2x130xf32>)
    %dz = dlexec.alloc : memref<2x130xf32>
    dlexec.kernel @select ins(%h, %dh : memref<2x130xf32>, memref<2x130xf32>) outs(%dz : memref<2x130xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %g: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf olt, %z, %a : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    dlexec.output "h", %h : memref<2x130xf32>
    dlexec.output "dz", %dz : memref<2x130xf32>
  }
}

// -----

// Not folded: H is overwritten between the forward gemm and the select (the
// mask would be stale); dH has a second reader; the select keeps the
// gradient where h >= 0 (not the ReLU's gradient); bf16 (a 16-bit H rounds
// to 0 where the f32 mask has the bit set).

#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  dlexec.variable @w1 : memref<8x4xf32> {kind = "parameter"}
  dlexec.variable @w2 : memref<3x8xf32> {kind = "parameter"}
  dlexec.variable @v1 : memref<8x4xbf16> {kind = "parameter"}
  dlexec.variable @v2 : memref<3x8xbf16> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @not_relu_grad
  dlexec.func @not_relu_grad {
    // CHECK-NOT: relu_aux
    // CHECK-NOT: drelu
    // CHECK: dlexec.kernel @stale
    // CHECK-NOT: relu_aux
    // CHECK-NOT: drelu
    // CHECK: dlexec.kernel @shared
    // CHECK-NOT: relu_aux
    // CHECK-NOT: drelu
    // CHECK: dlexec.kernel @oge
    // CHECK-NOT: relu_aux
    // CHECK-NOT: drelu
    // CHECK: dlexec.kernel @bf16
    // CHECK-NOT: relu_aux
    // CHECK-NOT: drelu
    // CHECK: dlexec.output "dzb"
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.input "dy" : memref<2x3xf32>
    %w1 = dlexec.variable_ref @w1 : memref<8x4xf32>
    %w2 = dlexec.variable_ref @w2 : memref<3x8xf32>
    %h = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1 : memref<2x4xf32>, memref<8x4xf32>) outs(%h : memref<2x8xf32>) {epilogue = "relu", trans_b = true}
    %dh = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<2x3xf32>, memref<3x8xf32>) outs(%dh : memref<2x8xf32>)
    dlexec.library_call "gemm" ins(%x, %w1 : memref<2x4xf32>, memref<8x4xf32>) outs(%h : memref<2x8xf32>) {trans_b = true}
    %dz = dlexec.alloc : memref<2x8xf32>
    dlexec.kernel @stale ins(%dh, %h : memref<2x8xf32>, memref<2x8xf32>) outs(%dz : memref<2x8xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf ogt, %a, %z : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    %h2 = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1 : memref<2x4xf32>, memref<8x4xf32>) outs(%h2 : memref<2x8xf32>) {epilogue = "relu", trans_b = true}
    %dh2 = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<2x3xf32>, memref<3x8xf32>) outs(%dh2 : memref<2x8xf32>)
    %dz2 = dlexec.alloc : memref<2x8xf32>
    dlexec.kernel @shared ins(%dh2, %h2 : memref<2x8xf32>, memref<2x8xf32>) outs(%dz2 : memref<2x8xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf ogt, %a, %z : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    %h3 = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1 : memref<2x4xf32>, memref<8x4xf32>) outs(%h3 : memref<2x8xf32>) {epilogue = "relu", trans_b = true}
    %dh3 = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<2x3xf32>, memref<3x8xf32>) outs(%dh3 : memref<2x8xf32>)
    %dz3 = dlexec.alloc : memref<2x8xf32>
    dlexec.kernel @oge ins(%dh3, %h3 : memref<2x8xf32>, memref<2x8xf32>) outs(%dz3 : memref<2x8xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf oge, %a, %z : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    %xb = dlexec.input "xb" : memref<2x4xbf16>
    %dyb = dlexec.input "dyb" : memref<2x3xbf16>
    %v1 = dlexec.variable_ref @v1 : memref<8x4xbf16>
    %v2 = dlexec.variable_ref @v2 : memref<3x8xbf16>
    %hb = dlexec.alloc : memref<2x8xbf16>
    dlexec.library_call "gemm" ins(%xb, %v1 : memref<2x4xbf16>, memref<8x4xbf16>) outs(%hb : memref<2x8xbf16>) {epilogue = "relu", trans_b = true}
    %dhb = dlexec.alloc : memref<2x8xbf16>
    dlexec.library_call "gemm" ins(%dyb, %v2 : memref<2x3xbf16>, memref<3x8xbf16>) outs(%dhb : memref<2x8xbf16>)
    %dzb = dlexec.alloc : memref<2x8xbf16>
    dlexec.kernel @bf16 ins(%dhb, %hb : memref<2x8xbf16>, memref<2x8xbf16>) outs(%dzb : memref<2x8xbf16>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%g: bf16, %a: bf16, %o: bf16):
      %z = arith.constant 0.0 : bf16
      %p = arith.cmpf ogt, %a, %z : bf16
      %r = arith.select %p, %g, %z : bf16
      dlexec.yield %r : bf16
    }
    dlexec.output "dz", %dz : memref<2x8xf32>
    dlexec.output "dh2", %dh2 : memref<2x8xf32>
    dlexec.output "dz2", %dz2 : memref<2x8xf32>
    dlexec.output "dz3", %dz3 : memref<2x8xf32>
    dlexec.output "dzb", %dzb : memref<2x8xbf16>
  }
}

// -----

// Rematerialization: the backward reads a recomputed H2 (a second relu gemm
// of the same operands, after the loss) instead of the forward's H. The
// recomputed gemm writes the mask; the forward gemm stays a plain relu.

#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  dlexec.variable @w1 : memref<8x4xf32> {kind = "parameter"}
  dlexec.variable @w2 : memref<3x8xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @recomputed
  dlexec.func @recomputed {
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.input "dy" : memref<2x3xf32>
    %w1 = dlexec.variable_ref @w1 : memref<8x4xf32>
    %w2 = dlexec.variable_ref @w2 : memref<3x8xf32>
    // CHECK: dlexec.library_call "gemm" {{.*}} outs(%[[H:.+]] : memref<2x8xf32>)
    // CHECK-SAME: epilogue = "relu"
    %h = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1 : memref<2x4xf32>, memref<8x4xf32>) outs(%h : memref<2x8xf32>) {epilogue = "relu", trans_b = true}
    %y = dlexec.alloc : memref<2x3xf32>
    dlexec.library_call "gemm" ins(%h, %w2 : memref<2x8xf32>, memref<3x8xf32>) outs(%y : memref<2x3xf32>) {trans_b = true}
    // CHECK: %[[AUX:.+]] = dlexec.alloc : memref<2x4xi32>
    // CHECK-NEXT: dlexec.library_call "gemm" {{.*}} outs(%[[H2:.+]], %[[AUX]] : memref<2x8xf32>, memref<2x4xi32>)
    // CHECK-SAME: epilogue = "relu_aux"
    %h2 = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1 : memref<2x4xf32>, memref<8x4xf32>) outs(%h2 : memref<2x8xf32>) {epilogue = "relu", trans_b = true}
    // CHECK: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}}, %[[AUX]] : {{.*}}) outs(%[[DZ:.+]] : memref<2x8xf32>)
    // CHECK-SAME: epilogue = "drelu"
    // CHECK-NOT: dlexec.kernel
    %dh = dlexec.alloc : memref<2x8xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<2x3xf32>, memref<3x8xf32>) outs(%dh : memref<2x8xf32>)
    %dz = dlexec.alloc : memref<2x8xf32>
    dlexec.kernel @select ins(%dh, %h2 : memref<2x8xf32>, memref<2x8xf32>) outs(%dz : memref<2x8xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf ogt, %a, %z : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    dlexec.output "y", %y : memref<2x3xf32>
    dlexec.output "dz", %dz : memref<2x8xf32>
  }
}

// -----

// A transformer's feed-forward layer: 3-D activations [2, 4, 8] flattened
// to the gemms' [8, 8] by reshapes that merge the leading dims. H is a 3-D
// buffer the relu gemm writes through a [8, 8] view; the select reads H and
// a 3-D view of dH; dZ is 3-D, read by the dX gemm through a [8, 8] view,
// and its bias gradient is a column-sum kernel over both leading dims.
// The dH gemm writes dZ through a new [8, 8] view (drelu_bgrad), and dH's
// buffer and its view go.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
module {
  dlexec.variable @w1 : memref<8x4xf32> {kind = "parameter"}
  dlexec.variable @b1 : memref<8xf32> {kind = "parameter"}
  dlexec.variable @w2 : memref<3x8xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @ffn_3d
  dlexec.func @ffn_3d {
    %x = dlexec.input "x" : memref<8x4xf32>
    %dy = dlexec.input "dy" : memref<8x3xf32>
    %w1 = dlexec.variable_ref @w1 : memref<8x4xf32>
    %b1 = dlexec.variable_ref @b1 : memref<8xf32>
    %w2 = dlexec.variable_ref @w2 : memref<3x8xf32>
    // CHECK: %[[H:.+]] = dlexec.alloc : memref<2x4x8xf32>
    // CHECK: %[[HV:.+]] = dlexec.reshape %[[H]] : memref<2x4x8xf32> to memref<8x8xf32>
    // CHECK: %[[AUX:.+]] = dlexec.alloc : memref<8x4xi32>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<8x4xf32>, memref<8x4xf32>, memref<8xf32>) outs(%[[HV]], %[[AUX]] : memref<8x8xf32>, memref<8x4xi32>)
    // CHECK-SAME: epilogue = "relu_aux"
    %h = dlexec.alloc : memref<2x4x8xf32>
    %hv = dlexec.reshape %h : memref<2x4x8xf32> to memref<8x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1, %b1 : memref<8x4xf32>, memref<8x4xf32>, memref<8xf32>) outs(%hv : memref<8x8xf32>) {alpha = 1.0 : f32, beta = 1.0 : f32, epilogue = "relu", trans_a = false, trans_b = true}
    %h2 = dlexec.reshape %h : memref<2x4x8xf32> to memref<8x8xf32>
    %y = dlexec.alloc : memref<8x3xf32>
    dlexec.library_call "gemm" ins(%h2, %w2 : memref<8x8xf32>, memref<3x8xf32>) outs(%y : memref<8x3xf32>) {trans_a = false, trans_b = true}
    // CHECK: %[[DZ:.+]] = dlexec.alloc : memref<2x4x8xf32>
    // CHECK-NEXT: %[[DB:.+]] = dlexec.alloc : memref<8xf32>
    // CHECK-NEXT: %[[DZV:.+]] = dlexec.reshape %[[DZ]] : memref<2x4x8xf32> to memref<8x8xf32>
    // CHECK-NEXT: dlexec.library_call "gemm" ins(%{{.+}}, %{{.+}}, %[[AUX]] : memref<8x3xf32>, memref<3x8xf32>, memref<8x4xi32>) outs(%[[DZV]], %[[DB]] : memref<8x8xf32>, memref<8xf32>)
    // CHECK-SAME: epilogue = "drelu_bgrad"
    // CHECK-NOT: dlexec.alloc : memref<8x8xf32>
    // CHECK-NOT: dlexec.kernel
    %dh = dlexec.alloc : memref<8x8xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<8x3xf32>, memref<3x8xf32>) outs(%dh : memref<8x8xf32>) {trans_a = false, trans_b = false}
    %dh3 = dlexec.reshape %dh : memref<8x8xf32> to memref<2x4x8xf32>
    %dz = dlexec.alloc : memref<2x4x8xf32>
    dlexec.kernel @select ins(%dh3, %h : memref<2x4x8xf32>, memref<2x4x8xf32>) outs(%dz : memref<2x4x8xf32>) attributes {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf ogt, %a, %z : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @column_sum ins(%dz : memref<2x4x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id3, #col3], iterator_types = ["reduction", "reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      dlexec.yield %s : f32
    }
    // dX's gemm reads dZ through its [8, 8] view.
    // CHECK: %[[DZ2:.+]] = dlexec.reshape %[[DZ]] : memref<2x4x8xf32> to memref<8x8xf32>
    // CHECK: dlexec.library_call "gemm" ins(%[[DZ2]], %{{.+}} : memref<8x8xf32>, memref<8x4xf32>) outs(%{{.+}} : memref<8x4xf32>)
    // CHECK-NOT: dlexec.kernel
    // CHECK: dlexec.output "db", %[[DB]]
    %dz2 = dlexec.reshape %dz : memref<2x4x8xf32> to memref<8x8xf32>
    %dx = dlexec.alloc : memref<8x4xf32>
    dlexec.library_call "gemm" ins(%dz2, %w1 : memref<8x8xf32>, memref<8x4xf32>) outs(%dx : memref<8x4xf32>) {trans_a = false, trans_b = false}
    dlexec.output "y", %y : memref<8x3xf32>
    dlexec.output "dx", %dx : memref<8x4xf32>
    dlexec.output "db", %db : memref<8xf32>
  }
}

// -----

// Not folded: the select reads H and dH through views that change the last
// dim ([8, 8] -> [16, 4]: row i of the view is not row i of the gemms'
// output, and a column sum of dZ would not be the bias gradient), and a dH
// whose 3-D view has a second reader.

#id = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  dlexec.variable @w1 : memref<8x4xf32> {kind = "parameter"}
  dlexec.variable @w2 : memref<3x8xf32> {kind = "parameter"}
  // CHECK-LABEL: dlexec.func @not_leading_dims
  dlexec.func @not_leading_dims {
    // CHECK-NOT: relu_aux
    // CHECK-NOT: drelu
    // CHECK: dlexec.kernel @last_dim
    // CHECK-NOT: relu_aux
    // CHECK-NOT: drelu
    // CHECK: dlexec.kernel @shared_view
    // CHECK-NOT: relu_aux
    // CHECK-NOT: drelu
    // CHECK: dlexec.output "dh3"
    %x = dlexec.input "x" : memref<8x4xf32>
    %dy = dlexec.input "dy" : memref<8x3xf32>
    %w1 = dlexec.variable_ref @w1 : memref<8x4xf32>
    %w2 = dlexec.variable_ref @w2 : memref<3x8xf32>
    %h = dlexec.alloc : memref<8x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1 : memref<8x4xf32>, memref<8x4xf32>) outs(%h : memref<8x8xf32>) {epilogue = "relu", trans_b = true}
    %hv = dlexec.reshape %h : memref<8x8xf32> to memref<16x4xf32>
    %dh = dlexec.alloc : memref<8x8xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<8x3xf32>, memref<3x8xf32>) outs(%dh : memref<8x8xf32>)
    %dhv = dlexec.reshape %dh : memref<8x8xf32> to memref<16x4xf32>
    %dz = dlexec.alloc : memref<16x4xf32>
    dlexec.kernel @last_dim ins(%dhv, %hv : memref<16x4xf32>, memref<16x4xf32>) outs(%dz : memref<16x4xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf ogt, %a, %z : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    %h2 = dlexec.alloc : memref<8x8xf32>
    dlexec.library_call "gemm" ins(%x, %w1 : memref<8x4xf32>, memref<8x4xf32>) outs(%h2 : memref<8x8xf32>) {epilogue = "relu", trans_b = true}
    %h23 = dlexec.reshape %h2 : memref<8x8xf32> to memref<2x4x8xf32>
    %dh2 = dlexec.alloc : memref<8x8xf32>
    dlexec.library_call "gemm" ins(%dy, %w2 : memref<8x3xf32>, memref<3x8xf32>) outs(%dh2 : memref<8x8xf32>)
    %dh23 = dlexec.reshape %dh2 : memref<8x8xf32> to memref<2x4x8xf32>
    %dz2 = dlexec.alloc : memref<2x4x8xf32>
    dlexec.kernel @shared_view ins(%dh23, %h23 : memref<2x4x8xf32>, memref<2x4x8xf32>) outs(%dz2 : memref<2x4x8xf32>) attributes {indexing_maps = [#id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} {
    ^bb0(%g: f32, %a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %p = arith.cmpf ogt, %a, %z : f32
      %r = arith.select %p, %g, %z : f32
      dlexec.yield %r : f32
    }
    dlexec.output "dz", %dz : memref<16x4xf32>
    dlexec.output "dz2", %dz2 : memref<2x4x8xf32>
    dlexec.output "dh3", %dh23 : memref<2x4x8xf32>
  }
}
