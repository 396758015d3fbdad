//===- Pool.cpp - ONNX pooling ops -> dlgraph -----------------------------===//
//
// MaxPool, AveragePool and LpPool (1-D, 2-D, 3-D), GlobalAveragePool and
// GlobalMaxPool. LpPool and dilated AveragePool windows are window sums
// (depthwise convolutions with a filter of ones).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/WindowShapes.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

/// Why the pooling windows of |xt| (NC + spatial axes) do not fit (none
/// when they do): the pool op infers its type with the same formula
/// (ceil_mode drops a last window that starts in the right padding, as
/// PyTorch and ONNX Runtime do).
static std::optional<std::string>
windowError(RankedTensorType xt, ArrayRef<int64_t> kernel,
            ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
            ArrayRef<int64_t> dilations, bool ceilMode) {
  const size_t sp = kernel.size();
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = xt.getDimSize(2 + i);
    if (semantics::windowOutputSize(in, kernel[i], strides[i], pads[i],
                                    pads[i + sp], dilations[i], ceilMode))
      continue;
    std::optional<int64_t> eff =
        semantics::dilatedKernelExtent(kernel[i], dilations[i]);
    std::optional<int64_t> padded = semantics::checkedAdd(in, pads[i]);
    if (padded)
      padded = semantics::checkedAdd(*padded, pads[i + sp]);
    std::string error;
    llvm::raw_string_ostream os(error);
    if (!eff || !padded || *padded - *eff >= 0)
      os << "kernel_shape, dilations, strides or pads overflow int64 along "
            "spatial axis "
         << i;
    else
      os << "the kernel (" << *eff
         << ") is larger than the padded input along spatial axis " << i;
    return error;
  }
  return std::nullopt;
}

/// The divisor of each output position of an average pool of |xt| (NC +
/// spatial axes) whose output has spatial |outDims|: the taps inside the
/// input, or inside the padded input with |countIncludePad| (never those of
/// a ceil_mode window past it), in row-major order over |outDims|.
static SmallVector<float>
averageDivisors(RankedTensorType xt, ArrayRef<int64_t> outDims,
                ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                bool countIncludePad) {
  const size_t sp = outDims.size();
  SmallVector<float> count(product(outDims), 1.0f);
  int64_t inner = count.size();
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = xt.getDimSize(2 + i), od = outDims[i];
    inner /= od;
    int64_t lo = countIncludePad ? -pads[i] : 0;
    int64_t hi = countIncludePad ? in + pads[i + sp] : in;
    for (size_t e = 0; e < count.size(); ++e) {
      int64_t o = (int64_t)(e / inner) % od, c = 0;
      for (int64_t j = 0; j < kernel[i]; ++j) {
        int64_t at = o * strides[i] - pads[i] + j * dilations[i];
        c += at >= lo && at < hi;
      }
      count[e] *= (float)c;
    }
  }
  return count;
}

FailureOr<Value> Importer::maxPoolFlatIndices(Value x, ArrayRef<int64_t> kernel,
                                              ArrayRef<int64_t> strides,
                                              ArrayRef<int64_t> pads,
                                              ArrayRef<int64_t> dilations,
                                              bool ceilMode,
                                              int64_t storageOrder) {
  auto xt = cast<RankedTensorType>(x.getType());
  // The plane offsets below are a constant of N x C elements.
  if (boundedNumElements({xt.getDimSize(0), xt.getDimSize(1)},
                         kMaxFoldElements) < 0) {
    nodeError() << "the Indices output over " << xt.getDimSize(0) << " x "
                << xt.getDimSize(1)
                << " planes (N x C) is beyond the importer's constant limit "
                   "of "
                << kMaxFoldElements << " elements";
    return failure();
  }
  // max_pool_indices gives ih * W + iw within each [H, W] plane; ONNX
  // counts over the whole [N, C, H, W] input, and with storage_order = 1
  // as iw * H + ih.
  Value idx = gr::MaxPoolIndicesOp::create(
      builder, nodeLoc, x, builder.getDenseI64ArrayAttr(kernel),
      builder.getDenseI64ArrayAttr(strides), builder.getDenseI64ArrayAttr(pads),
      builder.getDenseI64ArrayAttr(dilations),
      ceilMode ? builder.getUnitAttr() : UnitAttr(), UnitAttr());
  auto it = cast<RankedTensorType>(idx.getType()).clone(builder.getI64Type());
  idx = gr::CastOp::create(builder, nodeLoc, it, idx);
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), h = xt.getDimSize(2),
          w = xt.getDimSize(3);
  if (storageOrder == 1) {
    Value row = gr::DivOp::create(builder, nodeLoc, idx, splatOf(it, w));
    Value col = gr::ModOp::create(builder, nodeLoc, idx, splatOf(it, w));
    idx = gr::AddOp::create(
        builder, nodeLoc,
        gr::MulOp::create(builder, nodeLoc, col, splatOf(it, h)), row);
  }
  SmallVector<int64_t> planes;
  for (int64_t p = 0; p < n * c; ++p)
    planes.push_back(p * h * w);
  auto planeType = RankedTensorType::get({n, c, 1, 1}, builder.getI64Type());
  Value offsets = gr::ConstantOp::create(
      builder, nodeLoc, cast<ElementsAttr>(intConstant(planeType, planes)));
  return Value(gr::AddOp::create(builder, nodeLoc, idx, offsets));
}

