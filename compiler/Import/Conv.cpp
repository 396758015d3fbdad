//===- Conv.cpp - ONNX Conv and ConvTranspose -> dlgraph ------------------===//
//
// Conv and ConvTranspose (1-D, 2-D, 3-D; auto_pad, groups, bias), and the
// window helpers the pools share (1-D nodes lifted to 2-D, SAME padding).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"
#include "runtime/schema/Semantics/WindowShapes.h"

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

LogicalResult Importer::liftTo2D(SmallVectorImpl<int64_t> &kernel,
                                 SmallVectorImpl<int64_t> &strides,
                                 SmallVectorImpl<int64_t> &pads,
                                 SmallVectorImpl<int64_t> &dilations) {
  auto lift = [&](StringRef name, SmallVectorImpl<int64_t> &v,
                  size_t n) -> bool {
    if (!findAttr(name))
      return true;
    if (v.size() != n)
      return false;
    SmallVector<int64_t> old(v.begin(), v.end());
    v.clear();
    if (n == 1)
      v.append({name == "pads" ? 0 : 1, old[0]});
    else
      v.append({0, old[0], 0, old[1]});
    return true;
  };
  if (!lift("kernel_shape", kernel, 1) || !lift("strides", strides, 1) ||
      !lift("dilations", dilations, 1) || !lift("pads", pads, 2))
    return nodeError() << "a 1-D (rank-3 input) " << node->op_type()
                       << " needs 1 value in kernel_shape, strides and "
                          "dilations and 2 in pads";
  return success();
}

Value Importer::insertUnitH(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.insert(shape.begin() + 2, 1);
  return gr::ReshapeOp::create(builder, nodeLoc, t.clone(shape), v);
}

Value Importer::dropUnitH(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.erase(shape.begin() + 2);
  return gr::ReshapeOp::create(builder, nodeLoc, t.clone(shape), v);
}

void Importer::setSameAutoPads(ArrayRef<int64_t> in, ArrayRef<int64_t> kernel,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> dilations, bool lower,
                               SmallVectorImpl<int64_t> &pads) {
  size_t n = in.size();
  pads.assign(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (auto p = semantics::sameAutoPads(in[i], kernel[i], strides[i],
                                         dilations[i], lower)) {
      pads[i] = p->first;
      pads[i + n] = p->second;
    }
  }
}

/// For Conv and ConvTranspose after a 1-D input was lifted to 2-D: checks
/// that input and weight are both rank 4 or both rank 5, and for rank 5
/// widens the 2-D defaults of the attributes the node does not set to three
/// spatial axes. Returns the number of spatial axes (2 or 3).
FailureOr<size_t> Importer::convSpatialAxes(StringRef what,
                                            RankedTensorType xt,
                                            RankedTensorType wt,
                                            SmallVectorImpl<int64_t> &strides,
                                            SmallVectorImpl<int64_t> &dilations,
                                            SmallVectorImpl<int64_t> &pads) {
  bool is3D = xt.getRank() == 5 && wt.getRank() == 5;
  if ((xt.getRank() != 4 || wt.getRank() != 4) && !is3D)
    return nodeError() << "only 1-D, 2-D and 3-D " << what
                       << " (rank-3/4/5 input and weight) is supported, got "
                          "input "
                       << shapeStr(xt.getShape()) << " and weight "
                       << shapeStr(wt.getShape());
  if (!is3D)
    return 2;
  if (!findAttr("strides"))
    strides.assign({1, 1, 1});
  if (!findAttr("dilations"))
    dilations.assign({1, 1, 1});
  if (!findAttr("pads"))
    pads.assign({0, 0, 0, 0, 0, 0});
  return 3;
}

