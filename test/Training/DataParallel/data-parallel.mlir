// RUN: dlc-opt %s --split-input-file --dlgraph-data-parallel="bucket-size=64" | FileCheck %s

// Gradients are packed in the order the backward defines them (%gb2, %gw1,
// %gb1: 16 + 40 + 8 = 64 bytes, one bucket at bucket-size 64), flattened,
// concatenated and all-reduced right after the last of them; they are
// sliced back just before the return, so the rest of the backward runs
// while the bucket is reduced.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: dlgraph.data_parallel.buckets = [{bytes = 64 : i64, gradients = ["b2.grad", "w1.grad", "b1.grad"]}]
// CHECK: %[[GB2:.+]] = dlgraph.neg %arg0 : tensor<4xf32>
// CHECK-NEXT: %[[GW1:.+]] = dlgraph.neg %arg1 : tensor<2x5xf32>
// CHECK-NEXT: %[[GB1:.+]] = dlgraph.neg %arg2 : tensor<2xf32>
// CHECK-NEXT: %[[F1:.+]] = dlgraph.reshape %[[GW1]] : tensor<2x5xf32> to tensor<10xf32>
// CHECK-NEXT: %[[C:.+]] = dlgraph.concat %[[GB2]], %[[F1]], %[[GB1]] {axis = 0 : i64}
// CHECK-NEXT: %[[R:.+]] = dlgraph.all_reduce %[[C]] {reduction = "avg"} : tensor<16xf32>
// CHECK-NEXT: %[[LOSS:.+]] = dlgraph.neg %arg3
// CHECK-NEXT: %[[G0:.+]] = dlgraph.slice %[[R]] {starts = array<i64: 0>, steps = array<i64: 1>} : tensor<16xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[S1:.+]] = dlgraph.slice %[[R]] {starts = array<i64: 4>, steps = array<i64: 1>} : tensor<16xf32> -> tensor<10xf32>
// CHECK-NEXT: %[[G1:.+]] = dlgraph.reshape %[[S1]] : tensor<10xf32> to tensor<2x5xf32>
// CHECK-NEXT: %[[G2:.+]] = dlgraph.slice %[[R]] {starts = array<i64: 14>, steps = array<i64: 1>} : tensor<16xf32> -> tensor<2xf32>
// Results keep their order and names.
// CHECK-NEXT: return %[[LOSS]], %[[G1]], %[[G2]], %[[G0]]
func.func @train_step(%a: tensor<4xf32>, %b: tensor<2x5xf32>, %c: tensor<2xf32>, %d: tensor<f32>)
    -> (tensor<f32> {dlgraph.name = "loss"}, tensor<2x5xf32> {dlgraph.name = "w1.grad"},
        tensor<2xf32> {dlgraph.name = "b1.grad"}, tensor<4xf32> {dlgraph.name = "b2.grad"}) {
  %gb2 = dlgraph.neg %a : tensor<4xf32>
  %gw1 = dlgraph.neg %b : tensor<2x5xf32>
  %gb1 = dlgraph.neg %c : tensor<2xf32>
  %loss = dlgraph.neg %d : tensor<f32>
  return %loss, %gw1, %gb1, %gb2 : tensor<f32>, tensor<2x5xf32>, tensor<2xf32>, tensor<4xf32>
}

// -----

// A bucket is closed when the next gradient would pass bucket-size (64 B):
// 40 B + 32 B > 64, so two buckets, each issued right after its last
// gradient; a gradient alone in its bucket is not concatenated or sliced.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: dlgraph.data_parallel.buckets = [{bytes = 40 : i64, gradients = ["a.grad"]}, {bytes = 32 : i64, gradients = ["b.grad"]}]
// CHECK: %[[GA:.+]] = dlgraph.neg %arg0 : tensor<10xf32>
// CHECK-NEXT: %[[RA:.+]] = dlgraph.all_reduce %[[GA]] {reduction = "avg"} : tensor<10xf32>
// CHECK-NEXT: %[[GB:.+]] = dlgraph.neg %arg1 : tensor<2x4xf32>
// CHECK-NEXT: %[[FB:.+]] = dlgraph.reshape %[[GB]] : tensor<2x4xf32> to tensor<8xf32>
// CHECK-NEXT: %[[RB:.+]] = dlgraph.all_reduce %[[FB]] {reduction = "avg"} : tensor<8xf32>
// CHECK-NEXT: %[[LOSS:.+]] = dlgraph.neg %arg2
// CHECK-NEXT: %[[B:.+]] = dlgraph.reshape %[[RB]] : tensor<8xf32> to tensor<2x4xf32>
// CHECK-NEXT: return %[[LOSS]], %[[RA]], %[[B]]
func.func @train_step(%a: tensor<10xf32>, %b: tensor<2x4xf32>, %d: tensor<f32>)
    -> (tensor<f32> {dlgraph.name = "loss"}, tensor<10xf32> {dlgraph.name = "a.grad"},
        tensor<2x4xf32> {dlgraph.name = "b.grad"}) {
  %ga = dlgraph.neg %a : tensor<10xf32>
  %gb = dlgraph.neg %b : tensor<2x4xf32>
  %loss = dlgraph.neg %d : tensor<f32>
  return %loss, %ga, %gb : tensor<f32>, tensor<10xf32>, tensor<2x4xf32>
}

// -----

// Buckets hold one element type: an f16 gradient between two f32 ones
// closes the bucket before and after it.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: dlgraph.data_parallel.buckets = [{bytes = 8 : i64, gradients = ["a.grad"]}, {bytes = 4 : i64, gradients = ["h.grad"]}, {bytes = 8 : i64, gradients = ["c.grad"]}]
// CHECK: dlgraph.all_reduce %{{.+}} {reduction = "avg"} : tensor<2xf32>
// CHECK: dlgraph.all_reduce %{{.+}} {reduction = "avg"} : tensor<2xf16>
// CHECK: dlgraph.all_reduce %{{.+}} {reduction = "avg"} : tensor<2xf32>
func.func @train_step(%a: tensor<2xf32>, %h: tensor<2xf16>, %c: tensor<2xf32>, %d: tensor<f32>)
    -> (tensor<f32> {dlgraph.name = "loss"}, tensor<2xf32> {dlgraph.name = "a.grad"},
        tensor<2xf16> {dlgraph.name = "h.grad"}, tensor<2xf32> {dlgraph.name = "c.grad"}) {
  %ga = dlgraph.neg %a : tensor<2xf32>
  %gh = dlgraph.neg %h : tensor<2xf16>
  %gc = dlgraph.neg %c : tensor<2xf32>
  %loss = dlgraph.neg %d : tensor<f32>
  return %loss, %ga, %gh, %gc : tensor<f32>, tensor<2xf32>, tensor<2xf16>, tensor<2xf32>
}
