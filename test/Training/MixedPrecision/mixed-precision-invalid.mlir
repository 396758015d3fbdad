// RUN: dlc-opt %s --dlgraph-mixed-precision=precision=fp8 --verify-diagnostics

// expected-error @below {{--dlgraph-mixed-precision: unknown --precision 'fp8'; supported: fp32, bf16, fp16}}
module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
