// The dlexec.* attributes a planned module carries
// (dialects/Exec/ExecAttributes.h): one valid use of each, then the
// verifier's errors (a wrong kind or place, an undeclared name).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK: module attributes {dlexec.pipeline = {inputs = ["x"], loss_stage = 1 : i64, micro_batches = 2 : i64
module attributes {
  dlexec.pipeline = {micro_batches = 2 : i64, schedule = "gpipe", loss_stage = 1 : i64,
                     stages = [{forward = "stage0_forward", backward = "stage0_backward", update = "stage0_update", accumulators = []}],
                     transfers = [{name = "h", from = 0 : i64, to = 1 : i64, backward = false}],
                     inputs = ["x"]}
} {
  // CHECK: dlexec.func @train_step attributes {dlexec.data_parallel.buckets = [{bytes = 12 : i64, gradients = ["w.grad"]}], dlexec.remat.added_flops = 3 : i64
  dlexec.func @train_step attributes {
      dlexec.data_parallel.buckets = [{bytes = 12 : i64, gradients = ["w.grad"]}],
      dlexec.remat.recomputed_ops = 1 : i64, dlexec.remat.added_flops = 3 : i64,
      dlexec.remat.step_flops = 30 : i64, dlexec.remat.simulated_peak_before = 24 : i64,
      dlexec.remat.simulated_peak_after = 12 : i64} {
  }
}

// -----

// expected-error @+1 {{attribute 'dlexec.pipeline' field 'stages': entry 0 has no field 'update'}}
module attributes {dlexec.pipeline = {micro_batches = 2 : i64, schedule = "gpipe", loss_stage = 1 : i64, stages = [{forward = "f", backward = "b", accumulators = []}], transfers = [], inputs = []}} {}

// -----

module {
  // expected-error @+1 {{attribute 'dlexec.pipeline' must be on the module}}
  dlexec.func @f attributes {dlexec.pipeline = {}} {
  }
}

// -----

// expected-error @+1 {{attribute 'dlexec.data_parallel.buckets' entry 0 has no field 'bytes'}}
dlexec.func @train_step attributes {dlexec.data_parallel.buckets = [{gradients = []}]} {
}

// -----

// expected-error @+1 {{attribute 'dlexec.remat.step_flops' must be on a dlexec.func}}
module attributes {dlexec.remat.step_flops = 1 : i64} {}

// -----

// expected-error @+1 {{attribute 'dlexec.remat.recomputed_ops' must be a non-negative i64}}
dlexec.func @train_step attributes {dlexec.remat.recomputed_ops = "3"} {
}

// -----

// expected-error @+1 {{attribute 'dlexec.stage' is not a declared dlexec attribute; the declared ones are dlexec.pipeline, dlexec.data_parallel.buckets, dlexec.remat.recomputed_ops, dlexec.remat.added_flops, dlexec.remat.step_flops, dlexec.remat.simulated_peak_before, dlexec.remat.simulated_peak_after (dialects/Exec/ExecAttributes.h)}}
dlexec.func @f attributes {dlexec.stage = 0 : i64} {
}
