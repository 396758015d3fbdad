// RUN: dlc-opt %s --split-input-file --dlgraph-lower-to-dlexec | FileCheck %s --check-prefix=LOWER
// RUN: dlc-opt %s --split-input-file --dlgraph-lower-to-dlexec --dlexec-plan-memory --dlexec-verify-memory-plan | FileCheck %s --check-prefix=PLAN

// A dense block: %c1 = [a, b] is a prefix of %c2 = [a, b, c] (channels of
// NCHW with batch 2: a strided slot). One buffer of %c2's shape holds both;
// each input is copied into it once, by the first concat that holds it, and
// %c1 is a subview of it.

// LOWER-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// LOWER-DAG: #[[SLOT0:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 mod 8, d2, d3)>
// LOWER-DAG: #[[SLOT1:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 4, d2, d3)>
// LOWER-DAG: #[[SLOT2:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 6, d2, d3)>
// LOWER-LABEL: dlexec.func @dense_block
// LOWER: %[[ROOT:.+]] = dlexec.alloc : memref<2x8x3x3xf32>
// LOWER: dlexec.kernel @{{.*}}concat ins({{.*}} : memref<2x4x3x3xf32>) outs(%[[ROOT]] : memref<2x8x3x3xf32>) attributes {indexing_maps = [#[[ID]], #[[SLOT0]]]
// LOWER: dlexec.kernel @{{.*}}concat ins({{.*}} : memref<2x2x3x3xf32>) outs(%[[ROOT]] : memref<2x8x3x3xf32>) attributes {indexing_maps = [#[[ID]], #[[SLOT1]]]
// LOWER: %[[C1:.+]] = dlexec.subview %[[ROOT]] {offsets = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1, 1, 1>} : memref<2x8x3x3xf32> to memref<2x6x3x3xf32>
// LOWER: dlexec.kernel @{{.*}}exp ins(%[[C1]] : memref<2x6x3x3xf32>)
// LOWER: dlexec.kernel @{{.*}}concat ins({{.*}} : memref<2x2x3x3xf32>) outs(%[[ROOT]] : memref<2x8x3x3xf32>) attributes {indexing_maps = [#[[ID]], #[[SLOT2]]]
// LOWER-NOT: concat
// LOWER: dlexec.kernel @{{.*}}exp ins(%[[ROOT]] : memref<2x8x3x3xf32>)

// After planning, the relus (generated kernels) write their results
// straight into their strided slots: no concat kernel is left, and %c1's
// reader reads the root buffer through (d0, d1 mod 8, d2, d3).

