// RUN: dlc-opt %s --split-input-file | FileCheck %s --check-prefix=BEFORE
// RUN: dlc-opt %s --split-input-file --dlexec-fuse-elementwise | FileCheck %s

// A chain add(bias) -> relu -> mul(2) of three kernels over [4, 8] becomes
// one kernel; the intermediate allocs disappear.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.variable @b : memref<8xf32> {kind = "parameter"}
  dlexec.func @chain {
    %x = dlexec.input "x" : memref<4x8xf32>
    %b = dlexec.variable_ref @b : memref<8xf32>
    %t0 = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @k_add ins(%x, %b : memref<4x8xf32>, memref<8xf32>) outs(%t0 : memref<4x8xf32>) attributes {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %s = arith.addf %a, %c : f32
      dlexec.yield %s : f32
    }
    %t1 = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @k_relu ins(%t0 : memref<4x8xf32>) outs(%t1 : memref<4x8xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %r = arith.maximumf %a, %z : f32
      dlexec.yield %r : f32
    }
    %t2 = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @k_mul ins(%t1, %x : memref<4x8xf32>, memref<4x8xf32>) outs(%t2 : memref<4x8xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %xx: f32, %o: f32):
      %m = arith.mulf %a, %xx : f32
      dlexec.yield %m : f32
    }
    dlexec.output "y", %t2 : memref<4x8xf32>
  }
}

// BEFORE-LABEL: dlexec.func @chain
// BEFORE-COUNT-3: dlexec.kernel

// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: dlexec.func @chain {
// CHECK: %[[X:.+]] = dlexec.input "x"
// CHECK: %[[B:.+]] = dlexec.variable_ref @b
// CHECK-NOT: dlexec.alloc
// CHECK: %[[Y:.+]] = dlexec.alloc : memref<4x8xf32>
// CHECK-NOT: dlexec.alloc
// The consumer's own input %x and the producer's %x (same map) share an argument.
// CHECK: dlexec.kernel @k_mul ins(%[[X]], %[[B]] : memref<4x8xf32>, memref<8xf32>) outs(%[[Y]] : memref<4x8xf32>) attributes {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-NEXT: ^bb0(%[[AX:.+]]: f32, %[[AB:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[AX]], %[[AB]] : f32
// CHECK-NEXT: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[R:.+]] = arith.maximumf %[[S]], %[[Z]] : f32
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[R]], %[[AX]] : f32
// CHECK-NEXT: dlexec.yield %[[M]] : f32
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.output "y", %[[Y]]

// -----

