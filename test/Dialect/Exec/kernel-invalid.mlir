// dlexec.kernel verifier errors: each is a form codegen cannot emit
// (codegen/KernelEmitter.cpp), so dlc-opt rejects it before codegen.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

#id = affine_map<(i) -> (i)>
dlexec.func @unsized_loop {
  %a = dlexec.input "a" : memref<4xf32>
  %c = dlexec.alloc : memref<4xf32>
  // Loop 1 appears only inside an expression, so nothing gives its size.
  // expected-error @+1 {{cannot infer the size of loop 1: no indexing map uses it as a plain dimension}}
  dlexec.kernel @k ins(%a : memref<4xf32>) outs(%c : memref<4xf32>) attributes {
      indexing_maps = [affine_map<(i, j) -> (i + j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]} {
  ^bb0(%x: f32, %o: f32):
    dlexec.yield %x : f32
  }
}

// -----

#id = affine_map<(i) -> (i)>
dlexec.func @disagreeing_sizes {
  %a = dlexec.input "a" : memref<4xf32>
  %c = dlexec.alloc : memref<5xf32>
  // expected-error @+1 {{loop 0 has size 4 from operand #0 and 5 from operand #1}}
  dlexec.kernel @k ins(%a : memref<4xf32>) outs(%c : memref<5xf32>) attributes {
      indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %o: f32):
    dlexec.yield %x : f32
  }
}

// -----

dlexec.func @map_with_symbols {
  %a = dlexec.input "a" : memref<4xf32>
  %c = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{indexing map #0 has symbols; only dims and constants are supported}}
  dlexec.kernel @k ins(%a : memref<4xf32>) outs(%c : memref<4xf32>) attributes {
      indexing_maps = [affine_map<(i)[s] -> (i + s)>, affine_map<(i) -> (i)>],
      iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %o: f32):
    dlexec.yield %x : f32
  }
}

// -----

#id = affine_map<(i) -> (i)>
// Buffers of a dlexec.func are static, dense and of package dtypes; a
// kernel elsewhere (codegen emits every kernel of the module) is checked
// itself.
func.func @dynamic_shape(%a: memref<?xf32>, %c: memref<4xf32>) {
  // expected-error @+1 {{operand #0 of type 'memref<?xf32>' has a dynamic shape; codegen needs static shapes}}
  dlexec.kernel @k ins(%a : memref<?xf32>) outs(%c : memref<4xf32>) attributes {
      indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %o: f32):
    dlexec.yield %x : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>
// Buffers of a dlexec.func are static, dense and of package dtypes; a
// kernel elsewhere (codegen emits every kernel of the module) is checked
// itself.
func.func @strided_layout(%a: memref<4xf32, strided<[2]>>, %c: memref<4xf32>) {
  // expected-error @+1 {{has a non-identity layout}}
  dlexec.kernel @k ins(%a : memref<4xf32, strided<[2]>>) outs(%c : memref<4xf32>) attributes {
      indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %o: f32):
    dlexec.yield %x : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>
// Buffers of a dlexec.func are static, dense and of package dtypes; a
// kernel elsewhere (codegen emits every kernel of the module) is checked
// itself.
func.func @i8_operand(%a: memref<4xi8>, %c: memref<4xi8>) {
  // expected-error @+1 {{operand #0 has element type 'i8', which codegen does not support (expected f32, f64, f16, bf16, i64, i32 or i1)}}
  dlexec.kernel @k ins(%a : memref<4xi8>) outs(%c : memref<4xi8>) attributes {
      indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: i8, %o: i8):
    dlexec.yield %x : i8
  }
  return
}

// -----

dlexec.func @output_indexed_by_reduction {
  %a = dlexec.input "a" : memref<4x3xf32>
  %c = dlexec.alloc : memref<4x3xf32>
  // expected-error @+1 {{output #0 is indexed by reduction loop 1; outputs may be indexed by parallel loops only}}
  dlexec.kernel @k ins(%a : memref<4x3xf32>) outs(%c : memref<4x3xf32>) attributes {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "reduction"]} {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    dlexec.yield %s : f32
  }
}

// -----

dlexec.func @string_init {
  %a = dlexec.input "a" : memref<4x3xf32>
  %c = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{init value "zero" for output #0 is not a scalar of element type 'f32'}}
  dlexec.kernel @k ins(%a : memref<4x3xf32>) outs(%c : memref<4xf32>) attributes {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"], init = ["zero"]} {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    dlexec.yield %s : f32
  }
}

// -----

dlexec.func @float_init_for_integer_output {
  %a = dlexec.input "a" : memref<4x3xi32>
  %c = dlexec.alloc : memref<4xi32>
  // expected-error @+1 {{init value 0.000000e+00 : f32 for output #0 is not a scalar of element type 'i32'}}
  dlexec.kernel @k ins(%a : memref<4x3xi32>) outs(%c : memref<4xi32>) attributes {
      indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"], init = [0.0 : f32]} {
  ^bb0(%x: i32, %o: i32):
    %s = arith.addi %x, %o : i32
    dlexec.yield %s : i32
  }
}

// -----

#id = affine_map<(i) -> (i)>
dlexec.func @index_out_of_range {
  %a = dlexec.input "a" : memref<4xi64>
  %c = dlexec.alloc : memref<4xi64>
  dlexec.kernel @k ins(%a : memref<4xi64>) outs(%c : memref<4xi64>) attributes {
      indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: i64, %o: i64):
    // expected-error @+1 {{loop 1 does not exist; the kernel has 1 loops}}
    %i = dlexec.index 1 : index
    %v = arith.index_cast %i : index to i64
    dlexec.yield %v : i64
  }
}

