// RUN: dlc-opt %s --split-input-file --dlgraph-lower-to-dlexec --dlexec-fuse-elementwise --canonicalize --dlexec-fuse-reduction-epilogues --dlexec-fuse-layer-norm | FileCheck %s

// The importer's LayerNormalization over the last axis of [4, 6, 40] with
// scale and bias: after fusion four kernels (mean, x - mean, variance with
// its rsqrt epilogue, affine); the pass makes them one layer_norm builtin
// that writes y and the row mean and rstd. The centered values and the
// variance are no longer stored.
// CHECK-LABEL: dlexec.func @forward
// CHECK-NOT: dlexec.kernel
// CHECK: %[[M:.+]] = dlexec.alloc : memref<4x6x1xf32>
// CHECK-NEXT: %[[R:.+]] = dlexec.alloc : memref<4x6x1xf32>
// CHECK-NEXT: %[[Y:.+]] = dlexec.alloc : memref<4x6x40xf32>
// CHECK-NEXT: dlexec.builtin_kernel @forward_k{{[0-9]+}}_layer_norm "layer_norm" ins(%{{[0-9a-z_]+}}, %{{[0-9a-z_]+}}, %{{[0-9a-z_]+}} : memref<4x6x40xf32>, memref<40xf32>, memref<40xf32>) outs(%[[Y]], %[[M]], %[[R]] : memref<4x6x40xf32>, memref<4x6x1xf32>, memref<4x6x1xf32>) {epsilon = 9.99999974E-6 : f32}
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.output "y", %[[Y]]
module {
  func.func @forward(%x: tensor<4x6x40xf32> {dlgraph.name = "x"}, %w: tensor<40xf32> {dlgraph.name = "w"}, %b: tensor<40xf32> {dlgraph.name = "b"}) -> (tensor<4x6x40xf32> {dlgraph.name = "y"}) {
    %2 = dlgraph.reduce_mean %x {axes = array<i64: 2>, keepdims} : tensor<4x6x40xf32> -> tensor<4x6x1xf32>
    %3 = dlgraph.sub %x, %2 : (tensor<4x6x40xf32>, tensor<4x6x1xf32>) -> tensor<4x6x40xf32>
    %4 = dlgraph.mul %3, %3 : (tensor<4x6x40xf32>, tensor<4x6x40xf32>) -> tensor<4x6x40xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 2>, keepdims} : tensor<4x6x40xf32> -> tensor<4x6x1xf32>
    %6 = dlgraph.constant dense<9.99999974E-6> : tensor<4x6x1xf32>
    %7 = dlgraph.add %5, %6 : (tensor<4x6x1xf32>, tensor<4x6x1xf32>) -> tensor<4x6x1xf32>
    %8 = dlgraph.rsqrt %7 : tensor<4x6x1xf32>
    %9 = dlgraph.mul %3, %8 : (tensor<4x6x40xf32>, tensor<4x6x1xf32>) -> tensor<4x6x40xf32>
    %10 = dlgraph.mul %9, %w : (tensor<4x6x40xf32>, tensor<40xf32>) -> tensor<4x6x40xf32>
    %11 = dlgraph.add %10, %b : (tensor<4x6x40xf32>, tensor<40xf32>) -> tensor<4x6x40xf32>
    return %11 : tensor<4x6x40xf32>
  }
}

// -----

