// RUN: dlc-opt %s --split-input-file --dlgraph-lower-to-dlexec | FileCheck %s

// MLP training step: gemm, bias add, relu, loss, relu backward, bias and
// weight gradients, the step counter and one Adam update.

module {
  dlgraph.variable @fc1.weight : tensor<8x4xf32> = dense<0.1> : tensor<8x4xf32> {trainable}
  dlgraph.variable @fc1.bias : tensor<8xf32> = dense<0.0> : tensor<8xf32> {trainable}
  dlgraph.variable @fc1.weight.exp_avg : tensor<8x4xf32> {dlgraph.optimizer_state}
  dlgraph.variable @fc1.weight.exp_avg_sq : tensor<8x4xf32> {dlgraph.optimizer_state}
  dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
  func.func @train_step(%x: tensor<2x4xf32> {dlgraph.name = "input"}, %t: tensor<2xi64> {dlgraph.name = "labels"}) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %w1 = dlgraph.read_variable @fc1.weight : tensor<8x4xf32>
    %b1 = dlgraph.read_variable @fc1.bias : tensor<8xf32>
    %m = dlgraph.read_variable @fc1.weight.exp_avg : tensor<8x4xf32>
    %v = dlgraph.read_variable @fc1.weight.exp_avg_sq : tensor<8x4xf32>
    %s0 = dlgraph.read_variable @__step : tensor<f32>
    %h = dlgraph.gemm %x, %w1 {trans_b = true} : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %hb = dlgraph.add %h, %b1 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %r = dlgraph.relu %hb : tensor<2x8xf32>
    %loss = dlgraph.softmax_cross_entropy %r, %t : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
    %one = dlgraph.constant dense<1.0> : tensor<f32>
    %dy = dlgraph.softmax_cross_entropy_grad %r, %t, %one : (tensor<2x8xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x8xf32>
    %zero = dlgraph.constant dense<0.0> : tensor<f32>
    %mask = dlgraph.compare "gt", %r, %zero : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xi1>
    %dh = dlgraph.select %mask, %dy, %zero : (tensor<2x8xi1>, tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %db1 = dlgraph.reduce_sum %dh {axes = array<i64: 0>} : tensor<2x8xf32> -> tensor<8xf32>
    %dw1 = dlgraph.gemm %dh, %x {trans_a = true} : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
    %s1 = dlgraph.add %s0, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
    dlgraph.write_variable @__step, %s1 : tensor<f32>
    %lr = dlgraph.constant dense<1.0e-03> : tensor<f32>
    %p:3 = dlgraph.adam_update %w1, %dw1, %m, %v, %s1, %lr {beta1 = 0.9 : f32, beta2 = 0.999 : f32, epsilon = 1.0e-08 : f32, weight_decay = 0.0 : f32} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
    dlgraph.write_variable @fc1.weight, %p#0 : tensor<8x4xf32>
    dlgraph.write_variable @fc1.weight.exp_avg, %p#1 : tensor<8x4xf32>
    dlgraph.write_variable @fc1.weight.exp_avg_sq, %p#2 : tensor<8x4xf32>
    %nb = dlgraph.sub %b1, %db1 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    dlgraph.write_variable @fc1.bias, %nb : tensor<8xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-DAG: #[[ID2:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[SCALAR0:.+]] = affine_map<() -> ()>
// CHECK-DAG: #[[SCALAR2:.+]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG: dlexec.variable @fc1.weight : memref<8x4xf32> {kind = "parameter"} = dense<1.000000e-01> : tensor<8x4xf32>
// CHECK-DAG: dlexec.variable @fc1.bias : memref<8xf32> {kind = "parameter"} = dense<0.000000e+00> : tensor<8xf32>
// CHECK-DAG: dlexec.variable @fc1.weight.exp_avg : memref<8x4xf32> {kind = "optimizer_state"}
// CHECK-DAG: dlexec.variable @__step : memref<f32> {kind = "optimizer_state"}
// The splat 1.0 is needed as a buffer by the loss gradient only.
// CHECK-DAG: dlexec.variable @[[ONE:.+]] : memref<f32> {kind = "constant"} = dense<1.000000e+00> : tensor<f32>
// CHECK-NOT: dlgraph.
// CHECK-LABEL: dlexec.func @train_step {
// Variables written in place by their producers.
// CHECK-DAG: %[[BIAS_W:.+]] = dlexec.variable_ref @fc1.bias : memref<8xf32>
// CHECK-DAG: %[[V_W:.+]] = dlexec.variable_ref @fc1.weight.exp_avg_sq : memref<8x4xf32>
// CHECK-DAG: %[[M_W:.+]] = dlexec.variable_ref @fc1.weight.exp_avg : memref<8x4xf32>
// CHECK-DAG: %[[W_W:.+]] = dlexec.variable_ref @fc1.weight : memref<8x4xf32>
// CHECK-DAG: %[[STEP_W:.+]] = dlexec.variable_ref @__step : memref<f32>
// CHECK: %[[X:.+]] = dlexec.input "input" : memref<2x4xf32>
// CHECK: %[[T:.+]] = dlexec.input "labels" : memref<2xi64>
// CHECK: %[[W:.+]] = dlexec.variable_ref @fc1.weight : memref<8x4xf32>
// CHECK: %[[B:.+]] = dlexec.variable_ref @fc1.bias : memref<8xf32>
// CHECK: %[[M:.+]] = dlexec.variable_ref @fc1.weight.exp_avg :
// CHECK: %[[V:.+]] = dlexec.variable_ref @fc1.weight.exp_avg_sq :
// CHECK: %[[S0:.+]] = dlexec.variable_ref @__step : memref<f32>
// CHECK: %[[H:.+]] = dlexec.alloc : memref<2x8xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[X]], %[[W]] : memref<2x4xf32>, memref<8x4xf32>) outs(%[[H]] : memref<2x8xf32>) {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_a = false, trans_b = true}
// CHECK: %[[HB:.+]] = dlexec.alloc : memref<2x8xf32>
// CHECK: dlexec.kernel @train_step_k0_add ins(%[[H]], %[[B]] : memref<2x8xf32>, memref<8xf32>) outs(%[[HB]] : memref<2x8xf32>) attributes {indexing_maps = [#[[ID2]], #[[ROW]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-NEXT: ^bb0(%[[A0:.+]]: f32, %[[A1:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[A0]], %[[A1]] : f32
// CHECK-NEXT: dlexec.yield %[[SUM]] : f32
// CHECK: %[[R:.+]] = dlexec.alloc : memref<2x8xf32>
// CHECK: dlexec.kernel @train_step_k1_relu ins(%[[HB]] : memref<2x8xf32>) outs(%[[R]] : memref<2x8xf32>)
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: arith.maximumf %{{.+}}, %[[Z]] : f32
// CHECK: %[[LOSS:.+]] = dlexec.alloc : memref<f32>
// CHECK: dlexec.builtin_kernel @train_step_k2_softmax_cross_entropy "softmax_cross_entropy" ins(%[[R]], %[[T]] : memref<2x8xf32>, memref<2xi64>) outs(%[[LOSS]] : memref<f32>)
// CHECK: %[[ONEBUF:.+]] = dlexec.variable_ref @[[ONE]] : memref<f32>
// CHECK: %[[DY:.+]] = dlexec.alloc : memref<2x8xf32>
// CHECK: dlexec.builtin_kernel @train_step_k3_softmax_cross_entropy_grad "softmax_cross_entropy_grad" ins(%[[R]], %[[T]], %[[ONEBUF]] : memref<2x8xf32>, memref<2xi64>, memref<f32>) outs(%[[DY]] : memref<2x8xf32>)
// The 0.0 splat is inlined: compare reads one buffer.
// CHECK: %[[MASK:.+]] = dlexec.alloc : memref<2x8xi1>
// CHECK: dlexec.kernel @train_step_k4_compare ins(%[[R]] : memref<2x8xf32>) outs(%[[MASK]] : memref<2x8xi1>)
// CHECK: arith.cmpf ogt
// CHECK: %[[DH:.+]] = dlexec.alloc : memref<2x8xf32>
// CHECK: dlexec.kernel @train_step_k5_select ins(%[[MASK]], %[[DY]] : memref<2x8xi1>, memref<2x8xf32>) outs(%[[DH]] : memref<2x8xf32>)
// CHECK: arith.select
// Bias gradient: a reduction over the batch.
// CHECK: %[[DB:.+]] = dlexec.alloc : memref<8xf32>
// CHECK: dlexec.kernel @train_step_k6_reduce_sum ins(%[[DH]] : memref<2x8xf32>) outs(%[[DB]] : memref<8xf32>) attributes {indexing_maps = [#[[ID2]], #[[ROW]]], init = [0.000000e+00 : f32], iterator_types = ["reduction", "parallel"]}
// CHECK-NEXT: ^bb0(%[[E:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: arith.addf %[[ACC]], %[[E]] : f32
// CHECK: %[[DW:.+]] = dlexec.alloc : memref<8x4xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[DH]], %[[X]] : {{.*}}) outs(%[[DW]] : memref<8x4xf32>) {{{.*}}trans_a = true, trans_b = false}
// The step counter is incremented in place.
// CHECK: dlexec.kernel @train_step_k7_add ins(%[[S0]] : memref<f32>) outs(%[[STEP_W]] : memref<f32>) attributes {indexing_maps = [#[[SCALAR0]], #[[SCALAR0]]], iterator_types = []}
// Adam: one kernel reading the new step and writing the three variables.
// CHECK: dlexec.kernel @train_step_k8_adam_update ins(%[[W]], %[[DW]], %[[M]], %[[V]], %[[STEP_W]] : {{.*}}) outs(%[[W_W]], %[[M_W]], %[[V_W]] : memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) attributes {indexing_maps = [#[[ID2]], #[[ID2]], #[[ID2]], #[[ID2]], #[[SCALAR2]], #[[ID2]], #[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK: math.powf
// CHECK: math.sqrt
// CHECK: dlexec.yield %{{.+}}, %{{.+}}, %{{.+}} : f32, f32, f32
// CHECK: dlexec.kernel @train_step_k9_sub ins(%[[B]], %[[DB]] : memref<8xf32>, memref<8xf32>) outs(%[[BIAS_W]] : memref<8xf32>)
// No copies were needed.
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.output "loss", %[[LOSS]] : memref<f32>
// CHECK-NEXT: }

// -----

// CNN forward: conv (library call), batch_norm (kernel over NCHW with
// per-channel parameters), relu, max_pool (builtin), a view for Flatten,
// gemm with a [1, N] bias (a [N] view), softmax with a negative axis,
// global_average_pool (reduction kernel).

module {
  dlgraph.variable @conv1.weight : tensor<4x1x3x3xf32> = dense<0.1> : tensor<4x1x3x3xf32> {trainable}
  dlgraph.variable @conv1.bias : tensor<4xf32> {trainable}
  dlgraph.variable @bn1.weight : tensor<4xf32> = dense<1.0> : tensor<4xf32> {trainable}
  dlgraph.variable @bn1.bias : tensor<4xf32> {trainable}
  dlgraph.variable @bn1.running_mean : tensor<4xf32>
  dlgraph.variable @bn1.running_var : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  dlgraph.variable @fc.weight : tensor<10x64xf32> {trainable}
  dlgraph.variable @fc.bias : tensor<1x10xf32> {trainable}
  func.func @main(%x: tensor<2x1x8x8xf32> {dlgraph.name = "image"}) -> (tensor<2x10xf32> {dlgraph.name = "probs"}, tensor<2x4x1x1xf32> {dlgraph.name = "pooled"}) {
    %w = dlgraph.read_variable @conv1.weight : tensor<4x1x3x3xf32>
    %b = dlgraph.read_variable @conv1.bias : tensor<4xf32>
    %s = dlgraph.read_variable @bn1.weight : tensor<4xf32>
    %sb = dlgraph.read_variable @bn1.bias : tensor<4xf32>
    %m = dlgraph.read_variable @bn1.running_mean : tensor<4xf32>
    %v = dlgraph.read_variable @bn1.running_var : tensor<4xf32>
    %c = dlgraph.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x8x8xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
    %n = dlgraph.batch_norm %c, %s, %sb, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
    %r = dlgraph.relu %n : tensor<2x4x8x8xf32>
    %p = dlgraph.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
    %g = dlgraph.global_average_pool %p : tensor<2x4x4x4xf32> -> tensor<2x4x1x1xf32>
    %f = dlgraph.reshape %p : tensor<2x4x4x4xf32> to tensor<2x64xf32>
    %fw = dlgraph.read_variable @fc.weight : tensor<10x64xf32>
    %fb = dlgraph.read_variable @fc.bias : tensor<1x10xf32>
    %y = dlgraph.gemm %f, %fw, %fb {trans_b = true} : (tensor<2x64xf32>, tensor<10x64xf32>, tensor<1x10xf32>) -> tensor<2x10xf32>
    %sm = dlgraph.softmax %y {axis = -1 : i64} : tensor<2x10xf32>
    return %sm, %g : tensor<2x10xf32>, tensor<2x4x1x1xf32>
  }
}

// CHECK-DAG: #[[ID4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[CH:.+]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[GAP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
// CHECK-DAG: dlexec.variable @bn1.running_mean : memref<4xf32> {kind = "buffer"}
// CHECK-DAG: dlexec.variable @bn1.running_var : memref<4xf32> {kind = "buffer"} = dense<1.000000e+00> : tensor<4xf32>
// CHECK-DAG: dlexec.variable @conv1.bias : memref<4xf32> {kind = "parameter"}
// CHECK-LABEL: dlexec.func @main {
// CHECK: %[[X:.+]] = dlexec.input "image" : memref<2x1x8x8xf32>
// CHECK: %[[W:.+]] = dlexec.variable_ref @conv1.weight
// CHECK: %[[B:.+]] = dlexec.variable_ref @conv1.bias
// CHECK: %[[S:.+]] = dlexec.variable_ref @bn1.weight
// CHECK: %[[SB:.+]] = dlexec.variable_ref @bn1.bias
// CHECK: %[[M:.+]] = dlexec.variable_ref @bn1.running_mean
// CHECK: %[[V:.+]] = dlexec.variable_ref @bn1.running_var
// CHECK: %[[C:.+]] = dlexec.alloc : memref<2x4x8x8xf32>
// CHECK: dlexec.library_call "conv2d_forward" ins(%[[X]], %[[W]], %[[B]] : {{.*}}) outs(%[[C]] : memref<2x4x8x8xf32>) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK: %[[N:.+]] = dlexec.alloc : memref<2x4x8x8xf32>
// CHECK: dlexec.kernel @main_k0_batch_norm ins(%[[C]], %[[S]], %[[SB]], %[[M]], %[[V]] : {{.*}}) outs(%[[N]] : {{.*}}) attributes {indexing_maps = [#[[ID4]], #[[CH]], #[[CH]], #[[CH]], #[[CH]], #[[ID4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
// CHECK-NEXT: ^bb0(%[[BX:.+]]: f32, %[[BS:.+]]: f32, %[[BB:.+]]: f32, %[[BM:.+]]: f32, %[[BV:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[D:.+]] = arith.subf %[[BX]], %[[BM]] : f32
// CHECK-NEXT: %[[EPS:.+]] = arith.constant 9.99999974E-6 : f32
// CHECK-NEXT: %[[VE:.+]] = arith.addf %[[BV]], %[[EPS]] : f32
// CHECK-NEXT: %[[SD:.+]] = math.sqrt %[[VE]] : f32
// CHECK-NEXT: %[[NRM:.+]] = arith.divf %[[D]], %[[SD]] : f32
// CHECK-NEXT: %[[SC:.+]] = arith.mulf %[[NRM]], %[[BS]] : f32
// CHECK-NEXT: %[[Y:.+]] = arith.addf %[[SC]], %[[BB]] : f32
// CHECK-NEXT: dlexec.yield %[[Y]] : f32
// CHECK: %[[R:.+]] = dlexec.alloc : memref<2x4x8x8xf32>
// CHECK: dlexec.kernel @main_k1_relu ins(%[[N]] : {{.*}}) outs(%[[R]] :
// CHECK: %[[P:.+]] = dlexec.alloc : memref<2x4x4x4xf32>
// CHECK: dlexec.builtin_kernel @main_k2_max_pool "max_pool2d" ins(%[[R]] : memref<2x4x8x8xf32>) outs(%[[P]] : memref<2x4x4x4xf32>) {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// CHECK: %[[G:.+]] = dlexec.alloc : memref<2x4x1x1xf32>
// CHECK: dlexec.kernel @main_k3_global_average_pool ins(%[[P]] : {{.*}}) outs(%[[G]] : {{.*}}) attributes {indexing_maps = [#[[ID4]], #[[GAP]]], init = [0.000000e+00 : f32], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
// 1/16 per element: the mean over the 4x4 window.
// CHECK: arith.constant 6.250000e-02 : f32
// CHECK: %[[F:.+]] = dlexec.reshape %[[P]] : memref<2x4x4x4xf32> to memref<2x64xf32>
// CHECK: %[[FW:.+]] = dlexec.variable_ref @fc.weight
// CHECK: %[[FB:.+]] = dlexec.variable_ref @fc.bias : memref<1x10xf32>
// CHECK: %[[FBV:.+]] = dlexec.reshape %[[FB]] : memref<1x10xf32> to memref<10xf32>
// CHECK: %[[L:.+]] = dlexec.alloc : memref<2x10xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[F]], %[[FW]], %[[FBV]] : memref<2x64xf32>, memref<10x64xf32>, memref<10xf32>) outs(%[[L]] : memref<2x10xf32>) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, trans_a = false, trans_b = true}
// CHECK: %[[SM:.+]] = dlexec.alloc : memref<2x10xf32>
// CHECK: dlexec.builtin_kernel @main_k4_softmax "softmax" ins(%[[L]] : memref<2x10xf32>) outs(%[[SM]] : memref<2x10xf32>) {axis = 1 : i64}
// CHECK: dlexec.output "probs", %[[SM]] : memref<2x10xf32>
// CHECK: dlexec.output "pooled", %[[G]] : memref<2x4x1x1xf32>

// -----

// write_variable that cannot write in place: the old value of @w is read
// after the new value is produced, so the new value is copied at the end.
// Swapping two variables snapshots the source first. A non-splat constant
// becomes a constant variable.

module {
  dlgraph.variable @w : tensor<4xf32> {trainable}
  dlgraph.variable @a : tensor<2xf32>
  dlgraph.variable @b : tensor<2xf32>
  func.func @update(%x: tensor<4xf32>) -> tensor<4xf32> {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %n = dlgraph.add %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %k = dlgraph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %y = dlgraph.mul %w, %k : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    dlgraph.write_variable @w, %n : tensor<4xf32>
    %a = dlgraph.read_variable @a : tensor<2xf32>
    %b = dlgraph.read_variable @b : tensor<2xf32>
    dlgraph.write_variable @a, %b : tensor<2xf32>
    dlgraph.write_variable @b, %a : tensor<2xf32>
    return %y : tensor<4xf32>
  }
}

// CHECK: dlexec.variable @[[K:.+]] : memref<4xf32> {kind = "constant"} = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-LABEL: dlexec.func @update {
// CHECK: %[[X:.+]] = dlexec.input "arg0" : memref<4xf32>
// CHECK: %[[W:.+]] = dlexec.variable_ref @w : memref<4xf32>
// CHECK: %[[N:.+]] = dlexec.alloc : memref<4xf32>
// CHECK: dlexec.kernel @update_k0_add ins(%[[W]], %[[X]] : {{.*}}) outs(%[[N]] :
// CHECK: %[[KB:.+]] = dlexec.variable_ref @[[K]] : memref<4xf32>
// CHECK: %[[Y:.+]] = dlexec.alloc : memref<4xf32>
// CHECK: dlexec.kernel @update_k1_mul ins(%[[W]], %[[KB]] : {{.*}}) outs(%[[Y]] :
// CHECK: %[[A:.+]] = dlexec.variable_ref @a : memref<2xf32>
// CHECK: %[[B:.+]] = dlexec.variable_ref @b : memref<2xf32>
// Snapshots of @b and @a, then the copies into the variables.
// CHECK: %[[SB:.+]] = dlexec.alloc : memref<2xf32>
// CHECK: dlexec.kernel @update_k2_snapshot ins(%[[B]] : memref<2xf32>) outs(%[[SB]] : memref<2xf32>)
// CHECK: %[[SA:.+]] = dlexec.alloc : memref<2xf32>
// CHECK: dlexec.kernel @update_k3_snapshot ins(%[[A]] : memref<2xf32>) outs(%[[SA]] : memref<2xf32>)
// CHECK: %[[WW:.+]] = dlexec.variable_ref @w : memref<4xf32>
// CHECK: dlexec.kernel @update_k4_write_variable ins(%[[N]] : memref<4xf32>) outs(%[[WW]] : memref<4xf32>)
// CHECK: %[[AW:.+]] = dlexec.variable_ref @a : memref<2xf32>
// CHECK: dlexec.kernel @update_k5_write_variable ins(%[[SB]] : memref<2xf32>) outs(%[[AW]] : memref<2xf32>)
// CHECK: %[[BW:.+]] = dlexec.variable_ref @b : memref<2xf32>
// CHECK: dlexec.kernel @update_k6_write_variable ins(%[[SA]] : memref<2xf32>) outs(%[[BW]] : memref<2xf32>)
// CHECK: dlexec.output "result0", %[[Y]] : memref<4xf32>

// -----

// Transpose, broadcast_to, cast, clip, sigmoid, and a gemm whose C ([M, 1])
// needs an epilogue kernel; a 2-D matmul is a gemm without C.

module {
  func.func @misc(%x: tensor<2x3xf32>, %i: tensor<3xi64>, %c: tensor<2x1xf32>, %bm: tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x5xf32>) {
    %t = dlgraph.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
    %f = dlgraph.cast %i : tensor<3xi64> to tensor<3xf32>
    %bc = dlgraph.broadcast_to %f : tensor<3xf32> to tensor<4x3xf32>
    %cl = dlgraph.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x3xf32>
    %sg = dlgraph.sigmoid %cl : tensor<2x3xf32>
    %w = dlgraph.constant dense<0.5> : tensor<3x3xf32>
    %g = dlgraph.gemm %x, %w, %c {beta = 2.0 : f32} : (tensor<2x3xf32>, tensor<3x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
    %mm = dlgraph.matmul %x, %bm : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
    return %t, %bc, %f, %sg, %g, %mm : tensor<3x2xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x5xf32>
  }
}

// CHECK-DAG: #[[TR:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[COL:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG: dlexec.variable @[[WK:.+]] : memref<3x3xf32> {kind = "constant"} = dense<5.000000e-01> : tensor<3x3xf32>
// CHECK-LABEL: dlexec.func @misc {
// CHECK: %[[X:.+]] = dlexec.input "arg0" : memref<2x3xf32>
// CHECK: %[[I:.+]] = dlexec.input "arg1" : memref<3xi64>
// CHECK: %[[C:.+]] = dlexec.input "arg2" : memref<2x1xf32>
// CHECK: %[[BM:.+]] = dlexec.input "arg3" : memref<3x5xf32>
// CHECK: dlexec.kernel @misc_k0_transpose ins(%[[X]] : memref<2x3xf32>) outs(%{{.+}} : memref<3x2xf32>) attributes {indexing_maps = [#[[TR]], #{{.+}}]
// CHECK: dlexec.kernel @misc_k1_cast ins(%[[I]] : memref<3xi64>)
// CHECK: arith.sitofp %{{.+}} : i64 to f32
// CHECK: dlexec.kernel @misc_k2_broadcast_to ins(%{{.+}} : memref<3xf32>) outs(%{{.+}} : memref<4x3xf32>) attributes {indexing_maps = [#[[ROW:.+]], #{{.+}}]
// CHECK: dlexec.kernel @misc_k3_clip
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: dlexec.kernel @misc_k4_sigmoid
// CHECK: math.exp
// CHECK: %[[WB:.+]] = dlexec.variable_ref @[[WK]] : memref<3x3xf32>
// CHECK: %[[G0:.+]] = dlexec.alloc : memref<2x3xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[X]], %[[WB]] : memref<2x3xf32>, memref<3x3xf32>) outs(%[[G0]] : memref<2x3xf32>) {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32
// CHECK: %[[G:.+]] = dlexec.alloc : memref<2x3xf32>
// CHECK: dlexec.kernel @misc_k5_gemm_bias ins(%[[G0]], %[[C]] : memref<2x3xf32>, memref<2x1xf32>) outs(%[[G]] : memref<2x3xf32>) attributes {indexing_maps = [#{{.+}}, #[[COL]], #{{.+}}]
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK: %[[MM:.+]] = dlexec.alloc : memref<2x5xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[X]], %[[BM]] : memref<2x3xf32>, memref<3x5xf32>) outs(%[[MM]] : memref<2x5xf32>) {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_a = false, trans_b = false}
// CHECK: dlexec.output "result4", %[[G]]
// CHECK: dlexec.output "result5", %[[MM]]

// -----

// CNN backward ops and the rest of the reductions: conv gradients are
// library calls, pooling gradients builtins (forward input first), unit
// attributes become `true`, reduce_mean scales each element, reduce_max
// starts from -inf, log_softmax keeps its axis, SGD is one two-output kernel.

module {
  func.func @backward(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %dy: tensor<2x4x8x8xf32>, %p: tensor<2x4x4x4xf32>, %buf: tensor<4xf32>, %g: tensor<4xf32>, %step: tensor<f32>) -> (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<2x1x8x8xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %dx = dlgraph.conv_backward_data %dy, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
    %dw = dlgraph.conv_backward_filter %x, %dy {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
    %mg = dlgraph.max_pool_grad %dy, %p {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32>
    %ag = dlgraph.average_pool_grad %dy, %p {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, count_include_pad} : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32>
    %ap = dlgraph.average_pool %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, count_include_pad} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
    %mean = dlgraph.reduce_mean %dy {axes = array<i64: 0, 2, 3>} : tensor<2x4x8x8xf32> -> tensor<4xf32>
    %mx = dlgraph.reduce_max %x {axes = array<i64: 1>, keepdims} : tensor<2x3x8x8xf32> -> tensor<2x1x8x8xf32>
    %ls = dlgraph.log_softmax %p {axis = 1 : i64} : tensor<2x4x4x4xf32>
    %lr1 = dlgraph.constant dense<0.1> : tensor<f32>
    %np, %nb = dlgraph.sgd_update %mean, %g, %buf, %step, %lr1 {momentum = 0.9 : f32, weight_decay = 0.01 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
    return %dx, %dw, %mg, %ag, %ap, %mean, %mx, %ls, %np, %nb : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<2x1x8x8xf32>, tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// CHECK-DAG: #[[CHAN:.+]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-DAG: #[[KEEP:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
// CHECK-LABEL: dlexec.func @backward {
// CHECK: %[[X:.+]] = dlexec.input "arg0"
// CHECK: %[[W:.+]] = dlexec.input "arg1"
// CHECK: %[[DY:.+]] = dlexec.input "arg2"
// CHECK: %[[P:.+]] = dlexec.input "arg3"
// CHECK: dlexec.library_call "conv2d_backward_data" ins(%[[DY]], %[[W]] : memref<2x4x8x8xf32>, memref<4x3x3x3xf32>) outs(%{{.+}} : memref<2x3x8x8xf32>) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK: dlexec.library_call "conv2d_backward_filter" ins(%[[X]], %[[DY]] : memref<2x3x8x8xf32>, memref<2x4x8x8xf32>) outs(%{{.+}} : memref<4x3x3x3xf32>)
// CHECK: dlexec.builtin_kernel @backward_k0_max_pool_grad "max_pool2d_grad" ins(%[[DY]], %[[P]] : memref<2x4x8x8xf32>, memref<2x4x4x4xf32>) outs(%{{.+}} : memref<2x4x8x8xf32>) {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>}
// CHECK: dlexec.builtin_kernel @backward_k1_average_pool_grad "average_pool2d_grad" ins(%[[DY]], %[[P]] : {{.*}}) {count_include_pad = true, dilations
// CHECK: dlexec.builtin_kernel @backward_k2_average_pool "average_pool2d" ins(%[[DY]] : {{.*}}) {count_include_pad = true, dilations
// CHECK: %[[MEAN:.+]] = dlexec.alloc : memref<4xf32>
// CHECK: dlexec.kernel @backward_k3_reduce_mean ins(%[[DY]] : {{.*}}) outs(%[[MEAN]] : memref<4xf32>) attributes {indexing_maps = [#{{.+}}, #[[CHAN]]], init = [0.000000e+00 : f32], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
// 1/128 = 7.8125e-3: the mean over 2 x 8 x 8 elements per channel.
// CHECK-NEXT: ^bb0(%[[E:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT: %[[INV:.+]] = arith.constant 7.812500e-03 : f32
// CHECK-NEXT: %[[SC:.+]] = arith.mulf %[[E]], %[[INV]] : f32
// CHECK-NEXT: arith.addf %[[ACC]], %[[SC]] : f32
// CHECK: dlexec.kernel @backward_k4_reduce_max ins(%[[X]] : {{.*}}) outs(%{{.+}} : memref<2x1x8x8xf32>) attributes {indexing_maps = [#{{.+}}, #[[KEEP]]], init = [0xFF800000 : f32], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
// CHECK: arith.maximumf
// CHECK: dlexec.builtin_kernel @backward_k5_log_softmax "log_softmax" ins(%[[P]] : {{.*}}) {axis = 1 : i64}
// SGD with weight decay and momentum: g = grad + wd * p; buf' = step == 1 ? g : m * buf + g.
// CHECK: dlexec.kernel @backward_k6_sgd_update ins(%[[MEAN]], %{{.+}}, %{{.+}}, %{{.+}} : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<f32>) outs(%{{.+}}, %{{.+}} : memref<4xf32>, memref<4xf32>)
// A constant lr is a constant of the kernel body, not a buffer.
// CHECK-NEXT: ^bb0(%[[SP:.+]]: f32, %[[SG:.+]]: f32, %[[SB:.+]]: f32, %[[SS:.+]]: f32, %{{.+}}: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[LR:.+]] = arith.constant 1.000000e-01 : f32
// CHECK-NEXT: %[[WD:.+]] = arith.constant 0.00999999977 : f32
// CHECK-NEXT: %[[WP:.+]] = arith.mulf %[[WD]], %[[SP]] : f32
// CHECK-NEXT: %[[G:.+]] = arith.addf %[[SG]], %[[WP]] : f32
// CHECK-NEXT: %[[MOM:.+]] = arith.constant 0.899999976 : f32
// CHECK-NEXT: %[[MB:.+]] = arith.mulf %[[MOM]], %[[SB]] : f32
// CHECK-NEXT: %[[ACC2:.+]] = arith.addf %[[MB]], %[[G]] : f32
// CHECK-NEXT: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[FIRST:.+]] = arith.cmpf oeq, %[[SS]], %[[ONE]] : f32
// CHECK-NEXT: %[[NB:.+]] = arith.select %[[FIRST]], %[[G]], %[[ACC2]] : f32
// CHECK-NEXT: %[[U:.+]] = arith.mulf %[[LR]], %[[NB]] : f32
// CHECK-NEXT: %[[NP:.+]] = arith.subf %[[SP]], %[[U]] : f32
// CHECK-NEXT: dlexec.yield %[[NP]], %[[NB]] : f32, f32

// -----

// erf and abs on f64, integer pow (through f64), a bool select (ONNX And).

module {
  func.func @elementwise_types(%x: tensor<4xf64>, %a: tensor<4xi32>, %b: tensor<4xi1>, %c: tensor<4xi1>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xi32>, tensor<4xi1>) {
    %e = dlgraph.erf %x : tensor<4xf64>
    %ab = dlgraph.abs %x : tensor<4xf64>
    %p = dlgraph.pow %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    %f = dlgraph.constant dense<false> : tensor<4xi1>
    %and = dlgraph.select %b, %c, %f : (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    return %e, %ab, %p, %and : tensor<4xf64>, tensor<4xf64>, tensor<4xi32>, tensor<4xi1>
  }
}

// CHECK-LABEL: dlexec.func @elementwise_types {
// CHECK: dlexec.kernel @elementwise_types_k0_erf
// CHECK: math.erf %{{.+}} : f64
// CHECK: dlexec.kernel @elementwise_types_k1_abs
// CHECK: math.absf %{{.+}} : f64
// CHECK: dlexec.kernel @elementwise_types_k2_pow
// CHECK: arith.sitofp %{{.+}} : i32 to f64
// CHECK: math.powf %{{.+}} : f64
// CHECK: arith.fptosi %{{.+}} : f64 to i32
// CHECK: dlexec.kernel @elementwise_types_k3_select
// CHECK: arith.constant false
// CHECK: arith.select %{{.+}} : i1

// -----

// numpy.matmul: a 2-D rhs folds the lhs batch into gemm rows; attention
// shapes give one batch dim; broadcasting that cannot merge keeps two batch
// dims with stride 0 on the broadcast operand; 1-D operands are views.

module {
  func.func @matmuls(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %q: tensor<2x3x6x4xf32>, %k: tensor<2x3x4x6xf32>, %a: tensor<2x1x6x4xf32>, %b: tensor<3x4x5xf32>, %v: tensor<4xf32>) -> (tensor<2x3x5xf32>, tensor<2x3x6x6xf32>, tensor<2x3x6x5xf32>, tensor<5xf32>) {
    %y = dlgraph.matmul %x, %w : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
    %s = dlgraph.matmul %q, %k : (tensor<2x3x6x4xf32>, tensor<2x3x4x6xf32>) -> tensor<2x3x6x6xf32>
    %c = dlgraph.matmul %a, %b : (tensor<2x1x6x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x6x5xf32>
    %d = dlgraph.matmul %v, %w : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
    return %y, %s, %c, %d : tensor<2x3x5xf32>, tensor<2x3x6x6xf32>, tensor<2x3x6x5xf32>, tensor<5xf32>
  }
}

// CHECK-LABEL: dlexec.func @matmuls {
// CHECK-DAG: %[[X:.+]] = dlexec.input "arg0" : memref<2x3x4xf32>
// CHECK-DAG: %[[W:.+]] = dlexec.input "arg1" : memref<4x5xf32>
// CHECK-DAG: %[[Q:.+]] = dlexec.input "arg2" : memref<2x3x6x4xf32>
// CHECK-DAG: %[[K:.+]] = dlexec.input "arg3" : memref<2x3x4x6xf32>
// CHECK-DAG: %[[V:.+]] = dlexec.input "arg6" : memref<4xf32>
// CHECK: %[[Y:.+]] = dlexec.alloc : memref<6x5xf32>
// CHECK: %[[XV:.+]] = dlexec.reshape %[[X]] : memref<2x3x4xf32> to memref<6x4xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[XV]], %[[W]] : memref<6x4xf32>, memref<4x5xf32>) outs(%[[Y]] : memref<6x5xf32>) {alpha = 1.000000e+00 : f32, beta = 0.000000e+00 : f32, trans_a = false, trans_b = false}
// CHECK: %[[Y3:.+]] = dlexec.reshape %[[Y]] : memref<6x5xf32> to memref<2x3x5xf32>
// CHECK: %[[S:.+]] = dlexec.alloc : memref<36x6xf32>
// CHECK: %[[QV:.+]] = dlexec.reshape %[[Q]] : memref<2x3x6x4xf32> to memref<144xf32>
// CHECK: %[[KV:.+]] = dlexec.reshape %[[K]] : memref<2x3x4x6xf32> to memref<144xf32>
// CHECK: dlexec.library_call "batched_gemm" ins(%[[QV]], %[[KV]] : memref<144xf32>, memref<144xf32>) outs(%[[S]] : memref<36x6xf32>) {batch = array<i64: 6>, k = 4 : i64, m = 6 : i64, n = 6 : i64, stride_a = array<i64: 24>, stride_b = array<i64: 24>}
// CHECK: %[[C:.+]] = dlexec.alloc : memref<36x5xf32>
// CHECK: dlexec.library_call "batched_gemm" ins(%{{.+}}, %{{.+}} : memref<48xf32>, memref<60xf32>) outs(%[[C]] : memref<36x5xf32>) {batch = array<i64: 2, 3>, k = 4 : i64, m = 6 : i64, n = 5 : i64, stride_a = array<i64: 24, 0>, stride_b = array<i64: 0, 20>}
// CHECK: %[[D:.+]] = dlexec.alloc : memref<1x5xf32>
// CHECK: %[[VV:.+]] = dlexec.reshape %[[V]] : memref<4xf32> to memref<1x4xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[VV]], %[[W]] : memref<1x4xf32>, memref<4x5xf32>) outs(%[[D]] : memref<1x5xf32>)
// CHECK: %[[D1:.+]] = dlexec.reshape %[[D]] : memref<1x5xf32> to memref<5xf32>
// CHECK: dlexec.output "result0", %[[Y3]] : memref<2x3x5xf32>
// CHECK: dlexec.output "result3", %[[D1]] : memref<5xf32>