// -----

#id = affine_map<(i) -> (i)>
dlexec.func @unsupported_body_op {
  %a = dlexec.input "a" : memref<4xf32>
  %c = dlexec.alloc : memref<4xf32>
  dlexec.kernel @k ins(%a : memref<4xf32>) outs(%c : memref<4xf32>) attributes {
      indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %o: f32):
    // expected-error @+1 {{'math.atan2' op is not supported in a dlexec.kernel body by codegen}}
    %r = math.atan2 %x, %x : f32
    dlexec.yield %r : f32
  }
}

// -----

#id = affine_map<(i) -> (i)>
dlexec.func @vector_result {
  %a = dlexec.input "a" : memref<4xf32>
  %c = dlexec.alloc : memref<4xf32>
  dlexec.kernel @k ins(%a : memref<4xf32>) outs(%c : memref<4xf32>) attributes {
      indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %o: f32):
    // expected-error @+1 {{result type 'vector<2xf32>' is not supported by codegen (expected f32, f64, f16, bf16, i64, i32, i1 or index)}}
    %v = arith.constant dense<1.0> : vector<2xf32>
    dlexec.yield %x : f32
  }
}

// -----

#id = affine_map<(i) -> (i)>
dlexec.func @yield_type {
  %a = dlexec.input "a" : memref<4xf32>
  %c = dlexec.alloc : memref<4xf64>
  // expected-error @+1 {{body yields a 'f32' for output #0 of element type 'f64'}}
  dlexec.kernel @k ins(%a : memref<4xf32>) outs(%c : memref<4xf64>) attributes {
      indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %o: f64):
    dlexec.yield %x : f32
  }
}

// -----

// An epilogue runs after reduction loops; this kernel has none.
#id = affine_map<(i) -> (i)>
dlexec.func @epilogue_without_reduction {
  %a = dlexec.input "a" : memref<4xf32>
  %c = dlexec.alloc : memref<4xf32>
  %d = dlexec.alloc : memref<4xf32>
  // expected-error @+1 {{has an epilogue but no reduction loop}}
  dlexec.kernel @k ins(%a : memref<4xf32>) outs(%c, %d : memref<4xf32>, memref<4xf32>) attributes {
      indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} {
  ^bb0(%x: f32, %o: f32, %p: f32):
    dlexec.yield %x : f32
  } epilogue {
  ^bb0(%x: f32, %o: f32, %p: f32):
    dlexec.yield %o : f32
  }
}

// -----

// The epilogue runs once per output element: it cannot read an input
// element that depends on a reduction loop.
#x = affine_map<(n, c) -> (n, c)>
#c = affine_map<(n, c) -> (c)>
dlexec.func @epilogue_reads_reduced_input {
  %a = dlexec.input "a" : memref<4x8xf32>
  %s = dlexec.alloc : memref<8xf32>
  %t = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{epilogue reads input #0, whose indexing map uses reduction loop 0}}
  dlexec.kernel @k ins(%a : memref<4x8xf32>) outs(%s, %t : memref<8xf32>, memref<8xf32>) attributes {
      indexing_maps = [#x, #c, #c], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32, %u: f32):
    %r = arith.addf %acc, %x : f32
    dlexec.yield %r : f32
  } epilogue {
  ^bb0(%x: f32, %sum: f32, %u: f32):
    %m = arith.mulf %sum, %x : f32
    dlexec.yield %m : f32
  }
}

// -----

// The body accumulates only the outputs the epilogue does not write.
#x = affine_map<(n, c) -> (n, c)>
#c = affine_map<(n, c) -> (c)>
dlexec.func @body_reads_epilogue_output {
  %a = dlexec.input "a" : memref<4x8xf32>
  %s = dlexec.alloc : memref<8xf32>
  %t = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{body reads epilogue output #1}}
  dlexec.kernel @k ins(%a : memref<4x8xf32>) outs(%s, %t : memref<8xf32>, memref<8xf32>) attributes {
      indexing_maps = [#x, #c, #c], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32, %u: f32):
    %r = arith.addf %acc, %u : f32
    dlexec.yield %r : f32
  } epilogue {
  ^bb0(%x: f32, %sum: f32, %u: f32):
    %m = arith.mulf %sum, %sum : f32
    dlexec.yield %m : f32
  }
}

// -----

// The epilogue must leave the body at least one output to reduce.
#x = affine_map<(n, c) -> (n, c)>
#c = affine_map<(n, c) -> (c)>
dlexec.func @epilogue_takes_every_output {
  %a = dlexec.input "a" : memref<4x8xf32>
  %s = dlexec.alloc : memref<8xf32>
  // expected-error @+1 {{epilogue yields 1 values for 1 outputs; it must write at least one output and leave at least one to the body}}
  dlexec.kernel @k ins(%a : memref<4x8xf32>) outs(%s : memref<8xf32>) attributes {
      indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel"]} {
  ^bb0(%x: f32, %acc: f32):
    dlexec.yield
  } epilogue {
  ^bb0(%x: f32, %sum: f32):
    %z = arith.constant 0.0 : f32
    dlexec.yield %z : f32
  }
}
