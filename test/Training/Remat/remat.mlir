// RUN: dlc-opt %s --dlgraph-remat="remat=none" | FileCheck %s --check-prefix=NONE
// RUN: dlc-opt %s --dlgraph-remat="remat=sqrt" | FileCheck %s --check-prefix=SQRT
// RUN: dlc-opt %s --dlgraph-remat="remat=auto" | FileCheck %s --check-prefix=AUTO
// RUN: dlc-opt %s --dlgraph-remat="remat=auto arena-target=1000000" | FileCheck %s --check-prefix=LOOSE
// RUN: dlc-opt %s --dlgraph-remat="remat=auto" --cse | FileCheck %s --check-prefix=CSE
// RUN: dlc-opt %s --dlgraph-remat="remat=sqrt" --dlc-lowering-pipeline --dlexec-verify-memory-plan | FileCheck %s --check-prefix=PLANNED

// The training step of a 4-layer tanh MLP (64x16 activations, dropout after
// the first tanh), as `dlc --train --loss softmax-cross-entropy --emit=dlgraph`
// builds it.

// NONE-NOT: dlgraph.recomputed
// NONE-NOT: dlgraph.remat.

// sqrt: 9 computing forward ops -> 3 segments. The first two layers'
// activations are dropped and recomputed in the backward from the input and
// the segment output %6; the last segment's are kept.
// SQRT-LABEL: func.func @train_step
// SQRT-SAME: dlgraph.remat.recomputed_ops = 5
// SQRT: %[[STEP:.*]] = dlgraph.read_variable @dropout_step
// SQRT: dlgraph.dropout %{{.*}}, %[[STEP]] {ratio
// SQRT: dlgraph.softmax_cross_entropy %
// SQRT: %[[G1:.*]] = dlgraph.gemm %6, %7 {dlgraph.recomputed, trans_b = true}
// SQRT-NEXT: %[[T1:.*]] = dlgraph.tanh %[[G1]] {dlgraph.recomputed}
// SQRT-NEXT: dlgraph.gemm %{{.*}}, %[[T1]] {trans_a = true}
// SQRT: %[[G0:.*]] = dlgraph.gemm %arg0, %0 {dlgraph.recomputed, trans_b = true}
// SQRT-NEXT: %[[T0:.*]] = dlgraph.tanh %[[G0]] {dlgraph.recomputed}
// The clone reads the same step counter: the same mask.
// SQRT-NEXT: %[[R:.*]], %[[M:.*]] = dlgraph.dropout %[[T0]], %[[STEP]] {dlgraph.recomputed, ratio = 5.000000e-01 : f32, seed = 7 : i64}
// SQRT: dlgraph.select %[[M]]
// The optimizer and the variable writes are never cloned.
// SQRT-NOT: dlgraph.sgd_update {{.*}}recomputed
// SQRT-NOT: dlgraph.write_variable {{.*}}recomputed

// auto (target 0): the greedy drops the cheapest bytes first; it keeps the
// activations of the last layer and recomputes layer 0 (gemm, tanh,
// dropout) once, before its first backward use.
// AUTO-LABEL: func.func @train_step
// AUTO-SAME: dlgraph.remat.recomputed_ops = 3
// AUTO: dlgraph.softmax_cross_entropy %
// AUTO-COUNT-3: dlgraph.recomputed
// AUTO-NOT: {dlgraph.recomputed

// A target above the step's simulated peak changes nothing.
// LOOSE-LABEL: func.func @train_step
// LOOSE-SAME: dlgraph.remat.recomputed_ops = 0
// LOOSE-NOT: {dlgraph.recomputed

// CSE does not merge the clones back into the originals.
// CSE: dlgraph.softmax_cross_entropy %
// CSE-COUNT-3: dlgraph.recomputed

