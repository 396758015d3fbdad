// RUN: dlc-opt %s --dlgraph-apply-optimizer="accumulate=4 momentum=0.9" | FileCheck %s --check-prefix=ACC
// RUN: not dlc-opt %s --dlgraph-apply-optimizer="accumulate=0" 2>&1 | FileCheck %s --check-prefix=BAD

// --accumulate 4: the call count decides whether the update applies; each
// write of the optimizer selects between the new and the old value; the
// gradient goes to its accumulator and the update reads the mean.

module {
  dlgraph.variable @w : tensor<3xf32> = dense<0.5> : tensor<3xf32> {trainable}
  func.func @train_step(%x: tensor<3xf32>) -> (tensor<f32> {dlgraph.name = "loss"}, tensor<3xf32> {dlgraph.name = "w.grad"}) {
    %w = dlgraph.read_variable @w : tensor<3xf32>
    %y = dlgraph.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %loss = dlgraph.reduce_sum %y {axes = array<i64: 0>} : tensor<3xf32> -> tensor<f32>
    return %loss, %x : tensor<f32>, tensor<3xf32>
  }
}

// ACC: dlgraph.variable @w : tensor<3xf32>
// ACC: dlgraph.variable @w.grad_accumulator : tensor<3xf32> {dlgraph.optimizer_state}
// ACC: dlgraph.variable @__step : tensor<f32> {dlgraph.optimizer_state}
// ACC-NEXT: dlgraph.variable @__accumulate_count : tensor<f32> {dlgraph.optimizer_state}
// ACC-LABEL: func.func @train_step(
// ACC-SAME: %[[X:[^:]+]]: tensor<3xf32>)
// ACC: %[[W:.+]] = dlgraph.read_variable @w :
// ACC: %[[S0:.+]] = dlgraph.read_variable @__step
// ACC: %[[S1:.+]] = dlgraph.add %[[S0]]
// ACC: %[[C0:.+]] = dlgraph.read_variable @__accumulate_count
// ACC: %[[C1:.+]] = dlgraph.add %[[C0]]
// ACC: %[[N:.+]] = dlgraph.constant dense<4.000000e+00>
// ACC: %[[APPLY:.+]] = dlgraph.compare "ge", %[[C1]], %[[N]]
// ACC: %[[CNEXT:.+]] = dlgraph.select %[[APPLY]], %{{.+}}, %[[C1]]
// ACC: dlgraph.write_variable @__accumulate_count, %[[CNEXT]]
// ACC: %[[SNEXT:.+]] = dlgraph.select %[[APPLY]], %[[S1]], %[[S0]]
// ACC: dlgraph.write_variable @__step, %[[SNEXT]]
// ACC: %[[A0:.+]] = dlgraph.read_variable @w.grad_accumulator
// ACC: %[[SUM:.+]] = dlgraph.add %[[A0]], %[[X]]
// ACC: %[[ZERO:.+]] = dlgraph.constant dense<0.000000e+00> : tensor<3xf32>
// ACC: %[[ANEXT:.+]] = dlgraph.select %[[APPLY]], %[[ZERO]], %[[SUM]]
// ACC: dlgraph.write_variable @w.grad_accumulator, %[[ANEXT]]
// ACC: %[[QUARTER:.+]] = dlgraph.constant dense<2.500000e-01> : tensor<f32>
// ACC: %[[MEAN:.+]] = dlgraph.mul %[[SUM]], %[[QUARTER]]
// ACC: %[[B0:.+]] = dlgraph.read_variable @w.momentum_buffer
// ACC: %[[NEW:.+]], %[[NB:.+]] = dlgraph.sgd_update %[[W]], %[[MEAN]], %[[B0]], %[[S1]], %{{.+}}
// ACC: %[[PW:.+]] = dlgraph.select %[[APPLY]], %[[NEW]], %[[W]]
// ACC: dlgraph.write_variable @w, %[[PW]]
// ACC: %[[PB:.+]] = dlgraph.select %[[APPLY]], %[[NB]], %[[B0]]
// ACC: dlgraph.write_variable @w.momentum_buffer, %[[PB]]

// BAD: error: --dlgraph-apply-optimizer: --accumulate must be in [1, 2^24] (the call count is f32), got 0
