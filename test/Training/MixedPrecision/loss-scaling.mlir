// RUN: dlc-opt %s --split-input-file --dlgraph-build-training-step="optimizer=sgd lr=0.1 momentum=0.9" --dlgraph-loss-scaling="loss-scale-init=1024 loss-scale-growth-factor=4 loss-scale-backoff-factor=0.25 loss-scale-growth-interval=7" | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-build-training-step="optimizer=adam expose-gradients=true" --dlgraph-loss-scaling="loss-scale=512" | FileCheck %s --check-prefix=STATIC
// RUN: dlc-opt %s --split-input-file --dlgraph-build-training-step="optimizer=sgd" --cse --dlgraph-loss-scaling | FileCheck %s --check-prefix=CSE

// MLP (gemm, relu, gemm) with SGD: the seed becomes the scale, every
// gradient is unscaled before its update, one found_inf guards every
// write, and the scale state follows GradScaler's rules.

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

// CHECK-DAG: dlgraph.variable @__loss_scale : tensor<f32> = dense<1.024000e+03> : tensor<f32> {dlgraph.optimizer_state}
// CHECK-DAG: dlgraph.variable @__loss_scale_growth_tracker : tensor<f32> = dense<0.000000e+00> : tensor<f32> {dlgraph.optimizer_state}
// @forward is left alone.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: __loss_scale
// CHECK: return
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<f32> {dlgraph.name = "loss_scale"}, tensor<f32> {dlgraph.name = "skipped"})
// CHECK-DAG: %[[S:.+]] = dlgraph.read_variable @__loss_scale : tensor<f32>
// CHECK-DAG: %[[T:.+]] = dlgraph.read_variable @__loss_scale_growth_tracker : tensor<f32>
// CHECK-DAG: %[[W1:.+]] = dlgraph.read_variable @fc1.weight
// CHECK: %[[LOSS:.+]] = dlgraph.softmax_cross_entropy
// The seed is the scale; the unit constant is gone.
// CHECK-NOT: dlgraph.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DY:.+]] = dlgraph.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %[[S]] :
// CHECK: %[[DW1:.+]] = dlgraph.gemm %{{.+}}, %{{.+}} {trans_a = true} : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[INV:.+]] = dlgraph.div %{{.+}}, %[[S]]
// CHECK: %[[ZERO:.+]] = dlgraph.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[U1:.+]] = dlgraph.mul %[[DW1]], %[[INV]] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
// The probe recomputes the unscaled gradient so that both chains fuse.
// CHECK: %[[A1:.+]] = dlgraph.mul %[[DW1]], %[[INV]] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
// CHECK: %[[P1:.+]] = dlgraph.mul %[[A1]], %[[ZERO]]
// CHECK: %[[R1:.+]] = dlgraph.reduce_sum %[[P1]] {axes = array<i64: 0, 1>} : tensor<8x4xf32> -> tensor<f32>
// The other three gradients are summed in; one compare decides.
// CHECK-COUNT-3: dlgraph.reduce_sum %{{.+}} -> tensor<f32>
// CHECK: %[[TOTAL:.+]] = dlgraph.add
// CHECK: %[[INF:.+]] = dlgraph.compare "ne", %[[TOTAL]], %[[TOTAL]] : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK-NOT: dlgraph.compare "ne"
// CHECK: %[[NP1:[^,]+]], %[[NB1:[^ ]+]] = dlgraph.sgd_update %[[W1]], %[[U1]],
// Every write keeps the value from before the step on overflow. The
// optimizer's writes stay right after their update (each new value dies at
// its guard); the step counter's, which comes before found_inf, moves to
// the end.
// CHECK: %[[G1:.+]] = dlgraph.select %[[INF]], %[[W1]], %[[NP1]]
// CHECK-NEXT: dlgraph.write_variable @fc1.weight, %[[G1]]
// CHECK: %[[G2:.+]] = dlgraph.select %[[INF]], %{{.+}}, %[[NB1]]
// CHECK-NEXT: dlgraph.write_variable @fc1.weight.momentum_buffer, %[[G2]]
// CHECK-COUNT-6: dlgraph.write_variable @fc{{.+}}, %{{.+}}
// CHECK: %[[G0:.+]] = dlgraph.select %[[INF]], %[[STEP0:.+]], %{{.+}} : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: dlgraph.write_variable @__step, %[[G0]]
// GradScaler's update.
// CHECK: %[[SKIP:.+]] = dlgraph.select %[[INF]], %{{.+}}, %[[ZERO]]
// CHECK: %[[NEXT:.+]] = dlgraph.add %[[T]], %{{.+}}
// CHECK: %[[INTERVAL:.+]] = dlgraph.constant dense<7.000000e+00>
// CHECK: %[[REACHED:.+]] = dlgraph.compare "ge", %[[NEXT]], %[[INTERVAL]]
// CHECK: %[[GF:.+]] = dlgraph.constant dense<4.000000e+00>
// CHECK: %[[GROWN:.+]] = dlgraph.mul %[[S]], %[[GF]]
// CHECK: %[[FMAX:.+]] = dlgraph.constant dense<3.40282347E+38>
// CHECK: %[[FIN:.+]] = dlgraph.compare "le", %[[GROWN]], %[[FMAX]]
// CHECK: %[[MG:.+]] = dlgraph.select %[[FIN]], %[[GROWN]], %[[S]]
// CHECK: %[[OKS:.+]] = dlgraph.select %[[REACHED]], %[[MG]], %[[S]]
// CHECK: %[[OKT:.+]] = dlgraph.select %[[REACHED]], %[[ZERO]], %[[NEXT]]
// CHECK: %[[BF:.+]] = dlgraph.constant dense<2.500000e-01>
// CHECK: %[[BACK:.+]] = dlgraph.mul %[[S]], %[[BF]]
// CHECK: %[[NS:.+]] = dlgraph.select %[[INF]], %[[BACK]], %[[OKS]]
// CHECK: %[[NT:.+]] = dlgraph.select %[[INF]], %[[ZERO]], %[[OKT]]
// CHECK: dlgraph.write_variable @__loss_scale, %[[NS]]
// CHECK: dlgraph.write_variable @__loss_scale_growth_tracker, %[[NT]]
// CHECK: return %[[LOSS]], %[[S]], %[[SKIP]] : tensor<f32>, tensor<f32>, tensor<f32>

