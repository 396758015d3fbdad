// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlexec-verify-memory-plan

// The checker itself: wrong plans are reported at the alloc.

#id = affine_map<(d0) -> (d0)>
dlexec.func @overlap attributes {arena_bytes = 256 : i64} {
  %x = dlexec.input "x" : memref<64xf32>
  // expected-note @+1 {{the other buffer}}
  %a = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k0 ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
  // a is still live (read by k1), so b may not share its bytes.
  // expected-error @+1 {{memory plan: buffer at [0, 256) live over ops [4, 4] overlaps a buffer at [0, 256) live over ops [2, 4]}}
  %b = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k1 ins(%a : memref<64xf32>) outs(%b : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
}

// -----

dlexec.func @no_offset attributes {arena_bytes = 512 : i64} {
  // expected-error @+1 {{memory plan: buffer has no offset}}
  %a = dlexec.alloc : memref<64xf32>
}

// -----

dlexec.func @misaligned attributes {arena_bytes = 1024 : i64} {
  // expected-error @+1 {{memory plan: offset 128 (+256 bytes) is misaligned (alignment 256) or outside the arena of 1024 bytes}}
  %a = dlexec.alloc {offset = 128 : i64} : memref<64xf32>
}

// -----

dlexec.func @outside attributes {arena_bytes = 256 : i64} {
  // expected-error @+1 {{memory plan: offset 256 (+256 bytes) is misaligned (alignment 256) or outside the arena of 256 bytes}}
  %a = dlexec.alloc {offset = 256 : i64} : memref<64xf32>
}

// -----

// A dead buffer may reuse the bytes of another: no error.
#id = affine_map<(d0) -> (d0)>
dlexec.func @reuse_ok attributes {arena_bytes = 256 : i64} {
  %x = dlexec.input "x" : memref<64xf32>
  %a = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k0 ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
  %b = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k1 ins(%x : memref<64xf32>) outs(%b : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
}
