//===- Interpreter.cpp - double-precision reference evaluator for dlgraph --===//
#include "compiler/Reference/Interpreter.h"

#include "dialects/Graph/GraphOps.h"
#include "dialects/Semantics/Broadcast.h"
#include "dialects/Semantics/Philox.h"
#include "dialects/Semantics/ResizeCoordinates.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace dlc::graph;
using dlc::reference::Interpreter;
using dlc::reference::Tensor;
using dlc::semantics::broadcastSourceOffset;
using dlc::semantics::ResizeTap;
using dlc::semantics::resizeTap;

Tensor::Tensor(std::vector<int64_t> s, double fill) : shape(std::move(s)) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  data.assign(n, fill);
}

namespace {

std::vector<int64_t> shapeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = (int64_t)shape.size() - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

void unravel(int64_t lin, const std::vector<int64_t> &shape,
             std::vector<int64_t> &idx) {
  idx.resize(shape.size());
  for (int64_t i = (int64_t)shape.size() - 1; i >= 0; --i) {
    idx[i] = shape[i] ? lin % shape[i] : 0;
    lin = shape[i] ? lin / shape[i] : 0;
  }
}

/// Elementwise map over operands broadcast to |outShape|.
template <typename F>
Tensor mapN(const std::vector<int64_t> &outShape,
            const std::vector<const Tensor *> &ins, F f) {
  Tensor out(outShape);
  std::vector<int64_t> idx;
  std::vector<double> vals(ins.size());
  for (int64_t i = 0; i < out.numElements(); ++i) {
    unravel(i, outShape, idx);
    for (size_t k = 0; k < ins.size(); ++k)
      vals[k] = ins[k]->data[broadcastSourceOffset(idx, ins[k]->shape)];
    out.data[i] = f(vals);
  }
  return out;
}

/// Reduction over |axes| producing |outShape| (keepdims or not).
template <typename Init, typename Step, typename Fin>
Tensor reduce(const Tensor &x, ArrayRef<int64_t> axes,
              const std::vector<int64_t> &outShape, Init init, Step step,
              Fin fin) {
  std::vector<bool> reduced(x.shape.size(), false);
  int64_t count = 1;
  for (int64_t a : axes) {
    reduced[a] = true;
    count *= x.shape[a];
  }
  std::vector<int64_t> kept;
  for (size_t i = 0; i < x.shape.size(); ++i)
    kept.push_back(reduced[i] ? 1 : x.shape[i]);
  Tensor acc(kept, init());
  std::vector<int64_t> idx;
  auto ks = stridesOf(kept);
  for (int64_t i = 0; i < x.numElements(); ++i) {
    unravel(i, x.shape, idx);
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      o += (reduced[d] ? 0 : idx[d]) * ks[d];
    acc.data[o] = step(acc.data[o], x.data[i]);
  }
  for (double &v : acc.data)
    v = fin(v, count);
  acc.shape = outShape;
  return acc;
}

struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

template <typename PoolOp> Window windowOf(PoolOp op) {
  auto k = op.getKernelShape(), s = op.getStrides(), p = op.getPads(),
       d = op.getDilations();
  return {k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1]};
}

/// Visits each (n, c, oh, ow) output position and its in-range window
/// input positions (ih, iw); |count| is the divisor average pooling uses.
template <typename F>
void forEachWindow(const std::vector<int64_t> &xs,
                   const std::vector<int64_t> &ys, const Window &w,
                   bool includePad, F f) {
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t c = 0; c < ys[1]; ++c)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          std::vector<std::pair<int64_t, int64_t>> pos;
          int64_t padded = 0;
          for (int64_t i = 0; i < w.kh; ++i)
            for (int64_t j = 0; j < w.kw; ++j) {
              int64_t ih = oh * w.sh - w.ph + i * w.dh;
              int64_t iw = ow * w.sw - w.pw + j * w.dw;
              bool inPadded = ih < xs[2] + w.ph && iw < xs[3] + w.pw;
              if (inPadded)
                ++padded;
              if (ih >= 0 && ih < xs[2] && iw >= 0 && iw < xs[3])
                pos.push_back({ih, iw});
            }
          int64_t count = includePad ? padded : (int64_t)pos.size();
          f(n, c, oh, ow, pos, count);
        }
}

int64_t at4(const std::vector<int64_t> &s, int64_t a, int64_t b, int64_t c,
            int64_t d) {
  return ((a * s[1] + b) * s[2] + c) * s[3] + d;
}