// Not fused: a producer read by two kernels; a consumer that broadcasts the
// producer's output (different iteration space); a producer whose input is
// overwritten between it and its consumer. Fused: a parallel producer into a
// reduction consumer (bias gradient of relu backward).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#id1 = affine_map<(d0) -> (d0)>
#bc = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.variable @v : memref<8xf32> {kind = "buffer"}
  dlexec.func @cases {
    %x = dlexec.input "x" : memref<4x8xf32>
    %e = dlexec.input "e" : memref<8xf32>
    %two = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @two_users ins(%x : memref<4x8xf32>) outs(%two : memref<4x8xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %r = math.exp %a : f32
      dlexec.yield %r : f32
    }
    %u1 = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @user1 ins(%two : memref<4x8xf32>) outs(%u1 : memref<4x8xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %r = arith.negf %a : f32
      dlexec.yield %r : f32
    }
    %u2 = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @user2 ins(%two : memref<4x8xf32>) outs(%u2 : memref<4x8xf32>) attributes {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %r = math.sqrt %a : f32
      dlexec.yield %r : f32
    }
    %small = dlexec.alloc : memref<8xf32>
    dlexec.kernel @small ins(%e : memref<8xf32>) outs(%small : memref<8xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %r = math.exp %a : f32
      dlexec.yield %r : f32
    }
    %bcast = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @broadcasting ins(%small, %x : memref<8xf32>, memref<4x8xf32>) outs(%bcast : memref<4x8xf32>) attributes {indexing_maps = [#bc, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %r = arith.addf %a, %b : f32
      dlexec.yield %r : f32
    }
    %vr = dlexec.variable_ref @v : memref<8xf32>
    %rd = dlexec.alloc : memref<8xf32>
    dlexec.kernel @reads_v ins(%vr : memref<8xf32>) outs(%rd : memref<8xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %r = arith.negf %a : f32
      dlexec.yield %r : f32
    }
    dlexec.kernel @writes_v ins(%e : memref<8xf32>) outs(%vr : memref<8xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    %rd2 = dlexec.alloc : memref<8xf32>
    dlexec.kernel @after_write ins(%rd : memref<8xf32>) outs(%rd2 : memref<8xf32>) attributes {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %o: f32):
      %r = math.exp %a : f32
      dlexec.yield %r : f32
    }
    %mask = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @relu_grad ins(%x, %u1 : memref<4x8xf32>, memref<4x8xf32>) outs(%mask : memref<4x8xf32>) attributes {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %g: f32, %o: f32):
      %z = arith.constant 0.0 : f32
      %c = arith.cmpf ogt, %a, %z : f32
      %r = arith.select %c, %g, %z : f32
      dlexec.yield %r : f32
    }
    %db = dlexec.alloc : memref<8xf32>
    dlexec.kernel @bias_grad ins(%mask : memref<4x8xf32>) outs(%db : memref<8xf32>) attributes {indexing_maps = [#id, #row], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.addf %acc, %a : f32
      dlexec.yield %r : f32
    }
    dlexec.output "u1", %u1 : memref<4x8xf32>
    dlexec.output "u2", %u2 : memref<4x8xf32>
    dlexec.output "bcast", %bcast : memref<4x8xf32>
    dlexec.output "rd2", %rd2 : memref<8xf32>
    dlexec.output "db", %db : memref<8xf32>
  }
}

// BEFORE-LABEL: dlexec.func @cases
// BEFORE-COUNT-9: dlexec.kernel

// CHECK-LABEL: dlexec.func @cases {
// CHECK: %[[X:.+]] = dlexec.input "x"
// CHECK: %[[TWO:.+]] = dlexec.alloc : memref<4x8xf32>
// CHECK: dlexec.kernel @two_users ins(%[[X]] : {{.*}}) outs(%[[TWO]] :
// CHECK: %[[U1:.+]] = dlexec.alloc : memref<4x8xf32>
// CHECK: dlexec.kernel @user1 ins(%[[TWO]] : {{.*}}) outs(%[[U1]] :
// CHECK: dlexec.kernel @user2 ins(%[[TWO]] :
// CHECK: %[[SMALL:.+]] = dlexec.alloc : memref<8xf32>
// CHECK: dlexec.kernel @small
// CHECK: dlexec.kernel @broadcasting ins(%[[SMALL]], %[[X]] :
// CHECK: %[[RD:.+]] = dlexec.alloc : memref<8xf32>
// CHECK: dlexec.kernel @reads_v ins(%{{.+}} : memref<8xf32>) outs(%[[RD]] :
// CHECK: dlexec.kernel @writes_v
// CHECK: dlexec.kernel @after_write ins(%[[RD]] :
// relu_grad folded into the reduction: %mask is gone.
// CHECK-NOT: dlexec.kernel @relu_grad
// CHECK: %[[DB:.+]] = dlexec.alloc : memref<8xf32>
// CHECK: dlexec.kernel @bias_grad ins(%[[X]], %[[U1]] : memref<4x8xf32>, memref<4x8xf32>) outs(%[[DB]] : memref<8xf32>) attributes {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}], init = [0.000000e+00 : f32], iterator_types = ["reduction", "parallel"]}
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[G:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK: %[[C:.+]] = arith.cmpf ogt, %[[A]], %{{.+}} : f32
// CHECK-NEXT: %[[SEL:.+]] = arith.select %[[C]], %[[G]], %{{.+}} : f32
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[ACC]], %[[SEL]] : f32
// CHECK-NEXT: dlexec.yield %[[SUM]] : f32
// CHECK-COUNT-5: dlexec.output

