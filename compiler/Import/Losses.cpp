//===- Losses.cpp - ONNX loss ops -> dlgraph ------------------------------===//
//
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, decomposed into a
// one-hot select over axis 1 and reductions.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;

LogicalResult Importer::lossOp() {
  bool sce = node->op_type() == "SoftmaxCrossEntropyLoss";
  std::string reduction = attrString("reduction", "mean");
  bool hasIgnore = findAttr("ignore_index") != nullptr;
  int64_t ignoreIndex = attrInt("ignore_index", 0);
  if (attrFailed)
    return failure();
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return nodeError() << "attribute reduction = '" << reduction
                       << "' is not supported; supported: none, sum, mean";
  Value x = floatOperand(0);
  if (!x)
    return failure();
  Slot *ts = input(1);
  if (!ts)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  Type et = xt.getElementType();
  RankedTensorType tt = ts->type();
  Type te = tt.getElementType();
  int64_t rank = xt.getRank();
  if (!(te.isInteger(32) || te.isInteger(64)) || te.isInteger(1))
    return nodeError() << "target (input '" << node->input(1)
                       << "') has element type " << te
                       << "; supported: int32, int64";
  if (rank < 2)
    return nodeError() << "input must have rank >= 2 ([N, C, d1, ...]), got "
                       << shapeStr(xt.getShape());
  SmallVector<int64_t> expectT(xt.getShape());
  expectT.erase(expectT.begin() + 1);
  if (tt.getShape() != ArrayRef<int64_t>(expectT))
    return nodeError() << "target has shape " << shapeStr(tt.getShape())
                       << ", expected " << shapeStr(expectT)
                       << " for an input of shape " << shapeStr(xt.getShape());
  int64_t c = xt.getDimSize(1);
  // The loss builds a constant of the class ids (and of the kept classes).
  if (c > kMaxFoldElements)
    return nodeError() << c << " classes are too many (at most 2^26)";
  Value w;
  if (hasInput(2)) {
    // Class weights held by an initializer are constants, not parameters:
    // read through a variable, training would update them.
    Slot *ws = input(2);
    if (!ws)
      return failure();
    DenseElementsAttr known = ws->constant;
    // An external-data initializer: its [C] values are copied out of the
    // mapped file (dense constants are what the lowering folds through).
    if (ws->resource)
      if (AsmResourceBlob *blob = ws->resource.getRawHandle().getBlob())
        known =
            DenseElementsAttr::getFromRawBuffer(ws->type(), blob->getData());
    if (known && isa<FloatType>(ws->type().getElementType()))
      w = gr::ConstantOp::create(builder, nodeLoc, cast<ElementsAttr>(known));
    else if (!(w = floatOperand(2)))
      return failure();
    auto wt = cast<RankedTensorType>(w.getType());
    if (wt.getElementType() != et || wt.getRank() != 1 || wt.getDimSize(0) != c)
      return nodeError() << "weight has type " << wt << ", expected a [" << c
                         << "] tensor of the input's element type " << et;
  }
  Value target = materialize(*ts);
  if (sce) {
    Value logp = gr::LogSoftmaxOp::create(builder, nodeLoc, x,
                                          builder.getI64IntegerAttr(1));
    if (failed(define(1, logp)))
      return failure();
    x = logp;
  }
  // One-hot mask [N, C, d...]: target (as [N, 1, d...]) == class index
  // ([1, C, 1...]). Targets outside [0, C) (ignore_index) match no class.
  SmallVector<int64_t> cshape(rank, 1);
  cshape[1] = c;
  SmallVector<int64_t> classIds(c);
  for (int64_t i = 0; i < c; ++i)
    classIds[i] = i;
  Value classes = gr::ConstantOp::create(
      builder, nodeLoc,
      cast<ElementsAttr>(intConstant(RankedTensorType::get(cshape, te),
                                     classIds)));
  SmallVector<int64_t> tshape(tt.getShape());
  tshape.insert(tshape.begin() + 1, 1);
  Value tr = gr::ReshapeOp::create(builder, nodeLoc,
                                   RankedTensorType::get(tshape, te), target);
  Value mask = gr::CompareOp::create(builder, nodeLoc, "eq", tr, classes);
  // Per-class weights [1, C, 1...], zero at an in-range ignore_index.
  bool ignoreInRange = hasIgnore && ignoreIndex >= 0 && ignoreIndex < c;
  auto ctype = RankedTensorType::get(cshape, et);
  Value weff;
  if (ignoreInRange) {
    SmallVector<APFloat> keepv;
    for (int64_t i = 0; i < c; ++i) {
      double v = i == ignoreIndex ? 0.0 : 1.0;
      keepv.push_back(FloatAttr::get(et, v).getValue());
    }
    weff = gr::ConstantOp::create(
        builder, nodeLoc,
        cast<ElementsAttr>(DenseElementsAttr::get(ctype, keepv)));
  }
  if (w) {
    Value wr = gr::ReshapeOp::create(builder, nodeLoc, ctype, w);
    weff = weff ? Value(gr::MulOp::create(builder, nodeLoc, wr, weff))
                : wr;
  }
  Value zero = splatOf(RankedTensorType::get({}, et), 0.0);
  Value picked = gr::SelectOp::create(builder, nodeLoc, mask, x, zero);
  if (weff)
    picked = gr::MulOp::create(builder, nodeLoc, picked, weff);
  Value loss = gr::NegOp::create(
      builder, nodeLoc,
      reduceOver<gr::ReduceSumOp>(picked, {1}, /*keepdims=*/false));
  if (reduction == "none")
    return define(0, loss);
  SmallVector<int64_t> all;
  for (int64_t i = 0; i < (int64_t)expectT.size(); ++i)
    all.push_back(i);
  Value total = reduceOver<gr::ReduceSumOp>(loss, all, /*keepdims=*/false);
  if (reduction == "sum")
    return define(0, total);
  Value denom;
  if (weff) {
    // ONNX: sum(w[t_i] * loss_i) / sum(w[t_i]) over the non-ignored i.
    Value ws = gr::SelectOp::create(builder, nodeLoc, mask, weff, zero);
    SmallVector<int64_t> allX;
    for (int64_t i = 0; i < rank; ++i)
      allX.push_back(i);
    denom = reduceOver<gr::ReduceSumOp>(ws, allX, /*keepdims=*/false);
  } else {
    denom = splatOf(RankedTensorType::get({}, et), (double)product(expectT));
  }
  return define(0, gr::DivOp::create(builder, nodeLoc, total, denom));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::lossOps() {
  static const OpMapping ops[] = {
      {"NegativeLogLikelihoodLoss", 12, &Importer::lossOp},
      {"SoftmaxCrossEntropyLoss", 12, &Importer::lossOp},
  };
  return ops;
}
