//===- Linear.cpp - ONNX Gemm, MatMul and Einsum -> dlgraph ---------------===//
//
// Gemm (transposes, alpha, beta, bias), MatMul (N-D, batch broadcasting),
// Det (Laplace expansion of small matrices) and Einsum (decomposed into
// transposes, reshapes, reductions and matmuls).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/Importer.h"

#include "dialects/Graph/GraphOps.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cctype>
#include <functional>

using namespace mlir;
using namespace dlc::onnx_import;
namespace gr = dlc::graph;
namespace semantics = dlc::semantics;

LogicalResult Importer::gemm() {
  float alpha = attrFloat("alpha", 1.0f), beta = attrFloat("beta", 1.0f);
  int64_t transA = attrInt("transA", 0), transB = attrInt("transB", 0);
  if (attrFailed)
    return failure();
  Value a = operand(0), b = a ? operand(1) : Value();
  if (!b)
    return failure();
  Value c;
  if (hasInput(2) && !(c = operand(2)))
    return failure();
  auto at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(b.getType());
  if (at.getRank() != 2 || bt.getRank() != 2)
    return nodeError() << "A and B must be 2-D, got shapes "
                       << shapeStr(at.getShape()) << " and "
                       << shapeStr(bt.getShape());
  int64_t m = transA ? at.getDimSize(1) : at.getDimSize(0);
  int64_t ka = transA ? at.getDimSize(0) : at.getDimSize(1);
  int64_t kb = transB ? bt.getDimSize(1) : bt.getDimSize(0);
  int64_t n = transB ? bt.getDimSize(0) : bt.getDimSize(1);
  if (ka != kb)
    return nodeError() << "inner dimensions differ: op(A) is [" << m << ", "
                       << ka << "], op(B) is [" << kb << ", " << n << "]";
  if (c) {
    auto ct = cast<RankedTensorType>(c.getType());
    if (!semantics::broadcastsTo(ct.getShape(), ArrayRef<int64_t>{m, n}))
      return nodeError() << "C of shape " << shapeStr(ct.getShape())
                         << " does not broadcast to [" << m << ", " << n << "]";
  }
  return define(0, gr::GemmOp::create(builder, nodeLoc, a, b, c,
                                      builder.getF32FloatAttr(alpha),
                                      builder.getF32FloatAttr(beta),
                                      builder.getBoolAttr(transA != 0),
                                      builder.getBoolAttr(transB != 0)));
}

LogicalResult Importer::matmul() {
  Value a = operand(0), b = a ? operand(1) : Value();
  if (!b)
    return failure();
  auto at = cast<RankedTensorType>(a.getType()),
       bt = cast<RankedTensorType>(b.getType());
  if (at.getRank() < 1 || bt.getRank() < 1)
    return nodeError() << "MatMul operands must have rank >= 1, got shapes "
                       << shapeStr(at.getShape()) << " and "
                       << shapeStr(bt.getShape());
  if (!at.getElementType().isF32() || !bt.getElementType().isF32())
    return nodeError() << "MatMul supports f32 operands, got "
                       << at.getElementType() << " and " << bt.getElementType();
  // numpy.matmul semantics (dlgraph.matmul has them too).
  ArrayRef<int64_t> as = at.getShape(), bs = bt.getShape();
  int64_t ka = as.back(), kb = bs.size() == 1 ? bs[0] : bs[bs.size() - 2];
  if (ka != kb)
    return nodeError() << "contracting dimensions differ: "
                       << shapeStr(as) << " x " << shapeStr(bs);
  ArrayRef<int64_t> aBatch = as.drop_back(std::min<size_t>(as.size(), 2));
  ArrayRef<int64_t> bBatch = bs.drop_back(std::min<size_t>(bs.size(), 2));
  if (!semantics::broadcastShapes(aBatch, bBatch))
    return nodeError() << "MatMul batch dimensions do not broadcast: "
                       << shapeStr(as) << " x " << shapeStr(bs);
  return define(0, gr::MatMulOp::create(builder, nodeLoc, a, b));
}

//===----------------------------------------------------------------------===//
// Det
//===----------------------------------------------------------------------===//

