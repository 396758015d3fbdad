// RUN: dlc-opt %s --dlgraph-build-training-step="optimizer=adam loss-output=loss" | FileCheck %s

// loss-output: the model computes its own scalar loss; no labels argument is
// added; the variable reached only through a non-differentiable compare is
// not trainable.

module {
  dlgraph.variable @w : tensor<4xf32> = dense<0.5> : tensor<4xf32>
  dlgraph.variable @t : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  func.func @main(%x: tensor<4xf32> {dlgraph.name = "x"}) -> (tensor<4xf32> {dlgraph.name = "pred"}, tensor<f32> {dlgraph.name = "loss"}) {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %t = dlgraph.read_variable @t : tensor<4xf32>
    %p = dlgraph.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %c = dlgraph.compare "gt", %p, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %z = dlgraph.constant dense<0.0> : tensor<4xf32>
    %q = dlgraph.select %c, %p, %z : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %e = dlgraph.tanh %q : tensor<4xf32>
    %l = dlgraph.reduce_mean %e {axes = array<i64: 0>} : tensor<4xf32> -> tensor<f32>
    return %p, %l : tensor<4xf32>, tensor<f32>
  }
}

// CHECK-DAG: dlgraph.variable @w : tensor<4xf32> = dense<5.000000e-01> : tensor<4xf32> {trainable}
// CHECK-DAG: dlgraph.variable @t : tensor<4xf32> = dense<0.000000e+00> : tensor<4xf32>{{$}}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %{{.+}}: tensor<4xf32> {dlgraph.name = "x"}) -> (tensor<f32> {dlgraph.name = "loss"})
// CHECK: %[[L:.+]] = dlgraph.reduce_mean
// CHECK-NOT: softmax_cross_entropy
// reduce_mean backward: broadcast and scale by 1/4.
// CHECK: dlgraph.broadcast_to %{{.+}} : tensor<1xf32> to tensor<4xf32>
// CHECK: dlgraph.constant dense<2.500000e-01> : tensor<4xf32>
// CHECK: dlgraph.select %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: dlgraph.adam_update
// CHECK-NOT: dlgraph.adam_update
// CHECK: return %[[L]] : tensor<f32>