// -----

// A broadcast [4, 1] -> [4, 5] feeding a sum over the broadcast axis stays
// unfused: after fusion no map would use loop 1 as a plain dimension, and
// codegen could not size it.
#bcast = affine_map<(d0, d1) -> (d0, 0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
module {
  dlexec.func @broadcast_then_reduce {
    %x = dlexec.input "x" : memref<4x1xf32>
    %e = dlexec.alloc : memref<4x5xf32>
    dlexec.kernel @k_bcast ins(%x : memref<4x1xf32>) outs(%e : memref<4x5xf32>) attributes {indexing_maps = [#bcast, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: f32):
      dlexec.yield %a : f32
    }
    %s = dlexec.alloc : memref<4xf32>
    dlexec.kernel @k_sum ins(%e : memref<4x5xf32>) outs(%s : memref<4xf32>) attributes {indexing_maps = [#id2, #rows], init = [0.0 : f32], iterator_types = ["parallel", "reduction"]} {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.addf %acc, %a : f32
      dlexec.yield %r : f32
    }
    dlexec.output "y", %s : memref<4xf32>
  }
}

// BEFORE-LABEL: dlexec.func @broadcast_then_reduce
// CHECK-LABEL: dlexec.func @broadcast_then_reduce
// CHECK: dlexec.kernel @k_bcast
// CHECK: dlexec.kernel @k_sum ins(%{{.+}} : memref<4x5xf32>)

// -----

// Mixed-precision casts: a cast folds into a transpose that reads it
// through a permutation; a producer read by a cast and by a reduction is
// recomputed in both (its f32 result is never stored).
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.func @casts {
    %x = dlexec.input "x" : memref<4x8xf32>
    %c = dlexec.alloc : memref<4x8xbf16>
    dlexec.kernel @k_cast ins(%x : memref<4x8xf32>) outs(%c : memref<4x8xbf16>) attributes {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: bf16):
      %t = arith.truncf %a : f32 to bf16
      dlexec.yield %t : bf16
    }
    %t = dlexec.alloc : memref<8x4xbf16>
    dlexec.kernel @k_transpose ins(%c : memref<4x8xbf16>) outs(%t : memref<8x4xbf16>) attributes {indexing_maps = [#tr, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: bf16, %o: bf16):
      dlexec.yield %a : bf16
    }
    %g = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @k_add ins(%x, %x : memref<4x8xf32>, memref<4x8xf32>) outs(%g : memref<4x8xf32>) attributes {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      dlexec.yield %s : f32
    }
    %gb = dlexec.alloc : memref<4x8xbf16>
    dlexec.kernel @k_cast2 ins(%g : memref<4x8xf32>) outs(%gb : memref<4x8xbf16>) attributes {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %o: bf16):
      %t2 = arith.truncf %a : f32 to bf16
      dlexec.yield %t2 : bf16
    }
    %r = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_sum ins(%g : memref<4x8xf32>) outs(%r : memref<8xf32>) attributes {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %acc: f32):
      %s2 = arith.addf %acc, %a : f32
      dlexec.yield %s2 : f32
    }
    dlexec.output "t", %t : memref<8x4xbf16>
    dlexec.output "gb", %gb : memref<4x8xbf16>
    dlexec.output "r", %r : memref<8xf32>
  }
}
// CHECK-LABEL: dlexec.func @casts
// CHECK: dlexec.kernel @k_transpose ins(%{{.+}} : memref<4x8xf32>) outs(%{{.+}} : memref<8x4xbf16>) attributes {indexing_maps = [#[[TR:.+]], #{{.+}}]
// CHECK: arith.truncf
// CHECK: dlexec.kernel @k_cast2 ins(%{{.+}} : memref<4x8xf32>) outs(%{{.+}} : memref<4x8xbf16>)
// CHECK: arith.addf
// CHECK: arith.truncf
// CHECK: dlexec.kernel @k_sum ins(%{{.+}} : memref<4x8xf32>) outs(%{{.+}} : memref<8xf32>)
// CHECK: arith.addf
// CHECK: arith.addf
// CHECK-NOT: dlexec.kernel
// CHECK-NOT: memref<4x8xf32>{{.*}}alloc
// CHECK: dlexec.output "t"

