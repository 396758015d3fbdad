// RUN: dlc-opt %s --split-input-file --verify-diagnostics --dlgraph-decompose-batch-norm-for-training

// One running statistic a variable, the other computed: training would
// update one and not the other.
module {
  dlgraph.variable @rm : tensor<4xf32> = dense<0.0> : tensor<4xf32>
  func.func @train_step(%x: tensor<1x4x9xf32>) -> tensor<1x4x9xf32> {
    %one = dlgraph.constant dense<1.0> : tensor<4xf32>
    %zero = dlgraph.constant dense<0.0> : tensor<4xf32>
    %m = dlgraph.read_variable @rm : tensor<4xf32>
    // expected-error @+1 {{running variance is computed while the running mean is a variable; training updates both or, for a functional batch norm, neither}}
    %y = dlgraph.batch_norm %x, %one, %zero, %m, %one {momentum = 0.9 : f32} : (tensor<1x4x9xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x9xf32>
    return %y : tensor<1x4x9xf32>
  }
}
