// half-accumulate.test: the ops that accumulate and run in their operands'
// type under --precision (pooling and its gradients, global average pooling,
// reduce_max and the importer's reduce_min, arg_max/arg_min, a reduction fused with an elementwise
// producer, dropout). The test substitutes XT with f32, bf16 and f16.
module {
  func.func @main(%x: tensor<2x3x6x6xXT> {dlgraph.name = "x"},
                  %dy: tensor<2x3x3x3xXT> {dlgraph.name = "dy"},
                  %v: tensor<4x6xXT> {dlgraph.name = "v"},
                  %w: tensor<4x6xXT> {dlgraph.name = "w"},
                  %step: tensor<f32> {dlgraph.name = "step"},
                  %labels: tensor<4xi64> {dlgraph.name = "labels"})
      -> (tensor<2x3x3x3xXT> {dlgraph.name = "max_pool"},
          tensor<2x3x6x6xXT> {dlgraph.name = "max_pool_grad"},
          tensor<2x3x3x3xXT> {dlgraph.name = "avg_pool"},
          tensor<2x3x6x6xXT> {dlgraph.name = "avg_pool_grad"},
          tensor<2x3x3x3xXT> {dlgraph.name = "avg_pool_pad"},
          tensor<2x3x6x6xXT> {dlgraph.name = "avg_pool_pad_grad"},
          tensor<2x3x1x1xXT> {dlgraph.name = "global_avg"},
          tensor<2x3x1x1xXT> {dlgraph.name = "global_avg_relu"},
          tensor<4xXT> {dlgraph.name = "reduce_max"},
          tensor<6xXT> {dlgraph.name = "reduce_max_mul"},
          tensor<6xXT> {dlgraph.name = "reduce_min"},
          tensor<4xi64> {dlgraph.name = "arg_max"},
          tensor<1x6xi64> {dlgraph.name = "arg_min"},
          tensor<2x3x6x6xXT> {dlgraph.name = "dropout"},
          tensor<2x3x6x6xi1> {dlgraph.name = "dropout_mask"},
          tensor<f32> {dlgraph.name = "f32_ce_loss"},
          tensor<4x6xXT> {dlgraph.name = "ce_grad"}) {
    // 3x3 windows, stride 2, padded on top and left: the border windows are
    // clipped.
    %mp = dlgraph.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : tensor<2x3x6x6xXT> -> tensor<2x3x3x3xXT>
    %mpg = dlgraph.max_pool_grad %x, %dy {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>} : (tensor<2x3x6x6xXT>, tensor<2x3x3x3xXT>) -> tensor<2x3x6x6xXT>
    // Divisors 4, 6 and 9 (the window clipped to the input), and 9 with
    // count_include_pad: sums that are not exact in bf16 and quotients that
    // round.
    %ap = dlgraph.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<2x3x6x6xXT> -> tensor<2x3x3x3xXT>
    %apg = dlgraph.average_pool_grad %x, %dy {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x6x6xXT>, tensor<2x3x3x3xXT>) -> tensor<2x3x6x6xXT>
    %ac = dlgraph.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : tensor<2x3x6x6xXT> -> tensor<2x3x3x3xXT>
    %acg = dlgraph.average_pool_grad %x, %dy {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad} : (tensor<2x3x6x6xXT>, tensor<2x3x3x3xXT>) -> tensor<2x3x6x6xXT>
    %g = dlgraph.global_average_pool %x : tensor<2x3x6x6xXT> -> tensor<2x3x1x1xXT>
    %r = dlgraph.relu %x : tensor<2x3x6x6xXT>
    %gr = dlgraph.global_average_pool %r : tensor<2x3x6x6xXT> -> tensor<2x3x1x1xXT>
    %rm = dlgraph.reduce_max %v {axes = array<i64: 1>} : tensor<4x6xXT> -> tensor<4xXT>
    // The product rounds to the element type before the maximum, as the
    // unfused graph stores it.
    %vw = dlgraph.mul %v, %w : (tensor<4x6xXT>, tensor<4x6xXT>) -> tensor<4x6xXT>
    %rmm = dlgraph.reduce_max %vw {axes = array<i64: 0>} : tensor<4x6xXT> -> tensor<6xXT>
    // ReduceMin as the importer writes it: -reduce_max(-v).
    %nv = dlgraph.neg %v : tensor<4x6xXT>
    %rn = dlgraph.reduce_max %nv {axes = array<i64: 0>} : tensor<4x6xXT> -> tensor<6xXT>
    %mn = dlgraph.neg %rn : tensor<6xXT>
    %am = dlgraph.arg_max %v {axis = 1 : i64} : tensor<4x6xXT> -> tensor<4xi64>
    %an = dlgraph.arg_min %v {axis = 0 : i64, keepdims, select_last_index} : tensor<4x6xXT> -> tensor<1x6xi64>
    %d, %dm = dlgraph.dropout %x, %step {ratio = 0.3 : f32, seed = 77 : i64} : (tensor<2x3x6x6xXT>, tensor<f32>) -> (tensor<2x3x6x6xXT>, tensor<2x3x6x6xi1>)
    // Softmax cross-entropy reads 16-bit logits itself (ReadsLowPrecision):
    // the loss is f32 and equals the f32 package's bit for bit (the logits
    // widen exactly); the gradient is rounded once to the logits' type.
    %ce = dlgraph.softmax_cross_entropy %v, %labels : (tensor<4x6xXT>, tensor<4xi64>) -> tensor<f32>
    %ceg = dlgraph.softmax_cross_entropy_grad %v, %labels, %step : (tensor<4x6xXT>, tensor<4xi64>, tensor<f32>) -> tensor<4x6xXT>
    return %mp, %mpg, %ap, %apg, %ac, %acg, %g, %gr, %rm, %rmm, %mn, %am, %an, %d, %dm, %ce, %ceg : tensor<2x3x3x3xXT>, tensor<2x3x6x6xXT>, tensor<2x3x3x3xXT>, tensor<2x3x6x6xXT>, tensor<2x3x3x3xXT>, tensor<2x3x6x6xXT>, tensor<2x3x1x1xXT>, tensor<2x3x1x1xXT>, tensor<4xXT>, tensor<6xXT>, tensor<6xXT>, tensor<4xi64>, tensor<1x6xi64>, tensor<2x3x6x6xXT>, tensor<2x3x6x6xi1>, tensor<f32>, tensor<4x6xXT>
  }
}
