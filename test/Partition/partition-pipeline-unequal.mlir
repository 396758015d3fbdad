// RUN: dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2" | FileCheck %s

// Unequal layers: layer 0 has K = 12288, three times the FLOPs of each of
// the three 4096-wide layers after it, so the best split is 1 | 3 layers.

module {
  dlgraph.variable @fc0.weight : tensor<4096x12288xf32> = dense<0.1> : tensor<4096x12288xf32>
  dlgraph.variable @fc1.weight : tensor<4096x4096xf32> = dense<0.1> : tensor<4096x4096xf32>
  dlgraph.variable @fc2.weight : tensor<4096x4096xf32> = dense<0.1> : tensor<4096x4096xf32>
  dlgraph.variable @fc3.weight : tensor<4096x4096xf32> = dense<0.1> : tensor<4096x4096xf32>
  func.func @main(%x0: tensor<4096x12288xf32>) -> tensor<4096x4096xf32> {
    %w0 = dlgraph.read_variable @fc0.weight : tensor<4096x12288xf32>
    %x1 = dlgraph.gemm %x0, %w0 {trans_b = true} : (tensor<4096x12288xf32>, tensor<4096x12288xf32>) -> tensor<4096x4096xf32> loc("/fc0/Gemm")
    %w1 = dlgraph.read_variable @fc1.weight : tensor<4096x4096xf32>
    %x2 = dlgraph.gemm %x1, %w1 {trans_b = true} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32> loc("/fc1/Gemm")
    %w2 = dlgraph.read_variable @fc2.weight : tensor<4096x4096xf32>
    %x3 = dlgraph.gemm %x2, %w2 {trans_b = true} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32> loc("/fc2/Gemm")
    %w3 = dlgraph.read_variable @fc3.weight : tensor<4096x4096xf32>
    %x4 = dlgraph.gemm %x3, %w3 {trans_b = true} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32> loc("/fc3/Gemm")
    return %x4 : tensor<4096x4096xf32>
  }
}

// CHECK: dlgraph.pipeline.stages = [{{{.*}}first = "/fc0/Gemm", forward = {{.*}}, last = "/fc0/Gemm", ops = 1 : i64{{.*}}}, {{{.*}}first = "/fc1/Gemm", forward = {{.*}}, last = "/fc3/Gemm", ops = 3 : i64{{.*}}}]
