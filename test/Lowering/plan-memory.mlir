// RUN: dlc-opt %s --split-input-file --dlexec-plan-memory --dlexec-verify-memory-plan | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlexec-plan-memory="alignment=1024" --dlexec-verify-memory-plan="alignment=1024" | FileCheck %s --check-prefix=ALIGN

// Lifetimes (op positions): a [2,4], b [4,6], c [6,11], d [9,end] (through
// its view, which is an output), e [11,end]. k4 reads c for the last time,
// element by element through the map it writes e with, so e is written in
// place over c (one group, [6,end]). b at 0; a overlaps b (both used at op 4)
// so it goes to 512; c (and e with it) reuses a's bytes (a is dead when c is
// written); d reuses b's.

#id = affine_map<(d0) -> (d0)>
#first = affine_map<(d0) -> (d0 * 2)>
// Reads every 6th of 64 elements: loop 0 is sized by the 10-element output.
#head = affine_map<(d0) -> (d0 * 6)>
module {
  dlexec.func @plan {
    %x = dlexec.input "x" : memref<64xf32>
    %a = dlexec.alloc : memref<64xf32>
    dlexec.kernel @k0 ins(%x : memref<64xf32>) outs(%a : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
    ^bb0(%v: f32, %o: f32):
      dlexec.yield %v : f32
    }
    %b = dlexec.alloc : memref<128xf32>
    // Not a plain copy (a copy would make k0 write b in place of a).
    dlexec.kernel @k1 ins(%a : memref<64xf32>) outs(%b : memref<128xf32>) attributes {indexing_maps = [#id, #first], iterator_types = ["parallel"]} {
    ^bb0(%v: f32, %o: f32):
      %n = arith.negf %v : f32
      dlexec.yield %n : f32
    }
    %c = dlexec.alloc : memref<64xf32>
    dlexec.kernel @k2 ins(%b : memref<128xf32>) outs(%c : memref<64xf32>) attributes {indexing_maps = [#first, #id], iterator_types = ["parallel"]} {
    ^bb0(%v: f32, %o: f32):
      dlexec.yield %v : f32
    }
    %d = dlexec.alloc : memref<10xf32>
    %dv = dlexec.reshape %d : memref<10xf32> to memref<2x5xf32>
    dlexec.kernel @k3 ins(%c : memref<64xf32>) outs(%d : memref<10xf32>) attributes {indexing_maps = [#head, #id], iterator_types = ["parallel"]} {
    ^bb0(%v: f32, %o: f32):
      dlexec.yield %v : f32
    }
    %e = dlexec.alloc : memref<64xf32>
    dlexec.kernel @k4 ins(%c : memref<64xf32>) outs(%e : memref<64xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel"]} {
    ^bb0(%v: f32, %o: f32):
      %n = arith.negf %v : f32
      dlexec.yield %n : f32
    }
    dlexec.output "e", %e : memref<64xf32>
    dlexec.output "d", %dv : memref<2x5xf32>
  }
}

// CHECK-LABEL: dlexec.func @plan attributes {arena_bytes = 768 : i64} {
// CHECK: %[[A:.+]] = dlexec.alloc {offset = 512 : i64} : memref<64xf32>
// CHECK: %[[B:.+]] = dlexec.alloc {offset = 0 : i64} : memref<128xf32>
// CHECK: %[[C:.+]] = dlexec.alloc {offset = 512 : i64} : memref<64xf32>
// CHECK: %[[D:.+]] = dlexec.alloc {offset = 0 : i64} : memref<10xf32>
// CHECK: %[[E:.+]] = dlexec.alloc {offset = 512 : i64} : memref<64xf32>

// With 1024-byte alignment every buffer takes 1024 bytes; c (with e in
// place) and d are live together, so the arena is 2 KiB.
// ALIGN-LABEL: dlexec.func @plan attributes {arena_bytes = 2048 : i64} {
// ALIGN: dlexec.alloc {offset = 1024 : i64} : memref<64xf32>
// ALIGN: dlexec.alloc {offset = 0 : i64} : memref<128xf32>
// ALIGN: dlexec.alloc {offset = 1024 : i64} : memref<64xf32>
// ALIGN: dlexec.alloc {offset = 0 : i64} : memref<10xf32>
// ALIGN: dlexec.alloc {offset = 1024 : i64} : memref<64xf32>

// -----

// Two functions get separate arenas; a function without buffers gets 0; an
// unused alloc still gets an offset.

module {
  dlexec.func @empty {
    %x = dlexec.input "x" : memref<4xf32>
    dlexec.output "y", %x : memref<4xf32>
  }
  dlexec.func @unused {
    %t = dlexec.alloc : memref<300xf32>
  }
}

// CHECK-LABEL: dlexec.func @empty attributes {arena_bytes = 0 : i64}
// CHECK-LABEL: dlexec.func @unused attributes {arena_bytes = 1280 : i64}
// CHECK: dlexec.alloc {offset = 0 : i64} : memref<300xf32>