LogicalResult Importer::det() {
  Value x = floatOperand(0);
  if (!x)
    return failure();
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  // Laplace expansion along the first row: n! products, so small n only.
  constexpr int64_t kMaxOrder = 4;
  if (rank < 2 || xt.getDimSize(rank - 1) != xt.getDimSize(rank - 2) ||
      xt.getDimSize(rank - 1) < 1 || xt.getDimSize(rank - 1) > kMaxOrder)
    return nodeError() << "input of shape " << shapeStr(xt.getShape())
                       << " is not supported; supported: [..., n, n] with "
                          "1 <= n <= "
                       << kMaxOrder;
  int64_t n = xt.getDimSize(rank - 1);
  SmallVector<int64_t> batch(xt.getShape().drop_back(2));
  auto batchType = xt.clone(batch);
  // x[..., i, j] as a tensor of the batch shape.
  auto entry = [&](int64_t i, int64_t j) -> Value {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1),
        shape(xt.getShape());
    starts[rank - 2] = i;
    starts[rank - 1] = j;
    shape[rank - 2] = shape[rank - 1] = 1;
    Value v = gr::SliceOp::create(builder, nodeLoc, xt.clone(shape), x,
                                  builder.getDenseI64ArrayAttr(starts),
                                  builder.getDenseI64ArrayAttr(steps));
    return gr::ReshapeOp::create(builder, nodeLoc, batchType, v);
  };
  // The determinant of rows row.. and columns |cols| (ascending).
  std::function<Value(int64_t, ArrayRef<int64_t>)> minor =
      [&](int64_t row, ArrayRef<int64_t> cols) -> Value {
    if (cols.size() == 1)
      return entry(row, cols[0]);
    Value acc;
    for (size_t k = 0; k < cols.size(); ++k) {
      SmallVector<int64_t> rest(cols);
      rest.erase(rest.begin() + k);
      Value term = gr::MulOp::create(builder, nodeLoc, entry(row, cols[k]),
                                     minor(row + 1, rest));
      if (!acc)
        acc = term;
      else if (k % 2)
        acc = gr::SubOp::create(builder, nodeLoc, acc, term);
      else
        acc = gr::AddOp::create(builder, nodeLoc, acc, term);
    }
    return acc;
  };
  SmallVector<int64_t> all;
  for (int64_t j = 0; j < n; ++j)
    all.push_back(j);
  return define(0, minor(0, all));
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

namespace {

/// An Einsum operand (or partial result) with one label per axis: a letter's
/// character code, or kEllipsisLabel + j for the j-th axis of the broadcast
/// "..." dims (counted from the left of the widest ellipsis, so that
/// ellipses of different ranks align on the right, as NumPy broadcasts).
struct Labeled {
  Value value;
  SmallVector<int64_t> labels;
  RankedTensorType type() const {
    return cast<RankedTensorType>(value.getType());
  }
};

constexpr int64_t kEllipsisLabel = 1000;

} // namespace

/// Parses one Einsum term (letters and at most one "...") into |labels|,
/// given the operand's rank (-1 for the output, whose ellipsis has
/// |maxEllipsis| dims). Returns the number of ellipsis dims, or -1 with
/// |error| set.
static int64_t parseEinsumTerm(StringRef term, int64_t rank,
                               int64_t maxEllipsis,
                               SmallVectorImpl<int64_t> &labels,
                               std::string &error) {
  int64_t letters = 0;
  size_t dots = term.find("...");
  for (size_t i = 0; i < term.size(); ++i) {
    if (dots != StringRef::npos && i >= dots && i < dots + 3)
      continue;
    if (!std::isalpha((unsigned char)term[i])) {
      error = "term '" + term.str() + "' has character '" +
              std::string(1, term[i]) + "'; terms hold letters and one '...'";
      return -1;
    }
    ++letters;
  }
  if (dots != StringRef::npos && term.find("...", dots + 3) != StringRef::npos) {
    error = "term '" + term.str() + "' has more than one '...'";
    return -1;
  }
  int64_t ell = 0;
  if (dots != StringRef::npos)
    ell = rank < 0 ? maxEllipsis : rank - letters;
  if (rank >= 0 && (ell < 0 || (dots == StringRef::npos && letters != rank))) {
    error = "term '" + term.str() + "' does not match an input of rank " +
            std::to_string(rank);
    return -1;
  }
  for (size_t i = 0; i < term.size(); ++i) {
    if (dots != StringRef::npos && i == dots) {
      for (int64_t j = 0; j < ell; ++j)
        labels.push_back(kEllipsisLabel + (maxEllipsis - ell) + j);
      i += 2;
      continue;
    }
    labels.push_back((unsigned char)term[i]);
  }
  return ell;
}

