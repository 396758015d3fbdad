// RUN: dlc-opt %s --dlgraph-lower-to-dlexec | FileCheck %s

// An all-reduce runs in place on a buffer only it reads (%n), and
// asynchronously: the unrelated kernel and the view of its result come
// before the wait, which precedes the first read. An all-reduce of a value
// that lives on (the input %a) reduces a copy. A result nobody reads is
// waited for at the end of the function, before the outputs.
// CHECK-LABEL: dlexec.func @main
// CHECK: %[[A:.+]] = dlexec.input "a"
// CHECK: %[[N:.+]] = dlexec.alloc : memref<4xf32>
// CHECK: dlexec.kernel @main_k0_neg ins(%[[A]] : memref<4xf32>) outs(%[[N]] : memref<4xf32>)
// CHECK: dlexec.all_reduce %[[N]] {reduction = "avg"} : memref<4xf32>
// CHECK-NOT: dlexec.wait
// CHECK: dlexec.kernel @main_k1_neg ins(%[[A]] : memref<4xf32>)
// CHECK: %[[V:.+]] = dlexec.reshape %[[N]] : memref<4xf32> to memref<2x2xf32>
// CHECK-NEXT: dlexec.wait %[[N]] : memref<4xf32>
// CHECK-NEXT: %[[O:.+]] = dlexec.alloc : memref<2x2xf32>
// CHECK-NEXT: dlexec.kernel @main_k2_neg ins(%[[V]] : memref<2x2xf32>)
// CHECK: %[[C:.+]] = dlexec.alloc : memref<4xf32>
// CHECK-NEXT: dlexec.kernel @main_k3_all_reduce ins(%[[A]] : memref<4xf32>) outs(%[[C]] : memref<4xf32>)
// CHECK: dlexec.all_reduce %[[C]] {reduction = "sum"} : memref<4xf32>
// CHECK: dlexec.kernel @main_k4_add
// CHECK: dlexec.wait %[[C]] : memref<4xf32>
// CHECK-NEXT: dlexec.output "y"
func.func @main(%a: tensor<4xf32> {dlgraph.name = "a"}) -> (tensor<2x2xf32> {dlgraph.name = "y"}, tensor<4xf32> {dlgraph.name = "z"}) {
  %n = dlgraph.neg %a : tensor<4xf32>
  %r = dlgraph.all_reduce %n {reduction = "avg"} : tensor<4xf32>
  %m = dlgraph.neg %a : tensor<4xf32>
  %v = dlgraph.reshape %r : tensor<4xf32> to tensor<2x2xf32>
  %o = dlgraph.neg %v : tensor<2x2xf32>
  %s = dlgraph.all_reduce %a {reduction = "sum"} : tensor<4xf32>
  %t = dlgraph.add %m, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %o, %t : tensor<2x2xf32>, tensor<4xf32>
}
