// RUN: dlc-opt %s --split-input-file --dlgraph-differentiate="freeze=^w$" | FileCheck %s
// RUN: not dlc-opt %s --dlgraph-differentiate="freeze=conv" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not dlc-opt %s --dlgraph-differentiate="freeze=b|w" 2>&1 | FileCheck %s --check-prefix=ALL
// RUN: not dlc-opt %s --dlgraph-differentiate="freeze=(" 2>&1 | FileCheck %s --check-prefix=BAD

// --freeze: the matching variable is marked dlgraph.frozen, gets no
// gradient and is not trainable; the others train as before. The regex
// matches anywhere in the name, so ^...$ anchors it (@w, not @w2).

module {
  dlgraph.variable @b : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  dlgraph.variable @w2 : tensor<3xf32> = dense<0.25> : tensor<3xf32>
  func.func @train_step(%x: tensor<4x3xf32>, %labels: tensor<4xi64>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %w2 = dlgraph.read_variable @w2 : tensor<3xf32>
    %b = dlgraph.read_variable @b : tensor<3xf32>
    %y = dlgraph.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %y2 = dlgraph.mul %y, %w2 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %z = dlgraph.add %y2, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %loss = dlgraph.softmax_cross_entropy %z, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK: dlgraph.variable @b : tensor<3xf32> = {{.+}} {trainable}
// CHECK: dlgraph.variable @w : tensor<3xf32> = {{.+}} {dlgraph.frozen = "--freeze"}
// CHECK: dlgraph.variable @w2 : tensor<3xf32> = {{.+}} {trainable}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "b.grad"}, tensor<3xf32> {dlgraph.name = "w2.grad"})

// NOMATCH: error: --freeze 'conv' matches no initializer; they are: b, w, w2
// ALL: error: no trainable parameters: the loss does not depend on any f32 dlgraph.variable that is not frozen (--freeze, --trainable or the buffer rule) through differentiable ops
// BAD: error: --freeze '(' is not a valid regex:
