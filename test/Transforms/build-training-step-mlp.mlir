// RUN: dlc-opt %s --dlgraph-build-training-step="optimizer=adam lr=0.01" | FileCheck %s
// RUN: dlc-opt %s --dlgraph-build-training-step="optimizer=sgd lr=0.1 momentum=0.9" | FileCheck %s --check-prefix=SGD
// RUN: dlc-opt %s --dlgraph-build-training-step="optimizer=adamw" | FileCheck %s --check-prefix=ADAMW

// MLP: gemm + relu + gemm. Every weight and bias is trainable; the labels
// argument is added; @main becomes @forward unchanged.

module {
  dlgraph.variable @fc1.weight : tensor<8x4xf32> = dense<0.1> : tensor<8x4xf32>
  dlgraph.variable @fc1.bias : tensor<8xf32> = dense<0.0> : tensor<8xf32>
  dlgraph.variable @fc2.weight : tensor<3x8xf32> = dense<0.2> : tensor<3x8xf32>
  dlgraph.variable @fc2.bias : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  func.func @main(%x: tensor<2x4xf32> {dlgraph.name = "input"}) -> (tensor<2x3xf32> {dlgraph.name = "logits"}) {
    %w1 = dlgraph.read_variable @fc1.weight : tensor<8x4xf32>
    %b1 = dlgraph.read_variable @fc1.bias : tensor<8xf32>
    %w2 = dlgraph.read_variable @fc2.weight : tensor<3x8xf32>
    %b2 = dlgraph.read_variable @fc2.bias : tensor<3xf32>
    %h = dlgraph.gemm %x, %w1, %b1 {trans_b = true} : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %r = dlgraph.relu %h : tensor<2x8xf32>
    %y = dlgraph.gemm %r, %w2, %b2 {trans_b = true} : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %y : tensor<2x3xf32>
  }
}

