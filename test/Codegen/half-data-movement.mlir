// Data movement of f16 and bf16 tensors: copy-only kernels move the 2-byte
// elements as stored (a pad fills with its value rounded to the type), and
// the forward gather copies them as stored, reading 0 for an index outside
// the data. The gather gradient accumulates and is rejected at lowering.
// RUN: dlc %s --emit=host --quiet | FileCheck %s
// RUN: dlc %s --target sm_80,sm_90 --quiet -o %t.dlcp
// RUN: not dlc %S/Inputs/half-gather-grad.mlir --emit=host --quiet 2>&1 | FileCheck %s --check-prefix=GRAD
module {
  func.func @main(%x: tensor<2x3xf16> {dlgraph.name = "x"}, %b: tensor<2x3xbf16> {dlgraph.name = "b"},
                  %idx: tensor<2xi64> {dlgraph.name = "idx"})
      -> (tensor<3x2xf16>, tensor<5x3xf16>, tensor<4x3xbf16>, tensor<2x3xbf16>) {
    %t = dlgraph.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf16> -> tensor<3x2xf16>
    %p = dlgraph.pad %x {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>, value = 0.1 : f64} : tensor<2x3xf16> -> tensor<5x3xf16>
    %c = dlgraph.concat %b, %b {axis = 0 : i64} : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<4x3xbf16>
    %g = dlgraph.gather %b, %idx {axis = 0 : i64} : (tensor<2x3xbf16>, tensor<2xi64>) -> tensor<2x3xbf16>
    return %t, %p, %c, %g : tensor<3x2xf16>, tensor<5x3xf16>, tensor<4x3xbf16>, tensor<2x3xbf16>
  }
}

// A kernel that only moves elements copies them as stored (NaN payloads
// kept).
// CHECK-LABEL: extern "C" void forward_k{{[0-9]+}}_transpose(void **args) {
// CHECK: dlc_f16 acc0;
// CHECK-NEXT: const dlc_f16 x0 = a0[i1 * 3LL + i0];
// CHECK: a1[i0 * 2LL + i1] = acc0;
// The pad value 0.1 as an f16 constant: 0.0999755859375.
// CHECK-LABEL: extern "C" void forward_k{{[0-9]+}}_pad_fill(void **args) {
// CHECK: const float v0 = 9.997558594e-02f;
// CHECK: a0[i0 * 3LL + i1] = dlc_f32_to_f16(acc0);
// CHECK-LABEL: extern "C" void forward_k{{[0-9]+}}_concat(void **args) {
// CHECK: dlc_bf16* __restrict__ a0 = (dlc_bf16*)args[0];
// CHECK-LABEL: extern "C" void forward_k{{[0-9]+}}_gather(void **args) {
// CHECK-NEXT: dlc_bf16* __restrict__ a0 = (dlc_bf16*)args[0];
// CHECK-NEXT: long long* __restrict__ a1 = (long long*)args[1];
// CHECK-NEXT: dlc_bf16* __restrict__ a2 = (dlc_bf16*)args[2];
// CHECK: a2[tid] = (k >= 0 && k < 2LL) ? a0[(o * 2LL + k) * 3LL + c] : dlc_f32_to_bf16(0.0f);

// GRAD: half-gather-grad.mlir:4:11: dlgraph-lower-to-dlexec: cannot lower 'dlgraph.gather_grad': element type f16 is not supported by this op yet (f16 and bf16 tensors support elementwise ops, casts and data movement; cast to f32 for this op)
