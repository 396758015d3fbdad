// dlexec.multi_tensor_kernel verifier errors: the operand layout (shared
// inputs, per-tensor inputs, outputs), element counts and body signature
// codegen (codegen/MultiTensorKernel.cpp) relies on.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

dlexec.func @wrong_size {
  %lr = dlexec.alloc : memref<f32>
  %a = dlexec.alloc : memref<4xf32>
  %b = dlexec.alloc : memref<3xf32>
  // expected-error @+1 {{operand #2 of type 'memref<3xf32>' has 3 elements, expected 4}}
  dlexec.multi_tensor_kernel @k ins(%lr, %a, %b : memref<f32>, memref<4xf32>, memref<3xf32>) outs(%a, %b : memref<4xf32>, memref<3xf32>) attributes {num_shared = 1 : i64, sizes = array<i64: 4, 4>} {
  ^bb0(%r: f32, %p: f32, %o: f32):
    dlexec.yield %p : f32
  }
}

// -----

dlexec.func @shared_not_scalar {
  %lr = dlexec.alloc : memref<2xf32>
  %a = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{operand #0 of type 'memref<2xf32>' has 2 elements, expected 1}}
  dlexec.multi_tensor_kernel @k ins(%lr, %a : memref<2xf32>, memref<4xf32>) outs(%a : memref<4xf32>) attributes {num_shared = 1 : i64, sizes = array<i64: 4>} {
  ^bb0(%r: f32, %p: f32, %o: f32):
    dlexec.yield %p : f32
  }
}

// -----

dlexec.func @uneven_operands {
  %a = dlexec.alloc : memref<4xf32>
  %b = dlexec.alloc : memref<3xf32>
  // expected-error @+1 {{has 3 per-tensor inputs and 2 outputs for 2 tensors}}
  dlexec.multi_tensor_kernel @k ins(%a, %b, %b : memref<4xf32>, memref<3xf32>, memref<3xf32>) outs(%a, %b : memref<4xf32>, memref<3xf32>) attributes {num_shared = 0 : i64, sizes = array<i64: 4, 3>} {
  ^bb0(%p: f32, %o: f32):
    dlexec.yield %p : f32
  }
}

// -----

dlexec.func @body_arguments {
  %a = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{body has 3 arguments, expected 2 (shared inputs, per-tensor inputs, outputs)}}
  dlexec.multi_tensor_kernel @k ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) attributes {num_shared = 0 : i64, sizes = array<i64: 4>} {
  ^bb0(%p: f32, %q: f32, %o: f32):
    dlexec.yield %p : f32
  }
}

// -----

dlexec.func @element_type {
  %a = dlexec.alloc : memref<4xf32>
  %b = dlexec.alloc : memref<3xf64>
  // expected-error @+1 {{operand #1 of element type 'f64' for a body argument of type 'f32'}}
  dlexec.multi_tensor_kernel @k ins(%a, %b : memref<4xf32>, memref<3xf64>) outs(%a, %b : memref<4xf32>, memref<3xf64>) attributes {num_shared = 0 : i64, sizes = array<i64: 4, 3>} {
  ^bb0(%p: f32, %o: f32):
    dlexec.yield %p : f32
  }
}

// -----

dlexec.func @index_in_body {
  %a = dlexec.alloc : memref<4xi64>
  dlexec.multi_tensor_kernel @k ins(%a : memref<4xi64>) outs(%a : memref<4xi64>) attributes {num_shared = 0 : i64, sizes = array<i64: 4>} {
  ^bb0(%p: i64, %o: i64):
    // expected-error @+1 {{is not supported in a dlexec.multi_tensor_kernel body}}
    %i = dlexec.index 0 : index
    %c = arith.index_cast %i : index to i64
    dlexec.yield %c : i64
  }
}