/// Convolution visitor: calls f(xIndex, wIndex, yIndex) for every product
/// term of y = conv(x, w), for 2-D (rank-4) and 3-D (rank-5) operands; a 2-D
/// convolution is visited as a 3-D one over a depth of 1 (same flat indices).
template <typename F>
void forEachConvTerm(std::vector<int64_t> xs, std::vector<int64_t> ws,
                     std::vector<int64_t> ys, ArrayRef<int64_t> stridesIn,
                     ArrayRef<int64_t> padsIn, ArrayRef<int64_t> dilIn,
                     int64_t group, F f) {
  std::vector<int64_t> st(stridesIn.begin(), stridesIn.end()),
      pd(padsIn.begin(), padsIn.end()), dl(dilIn.begin(), dilIn.end());
  if (xs.size() == 4) {
    for (auto *s : {&xs, &ws, &ys})
      s->insert(s->begin() + 2, 1);
    st.insert(st.begin(), 1);
    dl.insert(dl.begin(), 1);
    pd = {0, pd[0], pd[1], 0, pd[2], pd[3]};
  }
  auto at5 = [](const std::vector<int64_t> &s, int64_t a, int64_t b, int64_t c,
                int64_t d, int64_t e) {
    return (((a * s[1] + b) * s[2] + c) * s[3] + d) * s[4] + e;
  };
  int64_t cPerG = ws[1], oPerG = ws[0] / group;
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t o = 0; o < ys[1]; ++o) {
      int64_t g = o / oPerG;
      for (int64_t od = 0; od < ys[2]; ++od)
        for (int64_t oh = 0; oh < ys[3]; ++oh)
          for (int64_t ow = 0; ow < ys[4]; ++ow)
            for (int64_t c = 0; c < cPerG; ++c)
              for (int64_t k = 0; k < ws[2]; ++k)
                for (int64_t i = 0; i < ws[3]; ++i)
                  for (int64_t j = 0; j < ws[4]; ++j) {
                    int64_t id = od * st[0] - pd[0] + k * dl[0];
                    int64_t ih = oh * st[1] - pd[1] + i * dl[1];
                    int64_t iw = ow * st[2] - pd[2] + j * dl[2];
                    if (id < 0 || id >= xs[2] || ih < 0 || ih >= xs[3] ||
                        iw < 0 || iw >= xs[4])
                      continue;
                    f(at5(xs, n, g * cPerG + c, id, ih, iw),
                      at5(ws, o, c, k, i, j), at5(ys, n, o, od, oh, ow));
                  }
    }
}

//===----------------------------------------------------------------------===//
// Scans and one-hot encoding (dlgraph.cumsum, dlgraph.one_hot)
//===----------------------------------------------------------------------===//

/// dlgraph.cumsum (or cumprod) of |x|: a running sum (product) along the
/// axis, in scan order.
template <typename ScanOp> Tensor evalScan(ScanOp op, const Tensor &x) {
  constexpr bool isProd = std::is_same_v<ScanOp, CumProdOp>;
  Tensor y(x.shape);
  int64_t axis = op.getAxis(), n = x.shape[axis], inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  int64_t outer = x.numElements() / std::max<int64_t>(n * inner, 1);
  bool reverse = op.getReverse(), exclusive = op.getExclusive();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < inner; ++c) {
      double acc = isProd ? 1 : 0;
      for (int64_t s = 0; s < n; ++s) {
        int64_t k = reverse ? n - 1 - s : s;
        int64_t at = (o * n + k) * inner + c;
        if (exclusive)
          y.data[at] = acc;
        acc = isProd ? acc * x.data[at] : acc + x.data[at];
        if (!exclusive)
          y.data[at] = acc;
      }
    }
  return y;
}

/// The value of an on_value/off_value attribute (an i1 true is 1).
double scalarValue(TypedAttr a) {
  if (auto f = dyn_cast<FloatAttr>(a))
    return f.getValueAsDouble();
  APInt v = cast<IntegerAttr>(a).getValue();
  return v.getBitWidth() == 1 ? (double)v.getZExtValue()
                              : (double)v.getSExtValue();
}

/// dlgraph.one_hot of |indices| (float indices truncate toward zero).
Tensor evalOneHot(OneHotOp op, const Tensor &indices) {
  std::vector<int64_t> shape = shapeOf(op.getResult());
  int64_t axis = op.getAxis(), depth = op.getDepth(), inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  Tensor y(shape, scalarValue(op.getOffValueAttr()));
  double on = scalarValue(op.getOnValueAttr());
  for (int64_t i = 0; i < indices.numElements(); ++i) {
    double t = std::trunc(indices.data[i]);
    if (t < 0)
      t += depth;
    if (!(t >= 0 && t < depth))
      continue;
    int64_t o = i / inner, c = i % inner;
    y.data[(o * depth + (int64_t)t) * inner + c] = on;
  }
  return y;
}

} // namespace

FailureOr<Interpreter> Interpreter::create(ModuleOp module) {
  Interpreter interp;
  for (VariableOp var : module.getOps<VariableOp>()) {
    auto type = cast<RankedTensorType>(var.getType());
    Tensor t(std::vector<int64_t>(type.getShape().begin(),
                                  type.getShape().end()));
    if (auto init = var.getInitialValueAttr()) {
      auto dense = dyn_cast<DenseElementsAttr>(init);
      if (!dense)
        return var.emitError() << "reference interpreter needs a dense "
                                  "initial value";
      int64_t i = 0;
      if (isa<FloatType>(type.getElementType())) {
        for (APFloat v : dense.getValues<APFloat>())
          t.data[i++] = v.convertToDouble();
      } else {
        for (APInt v : dense.getValues<APInt>())
          t.data[i++] = (double)v.getSExtValue();
      }
    }
    interp.variables[var.getSymName().str()] = std::move(t);
  }
  return interp;
}