/// Transposes |op| so that its labels are |order| (a permutation of them).
static void transposeLabeled(OpBuilder &builder, Location nodeLoc, Labeled &op,
                             ArrayRef<int64_t> order) {
  SmallVector<int64_t> perm;
  for (int64_t label : order)
    perm.push_back(llvm::find(op.labels, label) - op.labels.begin());
  op.labels.assign(order.begin(), order.end());
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return;
  op.value = gr::TransposeOp::create(builder, nodeLoc, op.value,
                                     builder.getDenseI64ArrayAttr(perm));
}

/// |v| reshaped to |shape| (|v| itself if it has that shape).
static Value reshapeIfOther(OpBuilder &builder, Location nodeLoc, Value v,
                            ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getShape() == shape)
    return v;
  return gr::ReshapeOp::create(builder, nodeLoc, t.clone(shape), v);
}

/// Sums |op| over its labels outside |keep|.
static void sumLabelsExcept(OpBuilder &builder, Location nodeLoc, Labeled &op,
                            ArrayRef<int64_t> keep) {
  SmallVector<int64_t> axes, kept;
  for (auto [axis, label] : llvm::enumerate(op.labels)) {
    if (llvm::is_contained(keep, label))
      kept.push_back(label);
    else
      axes.push_back(axis);
  }
  if (axes.empty())
    return;
  op.value =
      gr::ReduceSumOp::create(builder, nodeLoc, op.value,
                              builder.getDenseI64ArrayAttr(axes), UnitAttr());
  op.labels = kept;
}

/// A label repeated within a term selects the diagonal: x times the
/// identity pattern on the two axes, summed over the second.
static void takeDiagonals(OpBuilder &builder, Location nodeLoc, Labeled &op) {
  for (size_t p = 0; p < op.labels.size(); ++p) {
    for (size_t q = p + 1; q < op.labels.size(); ++q) {
      if (op.labels[p] != op.labels[q])
        continue;
      RankedTensorType t = op.type();
      SmallVector<int64_t> shape(t.getRank(), 1);
      int64_t n = t.getDimSize(p);
      shape[p] = shape[q] = n;
      auto maskType = RankedTensorType::get(shape, t.getElementType());
      SmallVector<Attribute> eye;
      for (int64_t i = 0; i < n * n; ++i) {
        bool on = i / n == i % n;
        eye.push_back(isa<FloatType>(t.getElementType())
                          ? (Attribute)builder.getFloatAttr(t.getElementType(),
                                                            on ? 1.0 : 0.0)
                          : (Attribute)builder.getIntegerAttr(
                                t.getElementType(), on ? 1 : 0));
      }
      Value mask = gr::ConstantOp::create(
          builder, nodeLoc,
          cast<ElementsAttr>(DenseElementsAttr::get(maskType, eye)));
      op.value = gr::MulOp::create(builder, nodeLoc, op.value, mask);
      op.value = gr::ReduceSumOp::create(
          builder, nodeLoc, op.value,
          builder.getDenseI64ArrayAttr({(int64_t)q}), UnitAttr());
      op.labels.erase(op.labels.begin() + q);
      --q;
    }
  }
}