// The mean and rstd have readers of their own (ONNX's optional Mean and
// InvStdDev outputs, a backward): the builtin still folds and writes them.
// CHECK-LABEL: dlexec.func @forward
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.builtin_kernel @forward_k{{[0-9]+}}_layer_norm "layer_norm" ins(%{{.+}}) outs(%[[Y:[^,]+]], %[[M:[^,]+]], %[[R:[^ ]+]] :
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.output "y", %[[Y]]
// CHECK: dlexec.output "mean", %[[M]]
// CHECK: dlexec.output "rstd", %[[R]]
module {
  func.func @forward(%x: tensor<16x64xf32> {dlgraph.name = "x"}, %w: tensor<64xf32> {dlgraph.name = "w"}, %b: tensor<64xf32> {dlgraph.name = "b"}) -> (tensor<16x64xf32> {dlgraph.name = "y"}, tensor<16x1xf32> {dlgraph.name = "mean"}, tensor<16x1xf32> {dlgraph.name = "rstd"}) {
    %2 = dlgraph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %3 = dlgraph.sub %x, %2 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %4 = dlgraph.mul %3, %3 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %6 = dlgraph.constant dense<1.0E-5> : tensor<16x1xf32>
    %7 = dlgraph.add %5, %6 : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
    %8 = dlgraph.rsqrt %7 : tensor<16x1xf32>
    %9 = dlgraph.mul %3, %8 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %10 = dlgraph.mul %9, %w : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    %11 = dlgraph.add %10, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    return %11, %2, %8 : tensor<16x64xf32>, tensor<16x1xf32>, tensor<16x1xf32>
  }
}

// -----

// The centered values have another reader (a training step's backward
// reads x - mean): the builtin does not write them, so nothing folds.
// CHECK-LABEL: dlexec.func @forward
// CHECK-NOT: builtin_kernel
// CHECK: dlexec.kernel @forward_k{{[0-9]+}}_reduce_mean
// CHECK-NOT: builtin_kernel
module {
  func.func @forward(%x: tensor<16x64xf32> {dlgraph.name = "x"}, %w: tensor<64xf32> {dlgraph.name = "w"}, %b: tensor<64xf32> {dlgraph.name = "b"}) -> (tensor<16x64xf32> {dlgraph.name = "y"}, tensor<16x64xf32> {dlgraph.name = "d"}) {
    %2 = dlgraph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %3 = dlgraph.sub %x, %2 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %4 = dlgraph.mul %3, %3 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %6 = dlgraph.constant dense<1.0E-5> : tensor<16x1xf32>
    %7 = dlgraph.add %5, %6 : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
    %8 = dlgraph.rsqrt %7 : tensor<16x1xf32>
    %9 = dlgraph.mul %3, %8 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %10 = dlgraph.mul %9, %w : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    %11 = dlgraph.add %10, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    return %11, %3 : tensor<16x64xf32>, tensor<16x64xf32>
  }
}

// -----

// The variance itself is an output: not folded (the builtin writes only
// the mean and rstd).
// CHECK-LABEL: dlexec.func @forward
// CHECK-NOT: builtin_kernel
module {
  func.func @forward(%x: tensor<16x64xf32> {dlgraph.name = "x"}, %w: tensor<64xf32> {dlgraph.name = "w"}, %b: tensor<64xf32> {dlgraph.name = "b"}) -> (tensor<16x64xf32> {dlgraph.name = "y"}, tensor<16x1xf32> {dlgraph.name = "var"}) {
    %2 = dlgraph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %3 = dlgraph.sub %x, %2 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %4 = dlgraph.mul %3, %3 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %6 = dlgraph.constant dense<1.0E-5> : tensor<16x1xf32>
    %7 = dlgraph.add %5, %6 : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
    %8 = dlgraph.rsqrt %7 : tensor<16x1xf32>
    %9 = dlgraph.mul %3, %8 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %10 = dlgraph.mul %9, %w : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    %11 = dlgraph.add %10, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    return %11, %5 : tensor<16x64xf32>, tensor<16x1xf32>
  }
}

// -----

// Normalized over the middle axis of [16, 64, 2] (LayerNorm-like, scale
// and bias [64, 1]): the reductions do not run over the last loop alone,
// nothing folds.
// CHECK-LABEL: dlexec.func @forward
// CHECK-NOT: builtin_kernel
module {
  func.func @forward(%x: tensor<16x64x2xf32> {dlgraph.name = "x"}, %w: tensor<64x1xf32> {dlgraph.name = "w"}, %b: tensor<64x1xf32> {dlgraph.name = "b"}) -> (tensor<16x64x2xf32> {dlgraph.name = "y"}) {
    %2 = dlgraph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<16x64x2xf32> -> tensor<16x1x2xf32>
    %3 = dlgraph.sub %x, %2 : (tensor<16x64x2xf32>, tensor<16x1x2xf32>) -> tensor<16x64x2xf32>
    %4 = dlgraph.mul %3, %3 : (tensor<16x64x2xf32>, tensor<16x64x2xf32>) -> tensor<16x64x2xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 1>, keepdims} : tensor<16x64x2xf32> -> tensor<16x1x2xf32>
    %6 = dlgraph.constant dense<1.0E-5> : tensor<16x1x2xf32>
    %7 = dlgraph.add %5, %6 : (tensor<16x1x2xf32>, tensor<16x1x2xf32>) -> tensor<16x1x2xf32>
    %8 = dlgraph.rsqrt %7 : tensor<16x1x2xf32>
    %9 = dlgraph.mul %3, %8 : (tensor<16x64x2xf32>, tensor<16x1x2xf32>) -> tensor<16x64x2xf32>
    %10 = dlgraph.mul %9, %w : (tensor<16x64x2xf32>, tensor<64x1xf32>) -> tensor<16x64x2xf32>
    %11 = dlgraph.add %10, %b : (tensor<16x64x2xf32>, tensor<64x1xf32>) -> tensor<16x64x2xf32>
    return %11 : tensor<16x64x2xf32>
  }
}

