// Generated elementwise kernels on CUDA (issue 14 item 2): grid-stride loops
// with 32-bit indices, and 128-bit vector loads and stores (4 f32, 8 f16)
// where every operand is contiguous and its buffer provably 16-byte aligned.
// A bias along the last axis is a vector at its column; a slice that starts
// off a vector boundary is read element by element while one that starts on
// a boundary is a vector; 35 elements are 8 vectors and a scalar tail.
// RUN: dlc %s --emit=cuda --quiet | FileCheck %s
// Every kernel compiles with NVRTC for sm_80 and sm_90; --stats counts them.
// RUN: dlc %s --target sm_80,sm_90 --stats -o %t.dlcp 2>&1 | FileCheck %s --check-prefix=STATS
// The host keeps its loop nests.
// RUN: dlc %s --emit=host --quiet | FileCheck %s --check-prefix=HOST
module {
  func.func @main(%x: tensor<64x32xf32> {dlgraph.name = "x"}, %b: tensor<32xf32> {dlgraph.name = "b"},
                  %t: tensor<7x5xf32> {dlgraph.name = "t"}, %h: tensor<64x32xf16> {dlgraph.name = "h"},
                  %w: tensor<64x40xf32> {dlgraph.name = "w"})
      -> (tensor<64x32xf32> {dlgraph.name = "y"}, tensor<7x5xf32> {dlgraph.name = "u"},
          tensor<64x32xf16> {dlgraph.name = "g"}, tensor<64x32xf32> {dlgraph.name = "s"}) {
    %m = dlgraph.add %x, %b : (tensor<64x32xf32>, tensor<32xf32>) -> tensor<64x32xf32>
    %y = dlgraph.relu %m : tensor<64x32xf32>
    %u = dlgraph.exp %t : tensor<7x5xf32>
    %g = dlgraph.mul %h, %h : (tensor<64x32xf16>, tensor<64x32xf16>) -> tensor<64x32xf16>
    %s3 = dlgraph.slice %w {starts = array<i64: 0, 3>, steps = array<i64: 1, 1>} : tensor<64x40xf32> -> tensor<64x32xf32>
    %s4 = dlgraph.slice %w {starts = array<i64: 0, 4>, steps = array<i64: 1, 1>} : tensor<64x40xf32> -> tensor<64x32xf32>
    %s = dlgraph.sub %s3, %s4 : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
    return %y, %u, %g, %s : tensor<64x32xf32>, tensor<7x5xf32>, tensor<64x32xf16>, tensor<64x32xf32>
  }
}

// STATS: vectorized elementwise kernels: 6 (5 of vector width 4, 1 of vector width 8)

// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_relu: 512 threads in blocks of 256
// CHECK: // dlc: grid-stride loop
// CHECK-NEXT: // dlc: vector width 4
// CHECK: const unsigned dlc_first = blockIdx.x * blockDim.x + threadIdx.x;
// CHECK-NEXT: const unsigned dlc_stride = gridDim.x * blockDim.x;
// CHECK: struct alignas(16) dlc_vec_float_4 { float v[4]; };
// CHECK-NEXT: for (unsigned dlc_v = dlc_first; dlc_v < 512u; dlc_v += dlc_stride) {
// CHECK-NEXT: const unsigned dlc_e = dlc_v * 4u;
// CHECK-NEXT: unsigned dlc_rem = dlc_e;
// CHECK-NEXT: const int dlc_b = (int)(dlc_rem % 32u); dlc_rem /= 32u;
// CHECK-NEXT: const int i0 = (int)dlc_rem;
// CHECK-NEXT: const dlc_vec_float_4 r0 = *(const dlc_vec_float_4 *)(a0 + dlc_e);
// CHECK-NEXT: const dlc_vec_float_4 r1 = *(const dlc_vec_float_4 *)(a1 + dlc_b);
// CHECK: const float x0 = r0.v[dlc_j];
// CHECK-NEXT: const float x1 = r1.v[dlc_j];
// CHECK: w2.v[dlc_j] = acc0;
// CHECK: *(dlc_vec_float_4 *)(a2 + dlc_e) = w2;
// CHECK-NOT: long long

// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_exp: 8 threads in blocks of 256
// The 140-byte input t may be a pipeline micro-batch's slice of the global
// batch (m x 140 bytes in): not provably 16-byte aligned, read per element.
// CHECK: for (unsigned dlc_v = dlc_first; dlc_v < 8u; dlc_v += dlc_stride) {
// CHECK-NOT: *(const dlc_vec_float_4 *)(a0
// CHECK: const float x0 = a0[dlc_e + dlc_j];
// CHECK: *(dlc_vec_float_4 *)(a1 + dlc_e) = w1;
// CHECK: for (unsigned dlc_e = 32u + dlc_first; dlc_e < 35u; dlc_e += dlc_stride) {
// CHECK-NEXT: float acc0;
// CHECK-NEXT: const float x0 = a0[dlc_e];
// CHECK: a1[dlc_e] = acc0;

// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_mul: 256 threads in blocks of 256
// CHECK: // dlc: vector width 8
// CHECK: struct alignas(16) dlc_vec_dlc_f16_8 { dlc_f16 v[8]; };
// CHECK: const dlc_vec_dlc_f16_8 r0 = *(const dlc_vec_dlc_f16_8 *)(a0 + dlc_e);
// CHECK: const float x0 = dlc_f16_to_f32(r0.v[dlc_j]);
// CHECK: w2.v[dlc_j] = dlc_f32_to_f16(acc0);
// CHECK: *(dlc_vec_dlc_f16_8 *)(a2 + dlc_e) = w2;

// Columns 3..34 of each 40-float row: not 16-byte aligned, scalar loads.
// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_slice: 512 threads in blocks of 256
// CHECK-NOT: *(const dlc_vec_float_4 *)
// CHECK: const int i1 = dlc_b + dlc_j;
// CHECK: const float x0 = a0[i0 * 40 + (i1 + 3)];
// CHECK: *(dlc_vec_float_4 *)(a1 + dlc_e) = w1;
// Columns 4..35: a vector at column 4 of each row.
// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_slice: 512 threads in blocks of 256
// CHECK: const dlc_vec_float_4 r0 = *(const dlc_vec_float_4 *)(a0 + i0 * 40 + (dlc_b + 4));

// HOST-LABEL: extern "C" void forward_k{{[0-9]+}}_relu(void **args) {
// HOST: for (long long i0 = 0; i0 < 64LL; ++i0)
// HOST: for (long long i1 = 0; i1 < 32LL; ++i1)
// HOST: const float x1 = a1[i1];
// HOST: a2[i0 * 32LL + i1] = acc0;
