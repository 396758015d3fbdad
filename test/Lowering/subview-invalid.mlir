// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlexec-plan-memory

dlexec.func @out_of_range {
  %a = dlexec.alloc : memref<4x8xf32>
  // expected-error @+1 {{dimension 1 (size 3, offset 4, stride 2) reads outside the source's 8 elements}}
  %v = dlexec.subview %a {offsets = array<i64: 0, 4>, strides = array<i64: 1, 2>} : memref<4x8xf32> to memref<4x3xf32>
}

// -----

dlexec.func @rank_change {
  %a = dlexec.alloc : memref<4x8xf32>
  // expected-error @+1 {{changes the element type or rank}}
  %v = dlexec.subview %a {offsets = array<i64: 0>, strides = array<i64: 1>} : memref<4x8xf32> to memref<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
dlexec.func @written_view {
  %x = dlexec.input "x" : memref<4x3xf32>
  %a = dlexec.alloc : memref<4x8xf32>
  %v = dlexec.subview %a {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>} : memref<4x8xf32> to memref<4x3xf32>
  // expected-error @+1 {{memory plan: writes through a dlexec.subview}}
  dlexec.kernel @k0 ins(%x : memref<4x3xf32>) outs(%v : memref<4x3xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
  ^bb0(%in: f32, %out: f32):
    dlexec.yield %in : f32
  }
  dlexec.output "a", %a : memref<4x8xf32>
}
