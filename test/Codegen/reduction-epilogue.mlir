// Reduction epilogues (--dlexec-fuse-reduction-epilogues): the variance
// sum over a [64, 8] batch and rsqrt(var) * gamma become one kernel. On CUDA
// the 64 steps of each of the 8 sums are split over 8 thread rows and combined
// by thread row 0, which stores the sum, reads it back as stored and runs
// the epilogue; the host runs it after the serial loop, per output element.
// RUN: dlc %s --emit=cuda --quiet | FileCheck %s
// RUN: dlc %s --emit=host --quiet | FileCheck %s --check-prefix=HOST
// It compiles with NVRTC for sm_80 and sm_90 into one kernel.
// RUN: dlc %s --target sm_80,sm_90 --stats -o %t.dlcp 2>&1 | FileCheck %s --check-prefix=STATS
module {
  func.func @main(%x: tensor<64x8xf32> {dlgraph.name = "x"}, %g: tensor<8xf32> {dlgraph.name = "g"})
      -> (tensor<8xf32> {dlgraph.name = "var"}, tensor<8xf32> {dlgraph.name = "scale"}) {
    %sq = dlgraph.mul %x, %x : (tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<64x8xf32>
    %v = dlgraph.reduce_sum %sq {axes = array<i64: 0>} : tensor<64x8xf32> -> tensor<8xf32>
    %r = dlgraph.rsqrt %v : tensor<8xf32>
    %s = dlgraph.mul %r, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    return %v, %s : tensor<8xf32>, tensor<8xf32>
  }
}

// STATS: kernels: 1

// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_reduce_sum:
// CHECK: void forward_k{{[0-9]+}}_reduce_sum(float* __restrict__ a0, float* __restrict__ a1, float* __restrict__ a2, float* __restrict__ a3)
// CHECK: for (long long t = s; t < 64LL; t += 8) {
// CHECK: if (!live || s != 0) return;
// CHECK: for (int k = 1; k < 8; ++k)
// CHECK-NEXT: a2[i1] = (float)acc0;
// CHECK-NEXT: const float e1 = a1[i1];
// CHECK-NEXT: const float e2 = a2[i1];
// CHECK-NEXT: const float [[R:v[0-9]+]] = (1.0f / sqrtf(e2));
// CHECK-NEXT: const float [[M:v[0-9]+]] = (float)([[R]] * e1);
// CHECK-NEXT: a3[i1] = [[M]];

// HOST-LABEL: forward_k{{[0-9]+}}_reduce_sum
// HOST: for (long long i0 = 0; i0 < 64LL; ++i0) {
// HOST: }
// HOST-NEXT: a2[i1] = (float)acc0;
// HOST-NEXT: const float e1 = a1[i1];
// HOST-NEXT: const float e2 = a2[i1];
// HOST-NEXT: const float [[R:v[0-9]+]] = (1.0f / sqrtf(e2));
// HOST-NEXT: const float [[M:v[0-9]+]] = (float)([[R]] * e1);
// HOST-NEXT: a3[i1] = [[M]];
