// The layer_norm_train builtin (--dlexec-fuse-layer-norm's training form,
// test/Lowering/fuse-layer-norm.mlir): beside y, mean and rstd it writes the
// centered values d (a6) and the normalized values u = d * rstd (a7) that a
// training step's backward reads, with the roundings of the decomposed
// kernels, in the same pass over the row on both targets.
// RUN: dlc %s --emit=cuda --quiet | FileCheck %s
// RUN: dlc %s --emit=host --quiet | FileCheck %s --check-prefix=HOST
// It compiles with NVRTC for sm_80 and sm_90, one kernel.
// RUN: dlc %s --target sm_80,sm_90 --stats -o %t.dlcp 2>&1 | FileCheck %s --check-prefix=STATS
module {
  func.func @forward(%x: tensor<16x64xf32> {dlgraph.name = "x"}, %w: tensor<64xf32> {dlgraph.name = "w"}, %b: tensor<64xf32> {dlgraph.name = "b"}) -> (tensor<16x64xf32> {dlgraph.name = "y"}, tensor<16x64xf32> {dlgraph.name = "d"}, tensor<16x64xf32> {dlgraph.name = "u"}) {
    %2 = dlgraph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %3 = dlgraph.sub %x, %2 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %4 = dlgraph.mul %3, %3 : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 1>, keepdims} : tensor<16x64xf32> -> tensor<16x1xf32>
    %6 = dlgraph.constant dense<1.0E-5> : tensor<16x1xf32>
    %7 = dlgraph.add %5, %6 : (tensor<16x1xf32>, tensor<16x1xf32>) -> tensor<16x1xf32>
    %8 = dlgraph.rsqrt %7 : tensor<16x1xf32>
    %9 = dlgraph.mul %3, %8 : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32>
    %10 = dlgraph.mul %9, %w : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    %11 = dlgraph.add %10, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
    return %11, %3, %9 : tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>
  }
}

// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_layer_norm: 512 threads in blocks of 256
// CHECK: float* dr = a6 + row * 64LL;
// CHECK-NEXT: float* ur = a7 + row * 64LL;
// CHECK: { const float d = (float)(v[j] - m); const float u = (float)(d * r); const float w = (float)(u * a1[k]); yr[k] = (float)(w + a2[k]); dr[k] = d; ur[k] = u; }

// HOST-LABEL: void forward_k{{[0-9]+}}_layer_norm(void **args)
// HOST: float* dr = a6 + row * 64LL;
// HOST-NEXT: float* ur = a7 + row * 64LL;
// HOST: for (long long k = 0; k < 64LL; ++k) { const float d = (float)(xr[k] - m); const float u = (float)(d * r); const float w = (float)(u * a1[k]); yr[k] = (float)(w + a2[k]); dr[k] = d; ur[k] = u; }

// STATS: kernels: 1
