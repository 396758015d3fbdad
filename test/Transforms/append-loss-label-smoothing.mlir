// RUN: dlc-opt %s --split-input-file --dlgraph-append-loss="label-smoothing=0.1" | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-build-training-step="label-smoothing=0.25" | FileCheck %s --check-prefix=GRAD
// RUN: not dlc-opt %s --dlgraph-append-loss="label-smoothing=1.5" 2>&1 | FileCheck %s --check-prefix=RANGE

// --label-smoothing: the loss op carries it, and so does its gradient.

module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %y = dlgraph.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}

// CHECK-LABEL: func.func @train_step(
// CHECK: dlgraph.softmax_cross_entropy %{{.+}}, %{{.+}} {label_smoothing = 1.000000e-01 : f32}

// GRAD-LABEL: func.func @train_step(
// GRAD: dlgraph.softmax_cross_entropy %{{.+}}, %{{.+}} {label_smoothing = 2.500000e-01 : f32}
// GRAD: dlgraph.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} {label_smoothing = 2.500000e-01 : f32}

// RANGE: error: --dlgraph-append-loss: --label-smoothing must be in [0, 1], got 1.5