// -----

// A producer read by a kernel that computes more than a cast but rounds to
// a narrower type (a LayerNorm's f32 x-hat read by the affine-and-round to
// bf16) and by a reduction (the scale's gradient) counts as read by a cast:
// it is recomputed in both, and its f32 result is never stored.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.func @narrowing_reader {
    %x = dlexec.input "x" : memref<4x8xf32>
    %dy = dlexec.input "dy" : memref<4x8xf32>
    %g = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @k_mul ins(%x, %x : memref<4x8xf32>, memref<4x8xf32>) outs(%g : memref<4x8xf32>) attributes {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      dlexec.yield %m : f32
    }
    %y = dlexec.alloc : memref<4x8xbf16>
    dlexec.kernel @k_affine_round ins(%g, %x : memref<4x8xf32>, memref<4x8xf32>) outs(%y : memref<4x8xbf16>) attributes {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %b: f32, %o: bf16):
      %s = arith.addf %a, %b : f32
      %t = arith.truncf %s : f32 to bf16
      dlexec.yield %t : bf16
    }
    %r = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_sum ins(%g, %dy : memref<4x8xf32>, memref<4x8xf32>) outs(%r : memref<8xf32>) attributes {indexing_maps = [#id2, #id2, #col], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %d: f32, %acc: f32):
      %p = arith.mulf %a, %d : f32
      %s2 = arith.addf %acc, %p : f32
      dlexec.yield %s2 : f32
    }
    dlexec.output "y", %y : memref<4x8xbf16>
    dlexec.output "r", %r : memref<8xf32>
  }
}
// CHECK-LABEL: dlexec.func @narrowing_reader
// CHECK-NOT: dlexec.kernel @k_mul
// CHECK: dlexec.kernel @k_affine_round
// CHECK: arith.mulf
// CHECK: arith.truncf
// CHECK: dlexec.kernel @k_sum
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK-NOT: dlexec.kernel
// CHECK: dlexec.output "y"

// -----

