// RUN: dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2" | FileCheck %s
// RUN: dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 pipeline-split=/fc2/Gemm" | FileCheck %s --check-prefix=HAND
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 pipeline-split=nope" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=3 pipeline-split=/fc2/Gemm,/fc1/Gemm" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=3 pipeline-split=/fc2/Gemm" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 memory-budget=200000000" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 device-model=tpu" 2>&1 | FileCheck %s --check-prefix=MODEL
// RUN: dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 device-model=host" | FileCheck %s --check-prefix=HOST

// Four equal layers (4096x4096 fp32 GEMMs on 4096 rows) on h100: the split
// is in the middle. Per layer: 2*4096^3 FLOP / 494e12 FLOP/s = 278.2 us
// forward (compute-bound: 3*64 MiB / 3.35e12 B/s = 60 us), 2x backward
// (reads a weight): 834.6 us; stage 1 = 2 layers = 1669.3 us; stage 0 adds
// the boundary: 64 MiB / 450e9 B/s + 5 us = 154.1 us -> 1823.4 us. Each
// stage records forward 556.4 us and backward 1112.9 us (two layers) and
// its transfer: 154.1 us, 0 for the last stage.
//
// On the host model (153e9 FLOP/s fp32, link 1.42e9 B/s + 2.2 ms): forward
// 2 x 2*4096^3 / 153e9 = 1.7966 s per stage, transfer 64 MiB / 1.42e9 +
// 2.2 ms = 49.46 ms.

module {
  dlgraph.variable @fc0.weight : tensor<4096x4096xf32> = dense<0.1> : tensor<4096x4096xf32>
  dlgraph.variable @fc1.weight : tensor<4096x4096xf32> = dense<0.1> : tensor<4096x4096xf32>
  dlgraph.variable @fc2.weight : tensor<4096x4096xf32> = dense<0.1> : tensor<4096x4096xf32>
  dlgraph.variable @fc3.weight : tensor<4096x4096xf32> = dense<0.1> : tensor<4096x4096xf32>
  func.func @main(%x0: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
    %w0 = dlgraph.read_variable @fc0.weight : tensor<4096x4096xf32>
    %x1 = dlgraph.gemm %x0, %w0 {trans_b = true} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32> loc("/fc0/Gemm")
    %w1 = dlgraph.read_variable @fc1.weight : tensor<4096x4096xf32>
    %x2 = dlgraph.gemm %x1, %w1 {trans_b = true} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32> loc("/fc1/Gemm")
    %w2 = dlgraph.read_variable @fc2.weight : tensor<4096x4096xf32>
    %x3 = dlgraph.gemm %x2, %w2 {trans_b = true} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32> loc("/fc2/Gemm")
    %w3 = dlgraph.read_variable @fc3.weight : tensor<4096x4096xf32>
    %x4 = dlgraph.gemm %x3, %w3 {trans_b = true} : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32> loc("/fc3/Gemm")
    return %x4 : tensor<4096x4096xf32>
  }
}

// CHECK: func.func @main
// CHECK-SAME: dlgraph.pipeline.stages = [{activation_bytes = 134217728 : i64, backward = 0.00111286{{[0-9]*}} : f64, cost = 0.001823429{{[0-9]*}} : f64, first = "/fc0/Gemm", forward = 5.56433{{[0-9]*}}E-4 : f64, last = "/fc1/Gemm", ops = 2 : i64, param_bytes = 134217728 : i64, transfer = 1.541308{{[0-9]*}}E-4 : f64}, {activation_bytes = 134217728 : i64, backward = 0.00111286{{[0-9]*}} : f64, cost = 0.001669299{{[0-9]*}} : f64, first = "/fc2/Gemm", forward = 5.56433{{[0-9]*}}E-4 : f64, last = "/fc3/Gemm", ops = 2 : i64, param_bytes = 134217728 : i64, transfer = 0.000000e+00 : f64}]
// CHECK: dlgraph.read_variable @fc0.weight {dlgraph.stage = 0 : i64}
// CHECK: dlgraph.gemm {{.*}}dlgraph.stage = 0 : i64
// CHECK: dlgraph.read_variable @fc1.weight {dlgraph.stage = 0 : i64}
// CHECK: dlgraph.gemm {{.*}}dlgraph.stage = 0 : i64
// CHECK: dlgraph.read_variable @fc2.weight {dlgraph.stage = 1 : i64}
// CHECK: dlgraph.gemm {{.*}}dlgraph.stage = 1 : i64
// CHECK: dlgraph.read_variable @fc3.weight {dlgraph.stage = 1 : i64}
// CHECK: dlgraph.gemm {{.*}}dlgraph.stage = 1 : i64

// HAND: first = "/fc0/Gemm", forward = {{[^,]*}}, last = "/fc2/Gemm", ops = 3 : i64
// HAND-SAME: first = "/fc3/Gemm", forward = {{[^,]*}}, last = "/fc3/Gemm", ops = 1 : i64

// UNKNOWN: error: dlgraph-partition-pipeline: unknown node name 'nope' in split
// ORDER: error: dlgraph-partition-pipeline: split node '/fc1/Gemm' is out of order
// COUNT: error: dlgraph-partition-pipeline: split names 1 nodes; 3 stages need 2
// BUDGET: error: dlgraph-partition-pipeline: no split into 2 stages fits memory-budget 200000000 bytes
// MODEL: error: --dlgraph-partition-pipeline: unknown --device-model 'tpu'; supported: h100, host, FILE.json

// HOST: first = "/fc0/Gemm", forward = 1.79658{{[0-9]*}} : f64, last = "/fc1/Gemm", ops = 2 : i64, param_bytes = 134217728 : i64, transfer = 0.049459{{[0-9]*}} : f64}
