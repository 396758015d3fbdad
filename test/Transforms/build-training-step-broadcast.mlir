// RUN: dlc-opt %s --dlgraph-build-training-step="optimizer=adam" | FileCheck %s

// NumPy broadcasting: gradients are reduced over the broadcast axes and
// reshaped to each operand's shape; a variable read twice gets the sum of
// both gradients.

module {
  dlgraph.variable @w : tensor<3x4xf32> = dense<0.5> : tensor<3x4xf32>
  dlgraph.variable @b : tensor<1x4xf32> = dense<0.1> : tensor<1x4xf32>
  dlgraph.variable @s : tensor<4xf32> = dense<2.0> : tensor<4xf32>
  func.func @main(%x: tensor<2x3xf32> {dlgraph.name = "x"}) -> (tensor<2x4xf32> {dlgraph.name = "y"}) {
    %w = dlgraph.read_variable @w : tensor<3x4xf32>
    %b = dlgraph.read_variable @b : tensor<1x4xf32>
    %s = dlgraph.read_variable @s : tensor<4xf32>
    %s2 = dlgraph.read_variable @s : tensor<4xf32>
    %h = dlgraph.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %a = dlgraph.add %h, %b : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
    %m = dlgraph.mul %a, %s : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %y = dlgraph.sub %m, %s2 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

// CHECK-LABEL: func.func @train_step(
// CHECK-DAG: %[[W:.+]] = dlgraph.read_variable @w
// CHECK-DAG: %[[S:.+]] = dlgraph.read_variable @s
// CHECK-DAG: %[[H:.+]] = dlgraph.matmul
// CHECK-DAG: %[[A:.+]] = dlgraph.add %[[H]], %{{.+}} : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[DY:.+]] = dlgraph.softmax_cross_entropy_grad
// d(m - s2)/ds2 = -sum_batch(dy)
// CHECK-DAG: %[[NEG:.+]] = dlgraph.neg %[[DY]] : tensor<2x4xf32>
// CHECK-DAG: %[[DS2:.+]] = dlgraph.reduce_sum %[[NEG]] {axes = array<i64: 0>} : tensor<2x4xf32> -> tensor<4xf32>
// d(a * s)/da = dy * s (same shape as a), d/ds = sum_batch(dy * a)
// CHECK-DAG: %[[DA:.+]] = dlgraph.mul %[[DY]], %[[S]] : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-DAG: %[[DYA:.+]] = dlgraph.mul %[[DY]], %[[A]] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-DAG: %[[DS1:.+]] = dlgraph.reduce_sum %[[DYA]] {axes = array<i64: 0>} : tensor<2x4xf32> -> tensor<4xf32>
// b is [1, 4]: sum over axis 0, then reshape [4] -> [1, 4].
// CHECK-DAG: %[[DBR:.+]] = dlgraph.reduce_sum %[[DA]] {axes = array<i64: 0>} : tensor<2x4xf32> -> tensor<4xf32>
// CHECK-DAG: %[[DB:.+]] = dlgraph.reshape %[[DBR]] : tensor<4xf32> to tensor<1x4xf32>
// 2-D matmul: dW = x^T dA.
// CHECK-DAG: %[[DW:.+]] = dlgraph.gemm %{{.+}}, %[[DA]] {trans_a = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// Two reads of @s: gradients summed.
// CHECK-DAG: %[[DS:.+]] = dlgraph.add %[[DS1]], %[[DS2]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-DAG: dlgraph.adam_update %{{.+}}, %[[DW]],
// CHECK-DAG: dlgraph.adam_update %{{.+}}, %[[DB]],
// CHECK-DAG: dlgraph.adam_update %{{.+}}, %[[DS]],
// CHECK: return
