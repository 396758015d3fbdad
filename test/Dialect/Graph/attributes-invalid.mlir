// The verifier of the dlgraph.* attributes between phases
// (dialects/Graph/GraphAttributes.h): one error per declared attribute (its
// kind or its place) and an undeclared name.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{attribute 'dlgraph.model_name' must be a string}}
module attributes {dlgraph.model_name = 3 : i64} {}

// -----

// expected-error @+1 {{attribute 'dlgraph.pipeline' has no field 'schedule'}}
module attributes {dlgraph.pipeline = {micro_batches = 2 : i64, loss_stage = 1 : i64, stages = [], transfers = [], inputs = []}} {}

// -----

// expected-error @+1 {{attribute 'dlgraph.pipeline' field 'transfers': entry 0 field 'backward' must be a bool}}
module attributes {dlgraph.pipeline = {micro_batches = 2 : i64, schedule = "gpipe", loss_stage = 1 : i64, stages = [], transfers = [{name = "h", from = 0 : i64, to = 1 : i64, backward = 1 : i64}], inputs = []}} {}

// -----

// expected-error @+1 {{attribute 'dlgraph.memory_budget' field 'budget' must be a non-negative i64}}
module attributes {dlgraph.memory_budget = {budget = -1 : i64, mode = "auto", persistent_before = 1 : i64, inputs_before = 2 : i64, arena_before = 3 : i64, workspace_before = 4 : i64}} {}

// -----

// expected-error @+1 {{attribute 'dlgraph.optimizer_state' must be a unit attribute}}
dlgraph.variable @w : tensor<3xf32> {dlgraph.optimizer_state = true}

// -----

// expected-error @+1 {{attribute 'dlgraph.frozen' must be a string}}
dlgraph.variable @w : tensor<3xf32> {dlgraph.frozen}

// -----

// expected-error @+1 {{attribute 'dlgraph.no_weight_decay' must be on a dlgraph.variable}}
func.func @f() attributes {dlgraph.no_weight_decay} {
  return
}

// -----

// expected-error @+1 {{attribute 'dlgraph.name' must be a string}}
func.func @f(%x: tensor<3xf32> {dlgraph.name = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{attribute 'dlgraph.name' must be on a function argument or result}}
func.func @f() attributes {dlgraph.name = "f"} {
  return
}

// -----

func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{attribute 'dlgraph.stage' must be a non-negative i64}}
  %y = dlgraph.relu %x {dlgraph.stage = -1 : i64} : tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// expected-error @+1 {{attribute 'dlgraph.stage' must be on an op inside a function}}
dlgraph.variable @w : tensor<3xf32> {dlgraph.stage = 0 : i64}

// -----

func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{attribute 'dlgraph.backward' must be a unit attribute}}
  %y = dlgraph.relu %x {dlgraph.backward = 1 : i64} : tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{attribute 'dlgraph.recomputed' must be a unit attribute}}
  %y = dlgraph.relu %x {dlgraph.recomputed = "yes"} : tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// expected-error @+1 {{attribute 'dlgraph.pipeline.stages' entry 0 has no field 'cost'}}
func.func @main() attributes {dlgraph.pipeline.stages = [{ops = 1 : i64}]} {
  return
}

// -----

// expected-error @+1 {{attribute 'dlgraph.data_parallel.buckets' entry 0 field 'gradients' must be an array of strings}}
func.func @train_step() attributes {dlgraph.data_parallel.buckets = [{bytes = 4 : i64, gradients = [1 : i64]}]} {
  return
}

// -----

// expected-error @+1 {{attribute 'dlgraph.remat.added_flops' must be a non-negative i64}}
func.func @train_step() attributes {dlgraph.remat.added_flops = 1.0 : f64} {
  return
}

// -----

// expected-error @+1 {{attribute 'dlgraph.remat.saved_bytes' is not a remat summary key; the keys are recomputed_ops, added_flops, step_flops, simulated_peak_before, simulated_peak_after}}
func.func @train_step() attributes {dlgraph.remat.saved_bytes = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{attribute 'dlgraph.stages' is not a declared dlgraph attribute; the declared ones are dlgraph.name, dlgraph.model_name, dlgraph.optimizer_state, dlgraph.frozen, dlgraph.no_weight_decay, dlgraph.stage, dlgraph.backward, dlgraph.recomputed, dlgraph.pipeline.stages, dlgraph.pipeline, dlgraph.data_parallel.buckets, dlgraph.memory_budget, dlgraph.attention_fusion, dlgraph.remat.recomputed_ops, dlgraph.remat.added_flops, dlgraph.remat.step_flops, dlgraph.remat.simulated_peak_before, dlgraph.remat.simulated_peak_after (dialects/Graph/GraphAttributes.h)}}
module attributes {dlgraph.stages = 2 : i64} {}

// -----

// dlgraph-fuse-attention's record: an i64 count where a string list belongs.
// expected-error @+1 {{attribute 'dlgraph.attention_fusion'}}
module attributes {dlgraph.attention_fusion = {candidates = 1 : i64, fused = 1 : i64, unfused = 3 : i64}} {
}
