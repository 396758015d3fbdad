// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-remat="remat=sqrt"
// RUN: not dlc-opt %s --split-input-file --dlgraph-remat="remat=fast" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: dlc-opt %s --split-input-file --dlgraph-remat="remat=none" | FileCheck %s --check-prefix=NONE

// MODE: error: --dlgraph-remat: unknown --remat 'fast'; supported: none, sqrt, auto
// mode=none touches nothing, not even a module without @train_step.
// NONE: module

// expected-error @+1 {{--dlgraph-remat expects a func.func @train_step with one block; run --dlgraph-append-loss first}}
module {
}

// -----

module {
  // expected-error @+1 {{--dlgraph-remat expects @train_step to return a "loss" computed in its body}}
  func.func @train_step(%x: tensor<f32>) -> (tensor<f32> {dlgraph.name = "loss"}) {
    return %x : tensor<f32>
  }
}
