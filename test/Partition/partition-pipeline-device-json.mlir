// RUN: echo '{"peak_fp32_flops": 1e12, "peak_half_flops": 2e12, "memory_bandwidth": 1e11, "link_bandwidth": 1e10, "link_latency": 1e-5, "all_reduce_busbw": 1e10}' > %t.good.json
// RUN: dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 device-model=%t.good.json" | FileCheck %s
// RUN: echo '{"peak_fp32_flops": 1e12, "peak_half_flops": 2e12, "memory_bandwidth": 1e11, "link_bandwidth": 1e10, "link_latency": 1e-5}' > %t.missing.json
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 device-model=%t.missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: echo '{"peak_fp32_flops": 0, "peak_half_flops": 2e12, "memory_bandwidth": 1e11, "link_bandwidth": 1e10, "link_latency": 1e-5, "all_reduce_busbw": 1e10}' > %t.zero.json
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 device-model=%t.zero.json" 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: echo '{"peak_fp32_flops": 1e12, "peak_half_flops": 2e12, "memory_bandwidth": 1e11, "link_bandwidth": 1e10, "link_latency": 1e-5, "all_reduce_busbw": 1e10, "hbm": 1}' > %t.extra.json
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 device-model=%t.extra.json" 2>&1 | FileCheck %s --check-prefix=EXTRA
// RUN: echo '{"peak_fp32_flops": ' > %t.bad.json
// RUN: not dlc-opt %s --dlgraph-partition-pipeline="pipeline-stages=2 device-model=%t.bad.json" 2>&1 | FileCheck %s --check-prefix=MALFORMED

// Two equal 1024x1024 GEMMs on 1024 rows on a 1 TFLOP/s device:
// 2*1024^3 / 1e12 = 2.147 ms forward (bytes: 12 MiB / 1e11 = 0.126 ms),
// 2x backward: 6.442 ms per stage; stage 0 adds 4 MiB / 1e10 B/s + 10 us = 0.429 ms
// (its transfer), the last stage none.

module {
  dlgraph.variable @fc0.weight : tensor<1024x1024xf32> = dense<0.1> : tensor<1024x1024xf32>
  dlgraph.variable @fc1.weight : tensor<1024x1024xf32> = dense<0.1> : tensor<1024x1024xf32>
  func.func @main(%x0: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
    %w0 = dlgraph.read_variable @fc0.weight : tensor<1024x1024xf32>
    %x1 = dlgraph.gemm %x0, %w0 {trans_b = true} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc("/fc0/Gemm")
    %w1 = dlgraph.read_variable @fc1.weight : tensor<1024x1024xf32>
    %x2 = dlgraph.gemm %x1, %w1 {trans_b = true} : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32> loc("/fc1/Gemm")
    return %x2 : tensor<1024x1024xf32>
  }
}

// CHECK: backward = 0.0042949{{[0-9]*}} : f64, cost = 0.0068718{{[0-9]*}} : f64, first = "/fc0/Gemm", forward = 0.0021474{{[0-9]*}} : f64
// CHECK-SAME: transfer = 4.29430{{[0-9]*}}E-4 : f64
// CHECK-SAME: backward = 0.0042949{{[0-9]*}} : f64, cost = 0.0064424{{[0-9]*}} : f64, first = "/fc1/Gemm", forward = 0.0021474{{[0-9]*}} : f64
// CHECK-SAME: transfer = 0.000000e+00 : f64
// MISSING: missing key 'all_reduce_busbw' (required: peak_fp32_flops, peak_half_flops, memory_bandwidth, link_bandwidth, link_latency, all_reduce_busbw)
// ZERO: 'peak_fp32_flops' must be a number > 0
// EXTRA: unknown key 'hbm' (supported: peak_fp32_flops,
// MALFORMED: malformed JSON
