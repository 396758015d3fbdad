// RUN: dlc-opt %s --split-input-file --dlgraph-apply-optimizer | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-apply-optimizer="optimizer=adamw expose-gradients=true" | FileCheck %s --check-prefix=ADAMW

// The gradient results name the parameters; the update reads the
// parameter's first read. By default (sgd, lr 0.01, the default of dlc's
// --lr too) only the loss stays a result and what it does not need is
// erased (the unused second read and the constant).

module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32> {trainable}
  func.func @train_step(%x: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %w2 = dlgraph.read_variable @w : tensor<3xf32>
    %c = dlgraph.constant dense<2.0> : tensor<3xf32>
    %y = dlgraph.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %loss = dlgraph.reduce_sum %y {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    return %loss, %x : tensor<f32>, tensor<3xf32>
  }
}

// CHECK: dlgraph.variable @w
// CHECK-NEXT: dlgraph.variable @w.momentum_buffer : tensor<3xf32> {dlgraph.optimizer_state}
// CHECK-NEXT: dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]+]]: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"})
// CHECK-NEXT: %[[W:.+]] = dlgraph.read_variable @w
// CHECK-NEXT: dlgraph.mul
// CHECK-NEXT: %[[LOSS:.+]] = dlgraph.reduce_sum
// CHECK-NEXT: dlgraph.read_variable @__step
// CHECK-NEXT: dlgraph.constant dense<1.000000e+00>
// CHECK-NEXT: %[[STEP:.+]] = dlgraph.add
// CHECK-NEXT: dlgraph.write_variable @__step, %[[STEP]]
// CHECK-NEXT: %[[LR:.+]] = dlgraph.constant dense<0.00999999977> : tensor<f32>
// CHECK-NEXT: %[[BUF:.+]] = dlgraph.read_variable @w.momentum_buffer
// CHECK-NEXT: dlgraph.sgd_update %[[W]], %[[X]], %[[BUF]], %[[STEP]], %[[LR]] {momentum = 0.000000e+00 : f32, weight_decay = 0.000000e+00 : f32}
// CHECK: return %[[LOSS]] : tensor<f32>

// ADAMW: dlgraph.variable @w.exp_avg : tensor<3xf32> {dlgraph.optimizer_state}
// ADAMW-NEXT: dlgraph.variable @w.exp_avg_sq : tensor<3xf32> {dlgraph.optimizer_state}
// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"})
// ADAMW: dlgraph.adam_update {{.+}} {beta1 = {{.+}}, decoupled, {{.+}}weight_decay = 0.00999999977 : f32}
// ADAMW: return %{{.+}}, %{{.+}} : tensor<f32>, tensor<3xf32>