// Loss scaling's guards: the selects reading each result of a two-output
// update fold into it; the fused kernel writes the variables directly and
// sits where the last select was.
#e = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
module {
  dlexec.variable @w : memref<8xf32> {kind = "parameter"}
  dlexec.variable @m : memref<8xf32> {kind = "optimizer_state"}
  dlexec.func @guards {
    %g = dlexec.input "g" : memref<8xf32>
    %inf = dlexec.input "inf" : memref<i1>
    %w = dlexec.variable_ref @w : memref<8xf32>
    %m = dlexec.variable_ref @m : memref<8xf32>
    %nw = dlexec.alloc : memref<8xf32>
    %nm = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_update ins(%w, %m, %g : memref<8xf32>, memref<8xf32>, memref<8xf32>) outs(%nw, %nm : memref<8xf32>, memref<8xf32>) attributes {indexing_maps = [#e, #e, #e, #e, #e], iterator_types = ["parallel"]} {
    ^bb0(%a: f32, %b: f32, %c: f32, %o1: f32, %o2: f32):
      %mm = arith.addf %b, %c : f32
      %ww = arith.subf %a, %mm : f32
      dlexec.yield %ww, %mm : f32, f32
    }
    dlexec.kernel @k_guard_w ins(%inf, %w, %nw : memref<i1>, memref<8xf32>, memref<8xf32>) outs(%w : memref<8xf32>) attributes {indexing_maps = [#s, #e, #e, #e], iterator_types = ["parallel"]} {
    ^bb0(%f: i1, %old: f32, %new: f32, %o: f32):
      %v = arith.select %f, %old, %new : f32
      dlexec.yield %v : f32
    }
    dlexec.kernel @k_guard_m ins(%inf, %m, %nm : memref<i1>, memref<8xf32>, memref<8xf32>) outs(%m : memref<8xf32>) attributes {indexing_maps = [#s, #e, #e, #e], iterator_types = ["parallel"]} {
    ^bb0(%f: i1, %old: f32, %new: f32, %o: f32):
      %v = arith.select %f, %old, %new : f32
      dlexec.yield %v : f32
    }
  }
}
// CHECK-LABEL: dlexec.func @guards
// CHECK-NOT: dlexec.alloc
// CHECK: dlexec.kernel @k_update ins(%[[W:[^,]+]], %[[M:[^,]+]], %[[G:[^,]+]], %[[INF:[^ ]+]] : {{.*}}) outs(%[[W]], %[[M]] : memref<8xf32>, memref<8xf32>)
// CHECK: %[[MM:.+]] = arith.addf
// CHECK: %[[WW:.+]] = arith.subf
// CHECK: %[[V1:.+]] = arith.select %{{.+}}, %{{.+}}, %[[WW]]
// CHECK: %[[V2:.+]] = arith.select %{{.+}}, %{{.+}}, %[[MM]]
// CHECK: dlexec.yield %[[V1]], %[[V2]] : f32, f32
// CHECK-NOT: dlexec.kernel

// -----

// Sibling reductions (BatchNorm backward's sum(dy) and sum(dy * xhat)) over
// the same loops and first input become one kernel with both outputs at
// the second one's place, each output with its own accumulator; the
// elementwise producer of dy * xhat is folded in first. A reduction that
// reads the first one's result (the variance after the mean) is not a
// sibling and stays apart.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  dlexec.func @sibling_sums {
    %dy = dlexec.input "dy" : memref<4x8xf32>
    %xh = dlexec.input "xh" : memref<4x8xf32>
    %s1 = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_sum_dy ins(%dy : memref<4x8xf32>) outs(%s1 : memref<8xf32>) attributes {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.addf %acc, %a : f32
      dlexec.yield %r : f32
    }
    %p = dlexec.alloc : memref<4x8xf32>
    dlexec.kernel @k_mul ins(%dy, %xh : memref<4x8xf32>, memref<4x8xf32>) outs(%p : memref<4x8xf32>) attributes {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]} {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      dlexec.yield %m : f32
    }
    %s2 = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_sum_dy_xh ins(%p : memref<4x8xf32>) outs(%s2 : memref<8xf32>) attributes {indexing_maps = [#id2, #col], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %acc: f32):
      %r = arith.addf %acc, %a : f32
      dlexec.yield %r : f32
    }
    %s3 = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_sum_centered ins(%dy, %s1 : memref<4x8xf32>, memref<8xf32>) outs(%s3 : memref<8xf32>) attributes {indexing_maps = [#id2, #col, #col], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %m: f32, %acc: f32):
      %d = arith.subf %a, %m : f32
      %r = arith.addf %acc, %d : f32
      dlexec.yield %r : f32
    }
    dlexec.output "s1", %s1 : memref<8xf32>
    dlexec.output "s2", %s2 : memref<8xf32>
    dlexec.output "s3", %s3 : memref<8xf32>
  }
}
// CHECK-LABEL: dlexec.func @sibling_sums
// CHECK: %[[DY:.+]] = dlexec.input "dy"
// CHECK: %[[XH:.+]] = dlexec.input "xh"
// CHECK: %[[S1:.+]] = dlexec.alloc : memref<8xf32>
// CHECK: %[[S2:.+]] = dlexec.alloc : memref<8xf32>
// CHECK-NEXT: dlexec.kernel @k_sum_dy ins(%[[DY]], %[[XH]] : memref<4x8xf32>, memref<4x8xf32>) outs(%[[S1]], %[[S2]] : memref<8xf32>, memref<8xf32>) attributes {{{.*}}init = [0.000000e+00 : f32, 0.000000e+00 : f32], iterator_types = ["reduction", "parallel"]}
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[B:.+]]: f32, %[[ACC1:.+]]: f32, %[[ACC2:.+]]: f32):
// CHECK-NEXT: %[[R1:.+]] = arith.addf %[[ACC1]], %[[A]] : f32
// CHECK-NEXT: %[[M:.+]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[R2:.+]] = arith.addf %[[ACC2]], %[[M]] : f32
// CHECK-NEXT: dlexec.yield %[[R1]], %[[R2]] : f32, f32
// CHECK: dlexec.kernel @k_sum_centered ins(%[[DY]], %[[S1]] :

