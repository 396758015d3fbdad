// RUN: dlc-opt %s --dlgraph-remat="remat=none" | FileCheck %s --check-prefix=NONE
// RUN: dlc-opt %s --dlgraph-remat="remat=sqrt" | FileCheck %s --check-prefix=REMAT
// RUN: dlc-opt %s --dlgraph-remat="remat=auto" | FileCheck %s --check-prefix=REMAT
// RUN: dlc-opt %s --dlgraph-remat="remat=auto" --dlc-lowering-pipeline --dlexec-verify-memory-plan | FileCheck %s --check-prefix=LOWERED

// With rematerialization, max pooling's backward reads the argmax indices
// computed right after the forward pooling instead of the pooling's input
// (the ReLU output, which the backward then needs only for the ReLU's own
// gradient). Without it, the step is left as autodiff built it.

// NONE-NOT: max_pool_indices
// NONE: dlgraph.max_pool_grad %{{.*}}, %

// REMAT-LABEL: func.func @train_step
// REMAT: %[[Y:.*]] = dlgraph.relu
// REMAT-NEXT: %[[P:.*]] = dlgraph.max_pool %[[Y]]
// REMAT-NEXT: %[[I:.*]] = dlgraph.max_pool_indices %[[Y]] {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xi32>
// REMAT-NOT: dlgraph.max_pool_grad
// REMAT: dlgraph.max_pool_indices_grad %[[I]], %{{.*}} {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x4x4xi32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32>
// REMAT-NOT: dlgraph.max_pool_grad

// LOWERED: dlexec.builtin_kernel @{{.*}} "max_pool2d_indices" ins(%{{.*}} : memref<2x4x8x8xf32>) outs(%{{.*}} : memref<2x4x4x4xi32>)
// LOWERED: dlexec.builtin_kernel @{{.*}} "max_pool2d_indices_grad" ins(%{{.*}}, %{{.*}} : memref<2x4x4x4xi32>, memref<2x4x4x4xf32>) outs(%{{.*}} : memref<2x4x8x8xf32>)

module {
  dlgraph.variable @s : tensor<1x4x1x1xf32> = dense<5.000000e-01> : tensor<1x4x1x1xf32> {trainable}
  dlgraph.variable @w : tensor<10x64xf32> = dense<1.250000e-01> : tensor<10x64xf32> {trainable}
  func.func @train_step(%arg0: tensor<2x4x8x8xf32> {dlgraph.name = "x"}, %arg1: tensor<2xi64> {dlgraph.name = "labels"}) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %s = dlgraph.read_variable @s : tensor<1x4x1x1xf32>
    %pre = dlgraph.mul %arg0, %s : (tensor<2x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x8x8xf32>
    %0 = dlgraph.relu %pre : tensor<2x4x8x8xf32>
    %1 = dlgraph.max_pool %0 {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
    %2 = dlgraph.reshape %1 : tensor<2x4x4x4xf32> to tensor<2x64xf32>
    %w = dlgraph.read_variable @w : tensor<10x64xf32>
    %3 = dlgraph.gemm %2, %w {trans_b = true} : (tensor<2x64xf32>, tensor<10x64xf32>) -> tensor<2x10xf32>
    %loss = dlgraph.softmax_cross_entropy %3, %arg1 : (tensor<2x10xf32>, tensor<2xi64>) -> tensor<f32>
    %one = dlgraph.constant dense<1.000000e+00> : tensor<f32>
    %4 = dlgraph.softmax_cross_entropy_grad %3, %arg1, %one : (tensor<2x10xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x10xf32>
    %5 = dlgraph.gemm %4, %w : (tensor<2x10xf32>, tensor<10x64xf32>) -> tensor<2x64xf32>
    %6 = dlgraph.reshape %5 : tensor<2x64xf32> to tensor<2x4x4x4xf32>
    %7 = dlgraph.max_pool_grad %0, %6 {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32>
    %zero = dlgraph.constant dense<0.000000e+00> : tensor<2x4x8x8xf32>
    %8 = dlgraph.compare "gt", %0, %zero : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xi1>
    %9 = dlgraph.select %8, %7, %zero : (tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %10 = dlgraph.mul %9, %arg0 : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
    %11 = dlgraph.reduce_sum %10 {axes = array<i64: 0, 2, 3>, keepdims} : tensor<2x4x8x8xf32> -> tensor<1x4x1x1xf32>
    dlgraph.write_variable @s, %11 : tensor<1x4x1x1xf32>
    return %loss : tensor<f32>
  }
}