// PLANNED: dlexec.func @train_step
module {
  dlgraph.variable @w0 : tensor<16x16xf32> = dense<1.250000e-01> : tensor<16x16xf32> {trainable}
  dlgraph.variable @w0.momentum_buffer : tensor<16x16xf32> {dlgraph.optimizer_state}
  dlgraph.variable @w1 : tensor<16x16xf32> = dense<1.250000e-01> : tensor<16x16xf32> {trainable}
  dlgraph.variable @w1.momentum_buffer : tensor<16x16xf32> {dlgraph.optimizer_state}
  dlgraph.variable @w2 : tensor<16x16xf32> = dense<1.250000e-01> : tensor<16x16xf32> {trainable}
  dlgraph.variable @w2.momentum_buffer : tensor<16x16xf32> {dlgraph.optimizer_state}
  dlgraph.variable @w3 : tensor<16x16xf32> = dense<1.250000e-01> : tensor<16x16xf32> {trainable}
  dlgraph.variable @w3.momentum_buffer : tensor<16x16xf32> {dlgraph.optimizer_state}
  dlgraph.variable @dropout_step : tensor<f32> = dense<3.000000e+00> : tensor<f32>
  dlgraph.variable @wo : tensor<10x16xf32> = dense<2.500000e-01> : tensor<10x16xf32> {trainable}
  dlgraph.variable @wo.momentum_buffer : tensor<10x16xf32> {dlgraph.optimizer_state}
  dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
  func.func @forward(%arg0: tensor<64x16xf32> {dlgraph.name = "x"}) -> (tensor<64x10xf32> {dlgraph.name = "y"}) {
    %0 = dlgraph.read_variable @w0 : tensor<16x16xf32>
    %1 = dlgraph.gemm %arg0, %0 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %2 = dlgraph.tanh %1 : tensor<64x16xf32>
    %3 = dlgraph.read_variable @dropout_step : tensor<f32>
    %result, %mask = dlgraph.dropout %2, %3 {ratio = 5.000000e-01 : f32, seed = 7 : i64} : (tensor<64x16xf32>, tensor<f32>) -> (tensor<64x16xf32>, tensor<64x16xi1>)
    %4 = dlgraph.read_variable @w1 : tensor<16x16xf32>
    %5 = dlgraph.gemm %result, %4 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %6 = dlgraph.tanh %5 : tensor<64x16xf32>
    %7 = dlgraph.read_variable @w2 : tensor<16x16xf32>
    %8 = dlgraph.gemm %6, %7 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %9 = dlgraph.tanh %8 : tensor<64x16xf32>
    %10 = dlgraph.read_variable @w3 : tensor<16x16xf32>
    %11 = dlgraph.gemm %9, %10 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %12 = dlgraph.tanh %11 : tensor<64x16xf32>
    %13 = dlgraph.read_variable @wo : tensor<10x16xf32>
    %14 = dlgraph.gemm %12, %13 {trans_b = true} : (tensor<64x16xf32>, tensor<10x16xf32>) -> tensor<64x10xf32>
    return %14 : tensor<64x10xf32>
  }
  func.func @train_step(%arg0: tensor<64x16xf32> {dlgraph.name = "x"}, %arg1: tensor<64xi64> {dlgraph.name = "labels"}) -> (tensor<f32> {dlgraph.name = "loss"}) {
    %0 = dlgraph.read_variable @w0 : tensor<16x16xf32>
    %1 = dlgraph.gemm %arg0, %0 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %2 = dlgraph.tanh %1 : tensor<64x16xf32>
    %3 = dlgraph.read_variable @dropout_step : tensor<f32>
    %result, %mask = dlgraph.dropout %2, %3 {ratio = 5.000000e-01 : f32, seed = 7 : i64} : (tensor<64x16xf32>, tensor<f32>) -> (tensor<64x16xf32>, tensor<64x16xi1>)
    %4 = dlgraph.read_variable @w1 : tensor<16x16xf32>
    %5 = dlgraph.gemm %result, %4 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %6 = dlgraph.tanh %5 : tensor<64x16xf32>
    %7 = dlgraph.read_variable @w2 : tensor<16x16xf32>
    %8 = dlgraph.gemm %6, %7 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %9 = dlgraph.tanh %8 : tensor<64x16xf32>
    %10 = dlgraph.read_variable @w3 : tensor<16x16xf32>
    %11 = dlgraph.gemm %9, %10 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %12 = dlgraph.tanh %11 : tensor<64x16xf32>
    %13 = dlgraph.read_variable @wo : tensor<10x16xf32>
    %14 = dlgraph.gemm %12, %13 {trans_b = true} : (tensor<64x16xf32>, tensor<10x16xf32>) -> tensor<64x10xf32>
    %15 = dlgraph.softmax_cross_entropy %14, %arg1 : (tensor<64x10xf32>, tensor<64xi64>) -> tensor<f32>
    %16 = dlgraph.constant dense<1.000000e+00> : tensor<f32>
    %17 = dlgraph.softmax_cross_entropy_grad %14, %arg1, %16 : (tensor<64x10xf32>, tensor<64xi64>, tensor<f32>) -> tensor<64x10xf32>
    %18 = dlgraph.gemm %17, %13 : (tensor<64x10xf32>, tensor<10x16xf32>) -> tensor<64x16xf32>
    %19 = dlgraph.gemm %17, %12 {trans_a = true} : (tensor<64x10xf32>, tensor<64x16xf32>) -> tensor<10x16xf32>
    %20 = dlgraph.mul %12, %12 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %21 = dlgraph.constant dense<1.000000e+00> : tensor<64x16xf32>
    %22 = dlgraph.sub %21, %20 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %23 = dlgraph.mul %18, %22 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %24 = dlgraph.gemm %23, %10 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %25 = dlgraph.gemm %23, %9 {trans_a = true} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
    %26 = dlgraph.mul %9, %9 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %27 = dlgraph.constant dense<1.000000e+00> : tensor<64x16xf32>
    %28 = dlgraph.sub %27, %26 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %29 = dlgraph.mul %24, %28 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %30 = dlgraph.gemm %29, %7 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %31 = dlgraph.gemm %29, %6 {trans_a = true} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
    %32 = dlgraph.mul %6, %6 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %33 = dlgraph.constant dense<1.000000e+00> : tensor<64x16xf32>
    %34 = dlgraph.sub %33, %32 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %35 = dlgraph.mul %30, %34 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %36 = dlgraph.gemm %35, %4 : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %37 = dlgraph.gemm %35, %result {trans_a = true} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
    %38 = dlgraph.constant dense<2.000000e+00> : tensor<64x16xf32>
    %39 = dlgraph.mul %36, %38 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %40 = dlgraph.constant dense<0.000000e+00> : tensor<64x16xf32>
    %41 = dlgraph.select %mask, %39, %40 : (tensor<64x16xi1>, tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %42 = dlgraph.mul %2, %2 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %43 = dlgraph.constant dense<1.000000e+00> : tensor<64x16xf32>
    %44 = dlgraph.sub %43, %42 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %45 = dlgraph.mul %41, %44 : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %46 = dlgraph.gemm %45, %arg0 {trans_a = true} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
    %47 = dlgraph.read_variable @__step : tensor<f32>
    %48 = dlgraph.constant dense<1.000000e+00> : tensor<f32>
    %49 = dlgraph.add %47, %48 : (tensor<f32>, tensor<f32>) -> tensor<f32>
    dlgraph.write_variable @__step, %49 : tensor<f32>
    %50 = dlgraph.read_variable @w0.momentum_buffer : tensor<16x16xf32>
    %lr = dlgraph.constant dense<0.00999999977> : tensor<f32>
    %new_param, %new_momentum_buffer = dlgraph.sgd_update %0, %46, %50, %49, %lr {momentum = 0.000000e+00 : f32, weight_decay = 0.000000e+00 : f32} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>, tensor<f32>) -> (tensor<16x16xf32>, tensor<16x16xf32>)
    dlgraph.write_variable @w0, %new_param : tensor<16x16xf32>
    dlgraph.write_variable @w0.momentum_buffer, %new_momentum_buffer : tensor<16x16xf32>
    %51 = dlgraph.read_variable @w1.momentum_buffer : tensor<16x16xf32>
    %lr1 = dlgraph.constant dense<0.00999999977> : tensor<f32>
    %new_param_0, %new_momentum_buffer_1 = dlgraph.sgd_update %4, %37, %51, %49, %lr1 {momentum = 0.000000e+00 : f32, weight_decay = 0.000000e+00 : f32} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>, tensor<f32>) -> (tensor<16x16xf32>, tensor<16x16xf32>)
    dlgraph.write_variable @w1, %new_param_0 : tensor<16x16xf32>
    dlgraph.write_variable @w1.momentum_buffer, %new_momentum_buffer_1 : tensor<16x16xf32>
    %52 = dlgraph.read_variable @w2.momentum_buffer : tensor<16x16xf32>
    %lr2 = dlgraph.constant dense<0.00999999977> : tensor<f32>
    %new_param_2, %new_momentum_buffer_3 = dlgraph.sgd_update %7, %31, %52, %49, %lr2 {momentum = 0.000000e+00 : f32, weight_decay = 0.000000e+00 : f32} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>, tensor<f32>) -> (tensor<16x16xf32>, tensor<16x16xf32>)
    dlgraph.write_variable @w2, %new_param_2 : tensor<16x16xf32>
    dlgraph.write_variable @w2.momentum_buffer, %new_momentum_buffer_3 : tensor<16x16xf32>
    %53 = dlgraph.read_variable @w3.momentum_buffer : tensor<16x16xf32>
    %lr3 = dlgraph.constant dense<0.00999999977> : tensor<f32>
    %new_param_4, %new_momentum_buffer_5 = dlgraph.sgd_update %10, %25, %53, %49, %lr3 {momentum = 0.000000e+00 : f32, weight_decay = 0.000000e+00 : f32} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<f32>, tensor<f32>) -> (tensor<16x16xf32>, tensor<16x16xf32>)
    dlgraph.write_variable @w3, %new_param_4 : tensor<16x16xf32>
    dlgraph.write_variable @w3.momentum_buffer, %new_momentum_buffer_5 : tensor<16x16xf32>
    %54 = dlgraph.read_variable @wo.momentum_buffer : tensor<10x16xf32>
    %lr4 = dlgraph.constant dense<0.00999999977> : tensor<f32>
    %new_param_6, %new_momentum_buffer_7 = dlgraph.sgd_update %13, %19, %54, %49, %lr4 {momentum = 0.000000e+00 : f32, weight_decay = 0.000000e+00 : f32} : (tensor<10x16xf32>, tensor<10x16xf32>, tensor<10x16xf32>, tensor<f32>, tensor<f32>) -> (tensor<10x16xf32>, tensor<10x16xf32>)
    dlgraph.write_variable @wo, %new_param_6 : tensor<10x16xf32>
    dlgraph.write_variable @wo.momentum_buffer, %new_momentum_buffer_7 : tensor<10x16xf32>
    return %15 : tensor<f32>
  }
}
