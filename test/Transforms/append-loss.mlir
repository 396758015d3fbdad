// RUN: dlc-opt %s --split-input-file --dlgraph-append-loss | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-append-loss="loss-output=total" | FileCheck %s --check-prefix=OUTPUT

// @main becomes @forward unchanged; @train_step is its copy with a labels
// argument (the logits' shape without the classes axis) and returns only the
// loss. The other output's computation stays until the optimizer pass.

module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  func.func @main(%x: tensor<4x3xf32> {dlgraph.name = "input"}) -> (tensor<4x3xf32> {dlgraph.name = "logits"}, tensor<f32> {dlgraph.name = "total"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %y = dlgraph.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %s = dlgraph.reduce_sum %y {axes = array<i64: 0, 1>} : tensor<4x3xf32> -> tensor<f32>
    return %y, %s : tensor<4x3xf32>, tensor<f32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: -> (tensor<4x3xf32> {dlgraph.name = "logits"}, tensor<f32> {dlgraph.name = "total"})
// CHECK: return %{{.+}}, %{{.+}} : tensor<4x3xf32>, tensor<f32>
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]+]]: tensor<4x3xf32> {dlgraph.name = "input"}, %[[LABELS:[^:]+]]: tensor<4xi64> {dlgraph.name = "labels"}) -> (tensor<f32> {dlgraph.name = "loss"})
// CHECK: %[[Y:.+]] = dlgraph.mul %[[X]]
// CHECK: dlgraph.reduce_sum %[[Y]]
// CHECK: %[[LOSS:.+]] = dlgraph.softmax_cross_entropy %[[Y]], %[[LABELS]]
// CHECK: return %[[LOSS]] : tensor<f32>

// With loss-output the named output is the loss and no labels are added.
// OUTPUT-LABEL: func.func @train_step(
// OUTPUT-SAME: %{{[^:]+}}: tensor<4x3xf32> {dlgraph.name = "input"}) -> (tensor<f32> {dlgraph.name = "loss"})
// OUTPUT-NOT: softmax_cross_entropy
// OUTPUT: %[[S:.+]] = dlgraph.reduce_sum
// OUTPUT: return %[[S]] : tensor<f32>
