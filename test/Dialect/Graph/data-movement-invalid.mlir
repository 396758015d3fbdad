// RUN: dlc-opt %s --split-input-file --verify-diagnostics

func.func @slice_reads_past_the_end(%x: tensor<4x8xf32>) -> tensor<4x3xf32> {
  // 5 + 2 * 2 = 9 is outside [0, 8).
  // expected-error @+1 {{dimension 1: indices 5 + 2 * i for i < 3 leave [0, 8)}}
  %y = dlgraph.slice %x {starts = array<i64: 0, 5>, steps = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @slice_negative_step_below_zero(%x: tensor<8xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{dimension 0: indices 1 + -1 * i for i < 3 leave [0, 8)}}
  %y = dlgraph.slice %x {starts = array<i64: 1>, steps = array<i64: -1>} : tensor<8xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @slice_zero_step(%x: tensor<8xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{step of dimension 0 is 0}}
  %y = dlgraph.slice %x {starts = array<i64: 1>, steps = array<i64: 0>} : tensor<8xf32> -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @pad_writes_past_the_end(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{dimension 0: indices 3 + 1 * i for i < 2 leave [0, 4)}}
  %y = dlgraph.pad %x {starts = array<i64: 3, 0>, steps = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

func.func @concat_sizes(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x9xf32> {
  // expected-error @+1 {{'dlgraph.concat' op result shape is [2, 9], expected [2, 8]}}
  %y = dlgraph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x9xf32>
  return %y : tensor<2x9xf32>
}

// -----

func.func @concat_other_axis(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{input of type 'tensor<3x5xf32>' does not match the first input 'tensor<2x3xf32>' outside axis 1}}
  %y = dlgraph.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

func.func @gather_shape(%w: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dlgraph.gather' op result shape is [2, 4], expected [2, 3, 4]}}
  %y = dlgraph.gather %w, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @gather_float_indices(%w: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %y = dlgraph.gather %w, %i {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

func.func @gather_elements_too_wide(%x: tensor<2x3xf32>, %i: tensor<2x4xi64>) -> tensor<2x4xf32> {
  // expected-error @+1 {{indices shape [2, 4] exceeds data shape [2, 3] outside axis 0}}
  %y = dlgraph.gather_elements %x, %i {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
