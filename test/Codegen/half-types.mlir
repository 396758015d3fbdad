// f16 and bf16 kernels: 2-byte storage, float arithmetic rounded once per op
// (so a fused chain rounds after every op, as the unfused graph would),
// casts between every float type and from integers rounded once, the
// conversions only in the kernels that store such elements, and 2-byte
// buffers in the memory plan.
// RUN: dlc %s --emit=host --quiet | FileCheck %s --check-prefix=HOST
// RUN: dlc %s --emit=cuda --quiet | FileCheck %s --check-prefix=CUDA
// RUN: dlc %s --emit=plan --quiet | FileCheck %s --check-prefix=PLAN
// Every kernel compiles with NVRTC for sm_80 and sm_90 into a package.
// RUN: dlc %s --target sm_80,sm_90 --stats -o %t.dlcp 2>&1 | FileCheck %s --check-prefix=PKG
// PKG: kernels: 7
module {
  func.func @main(%x: tensor<2x4xf16> {dlgraph.name = "x"}, %y: tensor<4xf16> {dlgraph.name = "y"},
                  %b: tensor<2x4xbf16> {dlgraph.name = "b"}, %f: tensor<2x4xf32> {dlgraph.name = "f"},
                  %d: tensor<2x4xf64> {dlgraph.name = "d"}, %i: tensor<2x4xi32> {dlgraph.name = "i"})
      -> (tensor<2x4xf16> {dlgraph.name = "h"}, tensor<2x4xbf16> {dlgraph.name = "g"},
          tensor<2x4xf32> {dlgraph.name = "w"}, tensor<2x4xi1> {dlgraph.name = "c"},
          tensor<2x4xf16> {dlgraph.name = "dh"}, tensor<2x4xbf16> {dlgraph.name = "ib"},
          tensor<2x4xf32> {dlgraph.name = "plain"}) {
    %k = dlgraph.constant dense<0.1> : tensor<f16>
    %m = dlgraph.mul %x, %y : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
    %a = dlgraph.add %m, %k : (tensor<2x4xf16>, tensor<f16>) -> tensor<2x4xf16>
    %h = dlgraph.relu %a : tensor<2x4xf16>
    %fb = dlgraph.cast %f : tensor<2x4xf32> to tensor<2x4xbf16>
    %s = dlgraph.sub %b, %fb : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<2x4xbf16>
    %hb = dlgraph.cast %h : tensor<2x4xf16> to tensor<2x4xbf16>
    %g = dlgraph.div %s, %hb : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<2x4xbf16>
    %w = dlgraph.cast %g : tensor<2x4xbf16> to tensor<2x4xf32>
    %c = dlgraph.compare "gt", %h, %x : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xi1>
    %dh = dlgraph.cast %d : tensor<2x4xf64> to tensor<2x4xf16>
    %ib = dlgraph.cast %i : tensor<2x4xi32> to tensor<2x4xbf16>
    %plain = dlgraph.add %f, %f : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    return %h, %g, %w, %c, %dh, %ib, %plain : tensor<2x4xf16>, tensor<2x4xbf16>, tensor<2x4xf32>, tensor<2x4xi1>, tensor<2x4xf16>, tensor<2x4xbf16>, tensor<2x4xf32>
  }
}

