// The conversion to dlexec carries what the dlgraph phases recorded for
// codegen and `dlc --stats` (dialects/Exec/ExecAttributes.h): the pipeline
// record moves from the module's dlgraph.pipeline to dlexec.pipeline, the
// gradient buckets and the remat summary go from @train_step to its
// dlexec.func; the other module attributes stay.
// RUN: dlc-opt %s --dlgraph-lower-to-dlexec | FileCheck %s

// CHECK: module attributes {dlexec.pipeline = {inputs = ["x"], loss_stage = 0 : i64, micro_batches = 2 : i64, schedule = "gpipe", stages = [], transfers = []}, dlgraph.model_name = "m"}
// CHECK-NOT: dlgraph.pipeline
// CHECK: dlexec.func @train_step attributes {dlexec.data_parallel.buckets = [{bytes = 12 : i64, gradients = ["w.grad"]}], dlexec.remat.added_flops = 3 : i64, dlexec.remat.recomputed_ops = 1 : i64, dlexec.remat.simulated_peak_after = 12 : i64, dlexec.remat.simulated_peak_before = 24 : i64, dlexec.remat.step_flops = 30 : i64}
// CHECK-NOT: dlgraph.
module attributes {
  dlgraph.model_name = "m",
  dlgraph.pipeline = {micro_batches = 2 : i64, schedule = "gpipe", loss_stage = 0 : i64, stages = [], transfers = [], inputs = ["x"]}
} {
  func.func @train_step(%x: tensor<3xf32> {dlgraph.name = "x"}) -> (tensor<3xf32> {dlgraph.name = "y"})
      attributes {dlgraph.data_parallel.buckets = [{bytes = 12 : i64, gradients = ["w.grad"]}],
                  dlgraph.remat.recomputed_ops = 1 : i64, dlgraph.remat.added_flops = 3 : i64,
                  dlgraph.remat.step_flops = 30 : i64, dlgraph.remat.simulated_peak_before = 24 : i64,
                  dlgraph.remat.simulated_peak_after = 12 : i64} {
    %y = dlgraph.relu %x : tensor<3xf32>
    return %y : tensor<3xf32>
  }
}
