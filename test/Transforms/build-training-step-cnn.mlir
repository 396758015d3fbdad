// RUN: dlc-opt %s --dlgraph-build-training-step="optimizer=sgd lr=0.1 momentum=0.9 weight-decay=0.0005" | FileCheck %s

// conv -> batch_norm -> relu -> max_pool -> flatten -> gemm. BatchNorm is
// decomposed into primitive ops in @train_step (batch statistics over N, H,
// W), the running statistics are updated PyTorch-style and are not
// trainable; @forward keeps the inference batch_norm.

module {
  dlgraph.variable @conv.weight : tensor<4x1x3x3xf32> = dense<0.1> : tensor<4x1x3x3xf32>
  dlgraph.variable @conv.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dlgraph.variable @bn.weight : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  dlgraph.variable @bn.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dlgraph.variable @bn.running_mean : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dlgraph.variable @bn.running_var : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  dlgraph.variable @fc.weight : tensor<3x16xf32> = dense<0.1> : tensor<3x16xf32>
  dlgraph.variable @fc.bias : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  func.func @main(%x: tensor<2x1x4x4xf32> {dlgraph.name = "input"}) -> (tensor<2x3xf32> {dlgraph.name = "logits"}) {
    %w = dlgraph.read_variable @conv.weight : tensor<4x1x3x3xf32>
    %b = dlgraph.read_variable @conv.bias : tensor<4xf32>
    %s = dlgraph.read_variable @bn.weight : tensor<4xf32>
    %o = dlgraph.read_variable @bn.bias : tensor<4xf32>
    %m = dlgraph.read_variable @bn.running_mean : tensor<4xf32>
    %v = dlgraph.read_variable @bn.running_var : tensor<4xf32>
    %fw = dlgraph.read_variable @fc.weight : tensor<3x16xf32>
    %fb = dlgraph.read_variable @fc.bias : tensor<3xf32>
    %c = dlgraph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x4x4xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
    %n = dlgraph.batch_norm %c, %s, %o, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
    %r = dlgraph.relu %n : tensor<2x4x4x4xf32>
    %p = dlgraph.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<2x4x4x4xf32> -> tensor<2x4x2x2xf32>
    %f = dlgraph.reshape %p : tensor<2x4x2x2xf32> to tensor<2x16xf32>
    %y = dlgraph.gemm %f, %fw, %fb {trans_b = true} : (tensor<2x16xf32>, tensor<3x16xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %y : tensor<2x3xf32>
  }
}

// Running statistics are not trainable and get no optimizer state.
// CHECK-DAG: dlgraph.variable @conv.weight : {{.*}} {trainable}
// CHECK-DAG: dlgraph.variable @conv.bias : {{.*}} {trainable}
// CHECK-DAG: dlgraph.variable @bn.weight : {{.*}} {trainable}
// CHECK-DAG: dlgraph.variable @bn.bias : {{.*}} {trainable}
// CHECK-DAG: dlgraph.variable @bn.running_mean : tensor<4xf32> = dense<0.000000e+00> : tensor<4xf32>{{$}}
// CHECK-DAG: dlgraph.variable @bn.running_var : tensor<4xf32> = dense<1.000000e+00> : tensor<4xf32>{{$}}
// CHECK-DAG: dlgraph.variable @conv.weight.momentum_buffer : tensor<4x1x3x3xf32> {dlgraph.optimizer_state}
// CHECK-DAG: dlgraph.variable @bn.weight.momentum_buffer : tensor<4xf32> {dlgraph.optimizer_state}
// CHECK-DAG: dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
// CHECK-NOT: running_mean.momentum_buffer
// CHECK-NOT: running_var.momentum_buffer

// CHECK-LABEL: func.func @forward(
// CHECK: dlgraph.batch_norm
// CHECK-NOT: write_variable
// CHECK: return

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tensor<2xi64> {dlgraph.name = "labels"}
// CHECK-NOT: dlgraph.batch_norm
// CHECK-DAG: %[[RM:.+]] = dlgraph.read_variable @bn.running_mean
// CHECK-DAG: %[[RV:.+]] = dlgraph.read_variable @bn.running_var
// CHECK-DAG: %[[S:.+]] = dlgraph.read_variable @bn.weight
// CHECK: %[[C:.+]] = dlgraph.conv
// Batch mean and biased variance over N, H, W.
// CHECK: %[[MEAN:.+]] = dlgraph.reduce_mean %[[C]] {axes = array<i64: 0, 2, 3>, keepdims} : tensor<2x4x4x4xf32> -> tensor<1x4x1x1xf32>
// CHECK: %[[XC:.+]] = dlgraph.sub %[[C]], %[[MEAN]] : (tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x4x4xf32>
// CHECK: %[[SQ:.+]] = dlgraph.mul %[[XC]], %[[XC]]
// CHECK: %[[VAR:.+]] = dlgraph.reduce_mean %[[SQ]] {axes = array<i64: 0, 2, 3>, keepdims}
// CHECK: %[[EPS:.+]] = dlgraph.constant dense<9.99999974E-6> : tensor<1x4x1x1xf32>
// CHECK: %[[VE:.+]] = dlgraph.add %[[VAR]], %[[EPS]]
// CHECK: %[[INV:.+]] = dlgraph.rsqrt %[[VE]]
// y = xc * (inv * scale) + bias: the per-channel factor first, so that only
// xc (not also xhat = xc * inv) is a full-size value the backward reads.
// CHECK: %[[SR:.+]] = dlgraph.reshape %[[S]] : tensor<4xf32> to tensor<1x4x1x1xf32>
// CHECK: %[[BR:.+]] = dlgraph.reshape %{{.+}} : tensor<4xf32> to tensor<1x4x1x1xf32>
// CHECK: %[[ALPHA:.+]] = dlgraph.mul %[[INV]], %[[SR]] : (tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
// CHECK: %[[XA:.+]] = dlgraph.mul %[[XC]], %[[ALPHA]] : (tensor<2x4x4x4xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x4x4xf32>
// CHECK: dlgraph.add %[[XA]], %[[BR]]
// CHECK-NOT: dlgraph.mul %[[XC]], %[[INV]]
// Running statistics: 0.9 * running + 0.1 * batch (variance times 32/31).
// CHECK: %[[BM:.+]] = dlgraph.reshape %[[MEAN]] : tensor<1x4x1x1xf32> to tensor<4xf32>
// CHECK: %[[BV:.+]] = dlgraph.reshape %[[VAR]] : tensor<1x4x1x1xf32> to tensor<4xf32>
// CHECK: %[[K:.+]] = dlgraph.constant dense<0.899999976> : tensor<4xf32>
// CHECK: %[[KEEP:.+]] = dlgraph.mul %[[RM]], %[[K]]
// CHECK: %[[F:.+]] = dlgraph.constant dense<0.100000024> : tensor<4xf32>
// CHECK: %[[ADD:.+]] = dlgraph.mul %[[BM]], %[[F]]
// CHECK: %[[NM:.+]] = dlgraph.add %[[KEEP]], %[[ADD]]
// CHECK: dlgraph.mul %[[RV]]
// CHECK: %[[FV:.+]] = dlgraph.constant dense<0.103225835> : tensor<4xf32>
// CHECK: dlgraph.mul %[[BV]], %[[FV]]
// CHECK: %[[NV:.+]] = dlgraph.add
// CHECK: dlgraph.write_variable @bn.running_mean, %[[NM]] : tensor<4xf32>
// CHECK: dlgraph.write_variable @bn.running_var, %[[NV]] : tensor<4xf32>
// CHECK: %[[LOSS:.+]] = dlgraph.softmax_cross_entropy
// Backward: pooling, BN (through the primitive ops), conv.
// CHECK: dlgraph.max_pool_grad %{{.+}}, %{{.+}} {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xf32>, tensor<2x4x2x2xf32>) -> tensor<2x4x4x4xf32>
// CHECK-DAG: %[[DS:.+]] = dlgraph.reduce_sum %{{.+}} {axes = array<i64: 0, 2, 3>} : tensor<2x4x4x4xf32> -> tensor<4xf32>
// CHECK-DAG: %[[DW:.+]] = dlgraph.conv_backward_filter %{{.+}}, %{{.+}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x1x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<4x1x3x3xf32>
// The first layer's input gradient is not needed.
// CHECK-NOT: dlgraph.conv_backward_data
// CHECK-DAG: %[[U:[^,]+]], %[[UB:[^ ]+]] = dlgraph.sgd_update %{{.+}}, %[[DW]], %{{.+}}, %{{.+}}, %{{.+}} {momentum = 0.899999976 : f32, weight_decay = 5.000000e-04 : f32}
// CHECK-DAG: dlgraph.write_variable @conv.weight, %[[U]]
// CHECK-DAG: dlgraph.write_variable @conv.weight.momentum_buffer, %[[UB]]
// CHECK-DAG: dlgraph.write_variable @bn.weight,
// CHECK-DAG: dlgraph.write_variable @bn.bias,
// CHECK-DAG: dlgraph.write_variable @fc.weight,
// CHECK-DAG: dlgraph.write_variable @fc.bias,
// CHECK-DAG: dlgraph.write_variable @conv.bias,
// CHECK: return %[[LOSS]] : tensor<f32>
