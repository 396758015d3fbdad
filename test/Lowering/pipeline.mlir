// RUN: dlc-opt %s --split-input-file --dlc-lowering-pipeline --dlexec-verify-memory-plan | FileCheck %s

// The whole pipeline (canonicalize, lower, fuse, canonicalize, fuse gemm
// epilogues, plan) on an MLP training step: gemm -> bias add -> relu becomes
// one gemm with a bias row and a relu epilogue, compare + select become one
// kernel, the bias gradient becomes the weight-gradient gemm's epilogue, Adam
// is one kernel writing the variables in place, and every alloc gets an
// offset; the checker
// (--dlexec-verify-memory-plan) accepts the plan.

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

// CHECK-LABEL: dlexec.func @train_step attributes {arena_bytes = 1024 : i64} {
// CHECK-NOT: dlexec.alloc :
// CHECK: %[[X:.+]] = dlexec.input "input"
// The bias add and the relu, fused into one kernel, are then the gemm's
// bias row and relu epilogue (--dlexec-fuse-gemm-epilogues).
// CHECK: %[[R:.+]] = dlexec.alloc {offset = 0 : i64} : memref<2x8xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[X]], %{{.+}}, %{{.+}} : memref<2x4xf32>, memref<8x4xf32>, memref<8xf32>) outs(%[[R]] : memref<2x8xf32>)
// CHECK-SAME: beta = 1.000000e+00 : f32, epilogue = "relu"
// CHECK: %[[LOSS:.+]] = dlexec.alloc {offset = 768 : i64} : memref<f32>
// CHECK: "softmax_cross_entropy" ins(%[[R]],
// CHECK: %[[DY:.+]] = dlexec.alloc {offset = 256 : i64} : memref<2x8xf32>
// CHECK: "softmax_cross_entropy_grad" ins(%[[R]], {{.*}}) outs(%[[DY]] :
// The relu gradient in place over the loss gradient.
// CHECK: %[[DH:.+]] = dlexec.alloc {offset = 256 : i64} : memref<2x8xf32>
// CHECK: dlexec.kernel @{{.+}} ins(%[[DY]], %[[R]] : {{.*}}) outs(%[[DH]] :
// CHECK: arith.cmpf ogt
// CHECK-NEXT: arith.select
// The bias gradient (the sum of dh over the batch) is the weight-gradient
// gemm's bgrad_a epilogue (--dlexec-fuse-gemm-epilogues), not a kernel.
// CHECK-NOT: "reduction"
// CHECK: %[[DB:.+]] = dlexec.alloc {{.*}} : memref<8xf32>
// CHECK: dlexec.library_call "gemm" ins(%[[DH]], %[[X]] : {{.*}}) outs(%{{.+}}, %[[DB]] : memref<8x4xf32>, memref<8xf32>)
// CHECK-SAME: epilogue = "bgrad_a"
// CHECK-COUNT-3: dlexec.kernel
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.output "loss", %[[LOSS]]

// -----

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

// CNN forward: batch_norm + relu fuse into one kernel after the conv.
// CHECK-LABEL: dlexec.func @main attributes {arena_bytes = {{[0-9]+}} : i64} {
// CHECK-NOT: dlexec.alloc :
// CHECK: %[[C:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<2x4x8x8xf32>
// CHECK: dlexec.library_call "conv2d_forward" {{.*}} outs(%[[C]] :
// CHECK: %[[R:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<2x4x8x8xf32>
// CHECK: dlexec.kernel @main_k1_relu ins(%[[C]], {{.*}}) outs(%[[R]] :
// CHECK: math.sqrt
// CHECK: arith.maximumf
// CHECK: "max_pool2d" ins(%[[R]] :
// CHECK: dlexec.kernel @main_k3_global_average_pool
// CHECK-NOT: dlexec.kernel
