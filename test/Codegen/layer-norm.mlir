// The layer_norm builtin (--dlexec-fuse-layer-norm) for rows of 40 and of
// 1500 elements. CUDA: rows of up to 1024 elements take one warp each (8 in
// a block of 256), longer ones a block; each thread keeps its elements in
// registers (here 2 and 6) and reads x once; sums are double, combined by
// an xor butterfly and, across a block's warps, in warp order. The host
// walks each row serially with the decomposition's roundings.
// RUN: dlc %s --emit=cuda --quiet | FileCheck %s
// RUN: dlc %s --emit=host --quiet | FileCheck %s --check-prefix=HOST
// Both compile with NVRTC for sm_80 and sm_90, one kernel each.
// RUN: dlc %s --target sm_80,sm_90 --stats -o %t.dlcp 2>&1 | FileCheck %s --check-prefix=STATS
module {
  func.func @main(%x: tensor<3x40xf32> {dlgraph.name = "x"}, %w: tensor<40xf32> {dlgraph.name = "w"}, %b: tensor<40xf32> {dlgraph.name = "b"},
                  %x2: tensor<2x1500xf32> {dlgraph.name = "x2"}, %w2: tensor<1500xf32> {dlgraph.name = "w2"}, %b2: tensor<1500xf32> {dlgraph.name = "b2"})
      -> (tensor<3x40xf32> {dlgraph.name = "y"}, tensor<2x1500xf32> {dlgraph.name = "y2"}) {
    %2 = dlgraph.reduce_mean %x {axes = array<i64: 1>, keepdims} : tensor<3x40xf32> -> tensor<3x1xf32>
    %3 = dlgraph.sub %x, %2 : (tensor<3x40xf32>, tensor<3x1xf32>) -> tensor<3x40xf32>
    %4 = dlgraph.mul %3, %3 : (tensor<3x40xf32>, tensor<3x40xf32>) -> tensor<3x40xf32>
    %5 = dlgraph.reduce_mean %4 {axes = array<i64: 1>, keepdims} : tensor<3x40xf32> -> tensor<3x1xf32>
    %6 = dlgraph.constant dense<1.0E-5> : tensor<3x1xf32>
    %7 = dlgraph.add %5, %6 : (tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
    %8 = dlgraph.rsqrt %7 : tensor<3x1xf32>
    %9 = dlgraph.mul %3, %8 : (tensor<3x40xf32>, tensor<3x1xf32>) -> tensor<3x40xf32>
    %10 = dlgraph.mul %9, %w : (tensor<3x40xf32>, tensor<40xf32>) -> tensor<3x40xf32>
    %11 = dlgraph.add %10, %b : (tensor<3x40xf32>, tensor<40xf32>) -> tensor<3x40xf32>
    %m2 = dlgraph.reduce_mean %x2 {axes = array<i64: 1>, keepdims} : tensor<2x1500xf32> -> tensor<2x1xf32>
    %d2 = dlgraph.sub %x2, %m2 : (tensor<2x1500xf32>, tensor<2x1xf32>) -> tensor<2x1500xf32>
    %s2 = dlgraph.mul %d2, %d2 : (tensor<2x1500xf32>, tensor<2x1500xf32>) -> tensor<2x1500xf32>
    %v2 = dlgraph.reduce_mean %s2 {axes = array<i64: 1>, keepdims} : tensor<2x1500xf32> -> tensor<2x1xf32>
    %e2 = dlgraph.constant dense<1.0E-5> : tensor<2x1xf32>
    %a2 = dlgraph.add %v2, %e2 : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
    %r2 = dlgraph.rsqrt %a2 : tensor<2x1xf32>
    %n2 = dlgraph.mul %d2, %r2 : (tensor<2x1500xf32>, tensor<2x1xf32>) -> tensor<2x1500xf32>
    %g2 = dlgraph.mul %n2, %w2 : (tensor<2x1500xf32>, tensor<1500xf32>) -> tensor<2x1500xf32>
    %y2 = dlgraph.add %g2, %b2 : (tensor<2x1500xf32>, tensor<1500xf32>) -> tensor<2x1500xf32>
    return %11, %y2 : tensor<3x40xf32>, tensor<2x1500xf32>
  }
}

// STATS: kernels: 2

// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_layer_norm: 256 threads in blocks of 256
// CHECK: const long long row = tid >> 5;
// CHECK-NEXT: const int t = (int)(tid & 31);
// CHECK-NEXT: if (row >= 3LL) return;
// CHECK: float v[2];
// CHECK: v[j] = k < 40LL ? xr[k] : (float)0;
// CHECK: s += (double)(float)(v[j] * c);
// CHECK: for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
// CHECK-NEXT: const float m = (float)s;
// CHECK: for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
// CHECK: const float r = 1.0f / sqrtf((float)(var + (float)9.999999747e-06f));
// CHECK-NEXT: if (t == 0) { a4[row] = m; a5[row] = r; }
// CHECK: if (k < 40LL) { const float d = (float)(v[j] - m); const float u = (float)(d * r); const float w = (float)(u * a1[k]); yr[k] = (float)(w + a2[k]); }

// CHECK-LABEL: // kernel forward_k{{[0-9]+}}_layer_norm: 512 threads in blocks of 256
// CHECK: const long long row = blockIdx.x;
// CHECK: __shared__ double dlc_ln_part[8];
// CHECK: float v[6];
// CHECK: if (lane == 0) dlc_ln_part[warp] = s;
// CHECK-NEXT: __syncthreads();
// CHECK-NEXT: s = dlc_ln_part[0];
// CHECK-NEXT: for (int w = 1; w < 8; ++w) s += dlc_ln_part[w];
// CHECK-NEXT: __syncthreads();

// HOST-LABEL: void forward_k{{[0-9]+}}_layer_norm(void **args)
// HOST: for (long long tid = 0; tid < 3LL; ++tid) {
// HOST: for (long long k = 0; k < 40LL; ++k) s += (double)(float)(xr[k] * c);
// HOST: for (long long k = 0; k < 40LL; ++k) { const float d = (float)(xr[k] - m); q += (double)(float)((float)(d * d) * c); }
// HOST: a4[row] = m;
// HOST-NEXT: a5[row] = r;
