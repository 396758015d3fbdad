// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-lower-to-dlexec

// An op without a lowering (every dlgraph op has one; calls are not inlined).
func.func @callee(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  return %x : tensor<2x3xf32>
}

func.func @caller(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dlgraph-lower-to-dlexec: cannot lower 'func.call': no lowering to dlexec exists for this op}}
  %y = func.call @callee(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @batched_matmul_f64(%a: tensor<2x3x4xf64>, %b: tensor<2x4x5xf64>) -> tensor<2x3x5xf64> {
  // expected-error @+1 {{matmul supports f32, f16 and bf16 (and f64 with a 1-D or 2-D rhs), not 'f64'}}
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
