// Low-precision library calls end to end (issue 10): bf16 gemm with a bias
// row, bf16 convolution with bias and asymmetric pads and its two backward
// convolutions, an f16 matmul and an f16 gemm with a column C lower to gemm /
// conv2d_* calls whose dtype the package stores; dlrt runs them on the host and on the CUDA
// device over the stand-in. Each output is within 1 ulp of its type of a
// float64 reference on the rounded inputs rounded once (Inputs/
// lowp_libcalls.py justifies the tolerance), and host and CUDA agree within
// 1 ulp.
// REQUIRES: cuda-standin
// RUN: rm -rf %t && mkdir -p %t
// RUN: dlc %s --emit=plan --quiet | FileCheck %s --check-prefix=PLAN
// RUN: dlc %s --quiet -o %t/l.dlcp
// The one kernel (the f16 column C copied to [5, 7] for the gemm call)
// compiles with NVRTC.
// RUN: dlc %s --target sm_80,sm_90 --stats -o %t/nvrtc.dlcp 2>&1 | FileCheck %s --check-prefix=PKG
// PKG: kernels: 1
// RUN: %syspython %S/Inputs/lowp_libcalls.py make %t/in.npz
// RUN: dlrt run %t/l.dlcp --inputs %t/in.npz --outputs %t/host.npz --device host
// RUN: %syspython %S/Inputs/lowp_libcalls.py check %t/in.npz %t/host.npz | FileCheck %s --check-prefix=REF
// RUN: env DLRT_CUDA_STANDIN=%standin DLRT_CACHE_DIR=%t/cache dlrt run %t/l.dlcp --inputs %t/in.npz --outputs %t/cuda.npz --device cuda
// RUN: %syspython %S/Inputs/lowp_libcalls.py check %t/in.npz %t/cuda.npz | FileCheck %s --check-prefix=REF
// RUN: %syspython %S/Inputs/lowp_libcalls.py compare %t/host.npz %t/cuda.npz | FileCheck %s --check-prefix=SAME
module {
  func.func @main(%a: tensor<6x54xbf16> {dlgraph.name = "a"}, %b: tensor<10x54xbf16> {dlgraph.name = "b"},
                  %c: tensor<10xbf16> {dlgraph.name = "c"}, %x: tensor<2x3x7x7xbf16> {dlgraph.name = "x"},
                  %w: tensor<4x3x3x3xbf16> {dlgraph.name = "w"}, %bias: tensor<4xbf16> {dlgraph.name = "bias"},
                  %dy: tensor<2x4x4x3xbf16> {dlgraph.name = "dy"}, %ma: tensor<3x5x33xf16> {dlgraph.name = "ma"},
                  %mb: tensor<33x8xf16> {dlgraph.name = "mb"}, %ka: tensor<5x12xf16> {dlgraph.name = "ka"},
                  %kb: tensor<12x7xf16> {dlgraph.name = "kb"}, %kc: tensor<5x1xf16> {dlgraph.name = "kc"})
      -> (tensor<6x10xbf16> {dlgraph.name = "yg"}, tensor<2x4x4x3xbf16> {dlgraph.name = "yc"},
          tensor<3x5x8xf16> {dlgraph.name = "ym"}, tensor<2x3x7x7xbf16> {dlgraph.name = "dx"},
          tensor<4x3x3x3xbf16> {dlgraph.name = "dw"}, tensor<5x7xf16> {dlgraph.name = "yk"}) {
    %yg = dlgraph.gemm %a, %b, %c {trans_b = true} : (tensor<6x54xbf16>, tensor<10x54xbf16>, tensor<10xbf16>) -> tensor<6x10xbf16>
    %yc = dlgraph.conv %x, %w, %bias {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 2, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x7x7xbf16>, tensor<4x3x3x3xbf16>, tensor<4xbf16>) -> tensor<2x4x4x3xbf16>
    %ym = dlgraph.matmul %ma, %mb : (tensor<3x5x33xf16>, tensor<33x8xf16>) -> tensor<3x5x8xf16>
    %dx = dlgraph.conv_backward_data %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 2, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x4x4x3xbf16>, tensor<4x3x3x3xbf16>) -> tensor<2x3x7x7xbf16>
    %dw = dlgraph.conv_backward_filter %x, %dy {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 2, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x7x7xbf16>, tensor<2x4x4x3xbf16>) -> tensor<4x3x3x3xbf16>
    %yk = dlgraph.gemm %ka, %kb, %kc {alpha = 2.0 : f32, beta = 0.5 : f32} : (tensor<5x12xf16>, tensor<12x7xf16>, tensor<5x1xf16>) -> tensor<5x7xf16>
    return %yg, %yc, %ym, %dx, %dw, %yk : tensor<6x10xbf16>, tensor<2x4x4x3xbf16>, tensor<3x5x8xf16>, tensor<2x3x7x7xbf16>, tensor<4x3x3x3xbf16>, tensor<5x7xf16>
  }
}

// PLAN-DAG: gemm {{.*}}m=6 n=10 k=54 {{.*}}has_c=1 c_is_row_vector=1 {{.*}} dtype=bf16
// PLAN-DAG: conv2d_forward {{.*}}has_bias=1 {{.*}} dtype=bf16
// PLAN-DAG: gemm {{.*}}m=15 n=8 k=33 {{.*}} dtype=f16
// PLAN-DAG: conv2d_backward_data {{.*}} dtype=bf16
// PLAN-DAG: conv2d_backward_filter {{.*}} dtype=bf16
// PLAN-DAG: kernel {{.*}}_gemm_broadcast_c ins({{.*}} 'kc' f16[5x1]) outs([[FULL:#[0-9]+]] f16[5x7])
// PLAN-DAG: gemm ins({{.*}}, [[FULL]] f16[5x7]) {{.*}}m=5 n=7 k=12 {{.*}}has_c=1 c_is_row_vector=0 alpha=2 beta=0.5 dtype=f16

// REF: dw bf16 108 values, {{[0-9]+}} exact, max {{[01]}} ulp
// REF: dx bf16 294 values, {{[0-9]+}} exact, max {{[01]}} ulp
// REF: yc bf16 96 values, {{[0-9]+}} exact, max {{[01]}} ulp
// REF: yg bf16 60 values, {{[0-9]+}} exact, max {{[01]}} ulp
// REF: yk f16 35 values, {{[0-9]+}} exact, max {{[01]}} ulp
// REF: ym f16 120 values, {{[0-9]+}} exact, max {{[01]}} ulp

// SAME: dw bf16 108 values
// SAME: yc bf16
// SAME: yg bf16
// SAME: yk f16
// SAME: ym f16
