// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-lower-to-dlexec

func.func @bn_training(%x: tensor<2x3x4x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3x4x4xf32> {
  // expected-error @+1 {{dlgraph-lower-to-dlexec: cannot lower 'dlgraph.batch_norm_training': no lowering to dlexec exists for this op}}
  %y, %m, %v = dlgraph.batch_norm_training %x, %s, %b {epsilon = 1.0e-05 : f32} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y : tensor<2x3x4x4xf32>
}

// -----

func.func @batched_matmul_f64(%a: tensor<2x3x4xf64>, %b: tensor<2x4x5xf64>) -> tensor<2x3x5xf64> {
  // expected-error @+1 {{matmul supports f32 (and f64 with a 1-D or 2-D rhs), not 'f64'}}
  %y = dlgraph.matmul %a, %b : (tensor<2x3x4xf64>, tensor<2x4x5xf64>) -> tensor<2x3x5xf64>
  return %y : tensor<2x3x5xf64>
}

// -----

func.func @int_relu(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{cannot lower 'dlgraph.relu': supports float tensors, not 'i64'}}
  %y = dlgraph.relu %a : tensor<4xi64>
  return %y : tensor<4xi64>
}

// -----

func.func @bool_pow(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{cannot lower 'dlgraph.pow': element type 'i1' is not supported}}
  %y = dlgraph.pow %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %y : tensor<4xi1>
}
