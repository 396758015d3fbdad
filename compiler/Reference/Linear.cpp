//===- Linear.cpp - gemm and matmul in the reference interpreter ----------===//
#include "compiler/Reference/Evaluators.h"

#include "dialects/Graph/GraphOps.h"

#include <algorithm>

using namespace mlir;
using namespace dlc::graph;
using namespace dlc::reference;

namespace {

/// ONNX Gemm: alpha * op(A) op(B) + beta * C (C broadcast, optional).
Tensor evalGemm(Frame &frame, GemmOp o) {
  const Tensor &a = frame.get(o.getA()), &b = frame.get(o.getB());
  auto ys = shapeOf(o.getResult());
  int64_t m = ys[0], n = ys[1];
  int64_t k = o.getTransA() ? a.shape[0] : a.shape[1];
  double alpha = o.getAlpha().convertToDouble(),
         beta = o.getBeta().convertToDouble();
  Tensor y(ys);
  if (o.getC())
    y = mapN(ys, {&frame.get(o.getC())},
             [&](const Vals &v) { return beta * v[0]; });
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l) {
        double av = o.getTransA() ? a.data[l * a.shape[1] + i]
                                  : a.data[i * a.shape[1] + l];
        double bv = o.getTransB() ? b.data[j * b.shape[1] + l]
                                  : b.data[l * b.shape[1] + j];
        s += av * bv;
      }
      y.data[i * n + j] += alpha * s;
    }
  return y;
}

/// numpy.matmul: promote 1-D operands, broadcast the batch dims.
Tensor evalMatMul(Frame &frame, MatMulOp o) {
  const Tensor &a = frame.get(o.getLhs()), &b = frame.get(o.getRhs());
  std::vector<int64_t> as = a.shape, bs = b.shape;
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  size_t batchRank = std::max(as.size(), bs.size()) - 2;
  std::vector<int64_t> batch(batchRank), sa(batchRank), sb(batchRank);
  int64_t strideA = m * k, strideB = k * n, count = 1;
  for (size_t i = batchRank; i-- > 0;) {
    size_t offA = batchRank - (as.size() - 2),
           offB = batchRank - (bs.size() - 2);
    int64_t da = i < offA ? 1 : as[i - offA];
    int64_t db = i < offB ? 1 : bs[i - offB];
    batch[i] = std::max(da, db);
    sa[i] = da == 1 ? 0 : strideA;
    sb[i] = db == 1 ? 0 : strideB;
    strideA *= da;
    strideB *= db;
    count *= batch[i];
  }
  Tensor y(shapeOf(o.getResult()));
  for (int64_t p = 0; p < count; ++p) {
    int64_t oa = 0, ob = 0, rest = p;
    for (size_t i = batchRank; i-- > 0;) {
      int64_t idx = rest % batch[i];
      rest /= batch[i];
      oa += idx * sa[i];
      ob += idx * sb[i];
    }
    double *yp = y.data.data() + p * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t l = 0; l < k; ++l)
          yp[i * n + j] += a.data[oa + i * k + l] * b.data[ob + l * n + j];
  }
  return y;
}

} // namespace

void dlc::reference::populateReferenceLinear(EvalTable &table) {
  table.add<GemmOp>(evalGemm);
  table.add<MatMulOp>(evalMatMul);
}