FailureOr<std::vector<Tensor>> Interpreter::run(func::FuncOp func,
                                                const std::vector<Tensor> &args) {
  llvm::DenseMap<Value, Tensor> env;
  Block &body = func.getBody().front();
  if (args.size() != body.getNumArguments())
    return func.emitError() << "reference interpreter got " << args.size()
                            << " arguments, expected "
                            << body.getNumArguments();
  for (auto [arg, t] : llvm::zip(body.getArguments(), args)) {
    if (t.shape != shapeOf(arg))
      return func.emitError() << "argument shape mismatch";
    env[arg] = t;
  }
  std::vector<std::pair<std::string, Tensor>> writes;
  auto get = [&](Value v) -> const Tensor & { return env[v]; };
  using Vals = std::vector<double>;

  for (Operation &opRef : body) {
    Operation *op = &opRef;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<Tensor> results;
      for (Value v : ret.getOperands())
        results.push_back(get(v));
      for (auto &[name, t] : writes)
        variables[name] = t;
      return results;
    }
    auto unary = [&](auto f) {
      const Tensor &x = get(op->getOperand(0));
      return mapN(x.shape, {&x}, [&](const Vals &v) { return f(v[0]); });
    };
    auto binary = [&](auto f) {
      return mapN(shapeOf(op->getResult(0)),
                  {&get(op->getOperand(0)), &get(op->getOperand(1))},
                  [&](const Vals &v) { return f(v[0], v[1]); });
    };
    bool ok = true;
    Tensor r = llvm::TypeSwitch<Operation *, Tensor>(op)
        .Case([&](ConstantOp c) {
          Tensor t(shapeOf(c.getResult()));
          auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
          if (!dense) {
            ok = false;
            return t;
          }
          int64_t i = 0;
          if (isa<FloatType>(dense.getElementType()))
            for (APFloat v : dense.getValues<APFloat>())
              t.data[i++] = v.convertToDouble();
          else
            for (APInt v : dense.getValues<APInt>())
              t.data[i++] = (double)v.getSExtValue();
          return t;
        })
        .Case([&](ReadVariableOp o) { return variables[o.getVariable().str()]; })
        .Case([&](WriteVariableOp o) {
          writes.push_back({o.getVariable().str(), get(o.getValue())});
          return Tensor();
        })
        .Case<IdentityOp>([&](auto) { return get(op->getOperand(0)); })
        .Case<ReshapeOp>([&](auto) {
          Tensor t = get(op->getOperand(0));
          t.shape = shapeOf(op->getResult(0));
          return t;
        })
        .Case([&](TransposeOp o) {
          const Tensor &x = get(o.getInput());
          Tensor y(shapeOf(o.getResult()));
          auto xsr = stridesOf(x.shape);
          std::vector<int64_t> idx;
          for (int64_t i = 0; i < y.numElements(); ++i) {
            unravel(i, y.shape, idx);
            int64_t off = 0;
            for (size_t d = 0; d < idx.size(); ++d)
              off += idx[d] * xsr[o.getPerm()[d]];
            y.data[i] = x.data[off];
          }
          return y;
        })
        .Case<BroadcastToOp, CastOp>([&](auto o) {
          const Tensor &x = get(o.getInput());
          bool toBool = o.getType().getElementType().isInteger(1);
          bool toInt = isa<IntegerType>(o.getType().getElementType());
          return mapN(shapeOf(o.getResult()), {&x}, [&](const Vals &v) {
            if (toBool)
              return v[0] != 0 ? 1.0 : 0.0;
            return toInt ? std::trunc(v[0]) : v[0];
          });
        })
        .Case<ReluOp>([&](auto) {
          return unary([](double x) { return x > 0 ? x : 0.0; });
        })
        .Case<ExpOp>([&](auto) { return unary([](double x) { return std::exp(x); }); })
        .Case<LogOp>([&](auto) { return unary([](double x) { return std::log(x); }); })
        .Case<NegOp>([&](auto) { return unary([](double x) { return -x; }); })
        .Case<SqrtOp>([&](auto) { return unary([](double x) { return std::sqrt(x); }); })
        .Case<RsqrtOp>([&](auto) {
          return unary([](double x) { return 1.0 / std::sqrt(x); });
        })
        .Case<TanhOp>([&](auto) { return unary([](double x) { return std::tanh(x); }); })
        .Case<ErfOp>([&](auto) { return unary([](double x) { return std::erf(x); }); })
        .Case<SinOp>([&](auto) { return unary([](double x) { return std::sin(x); }); })
        .Case<CosOp>([&](auto) { return unary([](double x) { return std::cos(x); }); })
        .Case<TanOp>([&](auto) { return unary([](double x) { return std::tan(x); }); })
        .Case<AsinOp>([&](auto) { return unary([](double x) { return std::asin(x); }); })
        .Case<AcosOp>([&](auto) { return unary([](double x) { return std::acos(x); }); })
        .Case<AtanOp>([&](auto) { return unary([](double x) { return std::atan(x); }); })
        .Case<SinhOp>([&](auto) { return unary([](double x) { return std::sinh(x); }); })
        .Case<CoshOp>([&](auto) { return unary([](double x) { return std::cosh(x); }); })
        .Case<AsinhOp>([&](auto) { return unary([](double x) { return std::asinh(x); }); })
        .Case<AcoshOp>([&](auto) { return unary([](double x) { return std::acosh(x); }); })
        .Case<AtanhOp>([&](auto) { return unary([](double x) { return std::atanh(x); }); })
        .Case<AbsOp>([&](auto) { return unary([](double x) { return std::fabs(x); }); })
        .Case<CeilOp>([&](auto) { return unary([](double x) { return std::ceil(x); }); })
        .Case<FloorOp>([&](auto) { return unary([](double x) { return std::floor(x); }); })
        .Case<RoundOp>([&](auto) { return unary([](double x) { return std::nearbyint(x); }); })
        .Case<SigmoidOp>([&](auto) {
          return unary([](double x) { return 1.0 / (1.0 + std::exp(-x)); });
        })
        .Case([&](ClipOp o) {
          double lo = o.getMin().convertToDouble(),
                 hi = o.getMax().convertToDouble();
          return unary([&](double x) { return std::min(std::max(x, lo), hi); });
        })
        .Case<AddOp>([&](auto) { return binary([](double a, double b) { return a + b; }); })
        .Case<SubOp>([&](auto) { return binary([](double a, double b) { return a - b; }); })
        .Case<MulOp>([&](auto) { return binary([](double a, double b) { return a * b; }); })
        .Case<DivOp>([&](auto) { return binary([](double a, double b) { return a / b; }); })
        .Case<MaxOp>([&](auto) { return binary([](double a, double b) { return std::max(a, b); }); })
        .Case<MinOp>([&](auto) { return binary([](double a, double b) { return std::min(a, b); }); })
        .Case<PowOp>([&](auto) { return binary([](double a, double b) { return std::pow(a, b); }); })
        .Case<FmodOp>([&](auto) { return binary([](double a, double b) { return std::fmod(a, b); }); })
        .Case<ModOp>([&](auto) {
          return binary([](double a, double b) {
            double r = std::fmod(a, b);
            return r != 0 && (r < 0) != (b < 0) ? r + b : r;
          });
        })
        .Case([&](CompareOp o) {
          StringRef p = o.getPredicate();
          return binary([&](double a, double b) {
            bool r = p == "eq"   ? a == b
                     : p == "ne" ? a != b
                     : p == "lt" ? a < b
                     : p == "le" ? a <= b
                     : p == "gt" ? a > b
                                 : a >= b;
            return r ? 1.0 : 0.0;
          });
        })
        .Case([&](SelectOp o) {
          return mapN(shapeOf(o.getResult()),
                      {&get(o.getCondition()), &get(o.getOnTrue()),
                       &get(o.getOnFalse())},
                      [](const Vals &v) { return v[0] != 0 ? v[1] : v[2]; });
        })
        .Case([&](GemmOp o) {
          const Tensor &a = get(o.getA()), &b = get(o.getB());
          auto ys = shapeOf(o.getResult());
          int64_t m = ys[0], n = ys[1];
          int64_t k = o.getTransA() ? a.shape[0] : a.shape[1];
          double alpha = o.getAlpha().convertToDouble(),
                 beta = o.getBeta().convertToDouble();
          Tensor y(ys);
          if (o.getC())
            y = mapN(ys, {&get(o.getC())},
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
        })
        .Case([&](MatMulOp o) {
          // numpy.matmul: promote 1-D operands, broadcast the batch dims.
          const Tensor &a = get(o.getLhs()), &b = get(o.getRhs());
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
                  yp[i * n + j] +=
                      a.data[oa + i * k + l] * b.data[ob + l * n + j];
          }
          return y;
        })
        .Case([&](ConvOp o) {
          const Tensor &x = get(o.getInput()), &w = get(o.getFilter());
          Tensor y(shapeOf(o.getResult()));
          forEachConvTerm(x.shape, w.shape, y.shape, o.getStrides(),
                          o.getPads(), o.getDilations(), o.getGroup(),
                          [&](int64_t xi, int64_t wi, int64_t yi) {
                            y.data[yi] += x.data[xi] * w.data[wi];
                          });
          if (o.getBias()) {
            const Tensor &b = get(o.getBias());
            int64_t hw = y.numElements() / (y.shape[0] * y.shape[1]);
            for (int64_t i = 0; i < y.numElements(); ++i)
              y.data[i] += b.data[(i / hw) % y.shape[1]];
          }
          return y;
        })
        .Case([&](ConvBackwardDataOp o) {
          const Tensor &dy = get(o.getResultGrad()), &w = get(o.getFilter());
          Tensor dx(shapeOf(o.getInputGrad()));
          forEachConvTerm(dx.shape, w.shape, dy.shape, o.getStrides(),
                          o.getPads(), o.getDilations(), o.getGroup(),
                          [&](int64_t xi, int64_t wi, int64_t yi) {
                            dx.data[xi] += dy.data[yi] * w.data[wi];
                          });
          return dx;
        })
        .Case([&](ConvBackwardFilterOp o) {
          const Tensor &x = get(o.getInput()), &dy = get(o.getResultGrad());
          Tensor dw(shapeOf(o.getFilterGrad()));
          forEachConvTerm(x.shape, dw.shape, dy.shape, o.getStrides(),
                          o.getPads(), o.getDilations(), o.getGroup(),
                          [&](int64_t xi, int64_t wi, int64_t yi) {
                            dw.data[wi] += x.data[xi] * dy.data[yi];
                          });
          return dw;
        })
        .Case([&](BatchNormOp o) {
          const Tensor &x = get(o.getInput()), &s = get(o.getScale()),
                       &b = get(o.getBias()), &m = get(o.getMean()),
                       &v = get(o.getVariance());
          double eps = o.getEpsilon().convertToDouble();
          Tensor y(x.shape);
          int64_t inner = 1;
          for (size_t d = 2; d < x.shape.size(); ++d)
            inner *= x.shape[d];
          for (int64_t i = 0; i < x.numElements(); ++i) {
            int64_t c = (i / inner) % x.shape[1];
            y.data[i] = s.data[c] * (x.data[i] - m.data[c]) /
                            std::sqrt(v.data[c] + eps) +
                        b.data[c];
          }
          return y;
        })
        .Case([&](MaxPoolOp o) {
          const Tensor &x = get(o.getInput());
          Tensor y(shapeOf(o.getResult()));
          forEachWindow(x.shape, y.shape, windowOf(o), false,
                        [&](int64_t n, int64_t c, int64_t oh, int64_t ow,
                            auto &pos, int64_t) {
                          double best = -std::numeric_limits<double>::infinity();
                          for (auto [ih, iw] : pos)
                            best = std::max(best, x.data[at4(x.shape, n, c, ih, iw)]);
                          y.data[at4(y.shape, n, c, oh, ow)] = best;
                        });
          return y;
        })
        .Case([&](MaxPoolGradOp o) {
          const Tensor &x = get(o.getInput()), &dy = get(o.getResultGrad());
          Tensor dx(x.shape);
          forEachWindow(x.shape, dy.shape, windowOf(o), false,
                        [&](int64_t n, int64_t c, int64_t oh, int64_t ow,
                            auto &pos, int64_t) {
                          int64_t arg = -1;
                          for (auto [ih, iw] : pos) {
                            int64_t i = at4(x.shape, n, c, ih, iw);
                            if (arg < 0 || x.data[i] > x.data[arg])
                              arg = i;
                          }
                          if (arg >= 0)
                            dx.data[arg] += dy.data[at4(dy.shape, n, c, oh, ow)];
                        });
          return dx;
        })
        .Case([&](MaxPoolIndicesOp o) {
          const Tensor &x = get(o.getInput());
          Tensor idx(shapeOf(o.getIndices()));
          forEachWindow(x.shape, idx.shape, windowOf(o), false,
                        [&](int64_t n, int64_t c, int64_t oh, int64_t ow,
                            auto &pos, int64_t) {
                          int64_t arg = -1;
                          double best = 0;
                          for (auto [ih, iw] : pos) {
                            double v = x.data[at4(x.shape, n, c, ih, iw)];
                            if (arg < 0 || v > best) {
                              best = v;
                              arg = ih * x.shape[3] + iw;
                            }
                          }
                          idx.data[at4(idx.shape, n, c, oh, ow)] =
                              static_cast<double>(arg);
                        });
          return idx;
        })
        .Case([&](MaxPoolIndicesGradOp o) {
          const Tensor &idx = get(o.getIndices()),
                       &dy = get(o.getResultGrad());
          Tensor dx(shapeOf(o.getInputGrad()));
          int64_t plane = dx.shape[2] * dx.shape[3];
          int64_t pooled = dy.shape[2] * dy.shape[3];
          for (int64_t nc = 0; nc < dx.shape[0] * dx.shape[1]; ++nc)
            for (int64_t k = 0; k < pooled; ++k) {
              auto i = static_cast<int64_t>(idx.data[nc * pooled + k]);
              if (i >= 0 && i < plane)
                dx.data[nc * plane + i] += dy.data[nc * pooled + k];
            }
          return dx;
        })
        .Case([&](AveragePoolOp o) {
          const Tensor &x = get(o.getInput());
          Tensor y(shapeOf(o.getResult()));
          forEachWindow(x.shape, y.shape, windowOf(o), o.getCountIncludePad(),
                        [&](int64_t n, int64_t c, int64_t oh, int64_t ow,
                            auto &pos, int64_t count) {
                          double s = 0;
                          for (auto [ih, iw] : pos)
                            s += x.data[at4(x.shape, n, c, ih, iw)];
                          y.data[at4(y.shape, n, c, oh, ow)] = s / count;
                        });
          return y;
        })
        .Case([&](AveragePoolGradOp o) {
          const Tensor &x = get(o.getInput()), &dy = get(o.getResultGrad());
          Tensor dx(x.shape);
          forEachWindow(x.shape, dy.shape, windowOf(o), o.getCountIncludePad(),
                        [&](int64_t n, int64_t c, int64_t oh, int64_t ow,
                            auto &pos, int64_t count) {
                          double g = dy.data[at4(dy.shape, n, c, oh, ow)] / count;
                          for (auto [ih, iw] : pos)
                            dx.data[at4(x.shape, n, c, ih, iw)] += g;
                        });
          return dx;
        })
        .Case([&](GlobalAveragePoolOp o) {
          const Tensor &x = get(o.getInput());
          SmallVector<int64_t> axes;
          for (size_t d = 2; d < x.shape.size(); ++d)
            axes.push_back(d);
          return reduce(
              x, axes, shapeOf(o.getResult()), [] { return 0.0; },
              [](double a, double v) { return a + v; },
              [](double a, int64_t n) { return a / n; });
        })
        .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([&](auto o) {
          bool isMax = isa<ReduceMaxOp>(op), isMean = isa<ReduceMeanOp>(op);
          return reduce(
              get(o.getInput()), o.getAxes(), shapeOf(o.getResult()),
              [&] {
                return isMax ? -std::numeric_limits<double>::infinity() : 0.0;
              },
              [&](double a, double v) { return isMax ? std::max(a, v) : a + v; },
              [&](double a, int64_t n) { return isMean ? a / n : a; });
        })
        .Case([&](ReduceProdOp o) {
          return reduce(
              get(o.getInput()), o.getAxes(), shapeOf(o.getResult()),
              [] { return 1.0; }, [](double a, double v) { return a * v; },
              [](double a, int64_t) { return a; });
        })
        .Case<ArgMaxOp, ArgMinOp>([&](auto o) {
          const Tensor &x = get(o.getInput());
          int64_t axis = o.getAxis(), rank = x.shape.size();
          int64_t len = x.shape[axis], inner = 1;
          for (int64_t d = axis + 1; d < rank; ++d)
            inner *= x.shape[d];
          bool isMax = isa<ArgMaxOp>(op), last = o.getSelectLastIndex();
          Tensor y(shapeOf(o.getResult()));
          for (int64_t outer = 0; outer < x.numElements() / (len * inner);
               ++outer)
            for (int64_t in = 0; in < inner; ++in) {
              int64_t best = 0;
              for (int64_t k = 1; k < len; ++k) {
                double v = x.data[(outer * len + k) * inner + in];
                double b = x.data[(outer * len + best) * inner + in];
                bool better = isMax ? (last ? v >= b : v > b)
                                    : (last ? v <= b : v < b);
                if (better)
                  best = k;
              }
              y.data[outer * inner + in] = (double)best;
            }
          return y;
        })
        .Case<ResizeOp, ResizeGradOp>([&](auto o) {
          // Forward: y[o] = sum over corners of prod_d w_d * x[i]; the
          // gradient scatters dy[o] * prod_d w_d into dx[i].
          bool isGrad = isa<ResizeGradOp>(op);
          const Tensor &src = get(op->getOperand(0));
          std::vector<int64_t> in = shapeOf(isGrad ? op->getResult(0)
                                                   : op->getOperand(0));
          std::vector<int64_t> out = shapeOf(isGrad ? op->getOperand(0)
                                                    : op->getResult(0));
          ArrayRef<double> scales = o.getScales();
          int64_t rank = in.size();
          Tensor r(shapeOf(op->getResult(0)));
          auto inStrides = stridesOf(in);
          std::vector<int64_t> idx;
          std::vector<ResizeTap> taps(rank);
          int64_t corners = o.getMode() == "linear" ? (int64_t)1 << rank : 1;
          int64_t outCount = 1;
          for (int64_t d : out)
            outCount *= d;
          for (int64_t e = 0; e < outCount; ++e) {
            unravel(e, out, idx);
            for (int64_t d = 0; d < rank; ++d)
              taps[d] = resizeTap(
                  o.getMode(), o.getCoordinateTransformationMode(),
                  o.getNearestMode(), idx[d], in[d], out[d], scales[d]);
            double acc = 0;
            for (int64_t c = 0; c < corners; ++c) {
              double w = 1;
              int64_t off = 0;
              for (int64_t d = 0; d < rank; ++d) {
                bool hi = (c >> d) & 1;
                w *= hi ? taps[d].w1 : taps[d].w0;
                off += (hi ? taps[d].i1 : taps[d].i0) * inStrides[d];
              }
              if (w == 0)
                continue;
              if (isGrad)
                r.data[off] += w * src.data[e];
              else
                acc += w * src.data[off];
            }
            if (!isGrad)
              r.data[e] = acc;
          }
          return r;
        })
        .Case([&](DropoutOp o) {
          const Tensor &x = get(o.getInput());
          auto step = (uint32_t)get(o.getStep()).data[0];
          auto seed = (uint64_t)o.getSeed();
          float ratio = o.getRatio().convertToFloat();
          double scale = 1.0 / (1.0 - (double)ratio);
          Tensor y(x.shape), mask(x.shape);
          for (int64_t i = 0; i < x.numElements(); ++i) {
            bool keep = dlc_philox_uniform24(seed, (uint64_t)i, step) >= ratio;
            mask.data[i] = keep;
            y.data[i] = keep ? x.data[i] * scale : 0.0;
          }
          env[o.getMask()] = mask;
          return y;
        })
        .Case<SoftmaxOp, LogSoftmaxOp>([&](auto o) {
          const Tensor &x = get(o.getInput());
          int64_t rank = x.shape.size();
          int64_t axis = o.getAxisAttr().getInt();
          if (axis < 0)
            axis += rank;
          int64_t len = x.shape[axis], inner = 1;
          for (int64_t d = axis + 1; d < rank; ++d)
            inner *= x.shape[d];
          Tensor y(x.shape);
          bool isLog = isa<LogSoftmaxOp>(op);
          for (int64_t outer = 0; outer < x.numElements() / (len * inner); ++outer)
            for (int64_t in = 0; in < inner; ++in) {
              auto idx = [&](int64_t k) { return (outer * len + k) * inner + in; };
              double mx = -std::numeric_limits<double>::infinity(), s = 0;
              for (int64_t k = 0; k < len; ++k)
                mx = std::max(mx, x.data[idx(k)]);
              for (int64_t k = 0; k < len; ++k)
                s += std::exp(x.data[idx(k)] - mx);
              for (int64_t k = 0; k < len; ++k)
                y.data[idx(k)] = isLog ? x.data[idx(k)] - mx - std::log(s)
                                       : std::exp(x.data[idx(k)] - mx) / s;
            }
          return y;
        })
        .Case<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>([&](auto o) {
          const Tensor &x = get(o.getLogits()), &t = get(o.getLabels());
          int64_t c = x.shape.back(), rows = t.numElements();
          bool isGrad = isa<SoftmaxCrossEntropyGradOp>(op);
          Tensor loss(std::vector<int64_t>{}), dx(x.shape);
          double scale = 1.0 / rows;
          if (isGrad)
            scale *= get(op->getOperand(2)).data[0];
          // Label smoothing e: the target (1 - e) one_hot + e / C.
          double e = o.getLabelSmoothing().convertToDouble();
          for (int64_t r = 0; r < rows; ++r) {
            const double *row = &x.data[r * c];
            double mx = -std::numeric_limits<double>::infinity(), s = 0;
            for (int64_t k = 0; k < c; ++k)
              mx = std::max(mx, row[k]);
            for (int64_t k = 0; k < c; ++k)
              s += std::exp(row[k] - mx);
            int64_t label = (int64_t)t.data[r];
            if (label < 0 || label >= c)
              continue; // no loss, no gradient; counts in the mean
            double lse = mx + std::log(s), smooth = 0;
            for (int64_t k = 0; k < c; ++k)
              smooth += lse - row[k];
            loss.data[0] +=
                ((1 - e) * (lse - row[label]) + e / c * smooth) / rows;
            for (int64_t k = 0; k < c; ++k)
              dx.data[r * c + k] = (std::exp(row[k] - mx) / s -
                                    ((k == label ? 1 - e : 0.0) + e / c)) *
                                   scale;
          }
          return isGrad ? dx : loss;
        })
        .Case([&](SGDUpdateOp o) {
          const Tensor &p = get(o.getParam()), &g = get(o.getGrad()),
                       &buf = get(o.getMomentumBuffer());
          double lr = get(o.getLr()).data[0],
                 mom = o.getMomentum().convertToDouble(),
                 wd = o.getWeightDecay().convertToDouble();
          bool first = get(o.getStep()).data[0] == 1.0;
          Tensor np(p.shape), nb(p.shape);
          for (int64_t i = 0; i < p.numElements(); ++i) {
            double gi = g.data[i] + wd * p.data[i];
            if (mom != 0) {
              nb.data[i] = first ? gi : mom * buf.data[i] + gi;
              np.data[i] = p.data[i] - lr * nb.data[i];
            } else {
              nb.data[i] = buf.data[i];
              np.data[i] = p.data[i] - lr * gi;
            }
          }
          env[o.getNewMomentumBuffer()] = nb;
          return np;
        })
        .Case([&](AdamUpdateOp o) {
          const Tensor &p = get(o.getParam()), &g = get(o.getGrad()),
                       &m = get(o.getExpAvg()), &v = get(o.getExpAvgSq());
          double lr = get(o.getLr()).data[0],
                 b1 = o.getBeta1().convertToDouble(),
                 b2 = o.getBeta2().convertToDouble(),
                 eps = o.getEpsilon().convertToDouble(),
                 wd = o.getWeightDecay().convertToDouble(),
                 t = get(o.getStep()).data[0];
          Tensor np(p.shape), nm(p.shape), nv(p.shape);
          for (int64_t i = 0; i < p.numElements(); ++i) {
            double pi = p.data[i], gi = g.data[i];
            if (o.getDecoupled())
              pi *= 1 - lr * wd;
            else
              gi += wd * pi;
            nm.data[i] = b1 * m.data[i] + (1 - b1) * gi;
            nv.data[i] = b2 * v.data[i] + (1 - b2) * gi * gi;
            double mh = nm.data[i] / (1 - std::pow(b1, t));
            double vh = nv.data[i] / (1 - std::pow(b2, t));
            np.data[i] = pi - lr * mh / (std::sqrt(vh) + eps);
          }
          env[o.getNewExpAvg()] = nm;
          env[o.getNewExpAvgSq()] = nv;
          return np;
        })
        .Case<SliceOp, PadOp>([&](auto o) {
          // small[i] = big[starts + steps * i]; slice reads big, pad writes it.
          bool isPad = isa<PadOp>(op);
          const Tensor &x = get(o.getInput());
          Tensor y(shapeOf(o.getResult()));
          if constexpr (std::is_same_v<decltype(o), PadOp>)
            y = Tensor(y.shape, o.getValue().convertToDouble());
          const Tensor &small = isPad ? x : y;
          const std::vector<int64_t> &bigShape = isPad ? y.shape : x.shape;
          auto bs = stridesOf(bigShape);
          std::vector<int64_t> idx;
          for (int64_t i = 0; i < small.numElements(); ++i) {
            unravel(i, small.shape, idx);
            int64_t off = 0;
            for (size_t d = 0; d < idx.size(); ++d)
              off += (o.getStarts()[d] + o.getSteps()[d] * idx[d]) * bs[d];
            if (isPad)
              y.data[off] = x.data[i];
            else
              y.data[i] = x.data[off];
          }
          return y;
        })
        .Case([&](ConcatOp o) {
          Tensor y(shapeOf(o.getResult()));
          int64_t axis = o.getAxis(), offset = 0;
          std::vector<int64_t> idx;
          auto ys = stridesOf(y.shape);
          for (Value v : o.getInputs()) {
            const Tensor &x = get(v);
            for (int64_t i = 0; i < x.numElements(); ++i) {
              unravel(i, x.shape, idx);
              idx[axis] += offset;
              int64_t off = 0;
              for (size_t d = 0; d < idx.size(); ++d)
                off += idx[d] * ys[d];
              y.data[off] = x.data[i];
            }
            offset += x.shape[axis];
          }
          return y;
        })
        .Case<GatherOp, GatherGradOp>([&](auto o) {
          // data [outer, n, inner], indices [m] flattened: result [outer, m,
          // inner]. Out-of-range indices read 0 / add nothing.
          bool isGrad = isa<GatherGradOp>(op);
          const Tensor &idx = get(op->getOperand(isGrad ? 0 : 1));
          const Tensor &src = get(op->getOperand(isGrad ? 1 : 0));
          std::vector<int64_t> dataShape =
              isGrad ? shapeOf(op->getResult(0)) : src.shape;
          int64_t axis = o.getAxis(), outer = 1, inner = 1,
                  n = dataShape[axis], m = idx.numElements();
          for (int64_t d = 0; d < axis; ++d)
            outer *= dataShape[d];
          for (size_t d = axis + 1; d < dataShape.size(); ++d)
            inner *= dataShape[d];
          Tensor y(shapeOf(op->getResult(0)));
          for (int64_t a = 0; a < outer; ++a)
            for (int64_t j = 0; j < m; ++j) {
              int64_t k = (int64_t)idx.data[j];
              if (k < 0)
                k += n;
              if (k < 0 || k >= n)
                continue;
              for (int64_t c = 0; c < inner; ++c) {
                int64_t g = (a * m + j) * inner + c, dpos = (a * n + k) * inner + c;
                if (isGrad)
                  y.data[dpos] += src.data[g];
                else
                  y.data[g] = src.data[dpos];
              }
            }
          return y;
        })
        .Case<GatherElementsOp, GatherElementsGradOp>([&](auto o) {
          bool isGrad = isa<GatherElementsGradOp>(op);
          const Tensor &idx = get(op->getOperand(isGrad ? 0 : 1));
          const Tensor &src = get(op->getOperand(isGrad ? 1 : 0));
          Tensor y(shapeOf(op->getResult(0)));
          const std::vector<int64_t> &dataShape = isGrad ? y.shape : src.shape;
          int64_t axis = o.getAxis();
          auto ds = stridesOf(dataShape);
          std::vector<int64_t> p;
          for (int64_t i = 0; i < idx.numElements(); ++i) {
            unravel(i, idx.shape, p);
            int64_t k = (int64_t)idx.data[i];
            if (k < 0)
              k += dataShape[axis];
            if (k < 0 || k >= dataShape[axis])
              continue;
            p[axis] = k;
            int64_t off = 0;
            for (size_t d = 0; d < p.size(); ++d)
              off += p[d] * ds[d];
            if (isGrad)
              y.data[off] += src.data[i];
            else
              y.data[i] = src.data[off];
          }
          return y;
        })
        .Case([&](CumSumOp o) { return evalScan(o, get(o.getInput())); })
        .Case([&](CumProdOp o) { return evalScan(o, get(o.getInput())); })
        .Case([&](OneHotOp o) { return evalOneHot(o, get(o.getIndices())); })
        .Default([&](Operation *) {
          ok = false;
          return Tensor();
        });
    if (!ok)
      return op->emitError() << "reference interpreter does not support '"
                             << op->getName() << "' in this form";
    if (op->getNumResults() > 0)
      env[op->getResult(0)] = std::move(r);
  }
  return func.emitError() << "function has no return";
}
