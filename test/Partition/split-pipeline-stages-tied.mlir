// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 pipeline-split=/fc0/Gemm" --dlgraph-build-training-step --dlgraph-split-pipeline-stages 2>&1 | FileCheck %s

// One weight read by both stages (tied weights): its gradient would have to
// be summed across stages, which the pipeline does not do.
// CHECK: error: parameter @"w" is used by pipeline stages 0 and 1; parameters shared across stages (tied weights) are not supported: choose split points (--pipeline-split) that keep its users in one stage

module {
  dlgraph.variable @w : tensor<4x4xf32> = dense<0.1> : tensor<4x4xf32>
  func.func @main(%x: tensor<2x4xf32> {dlgraph.name = "input"}) -> (tensor<2x4xf32> {dlgraph.name = "logits"}) {
    %w = dlgraph.read_variable @w : tensor<4x4xf32>
    %h = dlgraph.gemm %x, %w {trans_b = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/fc0/Gemm")
    %y = dlgraph.gemm %h, %w {trans_b = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/fc1/Gemm")
    return %y : tensor<2x4xf32>
  }
}
