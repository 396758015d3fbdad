// RUN: dlc-opt %s --split-input-file --dlgraph-differentiate | FileCheck %s

// The gradients of a parameter's reads are summed; @train_step returns,
// after the loss, the gradient of each trainable variable in module order
// (@b before @w here); the frozen integer variable is not trainable.

module {
  dlgraph.variable @b : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  dlgraph.variable @k : tensor<3xi64> = dense<1> : tensor<3xi64>
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  func.func @train_step(%x: tensor<4x3xf32>, %labels: tensor<4xi64>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %b = dlgraph.read_variable @b : tensor<3xf32>
    %b2 = dlgraph.read_variable @b : tensor<3xf32>
    %k = dlgraph.read_variable @k : tensor<3xi64>
    %y = dlgraph.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %z = dlgraph.add %y, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %z2 = dlgraph.add %z, %b2 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %loss = dlgraph.softmax_cross_entropy %z2, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK: dlgraph.variable @b : tensor<3xf32> = {{.+}} {trainable}
// CHECK-NOT: dlgraph.variable @k {{.*}}trainable
// CHECK: dlgraph.variable @w : tensor<3xf32> = {{.+}} {trainable}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "b.grad"}, tensor<3xf32> {dlgraph.name = "w.grad"})
// CHECK: %[[LOSS:.+]] = dlgraph.softmax_cross_entropy
// CHECK: dlgraph.softmax_cross_entropy_grad
// CHECK: %[[DB:.+]] = dlgraph.add %{{.+}}, %{{.+}} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK: return %[[LOSS]], %[[DB]], %[[DW:.+]] : tensor<f32>, tensor<3xf32>, tensor<3xf32>
