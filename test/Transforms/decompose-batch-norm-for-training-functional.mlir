// RUN: dlc-opt %s --dlgraph-decompose-batch-norm-for-training | FileCheck %s

// A functional batch norm (F.batch_norm(w, None, None, training=True), as
// weight standardization writes it; PyTorch's exporter feeds the batch's
// own statistics): no statistic is a variable, so training normalizes with
// batch statistics and writes nothing.

module {
  dlgraph.variable @w : tensor<1x4x9xf32> = dense<0.5> : tensor<1x4x9xf32>
  func.func @train_step(%x: tensor<1x4x9xf32>) -> tensor<1x4x9xf32> {
    %one = dlgraph.constant dense<1.0> : tensor<4xf32>
    %zero = dlgraph.constant dense<0.0> : tensor<4xf32>
    %m = dlgraph.reduce_mean %x {axes = array<i64: 0, 2>} : tensor<1x4x9xf32> -> tensor<4xf32>
    %v = dlgraph.reduce_mean %x {axes = array<i64: 0, 2>} : tensor<1x4x9xf32> -> tensor<4xf32>
    %y = dlgraph.batch_norm %x, %one, %zero, %m, %v {momentum = 1.0 : f32} : (tensor<1x4x9xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x9xf32>
    return %y : tensor<1x4x9xf32>
  }
}

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]+]]: tensor<1x4x9xf32>)
// CHECK-NOT: dlgraph.batch_norm
// CHECK: %[[MEAN:.+]] = dlgraph.reduce_mean %[[X]] {axes = array<i64: 0, 2>, keepdims} : tensor<1x4x9xf32> -> tensor<1x4x1xf32>
// CHECK: dlgraph.rsqrt
// CHECK: %[[Y:.+]] = dlgraph.add %{{.+}} : (tensor<1x4x9xf32>, tensor<1x4x1xf32>) -> tensor<1x4x9xf32>
// CHECK-NOT: dlgraph.write_variable
// CHECK: return %[[Y]]
