// RUN: dlc-opt %s --split-input-file --dlgraph-schedule-updates | FileCheck %s

// The training step of a 2-layer MLP (SGD) as --dlgraph-apply-optimizer
// leaves it: both updates after the whole backward. Afterwards the step
// counter is computed first, @w2's update follows its gradient (and the last
// reader of @w2, the gemm that computes dX), @w1's follows its gradient; the
// writes stay where they were.
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[S0:.*]] = dlgraph.read_variable @__step
// CHECK-NEXT: %[[ONE:.*]] = dlgraph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[STEP:.*]] = dlgraph.add %[[S0]], %[[ONE]]
// CHECK: %[[W2:.*]] = dlgraph.read_variable @w2
// CHECK: dlgraph.softmax_cross_entropy_grad
// CHECK-NEXT: dlgraph.gemm %{{.*}}, %[[W2]] :
// CHECK-NEXT: %[[DW2:.*]] = dlgraph.gemm %{{.*}} {trans_a = true}
// CHECK-NEXT: %[[B2:.*]] = dlgraph.read_variable @w2.momentum_buffer
// CHECK-NEXT: dlgraph.sgd_update %[[W2]], %[[DW2]], %[[B2]], %[[STEP]]
// CHECK: %[[DW1:.*]] = dlgraph.gemm %{{.*}}, %arg0 {trans_a = true}
// CHECK-NEXT: %[[B1:.*]] = dlgraph.read_variable @w1.momentum_buffer
// CHECK-NEXT: dlgraph.sgd_update %{{.*}}, %[[DW1]], %[[B1]], %[[STEP]]
// CHECK-NEXT: dlgraph.write_variable @__step, %[[STEP]]
// CHECK-NEXT: dlgraph.write_variable @w1,
module {
  dlgraph.variable @w1 : tensor<16x8xf32> = dense<5.000000e-01> : tensor<16x8xf32> {trainable}
  dlgraph.variable @w1.momentum_buffer : tensor<16x8xf32> {dlgraph.optimizer_state}
  dlgraph.variable @w2 : tensor<10x16xf32> = dense<2.500000e-01> : tensor<10x16xf32> {trainable}
  dlgraph.variable @w2.momentum_buffer : tensor<10x16xf32> {dlgraph.optimizer_state}
  dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
  func.func @forward(%arg0: tensor<4x8xf32> {dlgraph.name = "x"}) -> (tensor<4x10xf32> {dlgraph.name = "y"}) {
    %0 = dlgraph.read_variable @w1 : tensor<16x8xf32>
    %1 = dlgraph.gemm %arg0, %0 {trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %2 = dlgraph.tanh %1 : tensor<4x16xf32>
    %3 = dlgraph.relu %2 : tensor<4x16xf32>
    %4 = dlgraph.read_variable @w2 : tensor<10x16xf32>
    %5 = dlgraph.gemm %3, %4 {trans_b = true} : (tensor<4x16xf32>, tensor<10x16xf32>) -> tensor<4x10xf32>
    return %5 : tensor<4x10xf32>
  }
  func.func @train_step(%arg0: tensor<4x8xf32> {dlgraph.name = "x"}, %arg1: tensor<4xi64> {dlgraph.name = "labels"}) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %0 = dlgraph.read_variable @w1 : tensor<16x8xf32>
    %1 = dlgraph.gemm %arg0, %0 {trans_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %2 = dlgraph.tanh %1 : tensor<4x16xf32>
    %3 = dlgraph.relu %2 : tensor<4x16xf32>
    %4 = dlgraph.read_variable @w2 : tensor<10x16xf32>
    %5 = dlgraph.gemm %3, %4 {trans_b = true} : (tensor<4x16xf32>, tensor<10x16xf32>) -> tensor<4x10xf32>
    %6 = dlgraph.softmax_cross_entropy %5, %arg1 : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
    %7 = dlgraph.constant dense<1.000000e+00> : tensor<f32>
    %8 = dlgraph.softmax_cross_entropy_grad %5, %arg1, %7 : (tensor<4x10xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x10xf32>
    %9 = dlgraph.gemm %8, %4 : (tensor<4x10xf32>, tensor<10x16xf32>) -> tensor<4x16xf32>
    %10 = dlgraph.gemm %8, %3 {trans_a = true} : (tensor<4x10xf32>, tensor<4x16xf32>) -> tensor<10x16xf32>
    %11 = dlgraph.constant dense<0.000000e+00> : tensor<4x16xf32>
    %12 = dlgraph.compare "gt", %3, %11 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xi1>
    %13 = dlgraph.select %12, %9, %11 : (tensor<4x16xi1>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %14 = dlgraph.mul %2, %2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %15 = dlgraph.constant dense<1.000000e+00> : tensor<4x16xf32>
    %16 = dlgraph.sub %15, %14 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %17 = dlgraph.mul %13, %16 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %18 = dlgraph.gemm %17, %arg0 {trans_a = true} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    %19 = dlgraph.read_variable @__step : tensor<f32>
    %20 = dlgraph.constant dense<1.000000e+00> : tensor<f32>
    %21 = dlgraph.add %19, %20 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    dlgraph.write_variable @__step, %21 : tensor<f32>
    %22 = dlgraph.read_variable @w1.momentum_buffer : tensor<16x8xf32>
    %lr = dlgraph.constant dense<0.00999999977> : tensor<f32>
    %new_param, %new_momentum_buffer = dlgraph.sgd_update %0, %18, %22, %21, %lr {momentum = 0.000000e+00 : f32, weight_decay = 0.000000e+00 : f32} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<f32>, tensor<f32>) -> (tensor<16x8xf32>, tensor<16x8xf32>)
    dlgraph.write_variable @w1, %new_param : tensor<16x8xf32>
    dlgraph.write_variable @w1.momentum_buffer, %new_momentum_buffer : tensor<16x8xf32>
    %23 = dlgraph.read_variable @w2.momentum_buffer : tensor<10x16xf32>
    %lr1 = dlgraph.constant dense<0.00999999977> : tensor<f32>
    %new_param_0, %new_momentum_buffer_1 = dlgraph.sgd_update %4, %10, %23, %21, %lr1 {momentum = 0.000000e+00 : f32, weight_decay = 0.000000e+00 : f32} : (tensor<10x16xf32>, tensor<10x16xf32>, tensor<10x16xf32>, tensor<f32>, tensor<f32>) -> (tensor<10x16xf32>, tensor<10x16xf32>)
    dlgraph.write_variable @w2, %new_param_0 : tensor<10x16xf32>
    dlgraph.write_variable @w2.momentum_buffer, %new_momentum_buffer_1 : tensor<10x16xf32>
    return %6 : tensor<f32>
  }
}

// -----

// Without @train_step nothing changes.
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: dlgraph.read_variable @w
// CHECK-NEXT: dlgraph.gemm
module {
  dlgraph.variable @w : tensor<4x4xf32> = dense<1.0> : tensor<4x4xf32> {trainable}
  func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %w = dlgraph.read_variable @w : tensor<4x4xf32>
    %y = dlgraph.gemm %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}