LogicalResult Importer::readConvNode(StringRef what, ConvNode &c) {
  c.autoPad = attrString("auto_pad", "NOTSET");
  c.kernel = attrInts("kernel_shape", {});
  c.strides = attrInts("strides", {1, 1});
  c.pads = attrInts("pads", {0, 0, 0, 0});
  c.dilations = attrInts("dilations", {1, 1});
  c.group = attrInt("group", 1);
  if (attrFailed)
    return failure();
  c.x = operand(0);
  c.w = c.x ? operand(1) : Value();
  if (!c.w)
    return failure();
  if (hasInput(2) && !(c.bias = operand(2)))
    return failure();
  c.xt = cast<RankedTensorType>(c.x.getType());
  c.wt = cast<RankedTensorType>(c.w.getType());
  // A 1-D convolution is a 2-D one over an inserted H axis of size 1.
  c.is1D = c.xt.getRank() == 3 && c.wt.getRank() == 3;
  if (c.is1D) {
    if (failed(liftTo2D(c.kernel, c.strides, c.pads, c.dilations)))
      return failure();
    c.x = insertUnitH(c.x);
    c.w = insertUnitH(c.w);
    c.xt = cast<RankedTensorType>(c.x.getType());
    c.wt = cast<RankedTensorType>(c.w.getType());
  }
  FailureOr<size_t> spatial =
      convSpatialAxes(what, c.xt, c.wt, c.strides, c.dilations, c.pads);
  if (failed(spatial))
    return failure();
  c.spatial = *spatial;
  return success();
}

LogicalResult Importer::conv() {
  ConvNode cn;
  if (failed(readConvNode("convolution", cn)))
    return failure();
  std::string &autoPad = cn.autoPad;
  SmallVector<int64_t> &kernel = cn.kernel, &strides = cn.strides,
                       &pads = cn.pads, &dilations = cn.dilations;
  int64_t group = cn.group;
  Value x = cn.x, w = cn.w, bias = cn.bias;
  RankedTensorType xt = cn.xt, wt = cn.wt;
  bool is1D = cn.is1D;
  size_t sp = cn.spatial;
  if (autoPad == "VALID")
    pads.assign(2 * sp, 0);
  else if ((autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") &&
           strides.size() == sp && dilations.size() == sp)
    setSameAutoPads(xt.getShape().drop_front(2), wt.getShape().drop_front(2),
                    strides, dilations, autoPad == "SAME_LOWER", pads);
  else if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
           autoPad != "SAME_LOWER")
    return nodeError() << "attribute auto_pad = '" << autoPad
                       << "' is not supported; supported: NOTSET (explicit "
                          "pads), VALID, SAME_UPPER, SAME_LOWER";
  if (strides.size() != sp || dilations.size() != sp || pads.size() != 2 * sp)
    return nodeError() << "expects " << sp << " strides, " << sp
                       << " dilations and " << 2 * sp << " pads, got "
                       << strides.size() << ", " << dilations.size() << " and "
                       << pads.size();
  if (!kernel.empty() &&
      ArrayRef<int64_t>(kernel) != wt.getShape().drop_front(2))
    return nodeError() << "attribute kernel_shape " << shapeStr(kernel)
                       << " does not match the weight's spatial dims "
                       << shapeStr(wt.getShape().drop_front(2));
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return nodeError() << "strides and dilations must be >= 1 and pads >= 0";
  int64_t c = xt.getDimSize(1), o = wt.getDimSize(0);
  if (group < 1 || c % group || o % group || wt.getDimSize(1) * group != c)
    return nodeError() << "weight " << shapeStr(wt.getShape()) << " with group "
                       << group << " does not fit " << c << " input channels";
  if (bias) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != o)
      return nodeError() << "bias has shape " << shapeStr(bt.getShape())
                         << ", expected [" << o << "]";
  }
  // Reported here, at the node, before dlgraph.conv infers its type with
  // the same formula.
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = xt.getDimSize(2 + i), k = wt.getDimSize(2 + i);
    if (semantics::windowOutputSize(in, k, strides[i], pads[i], pads[i + sp],
                                    dilations[i]))
      continue;
    if (k < 1)
      return nodeError() << "the weight " << shapeStr(wt.getShape())
                         << " is empty along spatial axis " << i;
    std::optional<int64_t> eff =
        semantics::dilatedKernelExtent(k, dilations[i]);
    std::optional<int64_t> padded = semantics::checkedAdd(in, pads[i]);
    if (padded)
      padded = semantics::checkedAdd(*padded, pads[i + sp]);
    if (!eff || !padded)
      return nodeError() << "dilations or pads overflow int64 along spatial "
                            "axis "
                         << i;
    return nodeError() << "the kernel (" << *eff
                       << " with dilation) is larger than the padded input "
                          "along spatial axis "
                       << i;
  }
  Value y = gr::ConvOp::create(builder, nodeLoc, x, w, bias,
                               builder.getDenseI64ArrayAttr(strides),
                               builder.getDenseI64ArrayAttr(pads),
                               builder.getDenseI64ArrayAttr(dilations),
                               builder.getI64IntegerAttr(group));
  if (is1D)
    y = dropUnitH(y);
  return define(0, y);
}

