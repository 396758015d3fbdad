// RUN: dlc-opt %s --split-input-file --dlgraph-apply-optimizer="optimizer=adamw lr=0.5 lr-schedule=cosine warmup-steps=3 total-steps=12 min-lr=0.05 clip-grad-norm=1.0 no-weight-decay=bias" | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-apply-optimizer="lr=0.5 lr-schedule=step step-size=4 gamma=0.5" | FileCheck %s --check-prefix=STEPLR
// RUN: dlc-opt %s --split-input-file --dlgraph-apply-optimizer="lr=0.5 lr-schedule=linear total-steps=10" | FileCheck %s --check-prefix=LINEAR

// Training recipes (docs/dlc.md): the schedule's lr is computed from the
// incremented step counter and read by every update; the global norm
// of the gradients scales each of them by min(1, max / (norm + 1e-6));
// "lr" and "grad_norm" are results after the loss; --no-weight-decay
// parameters are marked and updated with weight decay 0.

module {
  dlgraph.variable @w : tensor<2x3xf32> = dense<0.5> : tensor<2x3xf32> {trainable}
  dlgraph.variable @bias : tensor<2xf32> = dense<0.1> : tensor<2xf32> {trainable}
  func.func @train_step(%x: tensor<2x3xf32>, %y: tensor<2xf32>) -> (tensor<f32> {dlgraph.name = "loss"}, tensor<2x3xf32> {dlgraph.name = "w.grad"}, tensor<2xf32> {dlgraph.name = "bias.grad"}) {
    %w = dlgraph.read_variable @w : tensor<2x3xf32>
    %b = dlgraph.read_variable @bias : tensor<2xf32>
    %wb = dlgraph.mul %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %loss = dlgraph.reduce_sum %wb {axes = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<f32>
    return %loss, %x, %y : tensor<f32>, tensor<2x3xf32>, tensor<2xf32>
  }
}

// CHECK: dlgraph.variable @w : tensor<2x3xf32> {{.*}}trainable
// CHECK: dlgraph.variable @bias : tensor<2xf32> {{.*}}{dlgraph.no_weight_decay, trainable}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[^:]+]]: tensor<2x3xf32>, %[[Y:[^:]+]]: tensor<2xf32>)
// CHECK-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<f32> {dlgraph.name = "lr"}, tensor<f32> {dlgraph.name = "grad_norm"})
// CHECK: %[[STEP:.+]] = dlgraph.add
// CHECK: dlgraph.write_variable @__step, %[[STEP]]
// Cosine: M + (base - M) * 0.5 * (1 + cos(pi * (t - W) / (T - W))), M after T.
// CHECK: %[[SPAN:.+]] = dlgraph.constant dense<9.000000e+00>
// CHECK: %[[W3:.+]] = dlgraph.constant dense<3.000000e+00>
// CHECK: %[[TW:.+]] = dlgraph.sub %[[STEP]], %[[W3]]
// CHECK: %[[FR:.+]] = dlgraph.div %[[TW]], %[[SPAN]]
// CHECK: %[[ANG:.+]] = dlgraph.mul %{{.+}}, %[[FR]]
// CHECK: %[[COS:.+]] = dlgraph.cos %[[ANG]]
// CHECK: %[[HALF:.+]] = dlgraph.mul %{{.+}}, %{{.+}}
// CHECK: %[[RANGE:.+]] = dlgraph.constant dense<4.500000e-01>
// CHECK: %[[SCALED:.+]] = dlgraph.mul %[[RANGE]], %[[HALF]]
// CHECK: %[[DEC:.+]] = dlgraph.add %{{.+}}, %[[SCALED]]
// CHECK: %[[T12:.+]] = dlgraph.constant dense<1.200000e+01>
// CHECK: %[[AFTER:.+]] = dlgraph.compare "gt", %[[STEP]], %[[T12]]
// CHECK: %[[COSLR:.+]] = dlgraph.select %[[AFTER]], %{{.+}}, %[[DEC]]
// Warm-up: base * t / W while t <= W.
// CHECK: %[[WARM:.+]] = dlgraph.compare "le", %[[STEP]], %{{.+}}
// CHECK: %[[LR:.+]] = dlgraph.select %[[WARM]], %{{.+}}, %[[COSLR]]
// Clipping: the sum of squares of both gradients.
// CHECK: %[[SQW:.+]] = dlgraph.mul %[[X]], %[[X]]
// CHECK: %[[SW:.+]] = dlgraph.reduce_sum %[[SQW]] {axes = array<i64: 0, 1>}
// CHECK: %[[SQB:.+]] = dlgraph.mul %[[Y]], %[[Y]]
// CHECK: %[[SB:.+]] = dlgraph.reduce_sum %[[SQB]] {axes = array<i64: 0>}
// CHECK: %[[SUM:.+]] = dlgraph.add %[[SW]], %[[SB]]
// CHECK: %[[NORM:.+]] = dlgraph.sqrt %[[SUM]]
// CHECK: %[[EPS:.+]] = dlgraph.constant dense<9.99999997E-7>
// CHECK: %[[DEN:.+]] = dlgraph.add %[[NORM]], %[[EPS]]
// CHECK: %[[MAX:.+]] = dlgraph.constant dense<1.000000e+00>
// CHECK: %[[RATIO:.+]] = dlgraph.div %[[MAX]], %[[DEN]]
// CHECK: %[[COEF:.+]] = dlgraph.min %[[RATIO]], %{{.+}}
// CHECK: %[[GW:.+]] = dlgraph.mul %[[X]], %[[COEF]]
// CHECK: %[[GB:.+]] = dlgraph.mul %[[Y]], %[[COEF]]
// CHECK: dlgraph.adam_update %{{.+}}, %[[GW]], %{{.+}}, %{{.+}}, %[[STEP]], %[[LR]] {{.+}}decoupled, {{.+}}weight_decay = 0.00999999977 : f32}
// CHECK: dlgraph.adam_update %{{.+}}, %[[GB]], %{{.+}}, %{{.+}}, %[[STEP]], %[[LR]] {{.+}}decoupled, {{.+}}weight_decay = 0.000000e+00 : f32}
// CHECK: return %{{.+}}, %[[LR]], %[[NORM]] : tensor<f32>, tensor<f32>, tensor<f32>

// step: base * gamma^floor(t / K), no warm-up select, no grad_norm.
// STEPLR-LABEL: func.func @train_step(
// STEPLR-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<f32> {dlgraph.name = "lr"})
// STEPLR: %[[STEP:.+]] = dlgraph.add
// STEPLR: %[[K:.+]] = dlgraph.constant dense<4.000000e+00>
// STEPLR: %[[Q:.+]] = dlgraph.div %[[STEP]], %[[K]]
// STEPLR: %[[FL:.+]] = dlgraph.floor %[[Q]]
// STEPLR: %[[G:.+]] = dlgraph.constant dense<5.000000e-01>
// STEPLR: %[[P:.+]] = dlgraph.pow %[[G]], %[[FL]]
// STEPLR: %[[LR:.+]] = dlgraph.mul %{{.+}}, %[[P]]
// STEPLR-NOT: dlgraph.select
// STEPLR: dlgraph.sgd_update {{.+}}, %[[STEP]], %[[LR]]
// STEPLR: return %{{.+}}, %[[LR]] : tensor<f32>, tensor<f32>

// linear: M + (base - M) * (T - t) / (T - W), M after T.
// LINEAR: %[[STEP:.+]] = dlgraph.add
// LINEAR: %[[SPAN:.+]] = dlgraph.constant dense<1.000000e+01>
// LINEAR: %[[T:.+]] = dlgraph.constant dense<1.000000e+01>
// LINEAR: %[[LEFT:.+]] = dlgraph.sub %[[T]], %[[STEP]]
// LINEAR: dlgraph.div %[[LEFT]], %[[SPAN]]
// LINEAR: %[[AFTER:.+]] = dlgraph.compare "gt", %[[STEP]], %{{.+}}
// LINEAR: %[[LR:.+]] = dlgraph.select %[[AFTER]]
// LINEAR-NOT: dlgraph.compare "le"
// LINEAR: dlgraph.sgd_update {{.+}}, %[[STEP]], %[[LR]]

