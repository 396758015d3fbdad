// RUN: dlc-opt %s --split-input-file --dlgraph-differentiate | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlgraph-differentiate="no-freeze=^m$" | FileCheck %s --check-prefix=KEEP
// RUN: rm -rf %t && mkdir -p %t
// RUN: printf 'w\n# a comment\nnot_in_model\n' > %t/trainable.txt
// RUN: dlc-opt %s --split-input-file --mlir-print-op-on-diagnostic=false --dlgraph-differentiate="trainable=%t/trainable.txt" 2>&1 | FileCheck %s --check-prefix=LIST
// RUN: printf 'x1\nx2\n' > %t/none.txt
// RUN: not dlc-opt %s --split-input-file --dlgraph-differentiate="trainable=%t/none.txt" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not dlc-opt %s --split-input-file --dlgraph-differentiate="trainable=%t/missing.txt" 2>&1 | FileCheck %s --check-prefix=MISSING

// The trainable-set rule: buffers PyTorch does not train stay constant
// without a flag. @m is a finite attention mask (0 and -1e9) added to the
// scores before a softmax; @neg holds -inf; @inv_freq reaches the loss only
// through sin and cos of values that do not involve the data. @w multiplies
// the scores before the softmax (a learned temperature, not a mask), @bias
// and the zero-initialized @bias0 are added to them but hold no mask values
// (a Linear's bias before a softmax) and @siren's sin is of the data (a
// learned frequency): all four train.

module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32>
  dlgraph.variable @m : tensor<4x3xf32> = dense<[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]> : tensor<4x3xf32>
  dlgraph.variable @neg : tensor<3xf32> = dense<[0.0, 0xFF800000, 0.0]> : tensor<3xf32>
  dlgraph.variable @inv_freq : tensor<3xf32> = dense<[1.0, 0.1, 0.01]> : tensor<3xf32>
  dlgraph.variable @siren : tensor<3xf32> = dense<30.0> : tensor<3xf32>
  dlgraph.variable @bias : tensor<3xf32> = dense<[0.1, -0.2, 0.05]> : tensor<3xf32>
  dlgraph.variable @bias0 : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  func.func @train_step(%x: tensor<4x3xf32>, %labels: tensor<4xi64>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %m = dlgraph.read_variable @m : tensor<4x3xf32>
    %neg = dlgraph.read_variable @neg : tensor<3xf32>
    %f = dlgraph.read_variable @inv_freq : tensor<3xf32>
    %sw = dlgraph.read_variable @siren : tensor<3xf32>
    %bias = dlgraph.read_variable @bias : tensor<3xf32>
    %bias0 = dlgraph.read_variable @bias0 : tensor<3xf32>
    %s0 = dlgraph.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %s1 = dlgraph.add %s0, %bias : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %s = dlgraph.add %s1, %bias0 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %sm = dlgraph.add %s, %m : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %p = dlgraph.softmax %sm {axis = 1 : i64} : tensor<4x3xf32>
    %ff = dlgraph.mul %f, %f : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %sin = dlgraph.sin %ff : tensor<3xf32>
    %cos = dlgraph.cos %ff : tensor<3xf32>
    %table = dlgraph.add %sin, %cos : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %xs = dlgraph.mul %x, %sw : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %siren = dlgraph.sin %xs : tensor<4x3xf32>
    %a = dlgraph.add %p, %table : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %b = dlgraph.add %a, %neg : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %z = dlgraph.add %b, %siren : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %loss = dlgraph.softmax_cross_entropy %z, %labels : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK: dlgraph.variable @w : tensor<3xf32> = {{.+}} {trainable}
// CHECK: dlgraph.variable @m : tensor<4x3xf32> = {{.+}} {dlgraph.frozen = "only added to or selecting into attention scores before a softmax"}
// CHECK: dlgraph.variable @neg : tensor<3xf32> = {{.+}} {dlgraph.frozen = "holds non-finite values"}
// CHECK: dlgraph.variable @inv_freq : tensor<3xf32> = {{.+}} {dlgraph.frozen = "only feeds sin/cos position tables"}
// CHECK: dlgraph.variable @siren : tensor<3xf32> = {{.+}} {trainable}
// CHECK: dlgraph.variable @bias : tensor<3xf32> = {{.+}} {trainable}
// CHECK: dlgraph.variable @bias0 : tensor<3xf32> = {{.+}} {trainable}
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"}, tensor<3xf32> {dlgraph.name = "siren.grad"}, tensor<3xf32> {dlgraph.name = "bias.grad"}, tensor<3xf32> {dlgraph.name = "bias0.grad"})

// --no-freeze keeps the mask a parameter; the others stay as the rule says.
// KEEP: dlgraph.variable @m : tensor<4x3xf32> = {{.+}} {trainable}
// KEEP: dlgraph.variable @neg : tensor<3xf32> = {{.+}} {dlgraph.frozen = "holds non-finite values"}
// KEEP-LABEL: func.func @train_step(
// KEEP-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"}, tensor<4x3xf32> {dlgraph.name = "m.grad"}, tensor<3xf32> {dlgraph.name = "siren.grad"}, tensor<3xf32> {dlgraph.name = "bias.grad"}, tensor<3xf32> {dlgraph.name = "bias0.grad"})

// --trainable pins the set: only @w trains; a listed name the model lacks
// is a warning, a file naming nothing of the model an error.
// LIST: warning: --trainable '{{.+}}trainable.txt' names 1 tensor(s) the model does not hold as initializers (unused, or merged or renamed by the exporter): not_in_model
// LIST: dlgraph.variable @w : tensor<3xf32> = {{.+}} {trainable}
// LIST: dlgraph.variable @m : tensor<4x3xf32> = {{.+}} {dlgraph.frozen = "not in --trainable"}
// LIST: dlgraph.variable @siren : tensor<3xf32> = {{.+}} {dlgraph.frozen = "not in --trainable"}
// LIST-LABEL: func.func @train_step(
// LIST-SAME: -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"})
// NONE: error: --trainable '{{.+}}none.txt' names no initializer of the model; they are: w, m, neg, inv_freq, siren, bias, bias0
// MISSING: error: --trainable '{{.+}}missing.txt': No such file or directory
