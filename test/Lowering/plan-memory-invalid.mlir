// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlexec-verify-memory-plan

// The checker itself: wrong plans are reported at the alloc.

#id = affine_map<(d0) -> (d0)>
dlexec.func @overlap attributes {arena_bytes = 512 : i64} {
  %x = dlexec.input "x" : memref<64xf32>
  // expected-note @+1 {{the other buffer}}
  %a = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k0 ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
  // a is still live after k1 (read by k2), so b may not share its bytes.
  // expected-error @+1 {{memory plan: buffer at [0, 256) live over ops [4, 6] overlaps a buffer at [0, 256) live over ops [2, 6]}}
  %b = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k1 ins(%a : memref<64xf32>) outs(%b : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
  %c = dlexec.alloc {offset = 256 : i64} : memref<64xf32>
  dlexec.kernel @k2 ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%c : memref<64xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    dlexec.yield %s : f32
  }
}

// -----

// In place: k1 reads a for the last time, element by element through the
// map it writes b with, so b may take a's bytes: no error.
#id = affine_map<(d0) -> (d0)>
dlexec.func @in_place_ok attributes {arena_bytes = 256 : i64} {
  %x = dlexec.input "x" : memref<64xf32>
  %a = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k0 ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
  %b = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k1 ins(%a : memref<64xf32>) outs(%b : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
}

// -----

// Not in place: k1 reads a reversed (another map than b's), so an element
// of a is read after b's write to it; sharing is an error.
#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (63 - d0)>
dlexec.func @not_in_place_other_map attributes {arena_bytes = 256 : i64} {
  %x = dlexec.input "x" : memref<64xf32>
  // expected-note @+1 {{the other buffer}}
  %a = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k0 ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
  ^bb0(%v: f32, %o: f32):
    dlexec.yield %v : f32
  }
  // expected-error @+1 {{memory plan: buffer at [0, 256) live over ops [4, 4] overlaps a buffer at [0, 256) live over ops [2, 4]}}
  %b = dlexec.alloc {offset = 0 : i64} : memref<64xf32>
  dlexec.kernel @k1 ins(%a : memref<64xf32>) outs(%b : memref<64xf32>) attributes {indexing_maps = [#rev, #id], iterator_types = ["parallel"]} {
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
