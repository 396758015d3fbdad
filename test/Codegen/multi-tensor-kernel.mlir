// dlexec.multi_tensor_kernels (the momentum-SGD updates of an MLP, merged by
// --dlexec-multi-tensor into one per layer: holding a layer's gradients
// until the next layer's update would raise this small step's peak): on
// CUDA one thread per element of the concatenated tensors finds its tensor
// by a binary search over the range starts (fc2.weight's 24 elements, then
// fc2.bias's 3); on the host one loop per tensor; both bind the tensor's
// pointers to the names the per-element code reads.
// RUN: dlc %s --train --loss softmax-cross-entropy --optimizer sgd --lr 0.1 --momentum 0.9 --emit=cuda --quiet | FileCheck %s --check-prefix=CUDA
// RUN: dlc %s --train --loss softmax-cross-entropy --optimizer sgd --lr 0.1 --momentum 0.9 --emit=host --quiet | FileCheck %s --check-prefix=HOST
// It compiles with NVRTC for sm_80 and sm_90 into a package: 3 kernels (the
// step count and two multi-tensor updates) where there were 6: fc1's ReLU
// gradient and bias gradient are the drelu_bgrad epilogue of the gemm of
// its gradient, which reads the bit-mask fc1's gemm wrote (relu_aux). The
// mask lives in the arena from the forward to the backward gemm: the
// planned peak is 256 bytes above the 5120 without that fusion.
// RUN: dlc %s --train --loss softmax-cross-entropy --optimizer sgd --lr 0.1 --momentum 0.9 --target sm_80,sm_90 --stats -o %t.dlcp 2>&1 | FileCheck %s --check-prefix=PKG
// PKG: kernels: 3
// PKG: gemm epilogues: {{.*}}, 1 relu_aux, 0 drelu, 1 drelu_bgrad
// PKG: predicted peak memory: 5376 bytes

module {
  dlgraph.variable @fc1.weight : tensor<8x3xf32> = dense<0.1> : tensor<8x3xf32>
  dlgraph.variable @fc1.bias : tensor<8xf32> = dense<0.0> : tensor<8xf32>
  dlgraph.variable @fc2.weight : tensor<3x8xf32> = dense<0.2> : tensor<3x8xf32>
  dlgraph.variable @fc2.bias : tensor<3xf32> = dense<0.0> : tensor<3xf32>
  func.func @main(%x: tensor<2x3xf32> {dlgraph.name = "input"}) -> (tensor<2x3xf32> {dlgraph.name = "logits"}) {
    %w1 = dlgraph.read_variable @fc1.weight : tensor<8x3xf32>
    %b1 = dlgraph.read_variable @fc1.bias : tensor<8xf32>
    %w2 = dlgraph.read_variable @fc2.weight : tensor<3x8xf32>
    %b2 = dlgraph.read_variable @fc2.bias : tensor<3xf32>
    %h = dlgraph.gemm %x, %w1, %b1 {trans_b = true} : (tensor<2x3xf32>, tensor<8x3xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %r = dlgraph.relu %h : tensor<2x8xf32>
    %y = dlgraph.gemm %r, %w2, %b2 {trans_b = true} : (tensor<2x8xf32>, tensor<3x8xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %y : tensor<2x3xf32>
  }
}

// CUDA: // kernel [[K:train_step_k[0-9]+_sgd_update_multi_tensor]]: 27 threads
// CUDA: extern "C" __global__ void [[K]](
// The step count (the shared input) is read once per thread.
// CUDA: const float x0 = a0[0];
// CUDA: if (tid < 24LL) {
// CUDA-NEXT: {
// CUDA-NEXT: const long long i0 = tid - 0LL;
// CUDA-NEXT: float* const dlc_t0 = a1;
// CUDA: float* const dlc_t3 = a7;
// CUDA-NEXT: float* const dlc_t4 = a8;
// CUDA-NEXT: {
// CUDA-NEXT: float* const a1 = dlc_t0;
// CUDA: float* const a5 = dlc_t4;
// CUDA: const float x1 = a1[i0];
// CUDA: a4[i0] = acc0;
// CUDA-NEXT: a5[i0] = acc1;
// CUDA: } else {
// CUDA-NEXT: {
// CUDA-NEXT: const long long i0 = tid - 24LL;
// CUDA-NEXT: float* const dlc_t0 = a4;
// CUDA: // kernel {{.+}}_sgd_update_multi_tensor: 32 threads

// HOST: extern "C" void [[K:train_step_k[0-9]+_sgd_update_multi_tensor]](void **args) {
// HOST: const float x0 = a0[0];
// HOST: float* const dlc_t0 = a1;
// HOST: for (long long i0 = 0; i0 < 24LL; ++i0) {
// HOST: float* const dlc_t0 = a4;
// HOST: for (long long i0 = 0; i0 < 3LL; ++i0) {
// HOST: extern "C" void {{.+}}_sgd_update_multi_tensor(void **args) {
// HOST: for (long long i0 = 0; i0 < 24LL; ++i0) {
// HOST: for (long long i0 = 0; i0 < 8LL; ++i0) {