// The host prelude carries the conversions once, before the first kernel.
// HOST: #define DLC_NARROW_FLOAT_HELPERS
// HOST: DLC_HELPER unsigned short dlc_f64_to_narrow(double x, int ebits, int mbits) {
// HOST: typedef unsigned short dlc_f16;
// HOST: DLC_HELPER float dlc_f16_to_f32(dlc_f16 x) { return dlc_narrow_to_f32(x, 5, 10); }
// HOST: typedef unsigned short dlc_bf16;
// HOST: DLC_HELPER dlc_bf16 dlc_f32_to_bf16(float x) { return dlc_f64_to_narrow(x, 8, 7); }
// The fused mul + add + relu chain rounds after each op; the f16 constant
// 0.1 is its f16 value 0.0999755859375.
// HOST-LABEL: extern "C" void forward_k{{[0-9]+}}_relu(void **args) {
// HOST-NEXT: dlc_f16* __restrict__ a0 = (dlc_f16*)args[0];
// HOST: const float [[K:v[0-9]+]] = 9.997558594e-02f;
// HOST: const float x0 = dlc_f16_to_f32(a0[i0 * 4LL + i1]);
// HOST-NEXT: const float x1 = dlc_f16_to_f32(a1[i1]);
// HOST-NEXT: const float [[M:v[0-9]+]] = dlc_round_f16((float)(x0 * x1));
// HOST-NEXT: const float [[A:v[0-9]+]] = dlc_round_f16((float)([[M]] + [[K]]));
// HOST-NEXT: const float [[R:v[0-9]+]] = dlc_round_f16((([[A]] > v{{[0-9]+}} || [[A]] != [[A]]) ? [[A]] : v{{[0-9]+}}));
// HOST: a2[i0 * 4LL + i1] = dlc_f32_to_f16(acc0);
// f16 -> bf16 is exact to float and rounded once; so is f32 -> bf16.
// HOST-LABEL: extern "C" void forward_k{{[0-9]+}}_div(void **args) {
// HOST: const float [[W:v[0-9]+]] = (float)x2;
// HOST-NEXT: const float [[HB:v[0-9]+]] = dlc_round_bf16((float)[[W]]);
// HOST-NEXT: const float [[FB:v[0-9]+]] = dlc_round_bf16((float)x1);
// HOST-NEXT: const float [[S:v[0-9]+]] = dlc_round_bf16((float)(x0 - [[FB]]));
// HOST-NEXT: const float {{v[0-9]+}} = dlc_round_bf16((float)([[S]] / [[HB]]));
// HOST: a3[i0 * 4LL + i1] = dlc_f32_to_bf16(acc0);
// Widening is exact: no rounding.
// HOST-LABEL: extern "C" void forward_k{{[0-9]+}}_cast(void **args) {
// HOST: const float x0 = dlc_bf16_to_f32(a0[i0 * 4LL + i1]);
// HOST-NEXT: const float v0 = (float)x0;
// HOST: a1[i0 * 4LL + i1] = acc0;
// Comparisons compute on the widened values.
// HOST-LABEL: extern "C" void forward_k{{[0-9]+}}_compare(void **args) {
// HOST: const bool v0 = (x0 > x1);
// f64 and integers round once, from double.
// HOST-LABEL: extern "C" void forward_k{{[0-9]+}}_cast(void **args) {
// HOST: const double x0 = a0[i0 * 4LL + i1];
// HOST-NEXT: const float v0 = dlc_f16_to_f32(dlc_f64_to_f16((double)x0));
// HOST-LABEL: extern "C" void forward_k{{[0-9]+}}_cast(void **args) {
// HOST: const int x0 = a0[i0 * 4LL + i1];
// HOST-NEXT: const float v0 = dlc_bf16_to_f32(dlc_f64_to_bf16((double)x0));
// HOST-LABEL: extern "C" void forward_k{{[0-9]+}}_add(void **args) {
// HOST: const float v0 = (float)(x0 + x1);

// On CUDA, CUDA's own types and conversions, only where a kernel stores them.
// CUDA-LABEL: // kernel forward_k{{[0-9]+}}_relu
// CUDA: #include <cuda_fp16.h>
// CUDA-NEXT: typedef __half dlc_f16;
// CUDA-NEXT: DLC_HELPER float dlc_f16_to_f32(dlc_f16 x) { return __half2float(x); }
// CUDA-NEXT: DLC_HELPER dlc_f16 dlc_f32_to_f16(float x) { return __float2half_rn(x); }
// CUDA-NEXT: DLC_HELPER dlc_f16 dlc_f64_to_f16(double x) { return __double2half(x); }
// CUDA-NEXT: DLC_HELPER float dlc_round_f16(float x) { return dlc_f16_to_f32(dlc_f32_to_f16(x)); }
// CUDA-NOT: cuda_bf16
// CUDA: extern "C" __global__ void forward_k{{[0-9]+}}_relu(dlc_f16* __restrict__ a0, dlc_f16* __restrict__ a1, dlc_f16* __restrict__ a2) {
// CUDA: a2[dlc_e] = dlc_f32_to_f16(acc0);
// CUDA-LABEL: // kernel forward_k{{[0-9]+}}_div
// CUDA: #include <cuda_fp16.h>
// CUDA: #include <cuda_bf16.h>
// CUDA-NEXT: typedef __nv_bfloat16 dlc_bf16;
// CUDA-NEXT: DLC_HELPER float dlc_bf16_to_f32(dlc_bf16 x) { return __bfloat162float(x); }
// CUDA-NEXT: DLC_HELPER dlc_bf16 dlc_f32_to_bf16(float x) { return __float2bfloat16_rn(x); }
// CUDA-NEXT: DLC_HELPER dlc_bf16 dlc_f64_to_bf16(double x) { return __double2bfloat16(x); }
// CUDA: extern "C" __global__ void forward_k{{[0-9]+}}_div(dlc_bf16* __restrict__ a0, float* __restrict__ a1, dlc_f16* __restrict__ a2, dlc_bf16* __restrict__ a3) {
// An f32 kernel stays as it was.
// CUDA-LABEL: // kernel forward_k{{[0-9]+}}_add
// CUDA-NOT: cuda_fp16
// CUDA-NOT: cuda_bf16
// CUDA: extern "C" __global__ void forward_k{{[0-9]+}}_add(float* a0, float* a1, float* __restrict__ a2) {

// PLAN-LABEL: buffers:
// PLAN-NEXT: #0 input x f16[2x4] 16 bytes
// PLAN-NEXT: #1 input y f16[4] 8 bytes
// PLAN-NEXT: #2 input b bf16[2x4] 16 bytes
// PLAN-NEXT: #3 input f f32[2x4] 32 bytes
// PLAN-NEXT: #4 input d f64[2x4] 64 bytes
// PLAN-NEXT: #5 input i i32[2x4] 32 bytes
// PLAN-NEXT: #6 arena <temp> f16[2x4] 16 bytes @ {{[0-9]+}}
// PLAN-NEXT: #7 arena <temp> bf16[2x4] 16 bytes @ {{[0-9]+}}
