// RUN: dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 pipeline-split=/relu/Relu" --dlgraph-build-training-step --dlgraph-split-pipeline-stages="microbatches=2 schedule=gpipe" | FileCheck %s
// RUN: not dlc-opt %s --dlgraph-split-pipeline-stages 2>&1 | FileCheck %s --check-prefix=NOTRAIN
// RUN: not dlc-opt %s --dlgraph-build-training-step --dlgraph-split-pipeline-stages 2>&1 | FileCheck %s --check-prefix=UNSTAGED

// A two-layer MLP cut after the ReLU: stage 0 sends the activation x.0 to
// stage 1 and keeps it for its own backward (the ReLU's gradient reads it);
// stage 1 keeps its logits (x.1) for the loss gradient and sends back the
// gradient g.2 of x.0. Each parameter gradient is added, times 1/M, to its
// accumulator, which the update reads and zeroes.

// CHECK: module attributes {dlgraph.pipeline = {inputs = ["input", "labels"], loss_stage = 1 : i64, micro_batches = 2 : i64, schedule = "gpipe", stages = [{accumulators = ["fc0.weight.grad_accumulator", "fc0.bias.grad_accumulator"], backward = "stage0_backward", forward = "stage0_forward", update = "stage0_update"}, {accumulators = ["fc1.weight.grad_accumulator"], backward = "stage1_backward", forward = "stage1_forward", update = "stage1_update"}], transfers = [{backward = false, from = 0 : i64, name = "x.0", to = 1 : i64}, {backward = true, from = 1 : i64, name = "g.2", to = 0 : i64}]}}
// CHECK: dlgraph.variable @fc0.weight.grad_accumulator : tensor<8x4xf32> {dlgraph.optimizer_state}
// CHECK-NOT: func.func @train_step
// CHECK-LABEL: func.func @stage0_forward(%{{.*}}: tensor<2x4xf32> {dlgraph.name = "input"}) -> (tensor<2x8xf32> {dlgraph.name = "x.0"})
// CHECK: dlgraph.gemm
// CHECK: dlgraph.relu
// CHECK-LABEL: func.func @stage0_backward(%{{.*}}: tensor<2x4xf32> {dlgraph.name = "input"}, %{{.*}}: tensor<2x8xf32> {dlgraph.name = "x.0"}, %{{.*}}: tensor<2x8xf32> {dlgraph.name = "g.2"}) {
// CHECK: %[[ACC:.*]] = dlgraph.read_variable @fc0.weight.grad_accumulator
// CHECK: %[[HALF:.*]] = dlgraph.constant dense<5.000000e-01> : tensor<8x4xf32>
// CHECK: %[[SCALED:.*]] = dlgraph.mul %{{.*}}, %[[HALF]]
// CHECK: %[[SUM:.*]] = dlgraph.add %[[ACC]], %[[SCALED]]
// CHECK: dlgraph.write_variable @fc0.weight.grad_accumulator, %[[SUM]]
// CHECK-LABEL: func.func @stage0_update() {
// CHECK: %[[G:.*]] = dlgraph.read_variable @fc0.weight.grad_accumulator
// CHECK: dlgraph.sgd_update %{{.*}}, %[[G]]
// CHECK: dlgraph.write_variable @fc0.weight.grad_accumulator, %{{.*}} : tensor<8x4xf32>
// CHECK-LABEL: func.func @stage1_forward(%{{.*}}: tensor<2xi64> {dlgraph.name = "labels"}, %{{.*}}: tensor<2x8xf32> {dlgraph.name = "x.0"}) -> (tensor<2x3xf32> {dlgraph.name = "x.1"}, tensor<f32> {dlgraph.name = "loss"})
// CHECK: dlgraph.softmax_cross_entropy
// CHECK-LABEL: func.func @stage1_backward({{.*}}) -> (tensor<2x8xf32> {dlgraph.name = "g.2"})
// CHECK: dlgraph.softmax_cross_entropy_grad
// CHECK-LABEL: func.func @stage1_update() {
// CHECK: dlgraph.write_variable @__step

// NOTRAIN: error: --dlgraph-split-pipeline-stages expects a func.func @train_step with one block
// UNSTAGED: error: --dlgraph-split-pipeline-stages expects a @train_step built from a @main split by --dlgraph-partition-pipeline

module {
  dlgraph.variable @fc0.weight : tensor<8x4xf32> = dense<0.1> : tensor<8x4xf32>
  dlgraph.variable @fc0.bias : tensor<8xf32> = dense<0.0> : tensor<8xf32>
  dlgraph.variable @fc1.weight : tensor<3x8xf32> = dense<0.2> : tensor<3x8xf32>
  func.func @main(%x: tensor<2x4xf32> {dlgraph.name = "input"}) -> (tensor<2x3xf32> {dlgraph.name = "logits"}) {
    %w0 = dlgraph.read_variable @fc0.weight : tensor<8x4xf32>
    %b0 = dlgraph.read_variable @fc0.bias : tensor<8xf32>
    %h = dlgraph.gemm %x, %w0, %b0 {trans_b = true} : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32> loc("/fc0/Gemm")
    %r = dlgraph.relu %h : tensor<2x8xf32> loc("/relu/Relu")
    %w1 = dlgraph.read_variable @fc1.weight : tensor<3x8xf32>
    %y = dlgraph.gemm %r, %w1 {trans_b = true} : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x3xf32> loc("/fc1/Gemm")
    return %y : tensor<2x3xf32>
  }
}
