// RUN: dlc-opt %s --split-input-file --verify-diagnostics
// What the verifiers and the result-type inference of dlgraph.cumsum and
// dlgraph.one_hot reject. A failed inference says why, then MLIR's
// verifier adds "failed to infer returned types".

func.func @cumsum_axis_out_of_range(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'dlgraph.cumsum' op axis 2 is out of range [0, 1] for an input of rank 2}}
  %y = dlgraph.cumsum %x {axis = 2 : i64} : tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

func.func @cumsum_negative_axis(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  // The importer normalizes ONNX's negative axes.
  // expected-error @+1 {{'dlgraph.cumsum' op axis -1 is out of range [0, 1] for an input of rank 2}}
  %y = dlgraph.cumsum %x {axis = -1 : i64} : tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

func.func @cumsum_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'dlgraph.cumsum' op expects an input of rank >= 1}}
  %y = dlgraph.cumsum %x {axis = 0 : i64} : tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @cumsum_bool(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values}}
  %y = dlgraph.cumsum %x {axis = 0 : i64} : tensor<4xi1>
  return %y : tensor<4xi1>
}

// -----

func.func @cumsum_result_type(%x: tensor<2x5xf32>) -> tensor<2x5xf64> {
  // expected-error @+2 {{'dlgraph.cumsum' op inferred type(s) 'tensor<2x5xf32>' are incompatible with return type(s) of operation 'tensor<2x5xf64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = "dlgraph.cumsum"(%x) {axis = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf64>
  return %y : tensor<2x5xf64>
}

// -----

func.func @one_hot_depth(%i: tensor<3xi64>) -> tensor<3x0xf32> {
  // expected-error @+2 {{'dlgraph.one_hot' op depth 0 is not positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = dlgraph.one_hot %i {axis = 1 : i64, depth = 0 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<3xi64> -> tensor<3x0xf32>
  return %y : tensor<3x0xf32>
}

// -----

func.func @one_hot_axis(%i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+2 {{'dlgraph.one_hot' op axis 2 is out of range [0, 1] for indices of rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = dlgraph.one_hot %i {axis = 2 : i64, depth = 4 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<3xi64> -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

func.func @one_hot_wrong_shape(%i: tensor<3xi64>) -> tensor<4x3xf32> {
  // expected-error @+2 {{'dlgraph.one_hot' op inferred type(s) 'tensor<3x4xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = dlgraph.one_hot %i {axis = 1 : i64, depth = 4 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<3xi64> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @one_hot_value_types_differ(%i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'dlgraph.one_hot' op on_value has type 'f32' but off_value has 'i32'; they must match}}
  %y = dlgraph.one_hot %i {axis = 1 : i64, depth = 4 : i64, off_value = 0 : i32, on_value = 1.0 : f32} : tensor<3xi64> -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

func.func @one_hot_index_value(%i: tensor<3xi64>) -> tensor<3x4xindex> {
  // expected-error @+1 {{'dlgraph.one_hot' op on_value and off_value have type 'index'; expected an integer or float type}}
  %y = dlgraph.one_hot %i {axis = 1 : i64, depth = 4 : i64, off_value = 0 : index, on_value = 1 : index} : tensor<3xi64> -> tensor<3x4xindex>
  return %y : tensor<3x4xindex>
}
