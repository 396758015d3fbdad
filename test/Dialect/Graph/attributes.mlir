// One valid use of each declared dlgraph.* attribute between phases
// (dialects/Graph/GraphAttributes.h); attributes-invalid.mlir has the errors.
// RUN: dlc-opt %s | dlc-opt | FileCheck %s

// CHECK: module attributes {dlgraph.memory_budget = {{.*}}, dlgraph.model_name = "m", dlgraph.pipeline = {{.*}}}
module attributes {
  dlgraph.model_name = "m",
  dlgraph.pipeline = {micro_batches = 2 : i64, schedule = "gpipe", loss_stage = 1 : i64,
                      stages = [{forward = "stage0_forward", backward = "stage0_backward", update = "stage0_update", accumulators = ["w.grad_accumulator"]}],
                      transfers = [{name = "h", from = 0 : i64, to = 1 : i64, backward = false}],
                      inputs = ["x"]},
  dlgraph.memory_budget = {budget = 1024 : i64, mode = "auto", persistent_before = 1 : i64, inputs_before = 2 : i64, arena_before = 3 : i64, workspace_before = 4 : i64}
} {
  // CHECK: dlgraph.variable @w : tensor<3xf32> {dlgraph.no_weight_decay, trainable}
  dlgraph.variable @w : tensor<3xf32> {trainable, dlgraph.no_weight_decay}
  // CHECK: dlgraph.variable @w.momentum : tensor<3xf32> {dlgraph.optimizer_state}
  dlgraph.variable @w.momentum : tensor<3xf32> {dlgraph.optimizer_state}
  // CHECK: dlgraph.variable @mask : tensor<3xf32> {dlgraph.frozen = "--freeze"}
  dlgraph.variable @mask : tensor<3xf32> {dlgraph.frozen = "--freeze"}

  // CHECK: func.func @main(%{{.*}}: tensor<3xf32> {dlgraph.name = "x"}) -> (tensor<3xf32> {dlgraph.name = "y"})
  // CHECK-SAME: dlgraph.pipeline.stages = [{activation_bytes = 12 : i64
  func.func @main(%x: tensor<3xf32> {dlgraph.name = "x"}) -> (tensor<3xf32> {dlgraph.name = "y"})
      attributes {dlgraph.pipeline.stages = [{ops = 1 : i64, cost = 1.0e-3 : f64, forward = 4.0e-4 : f64, backward = 6.0e-4 : f64, transfer = 0.0 : f64, param_bytes = 12 : i64, activation_bytes = 12 : i64, first = "/Relu", last = "/Relu"}]} {
    // CHECK: dlgraph.relu %{{.*}} {dlgraph.stage = 0 : i64}
    %y = dlgraph.relu %x {dlgraph.stage = 0 : i64} : tensor<3xf32>
    return %y : tensor<3xf32>
  }

  // CHECK: func.func @train_step
  // CHECK-SAME: dlgraph.data_parallel.buckets = [{bytes = 12 : i64, gradients = ["w.grad"]}]
  // CHECK-SAME: dlgraph.remat.added_flops = 3 : i64
  func.func @train_step(%x: tensor<3xf32>) -> tensor<3xf32>
      attributes {dlgraph.data_parallel.buckets = [{bytes = 12 : i64, gradients = ["w.grad"]}],
                  dlgraph.remat.recomputed_ops = 1 : i64, dlgraph.remat.added_flops = 3 : i64,
                  dlgraph.remat.step_flops = 30 : i64, dlgraph.remat.simulated_peak_before = 24 : i64,
                  dlgraph.remat.simulated_peak_after = 12 : i64} {
    // CHECK: dlgraph.relu %{{.*}} {dlgraph.backward, dlgraph.recomputed, dlgraph.stage = 1 : i64}
    %y = dlgraph.relu %x {dlgraph.stage = 1 : i64, dlgraph.backward, dlgraph.recomputed} : tensor<3xf32>
    return %y : tensor<3xf32>
  }
}