template <typename OpTy> LogicalResult Importer::pool() {
  bool isMax = std::is_same<OpTy, gr::MaxPoolOp>::value;
  // LpPool: (sum of |x|^p over the window)^(1/p), window sums by sumPool.
  bool isLp = node->op_type() == "LpPool";
  int64_t p = 0;
  std::string autoPad = attrString("auto_pad", "NOTSET");
  SmallVector<int64_t> kernel = attrInts("kernel_shape", {});
  SmallVector<int64_t> strides = attrInts("strides", {1, 1});
  SmallVector<int64_t> pads = attrInts("pads", {0, 0, 0, 0});
  SmallVector<int64_t> dilations = {1, 1};
  int64_t ceilMode = attrInt("ceil_mode", 0);
  int64_t countIncludePad = 0;
  // MaxPool's Indices output (1-D and 2-D pooling): flat indices into the
  // input, row major (storage_order = 0) or with each plane column major.
  int64_t storageOrder = 0;
  bool indicesUsed = false;
  if (isMax) {
    dilations = attrInts("dilations", {1, 1});
    storageOrder = attrInt("storage_order", 0);
    if (storageOrder != 0 && storageOrder != 1)
      return nodeError() << "attribute storage_order = " << storageOrder
                         << " is not supported; supported: 0 (row major), 1 "
                            "(column major)";
    indicesUsed = node->output_size() > 1 && !node->output(1).empty() &&
                  consumed.contains(node->output(1));
    if (failed(requireOnlyLeadingOutputs(2)))
      return failure();
  } else if (isLp) {
    p = attrInt("p", 2);
    // LpPool has dilations and ceil_mode since opset 18.
    if (opset >= 18)
      dilations = attrInts("dilations", {1, 1});
    else
      ceilMode = 0;
  } else {
    countIncludePad = attrInt("count_include_pad", 0);
    // AveragePool has dilations since opset 19: the pool kernels average
    // undilated windows, so dilated ones become window sums (sumPool).
    if (opset >= 19)
      dilations = attrInts("dilations", {1, 1});
  }
  if (attrFailed)
    return failure();
  Value x = operand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  // 1-D pooling is 2-D pooling over an inserted H axis of size 1.
  bool is1D = xt.getRank() == 3;
  if (is1D) {
    if (failed(liftTo2D(kernel, strides, pads, dilations)))
      return failure();
    x = insertUnitH(x);
    xt = cast<RankedTensorType>(x.getType());
  }
  bool is3D = xt.getRank() == 5;
  if (xt.getRank() != 4 && !is3D)
    return nodeError() << "only 1-D, 2-D and 3-D pooling over NCL/NCHW/NCDHW "
                          "input is supported, got "
                       << shapeStr(xt.getShape());
  // Number of spatial axes (the 2-D defaults above are widened for 3-D).
  size_t sp = is3D ? 3 : 2;
  if (is3D) {
    if (!findAttr("strides"))
      strides = {1, 1, 1};
    if (!findAttr("pads"))
      pads = {0, 0, 0, 0, 0, 0};
    if (!findAttr("dilations") || (!isMax && !isLp && opset < 19) ||
        (isLp && opset < 18))
      dilations = {1, 1, 1};
  }
  if (autoPad == "VALID")
    pads.assign(2 * sp, 0);
  else if ((autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") &&
           kernel.size() == sp && strides.size() == sp &&
           dilations.size() == sp)
    setSameAutoPads(xt.getShape().drop_front(2), kernel, strides, dilations,
                    autoPad == "SAME_LOWER", pads);
  else if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
           autoPad != "SAME_LOWER")
    return nodeError() << "attribute auto_pad = '" << autoPad
                       << "' is not supported; supported: NOTSET (explicit "
                          "pads), VALID, SAME_UPPER, SAME_LOWER";
  if (kernel.size() != sp || strides.size() != sp || pads.size() != 2 * sp ||
      dilations.size() != sp)
    return nodeError() << "expects " << sp << " kernel dims, " << sp
                       << " strides, " << sp << " dilations and " << 2 * sp
                       << " pads, got " << kernel.size() << ", "
                       << strides.size() << ", " << dilations.size() << " and "
                       << pads.size();
  if (llvm::any_of(kernel, [](int64_t k) { return k < 1; }) ||
      llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return nodeError() << "kernel_shape, strides and dilations must be >= 1 "
                          "and pads >= 0";
  if (ceilMode != 0 && ceilMode != 1)
    return nodeError() << "attribute ceil_mode = " << ceilMode
                       << " is not supported; supported: 0, 1";
  // Reported here, at the node, before the pool op infers its type with the
  // same formula (ceil_mode drops a last window that starts in the right
  // padding, as PyTorch and ONNX Runtime do).
  if (std::optional<std::string> error =
          windowError(xt, kernel, strides, pads, dilations, ceilMode != 0))
    return nodeError() << *error;
  if (isLp && p < 1)
    return nodeError() << "attribute p = " << p << " must be >= 1";
  bool dilated = llvm::any_of(dilations, [](int64_t d) { return d != 1; });
  if (isLp || (!isMax && dilated)) {
    if (!cast<RankedTensorType>(x.getType()).getElementType().isF32())
      return nodeError() << "input 0 ('" << node->input(0)
                         << "') must be float (f32) for "
                         << (isLp ? "LpPool" : "a dilated AveragePool");
    SmallVector<int64_t> out;
    Value v = x;
    if (isLp) {
      v = gr::AbsOp::create(builder, nodeLoc, v);
      v = p == 1   ? v
          : p == 2 ? Value(gr::MulOp::create(builder, nodeLoc, v, v))
                   : Value(gr::PowOp::create(builder, nodeLoc, v,
                                             splatLike(v, (double)p)));
    }
    Value sum = sumPool(v, kernel, strides, pads, dilations, ceilMode != 0);
    Value y;
    if (isLp) {
      y = p == 1   ? sum
          : p == 2 ? Value(gr::SqrtOp::create(builder, nodeLoc, sum))
                   : Value(gr::PowOp::create(builder, nodeLoc, sum,
                                             splatLike(sum, 1.0 / p)));
    } else {
      // The divisor: taps inside the input, or inside the padded input with
      // count_include_pad (never those of a ceil_mode window past it).
      auto st = cast<RankedTensorType>(sum.getType());
      ArrayRef<int64_t> outDims = st.getShape().drop_front(2);
      SmallVector<float> count = averageDivisors(
          xt, outDims, kernel, strides, pads, dilations, countIncludePad != 0);
      auto ct = RankedTensorType::get(outDims, st.getElementType());
      Value cv = gr::ConstantOp::create(
          builder, nodeLoc,
          cast<ElementsAttr>(DenseElementsAttr::get(ct, ArrayRef(count))));
      y = gr::DivOp::create(builder, nodeLoc, sum, cv);
    }
    return define(0, is1D ? dropUnitH(y) : y);
  }
  auto pool2D = [&](Value in, ArrayRef<int64_t> k, ArrayRef<int64_t> st,
                    ArrayRef<int64_t> pd, ArrayRef<int64_t> dl) -> Value {
    return OpTy::create(builder, nodeLoc, in, builder.getDenseI64ArrayAttr(k),
                        builder.getDenseI64ArrayAttr(st),
                        builder.getDenseI64ArrayAttr(pd),
                        builder.getDenseI64ArrayAttr(dl),
                        ceilMode ? builder.getUnitAttr() : UnitAttr(),
                        countIncludePad ? builder.getUnitAttr() : UnitAttr());
  };
  if (is3D && indicesUsed)
    return nodeError() << "output 1 ('" << node->output(1)
                       << "', the indices) of a 3-D MaxPool is not "
                          "supported; supported: indices of 1-D and 2-D "
                          "MaxPool";
  if (is3D) {
    // 3-D pooling is separable: the window is a box and the per-axis output
    // sizes are independent, so max (first maximum in D, H, W scan order)
    // and average (the divisor, clipped to the padded or the real input, is
    // a product of per-axis counts) are a 2-D pool over (H, W) of
    // [N, C*D, H, W] followed by one over (D, 1) of [N*C, 1, D, OH*OW].
    // Gradients follow from the 2-D pools'.
    int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), d = xt.getDimSize(2);
    Value hw = gr::ReshapeOp::create(
        builder, nodeLoc,
        xt.clone({n, c * d, xt.getDimSize(3), xt.getDimSize(4)}), x);
    hw = pool2D(hw, {kernel[1], kernel[2]}, {strides[1], strides[2]},
                {pads[1], pads[2], pads[4], pads[5]},
                {dilations[1], dilations[2]});
    auto hwt = cast<RankedTensorType>(hw.getType());
    int64_t oh = hwt.getDimSize(2), ow = hwt.getDimSize(3);
    Value dv = gr::ReshapeOp::create(
        builder, nodeLoc, hwt.clone({n * c, 1, d, oh * ow}), hw);
    dv = pool2D(dv, {kernel[0], 1}, {strides[0], 1}, {pads[0], 0, pads[3], 0},
                {dilations[0], 1});
    int64_t od = cast<RankedTensorType>(dv.getType()).getDimSize(2);
    return define(0, gr::ReshapeOp::create(builder, nodeLoc,
                                           hwt.clone({n, c, od, oh, ow}), dv));
  }
  Value op = pool2D(x, kernel, strides, pads, dilations);
  if (indicesUsed) {
    FailureOr<Value> idx = maxPoolFlatIndices(x, kernel, strides, pads,
                                              dilations, ceilMode != 0,
                                              storageOrder);
    if (failed(idx) || failed(define(1, is1D ? dropUnitH(*idx) : *idx)))
      return failure();
  }
  if (is1D)
    return define(0, dropUnitH(op));
  return define(0, op);
}

