// RUN: dlc-opt %s --split-input-file --dlexec-multi-tensor | FileCheck %s
// RUN: dlc-opt %s --split-input-file --dlexec-multi-tensor=max-pending-bytes=100 | FileCheck %s --check-prefix=CAP

// Two SGD updates p - lr * g of different shapes, with a library call
// between them, become one multi-tensor kernel at the second: the shared
// learning rate first, then each tensor's (param, grad), then the outputs.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#s2 = affine_map<(d0, d1) -> ()>
#id1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
module {
  dlexec.variable @w : memref<4x8xf32> {kind = "parameter"}
  dlexec.variable @b : memref<8xf32> {kind = "parameter"}
  dlexec.variable @lr : memref<f32> {kind = "constant"}
  dlexec.func @train_step {
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.input "dy" : memref<2x8xf32>
    %w = dlexec.variable_ref @w : memref<4x8xf32>
    %b = dlexec.variable_ref @b : memref<8xf32>
    %lr = dlexec.variable_ref @lr : memref<f32>
    %dw = dlexec.alloc : memref<4x8xf32>
    dlexec.library_call "gemm" ins(%x, %dy : memref<2x4xf32>, memref<2x8xf32>) outs(%dw : memref<4x8xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = false}
    dlexec.kernel @k_w ins(%w, %dw, %lr : memref<4x8xf32>, memref<4x8xf32>, memref<f32>) outs(%w : memref<4x8xf32>) attributes {indexing_maps = [#id2, #id2, #s2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%p: f32, %g: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %g : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    %dx = dlexec.alloc : memref<2x4xf32>
    dlexec.library_call "gemm" ins(%dy, %w : memref<2x8xf32>, memref<4x8xf32>) outs(%dx : memref<2x4xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = true}
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_db ins(%dy : memref<2x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %acc, %a : f32
      dlexec.yield %s : f32
    }
    dlexec.kernel @k_b ins(%b, %db, %lr : memref<8xf32>, memref<8xf32>, memref<f32>) outs(%b : memref<8xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %g: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %g : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    dlexec.output "dx", %dx : memref<2x4xf32>
  }
}

// The update of @w reads the gemm's result %dw, and the second gemm reads
// @w before its update: the update of @w cannot move past that gemm, so
// nothing merges here.
// CHECK-LABEL: dlexec.func @train_step
// CHECK: dlexec.kernel @k_w
// CHECK: dlexec.library_call "gemm"
// CHECK: dlexec.kernel @k_b
// CHECK-NOT: dlexec.multi_tensor_kernel

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#s2 = affine_map<(d0, d1) -> ()>
#id1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
module {
  dlexec.variable @w : memref<4x8xf32> {kind = "parameter"}
  dlexec.variable @b : memref<8xf32> {kind = "parameter"}
  dlexec.variable @c : memref<8xf32> {kind = "parameter"}
  dlexec.variable @m : memref<4x8xf32> {kind = "optimizer_state"}
  dlexec.variable @lr : memref<f32> {kind = "constant"}
  dlexec.func @train_step {
    %x = dlexec.input "x" : memref<2x4xf32>
    %dy = dlexec.input "dy" : memref<2x8xf32>
    %w = dlexec.variable_ref @w : memref<4x8xf32>
    %m = dlexec.variable_ref @m : memref<4x8xf32>
    %b = dlexec.variable_ref @b : memref<8xf32>
    %c = dlexec.variable_ref @c : memref<8xf32>
    %lr = dlexec.variable_ref @lr : memref<f32>
    %dw = dlexec.alloc : memref<4x8xf32>
    dlexec.library_call "gemm" ins(%x, %dy : memref<2x4xf32>, memref<2x8xf32>) outs(%dw : memref<4x8xf32>) {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = true, trans_b = false}
    // Momentum SGD: two outputs (param, buffer).
    dlexec.kernel @k_w ins(%w, %dw, %m, %lr : memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>, memref<f32>) outs(%w, %m : memref<4x8xf32>, memref<4x8xf32>) attributes {indexing_maps = [#id2, #id2, #id2, #s2, #id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%p: f32, %g: f32, %buf: f32, %r: f32, %o: f32, %o2: f32):
      %k = arith.constant 0.9 : f32
      %mb = arith.mulf %k, %buf : f32
      %nb = arith.addf %mb, %g : f32
      %u = arith.mulf %r, %nb : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n, %nb : f32, f32
    }
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_db ins(%dy : memref<2x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %acc, %a : f32
      dlexec.yield %s : f32
    }
    // A plain SGD update (another body: its own group) of @b.
    dlexec.kernel @k_b ins(%b, %db, %lr : memref<8xf32>, memref<8xf32>, memref<f32>) outs(%b : memref<8xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %g: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %g : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    // The same update of @c: joins @b's group.
    dlexec.kernel @k_c ins(%c, %db, %lr : memref<8xf32>, memref<8xf32>, memref<f32>) outs(%c : memref<8xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %g: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %g : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    %cc = dlexec.alloc : memref<8xf32>
    // Reads @c after its update: closes @b's group before it.
    dlexec.kernel @read_c ins(%c : memref<8xf32>) outs(%cc : memref<8xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    // The update of @b again, after that read: a group of its own.
    dlexec.kernel @k_b2 ins(%b, %db, %lr : memref<8xf32>, memref<8xf32>, memref<f32>) outs(%b : memref<8xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %g: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %g : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    dlexec.output "c", %cc : memref<8xf32>
  }
}

// CHECK-LABEL: dlexec.func @train_step
// CHECK-DAG: %[[W:.+]] = dlexec.variable_ref @w
// CHECK-DAG: %[[M:.+]] = dlexec.variable_ref @m
// CHECK-DAG: %[[B:.+]] = dlexec.variable_ref @b
// CHECK-DAG: %[[C:.+]] = dlexec.variable_ref @c
// CHECK-DAG: %[[LR:.+]] = dlexec.variable_ref @lr
// CHECK: dlexec.kernel @k_w
// CHECK: %[[DB:.+]] = dlexec.alloc : memref<8xf32>
// CHECK: dlexec.kernel @k_db
// CHECK-NOT: dlexec.kernel @k_b
// CHECK: dlexec.multi_tensor_kernel @k_b_multi_tensor ins(%[[LR]], %[[B]], %[[DB]], %[[C]], %[[DB]] : memref<f32>, memref<8xf32>, memref<8xf32>, memref<8xf32>, memref<8xf32>) outs(%[[B]], %[[C]] : memref<8xf32>, memref<8xf32>) attributes {num_shared = 1 : i64, sizes = array<i64: 8, 8>} {
// CHECK-NEXT: ^bb0(%[[R:.+]]: f32, %[[P:.+]]: f32, %[[G:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[U:.+]] = arith.mulf %[[R]], %[[G]] : f32
// CHECK-NEXT: %[[N:.+]] = arith.subf %[[P]], %[[U]] : f32
// CHECK-NEXT: dlexec.yield %[[N]] : f32
// CHECK: dlexec.kernel @read_c
// CHECK: dlexec.kernel @k_b2
// CHECK-NOT: dlexec.kernel @k_c

// -----

// Updates with different hyper-parameters (weight decay 0.1 and none) form
// two groups; updates of three tensors with the same ones one group of
// three, placed at its last member. An op writing a buffer (not a variable)
// is no candidate. The 1024-byte %tmp sets the step's peak of live arena
// bytes, under which the gradients the @a* updates hold until the last one
// stay. With max-pending-bytes=100 the arena gradients the first two @a*
// updates hold (64 bytes each) close the group at the second one.

#id1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
module {
  dlexec.variable @a0 : memref<16xf32> {kind = "parameter"}
  dlexec.variable @a1 : memref<16xf32> {kind = "parameter"}
  dlexec.variable @a2 : memref<16xf32> {kind = "parameter"}
  dlexec.variable @n0 : memref<16xf32> {kind = "parameter"}
  dlexec.variable @n1 : memref<16xf32> {kind = "parameter"}
  dlexec.variable @lr : memref<f32> {kind = "constant"}
  dlexec.func @train_step {
    %g = dlexec.input "g" : memref<16xf32>
    %lr = dlexec.variable_ref @lr : memref<f32>
    %a0 = dlexec.variable_ref @a0 : memref<16xf32>
    %a1 = dlexec.variable_ref @a1 : memref<16xf32>
    %a2 = dlexec.variable_ref @a2 : memref<16xf32>
    %n0 = dlexec.variable_ref @n0 : memref<16xf32>
    %n1 = dlexec.variable_ref @n1 : memref<16xf32>
    %tmp = dlexec.alloc : memref<256xf32>
    dlexec.kernel @fill outs(%tmp : memref<256xf32>) attributes {indexing_maps = [#id1], iterator_types = ["parallel"]} {
    ^bb0(%o: f32):
      %z = arith.constant 0.0 : f32
      dlexec.yield %z : f32
    }
    %s = dlexec.alloc : memref<16xf32>
    dlexec.kernel @every16th ins(%tmp : memref<256xf32>) outs(%s : memref<16xf32>) attributes {indexing_maps = [affine_map<(d0) -> (d0 * 16)>, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    %g0 = dlexec.alloc : memref<16xf32>
    dlexec.kernel @copy0 ins(%g : memref<16xf32>) outs(%g0 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    dlexec.kernel @wd_a0 ins(%a0, %g0, %lr : memref<16xf32>, memref<16xf32>, memref<f32>) outs(%a0 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %gr: f32, %r: f32, %o: f32):
      %wd = arith.constant 0.1 : f32
      %d = arith.mulf %wd, %p : f32
      %gg = arith.addf %gr, %d : f32
      %u = arith.mulf %r, %gg : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    dlexec.kernel @plain_n0 ins(%n0, %g, %lr : memref<16xf32>, memref<16xf32>, memref<f32>) outs(%n0 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %gr: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %gr : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    %g1 = dlexec.alloc : memref<16xf32>
    dlexec.kernel @copy1 ins(%g : memref<16xf32>) outs(%g1 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    dlexec.kernel @wd_a1 ins(%a1, %g1, %lr : memref<16xf32>, memref<16xf32>, memref<f32>) outs(%a1 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %gr: f32, %r: f32, %o: f32):
      %wd = arith.constant 0.1 : f32
      %d = arith.mulf %wd, %p : f32
      %gg = arith.addf %gr, %d : f32
      %u = arith.mulf %r, %gg : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    dlexec.kernel @plain_n1 ins(%n1, %g, %lr : memref<16xf32>, memref<16xf32>, memref<f32>) outs(%n1 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %gr: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %gr : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    %g2 = dlexec.alloc : memref<16xf32>
    dlexec.kernel @copy2 ins(%g : memref<16xf32>) outs(%g2 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    dlexec.kernel @wd_a2 ins(%a2, %g2, %lr : memref<16xf32>, memref<16xf32>, memref<f32>) outs(%a2 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %gr: f32, %r: f32, %o: f32):
      %wd = arith.constant 0.1 : f32
      %d = arith.mulf %wd, %p : f32
      %gg = arith.addf %gr, %d : f32
      %u = arith.mulf %r, %gg : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    dlexec.output "s", %s : memref<16xf32>
  }
}

// CHECK-LABEL: dlexec.func @train_step
// CHECK: dlexec.kernel @copy0
// CHECK: dlexec.kernel @copy1
// CHECK: dlexec.multi_tensor_kernel @plain_n0_multi_tensor ins(%{{.+}} : memref<f32>, memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16xf32>) outs(%{{.+}}, %{{.+}} : memref<16xf32>, memref<16xf32>) attributes {num_shared = 1 : i64, sizes = array<i64: 16, 16>}
// CHECK: dlexec.kernel @copy2
// CHECK: dlexec.multi_tensor_kernel @wd_a0_multi_tensor {{.+}} outs(%{{.+}}, %{{.+}}, %{{.+}} : memref<16xf32>, memref<16xf32>, memref<16xf32>) attributes {num_shared = 1 : i64, sizes = array<i64: 16, 16, 16>}
// CHECK: arith.constant 1.000000e-01 : f32
// CHECK-NOT: dlexec.kernel @{{(wd|plain)}}

// CAP-LABEL: dlexec.func @train_step
// CAP: dlexec.kernel @copy0
// CAP: dlexec.kernel @copy1
// CAP: dlexec.multi_tensor_kernel @wd_a0_multi_tensor {{.+}} attributes {num_shared = 1 : i64, sizes = array<i64: 16, 16>}
// CAP: dlexec.multi_tensor_kernel @plain_n0_multi_tensor
// CAP: dlexec.kernel @copy2
// CAP: dlexec.kernel @wd_a2

// -----

// Without a higher peak elsewhere, holding @p0's gradient until @p1's
// update would raise the step's peak of live arena bytes (64 -> 128): the
// updates stay apart.

#id1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
module {
  dlexec.variable @p0 : memref<16xf32> {kind = "parameter"}
  dlexec.variable @p1 : memref<16xf32> {kind = "parameter"}
  dlexec.variable @lr : memref<f32> {kind = "constant"}
  dlexec.func @train_step {
    %g = dlexec.input "g" : memref<16xf32>
    %lr = dlexec.variable_ref @lr : memref<f32>
    %p0 = dlexec.variable_ref @p0 : memref<16xf32>
    %p1 = dlexec.variable_ref @p1 : memref<16xf32>
    %g0 = dlexec.alloc : memref<16xf32>
    dlexec.kernel @copy0 ins(%g : memref<16xf32>) outs(%g0 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    dlexec.kernel @u0 ins(%p0, %g0, %lr : memref<16xf32>, memref<16xf32>, memref<f32>) outs(%p0 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %gr: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %gr : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
    %g1 = dlexec.alloc : memref<16xf32>
    dlexec.kernel @copy1 ins(%g : memref<16xf32>) outs(%g1 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    dlexec.kernel @u1 ins(%p1, %g1, %lr : memref<16xf32>, memref<16xf32>, memref<f32>) outs(%p1 : memref<16xf32>) attributes {indexing_maps = [#id1, #id1, #s1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%p: f32, %gr: f32, %r: f32, %o: f32):
      %u = arith.mulf %r, %gr : f32
      %n = arith.subf %p, %u : f32
      dlexec.yield %n : f32
    }
  }
}

// CHECK-LABEL: dlexec.func @train_step
// CHECK: dlexec.kernel @copy0
// CHECK-NEXT: ^bb0
// CHECK-NEXT: dlexec.yield
// CHECK-NEXT: }
// CHECK-NEXT: dlexec.kernel @u0
// CHECK: dlexec.kernel @copy1
// CHECK: dlexec.kernel @u1
// CHECK-NOT: dlexec.multi_tensor_kernel