// PLAN-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// PLAN-DAG: #[[PREFIX:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 mod 8, d2, d3)>
// PLAN-DAG: #[[SLOT1:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 4, d2, d3)>
// PLAN-DAG: #[[SLOT2:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 6, d2, d3)>
// PLAN-LABEL: dlexec.func @dense_block
// PLAN: %[[ROOT:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<2x8x3x3xf32>
// PLAN-NOT: concat
// PLAN-NOT: subview
// PLAN: dlexec.kernel @{{.*}}relu ins(%{{.+}} : memref<2x4x3x3xf32>) outs(%[[ROOT]] : memref<2x8x3x3xf32>) attributes {indexing_maps = [#[[ID]], #[[PREFIX]]]
// PLAN: dlexec.kernel @{{.*}}relu ins(%{{.+}} : memref<2x2x3x3xf32>) outs(%[[ROOT]] : memref<2x8x3x3xf32>) attributes {indexing_maps = [#[[ID]], #[[SLOT1]]]
// PLAN: dlexec.kernel @{{.*}}exp ins(%[[ROOT]] : memref<2x8x3x3xf32>) outs(%{{.+}} : memref<2x6x3x3xf32>) attributes {indexing_maps = [#[[PREFIX]], #[[ID]]]
// PLAN: dlexec.kernel @{{.*}}relu ins(%{{.+}} : memref<2x2x3x3xf32>) outs(%[[ROOT]] : memref<2x8x3x3xf32>) attributes {indexing_maps = [#[[ID]], #[[SLOT2]]]
// PLAN: dlexec.kernel @{{.*}}exp ins(%[[ROOT]] : memref<2x8x3x3xf32>) outs(%{{.+}} : memref<2x8x3x3xf32>) attributes {indexing_maps = [#[[ID]], #[[ID]]]
// PLAN-NOT: concat
func.func @dense_block(%x: tensor<2x4x3x3xf32>, %y: tensor<2x2x3x3xf32>, %z: tensor<2x2x3x3xf32>) -> (tensor<2x6x3x3xf32>, tensor<2x8x3x3xf32>) {
  %a = dlgraph.relu %x : tensor<2x4x3x3xf32>
  %b = dlgraph.relu %y : tensor<2x2x3x3xf32>
  %c1 = dlgraph.concat %a, %b {axis = 1 : i64} : (tensor<2x4x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<2x6x3x3xf32>
  %r1 = dlgraph.exp %c1 : tensor<2x6x3x3xf32>
  %c = dlgraph.relu %z : tensor<2x2x3x3xf32>
  %c2 = dlgraph.concat %a, %b, %c {axis = 1 : i64} : (tensor<2x4x3x3xf32>, tensor<2x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<2x8x3x3xf32>
  %r2 = dlgraph.exp %c2 : tensor<2x8x3x3xf32>
  return %r1, %r2 : tensor<2x6x3x3xf32>, tensor<2x8x3x3xf32>
}

// -----

// A run in the middle of a larger concat along the outer axis (a contiguous
// slot): [b, c] is inputs 1..2 of [a, b, c, d], so its view starts at row 3.
// [c, b] is no run of it and stays a concat of its own, with its own copies.

// LOWER-LABEL: dlexec.func @outer_axis_run
// LOWER: %[[ROOT:.+]] = dlexec.alloc : memref<10x4xf32>
// LOWER-COUNT-2: outs(%[[ROOT]] : memref<10x4xf32>)
// LOWER: %[[BC:.+]] = dlexec.subview %[[ROOT]] {offsets = array<i64: 3, 0>, strides = array<i64: 1, 1>} : memref<10x4xf32> to memref<5x4xf32>
// LOWER: dlexec.kernel @{{.*}}neg ins(%[[BC]]
// LOWER: %[[OWN:.+]] = dlexec.alloc : memref<5x4xf32>
// LOWER-COUNT-2: outs(%[[OWN]] : memref<5x4xf32>)
// LOWER-COUNT-2: outs(%[[ROOT]] : memref<10x4xf32>)
// LOWER-NOT: outs(%[[ROOT]]

// PLAN-DAG: #[[MID:.+]] = affine_map<(d0, d1) -> (d0 + 3, d1)>
// PLAN-LABEL: dlexec.func @outer_axis_run
// PLAN: %[[ROOT:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<10x4xf32>
// PLAN: dlexec.kernel @{{.*}}neg ins(%[[ROOT]] : memref<10x4xf32>) outs(%{{.+}} : memref<5x4xf32>) attributes {indexing_maps = [#[[MID]],
func.func @outer_axis_run(%a: tensor<3x4xf32>, %b: tensor<2x4xf32>, %c: tensor<3x4xf32>, %d: tensor<2x4xf32>) -> (tensor<5x4xf32>, tensor<5x4xf32>, tensor<10x4xf32>) {
  %bc = dlgraph.concat %b, %c {axis = 0 : i64} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
  %n = dlgraph.neg %bc : tensor<5x4xf32>
  %cb = dlgraph.concat %c, %b {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<5x4xf32>
  %all = dlgraph.concat %a, %b, %c, %d {axis = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<10x4xf32>
  return %n, %cb, %all : tensor<5x4xf32>, tensor<5x4xf32>, tensor<10x4xf32>
}

// -----

// A slice of an activation is a view: the exp reads the relu's buffer at
// (i, 2 + 2 j); the GEMM (a library call, which reads dense operands) reads
// one copy of it. A slice of a function input stays a copy kernel.

// LOWER-LABEL: dlexec.func @slices
// LOWER: %[[X:.+]] = dlexec.input "arg0"
// LOWER: %[[A:.+]] = dlexec.alloc : memref<4x8xf32>
// LOWER: %[[S:.+]] = dlexec.subview %[[A]] {offsets = array<i64: 0, 2>, strides = array<i64: 1, 2>} : memref<4x8xf32> to memref<4x3xf32>
// LOWER: dlexec.kernel @{{.*}}exp ins(%[[S]] : memref<4x3xf32>)
// LOWER: dlexec.library_call "gemm" ins(%[[S]], %{{.+}} : memref<4x3xf32>, memref<3x5xf32>)
// LOWER: dlexec.kernel @{{.*}}slice ins(%[[X]] : memref<4x8xf32>)

// PLAN-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// PLAN-DAG: #[[STRIDED:.+]] = affine_map<(d0, d1) -> (d0, d1 * 2 + 2)>
// PLAN-LABEL: dlexec.func @slices
// PLAN: %[[A:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<4x8xf32>
// PLAN-NOT: subview
// PLAN: dlexec.kernel @{{.*}}exp ins(%[[A]] : memref<4x8xf32>) outs(%{{.+}} : memref<4x3xf32>) attributes {indexing_maps = [#[[STRIDED]], #[[ID]]]
// PLAN: %[[COPY:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<4x3xf32>
// PLAN: dlexec.kernel @slices_subview0 ins(%[[A]] : memref<4x8xf32>) outs(%[[COPY]] : memref<4x3xf32>) attributes {indexing_maps = [#[[STRIDED]], #[[ID]]]
// PLAN-NEXT: ^bb0(%[[V:.+]]: f32, %{{.+}}: f32):
// PLAN-NEXT: dlexec.yield %[[V]] : f32
// PLAN: dlexec.library_call "gemm" ins(%[[COPY]], %{{.+}} : memref<4x3xf32>, memref<3x5xf32>)
// PLAN: dlexec.kernel @{{.*}}slice ins(%{{.+}} : memref<4x8xf32>)
func.func @slices(%x: tensor<4x8xf32>, %w: tensor<3x5xf32>) -> (tensor<4x3xf32>, tensor<4x5xf32>, tensor<2x8xf32>) {
  %a = dlgraph.relu %x : tensor<4x8xf32>
  %s = dlgraph.slice %a {starts = array<i64: 0, 2>, steps = array<i64: 1, 2>} : tensor<4x8xf32> -> tensor<4x3xf32>
  %e = dlgraph.exp %s : tensor<4x3xf32>
  %g = dlgraph.gemm %s, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %i = dlgraph.slice %x {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>} : tensor<4x8xf32> -> tensor<2x8xf32>
  return %e, %g, %i : tensor<4x3xf32>, tensor<4x5xf32>, tensor<2x8xf32>
}

// -----

// A slice of a slice reads the first slice's source (offsets and strides
// composed: rows 1 + 2 * (1 + i) = 3 + 2 i). The exp reads it in place; the
// reduction over columns 0..3 of 6 cannot: its only plain dim for loop 1
// was the view (the composed `d1 mod 6` does not size it), so it reads a
// dense copy.

// PLAN-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// PLAN-DAG: #[[TWICE:.+]] = affine_map<(d0, d1) -> (d0 * 2 + 3, d1 mod 6)>
// PLAN-LABEL: dlexec.func @slice_of_slice
// PLAN: %[[A:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<8x6xf32>
// PLAN-NOT: subview
// PLAN: dlexec.kernel @{{.*}}exp ins(%[[A]] : memref<8x6xf32>) outs(%{{.+}} : memref<2x4xf32>) attributes {indexing_maps = [#[[TWICE]], #[[ID]]]
// PLAN: %[[COPY:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<2x4xf32>
// PLAN: dlexec.kernel @slice_of_slice_subview0 ins(%[[A]] : memref<8x6xf32>) outs(%[[COPY]] : memref<2x4xf32>) attributes {indexing_maps = [#[[TWICE]], #[[ID]]]
// PLAN: dlexec.kernel @{{.*}}reduce_sum ins(%[[COPY]] : memref<2x4xf32>)
func.func @slice_of_slice(%x: tensor<8x6xf32>) -> (tensor<2x4xf32>, tensor<2xf32>) {
  %a = dlgraph.relu %x : tensor<8x6xf32>
  %s = dlgraph.slice %a {starts = array<i64: 1, 0>, steps = array<i64: 2, 1>} : tensor<8x6xf32> -> tensor<4x6xf32>
  %t = dlgraph.slice %s {starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : tensor<4x6xf32> -> tensor<2x4xf32>
  %e = dlgraph.exp %t : tensor<2x4xf32>
  %r = dlgraph.reduce_sum %t {axes = array<i64: 1>} : tensor<2x4xf32> -> tensor<2xf32>
  return %e, %r : tensor<2x4xf32>, tensor<2xf32>
}

// -----

// A slice reshaped into heads (the Q/K/V split of a fused projection) reads
// the projection in place: [2,4,6] -> K = [..., 2:4] -> [2,4,1,2] is the
// view at (0,0,1,0) of [2,4,3,2], so the transpose reads that reshape at
// head 1 + i. Merging whole inner dims works too ([2,4,2] -> [8,2]).

// PLAN-DAG: #[[HEAD:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1 + 1, d3)>
// PLAN-DAG: #[[ROWS:.+]] = affine_map<(d0, d1) -> (d0, d1 + 2)>
// PLAN-LABEL: dlexec.func @qkv_heads
// PLAN: %[[A:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<2x4x6xf32>
// PLAN-NOT: subview
// PLAN: %[[H:.+]] = dlexec.reshape %[[A]] : memref<2x4x6xf32> to memref<2x4x3x2xf32>
// PLAN: dlexec.kernel @{{.*}}transpose ins(%[[H]] : memref<2x4x3x2xf32>) outs(%{{.+}} : memref<2x1x4x2xf32>) attributes {indexing_maps = [#[[HEAD]],
// PLAN: %[[F:.+]] = dlexec.reshape %[[A]] : memref<2x4x6xf32> to memref<8x6xf32>
// PLAN: dlexec.kernel @{{.*}}neg ins(%[[F]] : memref<8x6xf32>) outs(%{{.+}} : memref<8x2xf32>) attributes {indexing_maps = [#[[ROWS]],
// PLAN-NOT: subview
func.func @qkv_heads(%x: tensor<2x4x6xf32>) -> (tensor<2x1x4x2xf32>, tensor<8x2xf32>) {
  %a = dlgraph.relu %x : tensor<2x4x6xf32>
  %k = dlgraph.slice %a {starts = array<i64: 0, 0, 2>, steps = array<i64: 1, 1, 1>} : tensor<2x4x6xf32> -> tensor<2x4x2xf32>
  %h = dlgraph.reshape %k : tensor<2x4x2xf32> to tensor<2x4x1x2xf32>
  %t = dlgraph.transpose %h {perm = array<i64: 0, 2, 1, 3>} : tensor<2x4x1x2xf32> -> tensor<2x1x4x2xf32>
  %f = dlgraph.reshape %k : tensor<2x4x2xf32> to tensor<8x2xf32>
  %n = dlgraph.neg %f : tensor<8x2xf32>
  return %t, %n : tensor<2x1x4x2xf32>, tensor<8x2xf32>
}

// -----

// Copies that stay: the relu's result is also read by the exp (it must
// exist on its own), and the pad's fill writes the padded buffer between
// the producer and the copy (the producer may not write into it first).

// PLAN-LABEL: dlexec.func @copies_that_stay
// PLAN: %[[A:.+]] = dlexec.alloc {offset = {{[0-9]+}} : i64} : memref<2x3xf32>
// PLAN: dlexec.kernel @{{.*}}relu ins(%{{.+}} : memref<2x3xf32>) outs(%[[A]] : memref<2x3xf32>)
// PLAN: %[[AV:.+]] = dlexec.reshape %[[A]]
// PLAN: dlexec.kernel @{{.*}}concat ins(%[[AV]] : memref<2x3xf32>) outs(%{{.+}} : memref<4x3xf32>)
// PLAN: dlexec.kernel @{{.*}}exp ins(%[[A]] : memref<2x3xf32>)
// PLAN: dlexec.kernel @{{.*}}neg ins(%{{.+}} : memref<2x3xf32>) outs(%[[N:.+]] : memref<2x3xf32>)
// PLAN: dlexec.kernel @{{.*}}pad_fill outs(%[[P:.+]] : memref<4x5xf32>)
// PLAN: %[[NV:.+]] = dlexec.reshape %[[N]]
// PLAN: dlexec.kernel @{{.*}}pad ins(%[[NV]] : memref<2x3xf32>) outs(%[[P]] : memref<4x5xf32>)
func.func @copies_that_stay(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<4x3xf32>, tensor<2x3xf32>, tensor<4x5xf32>) {
  %a = dlgraph.relu %x : tensor<2x3xf32>
  %c = dlgraph.concat %a, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %e = dlgraph.exp %a : tensor<2x3xf32>
  %n = dlgraph.neg %y : tensor<2x3xf32>
  %p = dlgraph.pad %n {starts = array<i64: 1, 1>, steps = array<i64: 1, 1>, value = 0.0 : f64} : tensor<2x3xf32> -> tensor<4x5xf32>
  return %c, %e, %p : tensor<4x3xf32>, tensor<2x3xf32>, tensor<4x5xf32>
}