// -----

// Sums whose shared first input does not read every loop (a broadcast row)
// are not merged: the first input alone would not size the loops, and the
// other inputs disagree on loop 0 (4 against 2).
#row = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
module {
  dlexec.func @sibling_broadcast_input {
    %b = dlexec.input "b" : memref<8xf32>
    %x = dlexec.input "x" : memref<4x8xf32>
    %y = dlexec.input "y" : memref<2x8xf32>
    %s1 = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_sum_x ins(%b, %x : memref<8xf32>, memref<4x8xf32>) outs(%s1 : memref<8xf32>) attributes {indexing_maps = [#row, #id2, #row], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %c: f32, %acc: f32):
      %m = arith.mulf %a, %c : f32
      %r = arith.addf %acc, %m : f32
      dlexec.yield %r : f32
    }
    %s2 = dlexec.alloc : memref<8xf32>
    dlexec.kernel @k_sum_y ins(%b, %y : memref<8xf32>, memref<2x8xf32>) outs(%s2 : memref<8xf32>) attributes {indexing_maps = [#row, #id2, #row], iterator_types = ["reduction", "parallel"], init = [0.0 : f32]} {
    ^bb0(%a: f32, %c: f32, %acc: f32):
      %m = arith.mulf %a, %c : f32
      %r = arith.addf %acc, %m : f32
      dlexec.yield %r : f32
    }
    dlexec.output "s1", %s1 : memref<8xf32>
    dlexec.output "s2", %s2 : memref<8xf32>
  }
}
// CHECK-LABEL: dlexec.func @sibling_broadcast_input
// CHECK: dlexec.kernel @k_sum_x ins(%{{.+}}, %{{.+}} : memref<8xf32>, memref<4x8xf32>) outs(%{{.+}} : memref<8xf32>)
// CHECK: dlexec.kernel @k_sum_y ins(%{{.+}}, %{{.+}} : memref<8xf32>, memref<2x8xf32>) outs(%{{.+}} : memref<8xf32>)

// -----

// A reduction with an epilogue region does not take its elementwise
// producer: the rewrites here would drop the epilogue.
#x = affine_map<(n, c) -> (n, c)>
#c = affine_map<(n, c) -> (c)>
dlexec.func @epilogue_consumer {
  %a = dlexec.input "a" : memref<4x8xf32>
  %t = dlexec.alloc : memref<4x8xf32>
  dlexec.kernel @k_exp ins(%a : memref<4x8xf32>) outs(%t : memref<4x8xf32>) attributes {
      indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel"]} {
  ^bb0(%v: f32, %o: f32):
    %e = math.exp %v : f32
    dlexec.yield %e : f32
  }
  %s = dlexec.alloc : memref<8xf32>
  %r = dlexec.alloc : memref<8xf32>
  dlexec.kernel @k_sum ins(%t : memref<4x8xf32>) outs(%s, %r : memref<8xf32>, memref<8xf32>) attributes {
      indexing_maps = [#x, #c, #c], init = [0.0 : f32], iterator_types = ["reduction", "parallel"]} {
  ^bb0(%v: f32, %acc: f32, %u: f32):
    %n = arith.addf %acc, %v : f32
    dlexec.yield %n : f32
  } epilogue {
  ^bb0(%v: f32, %sum: f32, %u: f32):
    %q = math.rsqrt %sum : f32
    dlexec.yield %q : f32
  }
  dlexec.output "s", %s : memref<8xf32>
  dlexec.output "r", %r : memref<8xf32>
}
// CHECK-LABEL: dlexec.func @epilogue_consumer
// CHECK: dlexec.kernel @k_exp
// CHECK: dlexec.kernel @k_sum
// CHECK: } epilogue {
// CHECK: math.rsqrt