LogicalResult Importer::einsum() {
  std::string eq = attrString("equation", "");
  if (attrFailed)
    return failure();
  llvm::erase_if(eq, [](char c) { return std::isspace((unsigned char)c); });
  StringRef lhs = eq, rhs;
  size_t arrow = lhs.find("->");
  bool hasOutput = arrow != StringRef::npos;
  if (hasOutput) {
    rhs = lhs.substr(arrow + 2);
    lhs = lhs.substr(0, arrow);
  }
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if ((int)terms.size() != node->input_size())
    return nodeError() << "equation '" << eq << "' has " << terms.size()
                       << " input terms for " << node->input_size()
                       << " inputs";
  // Operands and their labels.
  SmallVector<Labeled> ops;
  int64_t maxEllipsis = 0;
  std::string error;
  for (size_t i = 0; i < terms.size(); ++i) {
    Value v = operand(i, /*requireF32=*/false);
    if (!v)
      return failure();
    Type et = cast<RankedTensorType>(v.getType()).getElementType();
    if (!isNumeric(et))
      return nodeError() << "input " << i << " ('" << node->input(i)
                         << "') has element type " << elementTypeName(et)
                         << "; supported: float (f32), double (f64), "
                            "float16, bfloat16, int32, int64";
    ops.push_back({v, {}});
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    SmallVector<int64_t> scratch;
    int64_t ell = parseEinsumTerm(terms[i], ops[i].type().getRank(), 0,
                                  scratch, error);
    if (ell < 0)
      return nodeError() << "equation '" << eq << "': " << error;
    maxEllipsis = std::max(maxEllipsis, ell);
  }
  for (size_t i = 0; i < terms.size(); ++i)
    parseEinsumTerm(terms[i], ops[i].type().getRank(), maxEllipsis,
                    ops[i].labels, error);
  // Each label's size: equal wherever it appears, or 1 (broadcast) on an
  // ellipsis axis.
  llvm::DenseMap<int64_t, int64_t> sizes;
  llvm::DenseMap<int64_t, int64_t> uses;
  for (Labeled &op : ops)
    for (auto [axis, label] : llvm::enumerate(op.labels)) {
      int64_t d = op.type().getDimSize(axis);
      auto [it, fresh] = sizes.try_emplace(label, d);
      ++uses[label];
      if (fresh || it->second == d)
        continue;
      if (label >= kEllipsisLabel && (d == 1 || it->second == 1)) {
        it->second = std::max(it->second, d);
        continue;
      }
      return nodeError() << "equation '" << eq << "': label '"
                         << (label >= kEllipsisLabel ? std::string("...")
                                                     : std::string(1, label))
                         << "' has sizes " << it->second << " and " << d;
    }
  SmallVector<int64_t> out;
  if (hasOutput) {
    if (parseEinsumTerm(rhs, -1, maxEllipsis, out, error) < 0)
      return nodeError() << "equation '" << eq << "': " << error;
    for (auto [i, label] : llvm::enumerate(out))
      if (!sizes.count(label) ||
          llvm::is_contained(ArrayRef(out).take_front(i), label))
        return nodeError() << "equation '" << eq << "': output label '"
                           << std::string(1, (char)label)
                           << "' must appear once in the output and in an "
                              "input term";
  } else {
    // Implicit output: the ellipsis dims, then the letters used once, in
    // alphabetical order.
    for (int64_t j = 0; j < maxEllipsis; ++j)
      out.push_back(kEllipsisLabel + j);
    SmallVector<int64_t> once;
    for (auto &[label, n] : uses)
      if (label < kEllipsisLabel && n == 1)
        once.push_back(label);
    llvm::sort(once);
    out.append(once);
  }

  auto transposeTo = [&](Labeled &op, ArrayRef<int64_t> order) {
    transposeLabeled(builder, nodeLoc, op, order);
  };
  auto reshapeTo = [&](Value v, ArrayRef<int64_t> shape) {
    return reshapeIfOther(builder, nodeLoc, v, shape);
  };
  auto reduceExcept = [&](Labeled &op, ArrayRef<int64_t> keep) {
    sumLabelsExcept(builder, nodeLoc, op, keep);
  };
  for (Labeled &op : ops)
    takeDiagonals(builder, nodeLoc, op);
  // Labels that later operands or the output still need.
  auto neededAfter = [&](size_t i) {
    SmallVector<int64_t> keep(out);
    for (size_t j = i + 1; j < ops.size(); ++j)
      keep.append(ops[j].labels);
    return keep;
  };
  Labeled acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    Labeled &b = ops[i];
    SmallVector<int64_t> keep = neededAfter(i);
    SmallVector<int64_t> keepA(keep), keepB(keep);
    keepA.append(b.labels);
    keepB.append(acc.labels);
    reduceExcept(acc, keepA);
    reduceExcept(b, keepB);
    // Batch labels (in both, still needed), contracted ones (in both, not
    // needed), and each side's own.
    SmallVector<int64_t> batch, contract, aOnly, bOnly;
    for (int64_t l : acc.labels) {
      if (!llvm::is_contained(b.labels, l))
        aOnly.push_back(l);
      else if (llvm::is_contained(keep, l))
        batch.push_back(l);
      else
        contract.push_back(l);
    }
    for (int64_t l : b.labels)
      if (!llvm::is_contained(acc.labels, l))
        bOnly.push_back(l);
    Type ea = acc.type().getElementType(), eb = b.type().getElementType();
    if (ea != eb)
      return nodeError() << "inputs have element types " << elementTypeName(ea)
                         << " and " << elementTypeName(eb)
                         << "; supported: one element type";
    for (int64_t l : contract)
      if (acc.type().getDimSize(llvm::find(acc.labels, l) -
                                acc.labels.begin()) !=
          b.type().getDimSize(llvm::find(b.labels, l) - b.labels.begin()))
        return nodeError() << "equation '" << eq
                           << "': a summed '...' axis is broadcast, which is "
                              "not supported";
    auto sizeIn = [](Labeled &op, int64_t label) {
      return op.type().getDimSize(llvm::find(op.labels, label) -
                                  op.labels.begin());
    };
    SmallVector<int64_t> orderA(batch), orderB(batch);
    orderA.append(aOnly);
    orderA.append(contract);
    orderB.append(contract);
    orderB.append(bOnly);
    transposeTo(acc, orderA);
    transposeTo(b, orderB);
    int64_t m = 1, k = 1, n = 1;
    for (int64_t l : aOnly)
      m *= sizeIn(acc, l);
    for (int64_t l : contract)
      k *= sizeIn(acc, l);
    for (int64_t l : bOnly)
      n *= sizeIn(b, l);
    SmallVector<int64_t> shapeA, shapeB, shapeY;
    for (int64_t l : batch) {
      shapeA.push_back(sizeIn(acc, l));
      shapeB.push_back(sizeIn(b, l));
      shapeY.push_back(std::max(sizeIn(acc, l), sizeIn(b, l)));
    }
    SmallVector<int64_t> resultShape(shapeY);
    for (int64_t l : aOnly)
      resultShape.push_back(sizeIn(acc, l));
    for (int64_t l : bOnly)
      resultShape.push_back(sizeIn(b, l));
    Value y;
    if (ea.isF32()) {
      shapeA.append({m, k});
      shapeB.append({k, n});
      y = gr::MatMulOp::create(builder, nodeLoc, reshapeTo(acc.value, shapeA),
                               reshapeTo(b.value, shapeB));
    } else {
      // MatMul takes f32 only: other types multiply [.., M, K, 1] by
      // [.., 1, K, N] and sum over K (M * K * N products in memory).
      shapeA.append({m, k, 1});
      shapeB.append({1, k, n});
      Value prod = gr::MulOp::create(builder, nodeLoc,
                                     reshapeTo(acc.value, shapeA),
                                     reshapeTo(b.value, shapeB));
      y = gr::ReduceSumOp::create(
          builder, nodeLoc, prod,
          builder.getDenseI64ArrayAttr({(int64_t)shapeY.size() + 1}),
          UnitAttr());
    }
    acc.value = reshapeTo(y, resultShape);
    acc.labels = batch;
    acc.labels.append(aOnly);
    acc.labels.append(bOnly);
  }
  reduceExcept(acc, out);
  transposeTo(acc, out);
  return define(0, acc.value);
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

ArrayRef<OpMapping> Importer::linearOps() {
  static const OpMapping ops[] = {
      {"Det", 11, &Importer::det},
      {"Einsum", 12, &Importer::einsum, 28},
      {"Gemm", 6, &Importer::gemm},
      {"MatMul", 1, &Importer::matmul},
  };
  return ops;
}
