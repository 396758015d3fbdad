// RUN: dlc-opt %s --dlgraph-decompose-batch-norm-for-training | FileCheck %s

// @train_step's batch_norm uses batch statistics over axes 0, 2, 3 and
// writes the running statistics (momentum 0.1, n = 2 * 2 * 2 = 8 values per
// channel: the variance's batch factor is 0.9 * 8 / 7); @forward keeps
// inference batch norm.

module {
  dlgraph.variable @s : tensor<3xf32> = dense<1.0> : tensor<3xf32>
  dlgraph.variable @b : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  dlgraph.variable @rm : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  dlgraph.variable @rv : tensor<3xf32> = dense<1.0> : tensor<3xf32>
  func.func @forward(%x: tensor<2x3x2x2xf32>) -> tensor<2x3x2x2xf32> {
    %s = dlgraph.read_variable @s : tensor<3xf32>
    %b = dlgraph.read_variable @b : tensor<3xf32>
    %m = dlgraph.read_variable @rm : tensor<3xf32>
    %v = dlgraph.read_variable @rv : tensor<3xf32>
    %y = dlgraph.batch_norm %x, %s, %b, %m, %v {momentum = 0.9 : f32} : (tensor<2x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x2x2xf32>
    return %y : tensor<2x3x2x2xf32>
  }
  func.func @train_step(%x: tensor<2x3x2x2xf32>) -> tensor<2x3x2x2xf32> {
    %s = dlgraph.read_variable @s : tensor<3xf32>
    %b = dlgraph.read_variable @b : tensor<3xf32>
    %m = dlgraph.read_variable @rm : tensor<3xf32>
    %v = dlgraph.read_variable @rv : tensor<3xf32>
    %y = dlgraph.batch_norm %x, %s, %b, %m, %v {momentum = 0.9 : f32} : (tensor<2x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x2x2xf32>
    return %y : tensor<2x3x2x2xf32>
  }
}

// CHECK-LABEL: func.func @forward(
// CHECK: dlgraph.batch_norm
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x3x2x2xf32>)
// CHECK-NOT: dlgraph.batch_norm
// CHECK: %[[MEAN:.+]] = dlgraph.reduce_mean %[[X]] {axes = array<i64: 0, 2, 3>, keepdims} : tensor<2x3x2x2xf32> -> tensor<1x3x1x1xf32>
// CHECK: %[[XC:.+]] = dlgraph.sub %[[X]], %[[MEAN]]
// CHECK: %[[SQ:.+]] = dlgraph.mul %[[XC]], %[[XC]]
// CHECK: %[[VAR:.+]] = dlgraph.reduce_mean %[[SQ]]
// CHECK: dlgraph.rsqrt
// CHECK: %[[Y:.+]] = dlgraph.add
// CHECK: %[[BM:.+]] = dlgraph.reshape %[[MEAN]] : tensor<1x3x1x1xf32> to tensor<3xf32>
// CHECK: %[[BV:.+]] = dlgraph.reshape %[[VAR]] : tensor<1x3x1x1xf32> to tensor<3xf32>
// CHECK: %[[KEEP:.+]] = dlgraph.constant dense<0.899999976> : tensor<3xf32>
// CHECK: dlgraph.mul %[[RM:[^,]+]], %[[KEEP]]
// CHECK: %[[FM:.+]] = dlgraph.constant dense<0.100000024> : tensor<3xf32>
// CHECK: dlgraph.mul %[[BM]], %[[FM]]
// CHECK: %[[NEWM:.+]] = dlgraph.add
// CHECK: %[[FV:.+]] = dlgraph.constant dense<0.114285745> : tensor<3xf32>
// CHECK: dlgraph.mul %[[BV]], %[[FV]]
// CHECK: %[[NEWV:.+]] = dlgraph.add
// CHECK: dlgraph.write_variable @rm, %[[NEWM]]
// CHECK: dlgraph.write_variable @rv, %[[NEWV]]
// CHECK-NOT: dlgraph.batch_norm
// CHECK: return %[[Y]]