// -----

// RMS-style: the variance of x itself (no centering): not the pattern.
// CHECK-LABEL: dlexec.func @forward
// CHECK-NOT: builtin_kernel
module {
  func.func @forward(%x: tensor<16x64xf32> {dlgraph.name = "x"}, %w: tensor<64xf32> {dlgraph.name = "w"}, %b: tensor<64xf32> {dlgraph.name = "b"}) -> (tensor<16x64xf32> {dlgraph.name = "y"}) {
    %4 = dlgraph.mul %x, %x : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %6 = dlgraph.constant dense<1.0E-5> : tensor<16x1xf32>
    %7 = dlgraph.add %5, %6 : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
    %8 = dlgraph.rsqrt %7 : tensor<16x1xf32>
    %9 = dlgraph.mul %x, %8 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %10 = dlgraph.mul %9, %w : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    %11 = dlgraph.add %10, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    return %11 : tensor<16x64xf32>
  }
}

// -----

// A training step's form: the backward reads the centered values d and the
// normalized values u = d * rstd, so u has a kernel of its own and the
// affine reads it (five kernels). The pass folds them into one
// layer_norm_train builtin that also writes d and u; the variance is no
// longer stored.
// CHECK-LABEL: dlexec.func @forward
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.builtin_kernel @forward_k{{[0-9]+}}_layer_norm "layer_norm_train" ins(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}} : memref<16x64xf32>, memref<64xf32>, memref<64xf32>) outs(%[[Y:[0-9]+]], %{{[0-9]+}}, %{{[0-9]+}}, %[[D:[0-9]+]], %[[U:[0-9]+]] : memref<16x64xf32>, memref<16x1xf32>, memref<16x1xf32>, memref<16x64xf32>, memref<16x64xf32>) {epsilon = 9.99999974E-6 : f32}
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.output "y", %[[Y]]
// CHECK: dlexec.output "d", %[[D]]
// CHECK: dlexec.output "u", %[[U]]
module {
  func.func @forward(%x: tensor<16x64xf32> {dlgraph.name = "x"}, %w: tensor<64xf32> {dlgraph.name = "w"}, %b: tensor<64xf32> {dlgraph.name = "b"}) -> (tensor<16x64xf32> {dlgraph.name = "y"}, tensor<16x64xf32> {dlgraph.name = "d"}, tensor<16x64xf32> {dlgraph.name = "u"}) {
    %2 = dlgraph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %3 = dlgraph.sub %x, %2 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %4 = dlgraph.mul %3, %3 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %6 = dlgraph.constant dense<1.0E-5> : tensor<16x1xf32>
    %7 = dlgraph.add %5, %6 : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
    %8 = dlgraph.rsqrt %7 : tensor<16x1xf32>
    %9 = dlgraph.mul %3, %8 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %10 = dlgraph.mul %9, %w : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    %11 = dlgraph.add %10, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    return %11, %3, %9 : tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>
  }
}
