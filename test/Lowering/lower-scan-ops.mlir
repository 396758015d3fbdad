// RUN: dlc-opt %s --split-input-file --dlgraph-lower-to-dlexec | FileCheck %s

// CumSum is a reduction kernel over the result's loops plus a loop j along
// the axis (the input is read at j there): each element adds x[j] where
// j <= i (exclusive: j < i; reverse: >= and >), i being the result's index
// along the axis. The compare is on the loop indices, unsigned.
// CHECK-DAG: #[[IN:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: dlexec.func @cumsum_exclusive
// CHECK: %[[X:.+]] = dlexec.input "arg0" : memref<2x5xf32>
// CHECK: %[[Y:.+]] = dlexec.alloc : memref<2x5xf32>
// CHECK: dlexec.kernel @{{.*}}cumsum ins(%[[X]] : memref<2x5xf32>) outs(%[[Y]] : memref<2x5xf32>) attributes {indexing_maps = [#[[IN]], #[[OUT]]], init = [0.000000e+00 : f32], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: ^bb0(%[[V:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK: %[[I:.+]] = dlexec.index 1 : index
// CHECK: %[[J:.+]] = dlexec.index 2 : index
// CHECK: %[[TAKE:.+]] = arith.cmpi ult, %[[J]], %[[I]] : index
// CHECK: %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[T:.+]] = arith.select %[[TAKE]], %[[V]], %[[Z]] : f32
// CHECK: %[[S:.+]] = arith.addf %[[ACC]], %[[T]] : f32
// CHECK: dlexec.yield %[[S]] : f32
func.func @cumsum_exclusive(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %y = dlgraph.cumsum %x {axis = 1 : i64, exclusive} : tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// Integer sums add with arith.addi; the four (exclusive, reverse) forms pick
// the four comparisons.
// CHECK-LABEL: dlexec.func @cumsum_forms
// CHECK: init = [0], iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpi uge
// CHECK: arith.addi
// CHECK: arith.cmpi ugt
// CHECK: arith.cmpi ule
func.func @cumsum_forms(%x: tensor<7xi64>, %f: tensor<7xf64>) -> (tensor<7xi64>, tensor<7xf64>, tensor<7xf64>) {
  %a = dlgraph.cumsum %x {axis = 0 : i64, reverse} : tensor<7xi64>
  %b = dlgraph.cumsum %f {axis = 0 : i64, exclusive, reverse} : tensor<7xf64>
  %c = dlgraph.cumsum %f {axis = 0 : i64} : tensor<7xf64>
  return %a, %b, %c : tensor<7xi64>, tensor<7xf64>, tensor<7xf64>
}

// -----

// OneHot is an elementwise kernel over the result that reads the index at
// the other loops, wraps a negative one by depth and compares it with the
// loop index along the axis.
// CHECK-DAG: #[[IDX:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: dlexec.func @one_hot
// CHECK: %[[I:.+]] = dlexec.input "arg0" : memref<2x3xi32>
// CHECK: %[[Y:.+]] = dlexec.alloc : memref<2x4x3xf32>
// CHECK: dlexec.kernel @{{.*}}one_hot ins(%[[I]] : memref<2x3xi32>) outs(%[[Y]] : memref<2x4x3xf32>) attributes {indexing_maps = [#[[IDX]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK: ^bb0(%[[V:.+]]: i32, %{{.+}}: f32):
// CHECK: %[[V64:.+]] = arith.extsi %[[V]] : i32 to i64
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i64
// CHECK: %[[DEPTH:.+]] = arith.constant 4 : i64
// CHECK: %[[NEG:.+]] = arith.cmpi slt, %[[V64]], %[[ZERO]] : i64
// CHECK: %[[UP:.+]] = arith.addi %[[V64]], %[[DEPTH]] : i64
// CHECK: %[[W:.+]] = arith.select %[[NEG]], %[[UP]], %[[V64]] : i64
// CHECK: %[[K:.+]] = dlexec.index 1 : index
// CHECK: %[[K64:.+]] = arith.index_cast %[[K]] : index to i64
// CHECK: %[[HIT:.+]] = arith.cmpi eq, %[[W]], %[[K64]] : i64
// CHECK: %[[OFF:.+]] = arith.constant -5.000000e-01 : f32
// CHECK: %[[ON:.+]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[R:.+]] = arith.select %[[HIT]], %[[ON]], %[[OFF]] : f32
// CHECK: dlexec.yield %[[R]] : f32
func.func @one_hot(%i: tensor<2x3xi32>) -> tensor<2x4x3xf32> {
  %y = dlgraph.one_hot %i {axis = 1 : i64, depth = 4 : i64, off_value = -0.5 : f32, on_value = 2.0 : f32} : tensor<2x3xi32> -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// Float indices truncate toward zero (arith.fptosi) first.
// CHECK-LABEL: dlexec.func @one_hot_float_indices
// CHECK: ^bb0(%[[V:.+]]: f64, %{{.+}}: i32):
// CHECK: arith.fptosi %[[V]] : f64 to i64
func.func @one_hot_float_indices(%i: tensor<5xf64>) -> tensor<5x3xi32> {
  %y = dlgraph.one_hot %i {axis = 1 : i64, depth = 3 : i64, off_value = 0 : i32, on_value = 1 : i32} : tensor<5xf64> -> tensor<5x3xi32>
  return %y : tensor<5x3xi32>
}

// -----

// A splat input is read from a constant buffer, not inlined: its map is the
// only one that sizes the loop along the axis.
// CHECK-LABEL: dlexec.func @cumsum_splat
// CHECK: %[[C:.+]] = dlexec.variable_ref @{{.+}} : memref<2x3xf32>
// CHECK: dlexec.kernel @{{.*}}cumsum ins(%[[C]] : memref<2x3xf32>)
func.func @cumsum_splat() -> tensor<2x3xf32> {
  %s = dlgraph.constant dense<2.0> : tensor<2x3xf32>
  %y = dlgraph.cumsum %s {axis = 1 : i64, reverse} : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// A splat index is inlined into the one-hot kernel (the output sizes every
// loop); a rank-0 index gives a rank-1 one-hot.
// CHECK-DAG: #[[NONE:.+]] = affine_map<(d0) -> ()>
// CHECK-DAG: #[[ONE:.+]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: dlexec.func @one_hot_splat
// CHECK: dlexec.kernel @{{.*}}one_hot outs(%{{.+}} : memref<3x4xf32>)
// CHECK: arith.constant -1 : i64
// CHECK-LABEL: dlexec.func @one_hot_scalar
// CHECK: dlexec.kernel @{{.*}}one_hot ins(%{{.+}} : memref<i64>) outs(%{{.+}} : memref<5xf32>) attributes {indexing_maps = [#[[NONE]], #[[ONE]]]
func.func @one_hot_splat() -> tensor<3x4xf32> {
  %c = dlgraph.constant dense<-1> : tensor<3xi64>
  %y = dlgraph.one_hot %c {axis = 1 : i64, depth = 4 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<3xi64> -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}
func.func @one_hot_scalar(%i: tensor<i64>) -> tensor<5xf32> {
  %y = dlgraph.one_hot %i {axis = 0 : i64, depth = 5 : i64, off_value = 0.0 : f32, on_value = 1.0 : f32} : tensor<i64> -> tensor<5xf32>
  return %y : tensor<5xf32>
}
