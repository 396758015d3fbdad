// A dlgraph model that computes its own loss: mean((x * w + b - target)^2).
module {
  dlgraph.variable @w : tensor<4xf32> = dense<[0.5, -0.25, 1.0, 0.0]> : tensor<4xf32>
  dlgraph.variable @b : tensor<4xf32> = dense<0.1> : tensor<4xf32>
  func.func @main(%x: tensor<2x4xf32> {dlgraph.name = "x"}, %t: tensor<2x4xf32> {dlgraph.name = "target"})
      -> (tensor<2x4xf32> {dlgraph.name = "prediction"}, tensor<f32> {dlgraph.name = "mse"}) {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %b = dlgraph.read_variable @b : tensor<4xf32>
    %p = dlgraph.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %y = dlgraph.add %p, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %d = dlgraph.sub %y, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %s = dlgraph.mul %d, %d : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %l = dlgraph.reduce_mean %s {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
    return %y, %l : tensor<2x4xf32>, tensor<f32>
  }
}
