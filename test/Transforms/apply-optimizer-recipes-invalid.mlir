// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-apply-optimizer="lr-schedule=cosine"
// RUN: not dlc-opt %s --dlgraph-apply-optimizer="lr-schedule=linear warmup-steps=20 total-steps=10" 2>&1 | FileCheck %s --check-prefix=WT
// RUN: not dlc-opt %s --dlgraph-apply-optimizer="no-weight-decay=^nothing$" 2>&1 | FileCheck %s --check-prefix=NWD
// RUN: not dlc-opt %s --dlgraph-apply-optimizer="clip-grad-norm=-1" 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: not dlc-opt %s --dlgraph-apply-optimizer="lr-schedule=step" 2>&1 | FileCheck %s --check-prefix=STEPLR
// RUN: not dlc-opt %s --dlgraph-apply-optimizer="warmup-steps=3" 2>&1 | FileCheck %s --check-prefix=NOSCHED
// RUN: not dlc-opt %s --dlgraph-apply-optimizer="lr-schedule=cosine total-steps=10 min-lr=1" 2>&1 | FileCheck %s --check-prefix=MINLR

// Bad recipes are one-line errors naming the flag.

// expected-error @below {{--lr-schedule cosine needs --total-steps T}}
module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32> {trainable}
  func.func @train_step(%x: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %y = dlgraph.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %loss = dlgraph.reduce_sum %y {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    return %loss, %x : tensor<f32>, tensor<3xf32>
  }
}

// WT: error: --dlgraph-apply-optimizer: --warmup-steps 20 must not exceed --total-steps 10
// NWD: error: --no-weight-decay '^nothing$' matches no trained parameter; they are: w
// CLIP: error: --dlgraph-apply-optimizer: --clip-grad-norm must be a positive number (0: no clipping), got -1
// STEPLR: error: --dlgraph-apply-optimizer: --lr-schedule step needs --step-size K >= 1
// NOSCHED: error: --dlgraph-apply-optimizer: --warmup-steps needs --lr-schedule
// MINLR: error: --dlgraph-apply-optimizer: --min-lr 1 must not exceed --lr 0.01
