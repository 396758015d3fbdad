// Step-level verifier errors: the buffers and ops of a dlexec.func, which
// the package writer (codegen/PackageWriter.cpp) lays out op by op.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{kind 'weights' is not parameter, optimizer_state, buffer or constant}}
dlexec.variable @w : memref<4xf32> {kind = "weights"}

// -----

// expected-error @+1 {{initial value of type 'tensor<3xf32>' does not match the buffer type 'memref<4xf32>'}}
dlexec.variable @w : memref<4xf32> {kind = "parameter"} = dense<0.0> : tensor<3xf32>

// -----

// expected-error @+1 {{element type 'index' cannot be stored in a package (expected f32, f64, f16, bf16, i64, i32 or i1)}}
dlexec.variable @w : memref<4xindex> {kind = "buffer"}

// -----

dlexec.func @dynamic_input {
  // expected-error @+1 {{buffer of type 'memref<?x4xf32>' needs a static shape and the identity layout}}
  %x = dlexec.input "x" : memref<?x4xf32>
}

// -----

dlexec.func @f8_alloc {
  // expected-error @+1 {{element type 'f8E4M3FN' cannot be stored in a package (expected f32, f64, f16, bf16, i64, i32 or i1)}}
  %a = dlexec.alloc : memref<4xf8E4M3FN>
}

// -----

dlexec.func @reshape_size {
  %a = dlexec.alloc : memref<2x3xf32>
  // expected-error @+1 {{changes the size of the buffer (24 -> 28 bytes)}}
  %v = dlexec.reshape %a : memref<2x3xf32> to memref<7xf32>
}

// -----

dlexec.func @foreign_op {
  %c = arith.constant 1.0 : f32
  // expected-error @+1 {{'arith.addf' op cannot be in a dlexec.func; a step holds dlexec.input, output, variable_ref, alloc, reshape, subview, kernel, multi_tensor_kernel, builtin_kernel, library_call, all_reduce and wait (and arith.constant)}}
  %d = arith.addf %c, %c : f32
}

// -----

dlexec.func @f {
  %0 = dlexec.alloc : memref<4xi64>
  // expected-error @+1 {{'dlexec.all_reduce' op element type 'i64' is not supported; supported: f32, f16, bf16}}
  dlexec.all_reduce %0 {reduction = "sum"} : memref<4xi64>
}

// -----

dlexec.func @f {
  %0 = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{'dlexec.all_reduce' op reduction 'max' is not supported; supported: sum, avg}}
  dlexec.all_reduce %0 {reduction = "max"} : memref<4xf32>
}