Value Importer::sumPool(Value x, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                        ArrayRef<int64_t> dilations, bool ceilMode) {
  auto xt = cast<RankedTensorType>(x.getType());
  size_t sp = kernel.size();
  // ceil_mode's last, partial window: zero padding past the end (sums
  // ignore it).
  SmallVector<int64_t> pd(pads);
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = xt.getDimSize(2 + i);
    int64_t out = *semantics::windowOutputSize(in, kernel[i], strides[i],
                                               pads[i], pads[i + sp],
                                               dilations[i], ceilMode);
    int64_t need = (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1;
    pd[i + sp] += std::max<int64_t>(0, need - (in + pads[i] + pads[i + sp]));
  }
  Type et = xt.getElementType();
  // A depthwise convolution with a filter of ones, one group per channel.
  auto conv = [&](Value in, ArrayRef<int64_t> k, ArrayRef<int64_t> st,
                  ArrayRef<int64_t> p, ArrayRef<int64_t> dl) -> Value {
    int64_t ch = cast<RankedTensorType>(in.getType()).getDimSize(1);
    Value w = splatOf(RankedTensorType::get({ch, 1, k[0], k[1]}, et), 1.0);
    return gr::ConvOp::create(builder, nodeLoc, in, w, Value(),
                              builder.getDenseI64ArrayAttr(st),
                              builder.getDenseI64ArrayAttr(p),
                              builder.getDenseI64ArrayAttr(dl),
                              builder.getI64IntegerAttr(ch));
  };
  if (sp == 2)
    return conv(x, kernel, strides, pd, dilations);
  // 3-D: window sums are separable, (H, W) over [N, C*D, H, W], then D over
  // [N*C, 1, D, OH*OW] (as pool() does for 3-D pools).
  int64_t n = xt.getDimSize(0), c = xt.getDimSize(1), d = xt.getDimSize(2);
  Value hw = reshapeIfNeeded(
      x, {n, c * d, xt.getDimSize(3), xt.getDimSize(4)});
  hw = conv(hw, {kernel[1], kernel[2]}, {strides[1], strides[2]},
            {pd[1], pd[2], pd[4], pd[5]}, {dilations[1], dilations[2]});
  auto hwt = cast<RankedTensorType>(hw.getType());
  int64_t oh = hwt.getDimSize(2), ow = hwt.getDimSize(3);
  Value dv = reshapeIfNeeded(hw, {n * c, 1, d, oh * ow});
  dv = conv(dv, {kernel[0], 1}, {strides[0], 1}, {pd[0], 0, pd[3], 0},
            {dilations[0], 1});
  int64_t od = cast<RankedTensorType>(dv.getType()).getDimSize(2);
  return reshapeIfNeeded(dv, {n, c, od, oh, ow});
}

LogicalResult Importer::globalAveragePool() {
  Value x = operand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() < 3)
    return nodeError() << "input must have rank >= 3 (N, C, spatial...), got "
                       << shapeStr(xt.getShape());
  return define(0, gr::GlobalAveragePoolOp::create(builder, nodeLoc, x));
}

LogicalResult Importer::globalMaxPool() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  if (xt.getRank() < 3)
    return nodeError() << "input must have rank >= 3 (N, C, spatial...), got "
                       << shapeStr(xt.getShape());
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < xt.getRank(); ++i)
    axes.push_back(i);
  return define(0, reduceOver<gr::ReduceMaxOp>(x, axes, /*keepdims=*/true));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::poolOps() {
  static const OpMapping ops[] = {
      {"AveragePool", 1, &Importer::pool<gr::AveragePoolOp>, 19},
      {"GlobalAveragePool", 1, &Importer::globalAveragePool},
      {"GlobalMaxPool", 1, &Importer::globalMaxPool},
      {"LpPool", 11, &Importer::pool<gr::AveragePoolOp>, 22},
      {"MaxPool", 1, &Importer::pool<gr::MaxPoolOp>},
  };
  return ops;
}
