// A 4-layer tanh MLP with dropout (64x16 activations) for test/tools/dlc-remat.test.
module {
  dlgraph.variable @w0 : tensor<16x16xf32> = dense<0.125> : tensor<16x16xf32> {trainable}
  dlgraph.variable @w1 : tensor<16x16xf32> = dense<0.125> : tensor<16x16xf32> {trainable}
  dlgraph.variable @w2 : tensor<16x16xf32> = dense<0.125> : tensor<16x16xf32> {trainable}
  dlgraph.variable @w3 : tensor<16x16xf32> = dense<0.125> : tensor<16x16xf32> {trainable}
  dlgraph.variable @dropout_step : tensor<f32> = dense<3.0> : tensor<f32>
  dlgraph.variable @wo : tensor<10x16xf32> = dense<0.25> : tensor<10x16xf32> {trainable}
  func.func @main(%x: tensor<64x16xf32> {dlgraph.name = "x"}) -> (tensor<64x10xf32> {dlgraph.name = "y"}) {
    %w0 = dlgraph.read_variable @w0 : tensor<16x16xf32>
    %h0 = dlgraph.gemm %x, %w0 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %t0 = dlgraph.tanh %h0 : tensor<64x16xf32>
    %step = dlgraph.read_variable @dropout_step : tensor<f32>
    %a0, %m0 = dlgraph.dropout %t0, %step {ratio = 5.0e-01 : f32, seed = 7 : i64} : (tensor<64x16xf32>, tensor<f32>) -> (tensor<64x16xf32>, tensor<64x16xi1>)
    %w1 = dlgraph.read_variable @w1 : tensor<16x16xf32>
    %h1 = dlgraph.gemm %a0, %w1 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %a1 = dlgraph.tanh %h1 : tensor<64x16xf32>
    %w2 = dlgraph.read_variable @w2 : tensor<16x16xf32>
    %h2 = dlgraph.gemm %a1, %w2 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %a2 = dlgraph.tanh %h2 : tensor<64x16xf32>
    %w3 = dlgraph.read_variable @w3 : tensor<16x16xf32>
    %h3 = dlgraph.gemm %a2, %w3 {trans_b = true} : (tensor<64x16xf32>, tensor<16x16xf32>) -> tensor<64x16xf32>
    %a3 = dlgraph.tanh %h3 : tensor<64x16xf32>
    %wo = dlgraph.read_variable @wo : tensor<10x16xf32>
    %y = dlgraph.gemm %a3, %wo {trans_b = true} : (tensor<64x16xf32>, tensor<10x16xf32>) -> tensor<64x10xf32>
    return %y : tensor<64x10xf32>
  }
}