// Static scale: a constant, no new state, the writes are still guarded;
// with expose-gradients the "<p>.grad" results are the unscaled gradients.
// STATIC-NOT: __loss_scale
// STATIC-LABEL: func.func @train_step(
// STATIC-SAME: {dlgraph.name = "fc2.bias.grad"}, tensor<f32> {dlgraph.name = "loss_scale"}, tensor<f32> {dlgraph.name = "skipped"})
// STATIC: %[[S:.+]] = dlgraph.constant dense<5.120000e+02> : tensor<f32>
// STATIC: dlgraph.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %[[S]] :
// STATIC: %[[INV:.+]] = dlgraph.div %{{.+}}, %[[S]]
// STATIC: %[[U1:.+]] = dlgraph.mul %{{.+}}, %[[INV]] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
// STATIC: %[[INF:.+]] = dlgraph.compare "ne"
// STATIC: dlgraph.adam_update %{{.+}}, %[[U1]],
// STATIC-COUNT-13: dlgraph.select %[[INF]]
// STATIC: %[[SKIP:.+]] = dlgraph.select %[[INF]]
// STATIC-NOT: write_variable
// STATIC: return %{{.+}}, %[[U1]], %{{.+}}, %{{.+}}, %{{.+}}, %[[S]], %[[SKIP]]

// After --cse the seed 1.0 is also the step counter's increment: only the
// backward's use becomes the scale.
// CSE-LABEL: func.func @train_step(
// CSE: %[[S:.+]] = dlgraph.read_variable @__loss_scale
// CSE: %[[ONE:.+]] = dlgraph.constant dense<1.000000e+00> : tensor<f32>
// CSE: dlgraph.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %[[S]] :
// CSE: %[[STEP:.+]] = dlgraph.read_variable @__step
// CSE: dlgraph.add %[[STEP]], %[[ONE]]

// -----

// BatchNorm's running statistics are persistent too: their writes are
// guarded like the parameters'.
module {
  dlgraph.variable @conv.weight : tensor<4x1x3x3xf32> = dense<0.1> : tensor<4x1x3x3xf32>
  dlgraph.variable @bn.weight : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  dlgraph.variable @bn.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dlgraph.variable @bn.running_mean : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  dlgraph.variable @bn.running_var : tensor<4xf32> = dense<1.0> : tensor<4xf32>
  func.func @main(%x: tensor<2x1x4x4xf32> {dlgraph.name = "input"}) -> (tensor<2x64xf32> {dlgraph.name = "logits"}) {
    %w = dlgraph.read_variable @conv.weight : tensor<4x1x3x3xf32>
    %s = dlgraph.read_variable @bn.weight : tensor<4xf32>
    %o = dlgraph.read_variable @bn.bias : tensor<4xf32>
    %m = dlgraph.read_variable @bn.running_mean : tensor<4xf32>
    %v = dlgraph.read_variable @bn.running_var : tensor<4xf32>
    %c = dlgraph.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x4x4xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x4x4xf32>
    %n = dlgraph.batch_norm %c, %s, %o, %m, %v {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32} : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
    %f = dlgraph.reshape %n : tensor<2x4x4x4xf32> to tensor<2x64xf32>
    return %f : tensor<2x64xf32>
  }
}

// CHECK-LABEL: func.func @train_step(
// CHECK-DAG: %[[M0:.+]] = dlgraph.read_variable @bn.running_mean
// CHECK-DAG: %[[V0:.+]] = dlgraph.read_variable @bn.running_var
// CHECK: %[[INF:.+]] = dlgraph.compare "ne"
// CHECK-DAG: %[[GM:.+]] = dlgraph.select %[[INF]], %[[M0]], %{{.+}}
// CHECK-DAG: dlgraph.write_variable @bn.running_mean, %[[GM]]
// CHECK-DAG: %[[GV:.+]] = dlgraph.select %[[INF]], %[[V0]], %{{.+}}
// CHECK-DAG: dlgraph.write_variable @bn.running_var, %[[GV]]
// CHECK: dlgraph.write_variable @__loss_scale,
// CHECK: return
