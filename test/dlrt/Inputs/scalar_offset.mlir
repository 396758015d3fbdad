// A dlgraph model with a scalar parameter: mean((x * w + s - target)^2).
// With dlc --train --expose-gradients its train_step has a one-element
// output, "s.grad", beside the loss and "w.grad" (4 elements).
module {
  dlgraph.variable @w : tensor<4xf32> = dense<[0.5, -0.25, 1.0, 0.0]> : tensor<4xf32>
  dlgraph.variable @s : tensor<f32> = dense<0.1> : tensor<f32>
  func.func @main(%x: tensor<2x4xf32> {dlgraph.name = "x"}, %t: tensor<2x4xf32> {dlgraph.name = "target"})
      -> (tensor<2x4xf32> {dlgraph.name = "prediction"}, tensor<f32> {dlgraph.name = "mse"}) {
    %w = dlgraph.read_variable @w : tensor<4xf32>
    %s = dlgraph.read_variable @s : tensor<f32>
    %p = dlgraph.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %y = dlgraph.add %p, %s : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %d = dlgraph.sub %y, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %q = dlgraph.mul %d, %d : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %l = dlgraph.reduce_mean %q {axes = array<i64: 0, 1>} : tensor<2x4xf32> -> tensor<f32>
    return %y, %l : tensor<2x4xf32>, tensor<f32>
  }
}