// CHECK-DAG: dlgraph.variable @fc1.weight : tensor<8x4xf32> = dense<{{.*}}> {trainable}
// CHECK-DAG: dlgraph.variable @fc1.bias : tensor<8xf32> = dense<{{.*}}> {trainable}
// CHECK-DAG: dlgraph.variable @fc2.weight : tensor<3x8xf32> = dense<{{.*}}> {trainable}
// CHECK-DAG: dlgraph.variable @fc2.bias : tensor<3xf32> = dense<{{.*}}> {trainable}
// CHECK-DAG: dlgraph.variable @fc1.weight.exp_avg : tensor<8x4xf32> {dlgraph.optimizer_state}
// CHECK-DAG: dlgraph.variable @fc1.weight.exp_avg_sq : tensor<8x4xf32> {dlgraph.optimizer_state}
// CHECK-DAG: dlgraph.variable @fc2.bias.exp_avg_sq : tensor<3xf32> {dlgraph.optimizer_state}
// CHECK-DAG: dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: {dlgraph.name = "input"}) -> (tensor<2x3xf32> {dlgraph.name = "logits"})
// CHECK: dlgraph.gemm
// CHECK: dlgraph.relu
// CHECK: dlgraph.gemm
// CHECK-NOT: softmax_cross_entropy
// CHECK: return

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:.+]]: tensor<2x4xf32> {dlgraph.name = "input"}, %[[T:.+]]: tensor<2xi64> {dlgraph.name = "labels"}) -> (tensor<f32> {dlgraph.name = "loss"})
// CHECK-DAG: %[[W1:.+]] = dlgraph.read_variable @fc1.weight
// CHECK-DAG: %[[W2:.+]] = dlgraph.read_variable @fc2.weight
// CHECK: %[[H:.+]] = dlgraph.gemm %[[X]], %[[W1]], %{{.+}} {trans_b = true}
// CHECK: %[[R:.+]] = dlgraph.relu %[[H]]
// CHECK: %[[Y:.+]] = dlgraph.gemm %[[R]], %[[W2]], %{{.+}} {trans_b = true}
// CHECK: %[[LOSS:.+]] = dlgraph.softmax_cross_entropy %[[Y]], %[[T]] : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
// CHECK: %[[DY:.+]] = dlgraph.softmax_cross_entropy_grad %[[Y]], %[[T]], %{{.+}} : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
// dW2 = dY^T R (W2 is [3,8], used transposed).
// CHECK-DAG: %[[DW2:.+]] = dlgraph.gemm %[[DY]], %[[R]] {{.*}}trans_a = true{{.*}} -> tensor<3x8xf32>
// CHECK-DAG: %[[DR:.+]] = dlgraph.gemm %[[DY]], %[[W2]] {{.*}} -> tensor<2x8xf32>
// db2 = sum over the batch.
// CHECK-DAG: %[[DB2:.+]] = dlgraph.reduce_sum %[[DY]] {axes = array<i64: 0>} : tensor<2x3xf32> -> tensor<3xf32>
// relu backward: where result > 0.
// CHECK-DAG: %[[MASK:.+]] = dlgraph.compare "gt", %[[R]], %{{.+}}
// CHECK-DAG: %[[DH:.+]] = dlgraph.select %[[MASK]], %[[DR]], %{{.+}}
// CHECK-DAG: %[[DW1:.+]] = dlgraph.gemm %[[DH]], %[[X]] {{.*}}trans_a = true{{.*}} -> tensor<8x4xf32>
// CHECK-DAG: %[[S0:.+]] = dlgraph.read_variable @__step : tensor<f32>
// CHECK-DAG: %[[S1:.+]] = dlgraph.add %[[S0]], %{{.+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-DAG: dlgraph.write_variable @__step, %[[S1]]
// CHECK-DAG: %[[P1:[^,]+]], %[[P1M:[^,]+]], %[[P1V:[^ ]+]] = dlgraph.adam_update %[[W1]], %[[DW1]], %{{.+}}, %{{.+}}, %[[S1]], %[[LR:[^ ]+]] {beta1 = 0.899999976 : f32, beta2 = 9.990000e-01 : f32, epsilon = 9.99999993E-9 : f32, weight_decay = 0.000000e+00 : f32}
// Without a schedule the lr is one constant that every update reads.
// CHECK-DAG: %[[LR]] = dlgraph.constant dense<0.00999999977> : tensor<f32>
// CHECK-DAG: dlgraph.write_variable @fc1.weight, %[[P1]]
// CHECK-DAG: dlgraph.write_variable @fc1.weight.exp_avg, %[[P1M]]
// CHECK-DAG: dlgraph.write_variable @fc1.weight.exp_avg_sq, %[[P1V]]
// CHECK-DAG: %[[P2:[^,]+]], %[[P2M:[^,]+]], %[[P2V:[^ ]+]] = dlgraph.adam_update %[[W2]], %[[DW2]], %{{.+}}, %{{.+}}, %[[S1]], %[[LR]]
// CHECK-DAG: dlgraph.write_variable @fc2.weight, %[[P2]]
// CHECK-DAG: %[[P3:[^,]+]], %[[P3M:[^,]+]], %[[P3V:[^ ]+]] = dlgraph.adam_update %{{.+}}, %[[DB2]], %{{.+}}, %{{.+}}, %[[S1]], %[[LR]]
// CHECK-DAG: dlgraph.write_variable @fc2.bias, %[[P3]]
// CHECK-DAG: dlgraph.write_variable @fc1.bias,
// CHECK: return %[[LOSS]] : tensor<f32>

// SGD-DAG: dlgraph.variable @fc1.weight.momentum_buffer : tensor<8x4xf32> {dlgraph.optimizer_state}
// SGD-DAG: dlgraph.variable @fc2.bias.momentum_buffer : tensor<3xf32> {dlgraph.optimizer_state}
// SGD-LABEL: func.func @train_step(
// SGD-DAG: %[[B:.+]] = dlgraph.read_variable @fc1.weight.momentum_buffer
// SGD-DAG: %[[U:[^,]+]], %[[UB:[^ ]+]] = dlgraph.sgd_update %{{.+}}, %{{.+}}, %[[B]], %{{.+}}, %{{.+}} {momentum = 0.899999976 : f32, weight_decay = 0.000000e+00 : f32}
// SGD-DAG: dlgraph.write_variable @fc1.weight, %[[U]]
// SGD-DAG: dlgraph.write_variable @fc1.weight.momentum_buffer, %[[UB]]
// SGD-NOT: adam_update

// ADAMW-LABEL: func.func @train_step(
// ADAMW-COUNT-4: dlgraph.adam_update {{.*}}decoupled{{.*}}weight_decay = 0.00999999977 : f32