// ConvTranspose is the adjoint of a convolution: y = conv_backward_data(x, w)
// where w [C_in, C_out/group, kH, kW] is the filter of the convolution that
// maps y's shape back to x's. Its output size per spatial axis is
// stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads, and the
// extra output_padding rows at the end get no contribution (only the bias).
LogicalResult Importer::convTranspose() {
  SmallVector<int64_t> outPad = attrInts("output_padding", {0, 0});
  SmallVector<int64_t> outShape = attrInts("output_shape", {});
  if (attrFailed)
    return failure();
  ConvNode cn;
  if (failed(readConvNode("ConvTranspose", cn)))
    return failure();
  std::string &autoPad = cn.autoPad;
  SmallVector<int64_t> &kernel = cn.kernel, &strides = cn.strides,
                       &pads = cn.pads, &dilations = cn.dilations;
  int64_t group = cn.group;
  Value x = cn.x, w = cn.w, bias = cn.bias;
  RankedTensorType xt = cn.xt, wt = cn.wt;
  bool is1D = cn.is1D;
  size_t sp = cn.spatial;
  if (is1D) {
    if (findAttr("output_padding")) {
      if (outPad.size() != 1)
        return nodeError() << "a 1-D ConvTranspose needs 1 output_padding";
      outPad = {0, outPad[0]};
    }
    if (!outShape.empty()) {
      // output_shape may list the whole output shape or its spatial part.
      if (outShape.size() == 3)
        outShape.erase(outShape.begin(), outShape.begin() + 2);
      if (outShape.size() != 1)
        return nodeError() << "a 1-D ConvTranspose needs 1 output_shape value";
      outShape = {1, outShape[0]};
    }
  }
  if (sp == 3 && !findAttr("output_padding"))
    outPad = {0, 0, 0};
  if (outShape.size() == sp + 2)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (strides.size() != sp || dilations.size() != sp ||
      pads.size() != 2 * sp || outPad.size() != sp ||
      (!outShape.empty() && outShape.size() != sp))
    return nodeError() << "expects " << sp
                       << " strides, dilations, output_padding and "
                          "output_shape values and "
                       << 2 * sp << " pads, got "
                       << strides.size() << ", " << dilations.size() << ", "
                       << outPad.size() << ", " << outShape.size() << " and "
                       << pads.size();
  if (!kernel.empty() &&
      ArrayRef<int64_t>(kernel) != wt.getShape().drop_front(2))
    return nodeError() << "attribute kernel_shape " << shapeStr(kernel)
                       << " does not match the weight's spatial dims "
                       << shapeStr(wt.getShape().drop_front(2));
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }) ||
      llvm::any_of(pads, [](int64_t p) { return p < 0; }) ||
      llvm::any_of(outPad, [](int64_t p) { return p < 0; }))
    return nodeError() << "strides and dilations must be >= 1, pads and "
                          "output_padding >= 0";
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return nodeError() << "attribute auto_pad = '" << autoPad
                       << "' is not supported; supported: NOTSET (explicit "
                          "pads), VALID, SAME_UPPER, SAME_LOWER";
  int64_t cIn = xt.getDimSize(1);
  if (group < 1 || wt.getDimSize(0) != cIn || cIn % group)
    return nodeError() << "weight " << shapeStr(wt.getShape()) << " with group "
                       << group << " does not fit " << cIn
                       << " input channels (expected [C_in, C_out/group, "
                          "kH, kW])";
  int64_t cOut = wt.getDimSize(1) * group;
  if (bias) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (bt.getRank() != 1 || bt.getDimSize(0) != cOut)
      return nodeError() << "bias has shape " << shapeStr(bt.getShape())
                         << ", expected [" << cOut << "]";
  }
  SmallVector<int64_t> shape = {xt.getDimSize(0), cOut};
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = xt.getDimSize(2 + i), k = wt.getDimSize(2 + i),
            s = strides[i], d = dilations[i];
    if (in < 1 || k < 1)
      return nodeError() << "input " << shapeStr(xt.getShape())
                         << " and weight " << shapeStr(wt.getShape())
                         << " must not be empty along spatial axis " << i;
    CheckedMath m;
    std::optional<int64_t> extent = semantics::dilatedKernelExtent(k, d);
    // The output size without pads; std::nullopt only on overflow here.
    std::optional<int64_t> full =
        semantics::convTransposeOutputSize(in, k, s, 0, 0, d, outPad[i]);
    m.overflowed |= !extent || !full;
    int64_t eff = extent.value_or(0);
    int64_t out;
    if (!outShape.empty() || autoPad == "SAME_UPPER" ||
        autoPad == "SAME_LOWER") {
      // ONNX: the pads come from the requested output size; an odd total
      // puts the extra element at the end for SAME_UPPER, at the beginning
      // otherwise. A negative total leaves extra rows at the end.
      out = outShape.empty() ? m.mul(in, s) : outShape[i];
      int64_t total = std::max<int64_t>(0, m.sub(full.value_or(0), out));
      pads[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + sp] = total - pads[i];
    } else {
      if (autoPad == "VALID")
        pads[i] = pads[i + sp] = 0;
      std::optional<int64_t> padded = semantics::convTransposeOutputSize(
          in, k, s, pads[i], pads[i + sp], d, outPad[i]);
      // std::nullopt: the pads leave no output (out < 1, reported below).
      out = padded ? *padded
                   : m.sub(m.sub(full.value_or(0), pads[i]), pads[i + sp]);
    }
    m.add(m.add(out, pads[i]), pads[i + sp]); // windowOutputSize's terms
    if (m.overflowed)
      return nodeError() << "strides, dilations, pads or output sizes "
                            "overflow int64 along spatial axis "
                         << i;
    // The convolution that y's shape maps back to x's must give exactly
    // |in| outputs (rows past its last window only take the bias).
    if (out < 1 ||
        semantics::windowOutputSize(out, k, s, pads[i], pads[i + sp], d) !=
            std::optional<int64_t>(in))
      return nodeError() << "output size " << out << " along spatial axis "
                         << i << " is not reachable from input size " << in
                         << " (stride " << s << ", kernel extent " << eff
                         << ", pads " << pads[i] << "/" << pads[i + sp]
                         << "); output_padding must be smaller than the "
                            "stride";
    shape.push_back(out);
  }
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  Value y = gr::ConvBackwardDataOp::create(
      builder, nodeLoc, type, x, w, builder.getDenseI64ArrayAttr(strides),
      builder.getDenseI64ArrayAttr(pads),
      builder.getDenseI64ArrayAttr(dilations), builder.getI64IntegerAttr(group));
  if (bias) {
    SmallVector<int64_t> bshape(sp + 1, 1);
    bshape[0] = cOut;
    Value b = gr::ReshapeOp::create(
        builder, nodeLoc, RankedTensorType::get(bshape, builder.getF32Type()),
        bias);
    y = gr::AddOp::create(builder, nodeLoc, y, b);
  }
  if (is1D)
    y = dropUnitH(y);
  return define(0, y);
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::convOps() {
  static const OpMapping ops[] = {
      {"Conv", 1, &Importer::conv},
      {"ConvTranspose", 1, &Importer::convTranspose},
  };
  return ops;
}
