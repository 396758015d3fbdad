// RUN: dlc-opt %s --split-input-file --dlgraph-data-parallel --verify-diagnostics

// expected-error @+1 {{--dlgraph-data-parallel expects @train_step to return gradients named "<parameter>.grad" (run it after --dlgraph-differentiate)}}
func.func @train_step(%d: tensor<f32>) -> (tensor<f32> {dlgraph.name = "loss"}) {
  return %d : tensor<f32>
}

// -----

func.func @train_step(%a: tensor<2xf32>) -> (tensor<2xf32> {dlgraph.name = "a.grad"}) {
  // expected-error @+1 {{'dlgraph.all_reduce' op reduction 'max' is not supported; supported: sum, avg}}
  %r = dlgraph.all_reduce %a {reduction = "max"} : tensor<2xf32>
  return %r : tensor<2xf32>
}

// RUN: not dlc-opt %s --split-input-file --dlgraph-data-parallel="bucket-size=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: --dlgraph-data-parallel: --bucket-size must be a positive size in bytes, optionally with KiB, MiB or GiB (e.g. 26214400, 25MiB), got '0'
