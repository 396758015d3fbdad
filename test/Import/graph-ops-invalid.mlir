// Verifiers the importer relies on for ops whose result shape it computes.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

func.func @gap_bad_result(%x: tensor<2x3x4x4xf32>) -> tensor<2x3x4x1xf32> {
  // expected-error @+1 {{'dlgraph.global_average_pool' op result shape is [2, 3, 4, 1], expected [2, 3, 1, 1]}}
  %y = dlgraph.global_average_pool %x : tensor<2x3x4x4xf32> -> tensor<2x3x4x1xf32>
  return %y : tensor<2x3x4x1xf32>
}

// -----

func.func @gap_rank2(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlgraph.global_average_pool' op input must have rank >= 3 (N, C, spatial...), got [2, 3]}}
  %y = dlgraph.global_average_pool %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @matmul_bad_result(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dlgraph.matmul' op result shape is [2, 4], expected [2, 5]}}
  %y = dlgraph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @gap_ok(%x: tensor<2x3x5xf32>) -> tensor<2x3x1xf32> {
  %y = dlgraph.global_average_pool %x : tensor<2x3x5xf32> -> tensor<2x3x1xf32>
  return %y : tensor<2x3x1xf32>
}
