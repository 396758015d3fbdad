// RUN: dlc-opt %s --split-input-file --dlgraph-build-training-step="optimizer=sgd lr=0.1 momentum=0.9 expose-gradients=true" | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-build-training-step="optimizer=sgd lr=0.1 momentum=0.9" | FileCheck %s --check-prefix=DEFAULT

// expose-gradients: @train_step also returns each trainable parameter's
// gradient, in variable order, named "<parameter>.grad"; each is the very
// value its sgd_update reads. A parameter read twice returns the sum of both
// reads' gradients. Without the option only the loss is returned.

module {
  dlgraph.variable @w : tensor<3x4xf32> = dense<0.1> : tensor<3x4xf32>
  dlgraph.variable @b : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  func.func @main(%x: tensor<2x4xf32> {dlgraph.name = "input"}) -> (tensor<2x3xf32> {dlgraph.name = "logits"}) {
    %w = dlgraph.read_variable @w : tensor<3x4xf32>
    %b = dlgraph.read_variable @b : tensor<3xf32>
    %b2 = dlgraph.read_variable @b : tensor<3xf32>
    %y = dlgraph.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %z = dlgraph.add %y, %b2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %z : tensor<2x3xf32>
  }
}

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3x4xf32> {dlgraph.name = "w.grad"}, tensor<3xf32> {dlgraph.name = "b.grad"})
// CHECK: %[[LOSS:.+]] = dlgraph.softmax_cross_entropy
// CHECK: %[[DB:.+]] = dlgraph.add %{{.+}}, %{{.+}} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-DAG: dlgraph.sgd_update %{{.+}}, %[[DW:[^,]+]], %{{.+}}, %{{.+}}, %{{.+}} {{.*}}(tensor<3x4xf32>,
// CHECK-DAG: dlgraph.sgd_update %{{.+}}, %[[DB]], %{{.+}}, %{{.+}}, %{{.+}} {{.*}}(tensor<3xf32>,
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]] : tensor<f32>, tensor<3x4xf32>, tensor<3xf32>

// DEFAULT-LABEL: func.func @train_step(
// DEFAULT-SAME: -> (tensor<f32> {dlgraph.name = "loss"})
// DEFAULT: return %{{[^,]+}} : tensor<f32>

// -----

// A variable the loss does not depend on is not trainable and has no
// gradient output.

module {
  dlgraph.variable @w : tensor<3x4xf32> = dense<0.1> : tensor<3x4xf32>
  dlgraph.variable @unused : tensor<5xf32> = dense<0.0> : tensor<5xf32>
  func.func @main(%x: tensor<2x4xf32> {dlgraph.name = "input"}) -> (tensor<2x3xf32> {dlgraph.name = "logits"}, tensor<5xf32> {dlgraph.name = "other"}) {
    %w = dlgraph.read_variable @w : tensor<3x4xf32>
    %u = dlgraph.read_variable @unused : tensor<5xf32>
    %y = dlgraph.gemm %x, %w {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    return %y, %u : tensor<2x3xf32>, tensor<5xf32>
  }
}

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3x4xf32> {dlgraph.name = "w.grad"})
// CHECK-NOT: unused.grad
// CHECK: return %{{.+}}, %{{.+}} : tensor<f32>, tensor<3x4xf32>
