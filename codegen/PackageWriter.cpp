//===- PackageWriter.cpp - planned dlexec module -> .dlcp package ---------===//
//
// The plan is flattened into the tables of runtime/schema/package.fbs:
// buffers (variables first, then per function its inputs, arena allocations
// and reshape aliases, in program order), one Kernel per distinct kernel,
// one Function per dlexec.func with its steps in program order, the host
// kernels as a shared object and the initial values as safetensors, and
// the memory plan (dlc::computePlanStats: what a session holds).
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"
#include "codegen/KernelCode.h"
#include "dialects/Exec/Analysis/PlanStats.h"
#include "dialects/Exec/ExecAttributes.h"

#include "dlc_schema/package_generated.h"
#include "runtime/schema/Safetensors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstring>
#include <thread>

using namespace mlir;
namespace pkg = dlc::package;

namespace dlc::codegen {
namespace {

/// Where each tensor of the weights section starts: a multiple of this many
/// bytes from the section's start, itself at such a multiple from the
/// file's (package.fbs WeightRef): a cache line, and any SIMD width.
constexpr uint64_t kWeightAlignment = 64;

struct PlanBuffer {
  std::string name;
  pkg::BufferKind kind;
  pkg::DType dtype;
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  int64_t offset = -1;
  int32_t aliasOf = -1;
  std::string init;
  Operation *op = nullptr;
  /// A strided alias (a dlexec.subview): elements into aliasOf and the
  /// element strides of each dim; empty strides for a dense buffer.
  int64_t viewOffset = 0;
  std::vector<int64_t> viewStrides;
};

struct PlanStep {
  /// Collectives: 0 for a launch or library call, else the step kind.
  enum class Collective { None, AllReduce, Wait };
  Collective collective = Collective::None;
  bool average = false; // AllReduce: "avg" (else "sum")
  bool isLaunch = true;
  std::string name; // kernel name or library callee
  unsigned kernel = 0;
  unsigned numInputs = 0;
  std::vector<uint32_t> args;
  /// Library calls: the call and its parameters (LibraryCallOp::getParams).
  exec::LibraryCallParams call;
};

struct PlanFunction {
  std::string name;
  std::vector<std::pair<std::string, uint32_t>> inputs, outputs;
  std::vector<PlanStep> steps;
  int64_t arenaBytes = -1;
};

struct Plan {
  std::vector<PlanBuffer> buffers;
  std::vector<PlanFunction> functions;
  std::vector<std::string> kernelNames;
};

const char *kindName(pkg::BufferKind k) {
  switch (k) {
  case pkg::BufferKind::Parameter:
    return "parameter";
  case pkg::BufferKind::OptimizerState:
    return "optimizer_state";
  case pkg::BufferKind::Buffer:
    return "buffer";
  case pkg::BufferKind::Input:
    return "input";
  case pkg::BufferKind::Arena:
    return "arena";
  case pkg::BufferKind::Alias:
    return "alias";
  case pkg::BufferKind::Constant:
    return "constant";
  }
  return "?";
}

const char *dtypeName(pkg::DType d) {
  switch (d) {
  case pkg::DType::F32:
    return "f32";
  case pkg::DType::F64:
    return "f64";
  case pkg::DType::I64:
    return "i64";
  case pkg::DType::I32:
    return "i32";
  case pkg::DType::Bool:
    return "bool";
  case pkg::DType::F16:
    return "f16";
  case pkg::DType::BF16:
    return "bf16";
  }
  return "?";
}

const char *safetensorsDtype(pkg::DType d) {
  switch (d) {
  case pkg::DType::F32:
    return "F32";
  case pkg::DType::F64:
    return "F64";
  case pkg::DType::I64:
    return "I64";
  case pkg::DType::I32:
    return "I32";
  case pkg::DType::Bool:
    return "BOOL";
  case pkg::DType::F16:
    return "F16";
  case pkg::DType::BF16:
    return "BF16";
  }
  return "";
}

/// Builds the flattened plan. With |requirePlanned|, every alloc needs an
/// offset and every function an arena_bytes.
class PlanBuilder {
public:
  PlanBuilder(ModuleOp module, bool requirePlanned)
      : module(module), requirePlanned(requirePlanned) {}

  FailureOr<Plan> build();

private:
  FailureOr<uint32_t> addBuffer(Operation *op, Value value, StringRef name,
                                pkg::BufferKind kind);
  FailureOr<uint32_t> indexOf(Operation *user, Value v);
  LogicalResult addFunction(exec::FuncOp func);
  LogicalResult addLibraryCall(exec::LibraryCallOp op, PlanStep &step);
  unsigned kernelIndex(StringRef symName);

  ModuleOp module;
  bool requirePlanned;
  Plan plan;
  llvm::StringMap<uint32_t> variables;
  llvm::StringMap<unsigned> kernels;
  llvm::DenseMap<Value, uint32_t> values;
};

FailureOr<uint32_t> PlanBuilder::addBuffer(Operation *op, Value value,
                                           StringRef name,
                                           pkg::BufferKind kind) {
  auto type = dyn_cast<MemRefType>(
      value ? value.getType() : cast<exec::VariableOp>(op).getType());
  if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
    return op->emitOpError() << "buffer needs a static shape and the identity "
                                "layout";
  PlanBuffer b;
  Type elem = type.getElementType();
  int64_t elemBytes;
  if (elem.isF32())
    b.dtype = pkg::DType::F32, elemBytes = 4;
  else if (elem.isF64())
    b.dtype = pkg::DType::F64, elemBytes = 8;
  else if (elem.isInteger(64))
    b.dtype = pkg::DType::I64, elemBytes = 8;
  else if (elem.isInteger(32))
    b.dtype = pkg::DType::I32, elemBytes = 4;
  else if (elem.isInteger(1))
    b.dtype = pkg::DType::Bool, elemBytes = 1;
  else if (elem.isF16())
    b.dtype = pkg::DType::F16, elemBytes = 2;
  else if (elem.isBF16())
    b.dtype = pkg::DType::BF16, elemBytes = 2;
  else
    return op->emitOpError() << "element type " << elem
                             << " cannot be stored in a package (expected "
                                "f32, f64, f16, bf16, i64, i32 or i1)";
  b.name = name.str();
  b.kind = kind;
  b.shape.assign(type.getShape().begin(), type.getShape().end());
  b.bytes = type.getNumElements() * elemBytes;
  b.op = op;
  uint32_t index = plan.buffers.size();
  plan.buffers.push_back(std::move(b));
  if (value)
    values[value] = index;
  return index;
}

FailureOr<uint32_t> PlanBuilder::indexOf(Operation *user, Value v) {
  auto it = values.find(v);
  if (it == values.end())
    return user->emitOpError()
           << "uses a buffer that is not a dlexec.input, variable_ref, alloc "
              "or reshape of the same function";
  return it->second;
}

unsigned PlanBuilder::kernelIndex(StringRef symName) {
  std::string name = detail::sanitizeName(symName);
  auto [it, inserted] = kernels.try_emplace(name, plan.kernelNames.size());
  if (inserted)
    plan.kernelNames.push_back(name);
  return it->second;
}

LogicalResult PlanBuilder::addLibraryCall(exec::LibraryCallOp op,
                                          PlanStep &step) {
  // The verifier's rules; a verified op always has parameters.
  FailureOr<exec::LibraryCallParams> params = op.getParams();
  if (failed(params))
    return failure();
  step.call = std::move(*params);
  return success();
}

LogicalResult PlanBuilder::addFunction(exec::FuncOp func) {
  PlanFunction fn;
  fn.name = func.getSymName().str();
  if (auto arena = func.getArenaBytes())
    fn.arenaBytes = (int64_t)*arena;
  else if (requirePlanned)
    return func.emitOpError() << "has no arena_bytes; run the memory planner "
                                 "before writing a package";
  for (Operation &op : func.getBody().front()) {
    if (auto in = dyn_cast<exec::InputOp>(op)) {
      auto idx =
          addBuffer(&op, in.getBuffer(), in.getName(), pkg::BufferKind::Input);
      if (failed(idx))
        return failure();
      fn.inputs.push_back({in.getName().str(), *idx});
    } else if (auto ref = dyn_cast<exec::VariableRefOp>(op)) {
      auto it = variables.find(ref.getVariable());
      if (it == variables.end())
        return op.emitOpError() << "'" << ref.getVariable()
                                << "' does not name a dlexec.variable";
      values[ref.getBuffer()] = it->second;
    } else if (auto alloc = dyn_cast<exec::AllocOp>(op)) {
      auto idx = addBuffer(&op, alloc.getBuffer(), "", pkg::BufferKind::Arena);
      if (failed(idx))
        return failure();
      PlanBuffer &b = plan.buffers[*idx];
      if (auto offset = alloc.getOffset()) {
        b.offset = (int64_t)*offset;
        if (b.offset < 0 ||
            (fn.arenaBytes >= 0 && b.offset + b.bytes > fn.arenaBytes))
          return op.emitOpError() << "offset " << b.offset << " + " << b.bytes
                                  << " bytes lies outside the arena of "
                                  << fn.arenaBytes << " bytes";
      } else if (requirePlanned) {
        return op.emitOpError() << "has no offset; run the memory planner "
                                   "before writing a package";
      }
    } else if (auto reshape = dyn_cast<exec::ReshapeOp>(op)) {
      auto src = indexOf(&op, reshape.getSource());
      if (failed(src))
        return failure();
      auto idx =
          addBuffer(&op, reshape.getResult(), "", pkg::BufferKind::Alias);
      if (failed(idx))
        return failure();
      if (plan.buffers[*idx].bytes != plan.buffers[*src].bytes)
        return op.emitOpError()
               << "changes the size of the buffer (" << plan.buffers[*src].bytes
               << " -> " << plan.buffers[*idx].bytes << " bytes)";
      plan.buffers[*idx].aliasOf = *src;
    } else if (auto view = dyn_cast<exec::SubviewOp>(op)) {
      // A strided window, written only as the output of a call or builtin
      // that writes strided outputs (the memory planner leaves no other).
      std::optional<exec::StridedView> strided = exec::stridedViewOf(view);
      for (OpOperand &use : view->getUses())
        if (!strided ||
            !exec::writesStridedOperand(use.getOwner(), use.getOperandNumber()))
          return use.getOwner()->emitOpError()
                 << "uses a dlexec.subview other than as the strided output "
                    "of a library call or builtin kernel that accepts one";
      auto src = indexOf(&op, view.getSource());
      if (failed(src))
        return failure();
      auto idx = addBuffer(&op, view.getResult(), "", pkg::BufferKind::Alias);
      if (failed(idx))
        return failure();
      PlanBuffer &b = plan.buffers[*idx];
      b.aliasOf = *src;
      b.viewOffset = strided->offset;
      b.viewStrides.assign(strided->strides.begin(), strided->strides.end());
    } else if (isa<exec::KernelOp, exec::BuiltinKernelOp, exec::LibraryCallOp,
                   exec::MultiTensorKernelOp>(op)) {
      PlanStep step;
      for (Value v : op.getOperands()) {
        auto idx = indexOf(&op, v);
        if (failed(idx))
          return failure();
        step.args.push_back(*idx);
      }
      if (auto k = dyn_cast<exec::KernelOp>(op)) {
        step.kernel = kernelIndex(k.getSymName());
        step.numInputs = k.getInputs().size();
      } else if (auto b = dyn_cast<exec::BuiltinKernelOp>(op)) {
        step.kernel = kernelIndex(b.getSymName());
        step.numInputs = b.getInputs().size();
      } else if (auto m = dyn_cast<exec::MultiTensorKernelOp>(op)) {
        step.kernel = kernelIndex(m.getSymName());
        step.numInputs = m.getInputs().size();
      } else {
        auto call = cast<exec::LibraryCallOp>(op);
        step.isLaunch = false;
        step.name = call.getCallee().str();
        step.numInputs = call.getInputs().size();
        if (failed(addLibraryCall(call, step)))
          return failure();
      }
      if (step.isLaunch)
        step.name = plan.kernelNames[step.kernel];
      fn.steps.push_back(std::move(step));
    } else if (isa<exec::AllReduceOp, exec::WaitOp>(op)) {
      PlanStep step;
      step.isLaunch = false;
      auto idx = indexOf(&op, op.getOperand(0));
      if (failed(idx))
        return failure();
      step.args.push_back(*idx);
      if (auto ar = dyn_cast<exec::AllReduceOp>(op)) {
        step.collective = PlanStep::Collective::AllReduce;
        step.average = ar.getReduction() == "avg";
      } else {
        step.collective = PlanStep::Collective::Wait;
      }
      fn.steps.push_back(std::move(step));
    } else if (auto output = dyn_cast<exec::OutputOp>(op)) {
      auto idx = indexOf(&op, output.getBuffer());
      if (failed(idx))
        return failure();
      fn.outputs.push_back({output.getName().str(), *idx});
    } else if (isa<arith::ConstantOp>(op)) {
      // Scalars captured by kernel bodies; baked into the kernels.
    } else {
      return op.emitOpError() << "cannot be written to a package; a "
                                 "dlexec.func may hold input, output, "
                                 "variable_ref, alloc, reshape, kernel, "
                                 "builtin_kernel, library_call, all_reduce "
                                 "and wait";
    }
  }
  plan.functions.push_back(std::move(fn));
  return success();
}

FailureOr<Plan> PlanBuilder::build() {
  for (auto var : module.getOps<exec::VariableOp>()) {
    StringRef kind = var.getKind();
    pkg::BufferKind k;
    if (kind == "parameter")
      k = pkg::BufferKind::Parameter;
    else if (kind == "optimizer_state")
      k = pkg::BufferKind::OptimizerState;
    else if (kind == "buffer")
      k = pkg::BufferKind::Buffer;
    else if (kind == "constant")
      k = pkg::BufferKind::Constant;
    else
      return var.emitOpError() << "kind '" << kind
                               << "' is not parameter, optimizer_state, state "
                                  "or constant";
    auto idx = addBuffer(var, Value(), var.getSymName(), k);
    if (failed(idx))
      return failure();
    if (var.getInitialValue())
      plan.buffers[*idx].init = var.getSymName().str();
    variables[var.getSymName()] = *idx;
  }
  for (auto func : module.getOps<exec::FuncOp>())
    if (failed(addFunction(func)))
      return failure();
  if (plan.functions.empty())
    return module.emitError() << "the module has no dlexec.func to package";
  return std::move(plan);
}

/// The initial value of a variable as little-endian row-major bytes:
/// `bytes` views the attribute's own storage where it holds exactly those
/// bytes (a non-splat dense or a resource attribute, which keeps a large
/// model's weights from being copied before they reach the package), else
/// `owned`.
struct InitialBytes {
  ArrayRef<uint8_t> bytes;
  std::vector<uint8_t> owned;
};

/// The initial value of |var|; an error at |var| when it does not match the
/// buffer's type or size.
FailureOr<InitialBytes> initialBytes(exec::VariableOp var,
                                     const PlanBuffer &buffer) {
  ElementsAttr attr = *var.getInitialValue();
  auto type = cast<MemRefType>(var.getType());
  auto attrType = cast<ShapedType>(attr.getType());
  if (attrType.getShape() != type.getShape() ||
      attrType.getElementType() != type.getElementType())
    return var.emitOpError() << "initial value of type " << attrType
                             << " does not match the buffer type " << type;
  size_t n = type.getNumElements(),
         elemBytes = buffer.bytes / std::max<size_t>(n, 1);
  InitialBytes out;
  auto view = [&](ArrayRef<char> raw) {
    out.bytes = ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(raw.data()), raw.size());
  };
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (type.getElementType().isInteger(1)) {
      out.owned.reserve(n);
      for (bool b : dense.getValues<bool>())
        out.owned.push_back(b ? 1 : 0);
    } else {
      ArrayRef<char> raw = dense.getRawData();
      if (dense.isSplat()) {
        out.owned.reserve(buffer.bytes);
        for (size_t i = 0; i < n; ++i)
          out.owned.insert(out.owned.end(), raw.begin(),
                           raw.begin() + elemBytes);
      } else {
        view(raw);
      }
    }
  } else if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return var.emitOpError() << "initial value resource has no data";
    view(blob->getData());
  } else {
    return var.emitOpError() << "initial value must be dense<...> or "
                                "dense_resource<...>";
  }
  if (out.bytes.empty() && !out.owned.empty())
    out.bytes = out.owned;
  if ((int64_t)out.bytes.size() != buffer.bytes)
    return var.emitOpError() << "initial value has " << out.bytes.size()
                             << " bytes, expected " << buffer.bytes;
  return out;
}

/// The package DType of a library call's element type.
pkg::DType libraryCallDType(exec::ElementType type) {
  switch (type) {
  case exec::ElementType::F32:
    return pkg::DType::F32;
  case exec::ElementType::F16:
    return pkg::DType::F16;
  case exec::ElementType::BF16:
    return pkg::DType::BF16;
  case exec::ElementType::F64:
    return pkg::DType::F64;
  }
  return pkg::DType::F32;
}

/// The typed attribute table (package.fbs LibraryCallAttrs) of |call|.
std::pair<pkg::LibraryCallAttrs, flatbuffers::Offset<void>>
libraryCallAttrs(flatbuffers::FlatBufferBuilder &fbb,
                 const exec::LibraryCallParams &call) {
  switch (exec::libraryCallInfo(call.call).family) {
  case exec::LibraryCallFamily::Gemm: {
    const exec::GemmParams &g = call.gemm;
    return {pkg::LibraryCallAttrs::GemmAttrs,
            pkg::CreateGemmAttrs(
                fbb, g.m, g.n, g.k, g.trans_a, g.trans_b, g.has_c,
                g.c_is_row_vector, g.alpha, g.beta, libraryCallDType(g.dtype),
                // The enums list the same epilogues in the same order.
                static_cast<pkg::GemmEpilogue>(g.epilogue))
                .Union()};
  }
  case exec::LibraryCallFamily::BatchedGemm: {
    const exec::BatchedGemmParams &g = call.batched;
    return {pkg::LibraryCallAttrs::BatchedGemmAttrs,
            pkg::CreateBatchedGemmAttrsDirect(
                fbb, g.m, g.n, g.k, &g.batch, &g.stride_a, &g.stride_b,
                libraryCallDType(g.dtype), g.trans_a, g.trans_b)
                .Union()};
  }
  case exec::LibraryCallFamily::Conv:
    break;
  }
  const exec::ConvParams &c = call.conv;
  std::vector<int64_t> in{c.h, c.w}, filter{c.r, c.s}, out{c.p, c.q},
      strides{c.stride_h, c.stride_w},
      pads{c.pad_top, c.pad_left, c.pad_bottom, c.pad_right},
      dil{c.dilation_h, c.dilation_w};
  if (c.spatial == 3) {
    in.insert(in.begin(), c.d);
    filter.insert(filter.begin(), c.t);
    out.insert(out.begin(), c.o);
    strides.insert(strides.begin(), c.stride_d);
    pads = {c.pad_front, c.pad_top,    c.pad_left,
            c.pad_back,  c.pad_bottom, c.pad_right};
    dil.insert(dil.begin(), c.dilation_d);
  }
  return {pkg::LibraryCallAttrs::ConvAttrs,
          pkg::CreateConvAttrsDirect(
              fbb, c.spatial, c.n, c.c, c.k, c.group, c.has_bias, &in, &filter,
              &out, &strides, &pads, &dil, libraryCallDType(c.dtype),
              c.y_strides.empty() ? nullptr : &c.y_strides)
              .Union()};
}

/// The parameters of a library call for `--emit=plan`, named as in
/// package.fbs.
std::string describeLibraryCall(const exec::LibraryCallParams &call) {
  std::string out;
  llvm::raw_string_ostream os(out);
  auto list = [&](const char *name, llvm::ArrayRef<int64_t> v) {
    os << " " << name << "=[";
    llvm::interleave(v, os, ",");
    os << "]";
  };
  switch (exec::libraryCallInfo(call.call).family) {
  case exec::LibraryCallFamily::Gemm: {
    const exec::GemmParams &g = call.gemm;
    os << " m=" << g.m << " n=" << g.n << " k=" << g.k
       << " trans_a=" << g.trans_a << " trans_b=" << g.trans_b
       << " has_c=" << g.has_c << " c_is_row_vector=" << g.c_is_row_vector
       << " alpha=" << llvm::format("%.9g", (double)g.alpha)
       << " beta=" << llvm::format("%.9g", (double)g.beta);
    if (g.epilogue != exec::GemmEpilogue::None)
      os << " epilogue=" << exec::gemmEpilogueName(g.epilogue);
    break;
  }
  case exec::LibraryCallFamily::BatchedGemm: {
    const exec::BatchedGemmParams &g = call.batched;
    os << " m=" << g.m << " n=" << g.n << " k=" << g.k;
    list("batch", g.batch);
    list("stride_a", g.stride_a);
    list("stride_b", g.stride_b);
    if (g.trans_a || g.trans_b)
      os << " trans_a=" << g.trans_a << " trans_b=" << g.trans_b;
    break;
  }
  case exec::LibraryCallFamily::Conv: {
    const exec::ConvParams &c = call.conv;
    bool is3 = c.spatial == 3;
    auto sp = [&](int64_t depth, int64_t h, int64_t w) {
      return is3 ? std::vector<int64_t>{depth, h, w}
                 : std::vector<int64_t>{h, w};
    };
    os << " n=" << c.n << " c=" << c.c << " k=" << c.k << " group=" << c.group
       << " has_bias=" << c.has_bias;
    list("input_size", sp(c.d, c.h, c.w));
    list("filter_size", sp(c.t, c.r, c.s));
    list("output_size", sp(c.o, c.p, c.q));
    list("strides", sp(c.stride_d, c.stride_h, c.stride_w));
    std::vector<int64_t> pads = sp(c.pad_front, c.pad_top, c.pad_left),
                         end = sp(c.pad_back, c.pad_bottom, c.pad_right);
    pads.insert(pads.end(), end.begin(), end.end());
    list("pads", pads);
    list("dilations", sp(c.dilation_d, c.dilation_h, c.dilation_w));
    break;
  }
  }
  // f32 (the default) is not printed, so f32 plans read as before.
  exec::ElementType dtype = exec::elementTypeOf(call);
  if (dtype != exec::ElementType::F32)
    os << " dtype=" << exec::elementTypeName(dtype);
  return out;
}

/// Writes |pieces|, one after the other, to |path| atomically: a temporary
/// file beside it renamed over it, so readers see the old file or the whole
/// new one. No fsync: a package is regenerated by running dlc again
/// (docs/dlc.md, "Compile time"). On failure the temporary file is removed
/// and |error| says what failed.
bool writeFileAtomic(StringRef path, ArrayRef<ArrayRef<uint8_t>> pieces,
                     std::string &error) {
  auto temp = llvm::sys::fs::TempFile::create(path + ".tmp.%%%%%%");
  if (!temp) {
    error = "cannot create a temporary file beside it: " +
            llvm::toString(temp.takeError());
    return false;
  }
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    for (ArrayRef<uint8_t> piece : pieces)
      os.write(reinterpret_cast<const char *>(piece.data()), piece.size());
    os.flush();
    if (std::error_code ec = os.error()) {
      os.clear_error();
      error = "cannot write: " + ec.message();
      llvm::consumeError(temp->discard());
      return false;
    }
  }
  if (llvm::Error e = temp->keep(path)) {
    error = "cannot rename the temporary file: " + llvm::toString(std::move(e));
    llvm::consumeError(temp->discard());
    return false;
  }
  return true;
}

/// Points the launch steps of |plan| at the distinct kernels of |cuda| (a
/// kernel identical to another up to its name is one of the other's
/// aliases).
LogicalResult resolveLaunchSteps(ModuleOp planned, Plan &plan,
                                 ArrayRef<KernelSource> cuda) {
  llvm::StringMap<unsigned> kernelOf;
  for (auto [i, k] : llvm::enumerate(cuda)) {
    kernelOf[k.name] = i;
    for (const std::string &alias : k.aliases)
      kernelOf[alias] = i;
  }
  for (PlanFunction &fn : plan.functions)
    for (PlanStep &step : fn.steps) {
      if (!step.isLaunch || step.collective != PlanStep::Collective::None)
        continue;
      auto it = kernelOf.find(plan.kernelNames[step.kernel]);
      if (it == kernelOf.end())
        return planned.emitError() << "internal error: no kernel '"
                                   << plan.kernelNames[step.kernel] << "'";
      step.kernel = it->second;
      step.name = cuda[it->second].name;
    }
  if (kernelOf.size() != plan.kernelNames.size())
    return planned.emitError() << "kernels outside a dlexec.func cannot be "
                                  "packaged";
  return success();
}

/// The variables with an initial value, in module order: their safetensors
/// entries, their bytes and their dtypes.
struct Weights {
  std::vector<dlrt::safetensors::TensorInfo> tensors;
  std::vector<InitialBytes> tensorBytes;
  std::vector<pkg::DType> tensorDTypes;
  uint64_t dataBytes = 0;
};

FailureOr<Weights> collectWeights(ModuleOp planned, const Plan &plan) {
  Weights w;
  DenseMap<Operation *, const PlanBuffer *> bufferOf;
  for (const PlanBuffer &b : plan.buffers)
    bufferOf[b.op] = &b; // the last buffer of an op, as the search was
  for (auto var : planned.getOps<exec::VariableOp>()) {
    if (!var.getInitialValue())
      continue;
    const PlanBuffer *buffer = bufferOf.lookup(var.getOperation());
    auto bytes = initialBytes(var, *buffer);
    if (failed(bytes))
      return failure();
    w.tensors.push_back({var.getSymName().str(),
                         safetensorsDtype(buffer->dtype), buffer->shape,
                         bytes->bytes.size()});
    w.tensorDTypes.push_back(buffer->dtype);
    w.dataBytes += bytes->bytes.size();
    w.tensorBytes.push_back(std::move(*bytes));
  }
  return w;
}

/// A pipeline package's step function: the global batch in, the loss out;
/// the runtime runs the stages' functions for it (the Pipeline table).
/// Adds the step function and its buffers to |plan| and the bytes of its
/// inputs to |stepInputBytes|; returns the Pipeline table built in |fbb|.
FailureOr<flatbuffers::Offset<pkg::Pipeline>>
buildPipelineTable(ModuleOp planned, Plan &plan, const PackageOptions &options,
                   flatbuffers::FlatBufferBuilder &fbb,
                   int64_t &stepInputBytes) {
  auto failedRecord = [&]() {
    return planned.emitError()
           << "internal error: malformed dlgraph.pipeline record";
  };
  DictionaryAttr rec = exec::getPipelineRecord(planned);
  auto microBatches = rec.getAs<IntegerAttr>("micro_batches");
  auto schedule = rec.getAs<StringAttr>("schedule");
  auto lossStage = rec.getAs<IntegerAttr>("loss_stage");
  auto stagesAttr = rec.getAs<ArrayAttr>("stages");
  auto transfersAttr = rec.getAs<ArrayAttr>("transfers");
  auto inputsAttr = rec.getAs<ArrayAttr>("inputs");
  if (!microBatches || !schedule || !lossStage || !stagesAttr ||
      !transfersAttr || !inputsAttr)
    return failedRecord();
  const int64_t m = microBatches.getInt();
  PlanFunction step;
  step.name = "train_step";
  step.arenaBytes = 0;
  std::vector<std::string> inputNames;
  for (Attribute a : inputsAttr) {
    auto name = dyn_cast<StringAttr>(a);
    if (!name)
      return failedRecord();
    // The micro-batch buffer of any stage function reading it.
    const PlanBuffer *micro = nullptr;
    for (const PlanFunction &fn : plan.functions)
      for (auto &[inName, idx] : fn.inputs)
        if (inName == name.getValue() && !micro)
          micro = &plan.buffers[idx];
    if (!micro)
      continue; // read by no stage
    PlanBuffer global = *micro;
    global.op = nullptr;
    if (global.shape.empty())
      return planned.emitError()
             << "pipeline input '" << name.getValue()
             << "' is a scalar; micro-batches split dim 0 of every input";
    global.shape[0] *= m;
    global.bytes *= m;
    stepInputBytes += global.bytes;
    plan.buffers.push_back(global);
    step.inputs.push_back({name.getValue().str(),
                           static_cast<uint32_t>(plan.buffers.size() - 1)});
    inputNames.push_back(name.getValue().str());
  }
  PlanBuffer loss;
  loss.name = options.lossOutput;
  loss.kind = pkg::BufferKind::Input;
  loss.dtype = pkg::DType::F32;
  loss.bytes = 4;
  plan.buffers.push_back(loss);
  stepInputBytes += loss.bytes;
  step.outputs.push_back(
      {options.lossOutput, static_cast<uint32_t>(plan.buffers.size() - 1)});
  plan.functions.push_back(step);

  std::vector<flatbuffers::Offset<pkg::PipelineStage>> stages;
  for (Attribute a : stagesAttr) {
    auto st = dyn_cast<DictionaryAttr>(a);
    auto fwd = st ? st.getAs<StringAttr>("forward") : StringAttr();
    auto bwd = st ? st.getAs<StringAttr>("backward") : StringAttr();
    auto upd = st ? st.getAs<StringAttr>("update") : StringAttr();
    auto accs = st ? st.getAs<ArrayAttr>("accumulators") : ArrayAttr();
    if (!fwd || !bwd || !upd || !accs)
      return failedRecord();
    std::vector<std::string> accNames;
    for (Attribute acc : accs)
      accNames.push_back(cast<StringAttr>(acc).getValue().str());
    // Strings and vectors are built before the table that holds them.
    auto accVector = fbb.CreateVectorOfStrings(accNames);
    auto f = fbb.CreateString(fwd.getValue().str());
    auto b = fbb.CreateString(bwd.getValue().str());
    auto u = fbb.CreateString(upd.getValue().str());
    stages.push_back(pkg::CreatePipelineStage(fbb, f, b, u, accVector));
  }
  std::vector<flatbuffers::Offset<pkg::PipelineTransfer>> transfers;
  for (Attribute a : transfersAttr) {
    auto t = dyn_cast<DictionaryAttr>(a);
    auto name = t ? t.getAs<StringAttr>("name") : StringAttr();
    auto from = t ? t.getAs<IntegerAttr>("from") : IntegerAttr();
    auto to = t ? t.getAs<IntegerAttr>("to") : IntegerAttr();
    auto backward = t ? t.getAs<BoolAttr>("backward") : BoolAttr();
    if (!name || !from || !to || !backward)
      return failedRecord();
    transfers.push_back(pkg::CreatePipelineTransferDirect(
        fbb, name.getValue().str().c_str(), from.getInt(), to.getInt(),
        backward.getValue()));
  }
  auto inputVector = fbb.CreateVectorOfStrings(inputNames);
  auto scheduleString = fbb.CreateString(schedule.getValue().str());
  auto stepString = fbb.CreateString("train_step");
  auto stageVector = fbb.CreateVector(stages);
  auto transferVector = fbb.CreateVector(transfers);
  return pkg::CreatePipeline(fbb, scheduleString, static_cast<int32_t>(m),
                             static_cast<int32_t>(lossStage.getInt()),
                             stepString, stageVector, transferVector,
                             inputVector);
}

/// The Function tables of |plan|, with their steps, built in |fbb|.
std::vector<flatbuffers::Offset<pkg::Function>>
buildFunctions(flatbuffers::FlatBufferBuilder &fbb, const Plan &plan) {
  std::vector<flatbuffers::Offset<pkg::Function>> functions;
  for (const PlanFunction &fn : plan.functions) {
    std::vector<flatbuffers::Offset<pkg::Step>> steps;
    for (const PlanStep &s : fn.steps) {
      if (s.collective == PlanStep::Collective::AllReduce) {
        auto ar = pkg::CreateAllReduce(fbb, s.args[0],
                                       s.average ? pkg::ReduceOp::Avg
                                                 : pkg::ReduceOp::Sum);
        steps.push_back(pkg::CreateStep(fbb, pkg::Op::AllReduce, ar.Union()));
      } else if (s.collective == PlanStep::Collective::Wait) {
        auto w = pkg::CreateWaitCollective(fbb, s.args[0]);
        steps.push_back(
            pkg::CreateStep(fbb, pkg::Op::WaitCollective, w.Union()));
      } else if (s.isLaunch) {
        auto launch = pkg::CreateLaunchKernelDirect(fbb, s.kernel, &s.args);
        steps.push_back(
            pkg::CreateStep(fbb, pkg::Op::LaunchKernel, launch.Union()));
      } else {
        auto [attrsType, attrs] = libraryCallAttrs(fbb, s.call);
        auto call = pkg::CreateLibraryCallDirect(
            fbb, s.name.c_str(), &s.args, /*int_attrs=*/nullptr,
            /*float_attrs=*/nullptr, attrsType, attrs);
        steps.push_back(
            pkg::CreateStep(fbb, pkg::Op::LibraryCall, call.Union()));
      }
    }
    std::vector<flatbuffers::Offset<pkg::NamedBuffer>> ins, outs;
    for (auto &[name, idx] : fn.inputs)
      ins.push_back(pkg::CreateNamedBufferDirect(fbb, name.c_str(), idx));
    for (auto &[name, idx] : fn.outputs)
      outs.push_back(pkg::CreateNamedBufferDirect(fbb, name.c_str(), idx));
    functions.push_back(pkg::CreateFunctionDirect(
        fbb, fn.name.c_str(), &ins, &outs, &steps, fn.arenaBytes));
  }
  return functions;
}

/// Writes |fbb|'s finished package to |path| with the bytes of the tensors
/// from their attributes: after the FlatBuffer in the weights section at
/// |sectionOffsets| when that is given, else in place of the uninitialized
/// weights blob at |tensorsBegin| (|weightDataBytes| long).
LogicalResult writePackageFile(ModuleOp planned, StringRef path,
                               flatbuffers::FlatBufferBuilder &fbb,
                               const std::vector<uint64_t> *sectionOffsets,
                               ArrayRef<InitialBytes> tensorBytes,
                               const uint8_t *tensorsBegin,
                               uint64_t weightDataBytes) {
  const bool weightsSection = sectionOffsets != nullptr;
  const uint8_t *begin = fbb.GetBufferPointer();
  std::vector<ArrayRef<uint8_t>> pieces;
  static const uint8_t zeros[kWeightAlignment] = {};
  if (weightsSection) {
    // The FlatBuffer, padding, and each tensor from its attribute.
    const uint64_t sectionStart =
        llvm::alignTo(fbb.GetSize(), kWeightAlignment);
    pkg::GetMutablePackage(fbb.GetBufferPointer())
        ->mutable_weights_section()
        ->mutate_offset(sectionStart);
    pieces.push_back(ArrayRef<uint8_t>(begin, fbb.GetSize()));
    uint64_t at = fbb.GetSize();
    for (auto [i, t] : llvm::enumerate(tensorBytes)) {
      const uint64_t to = sectionStart + (*sectionOffsets)[i];
      pieces.push_back(ArrayRef<uint8_t>(zeros, to - at));
      pieces.push_back(t.bytes);
      at = to + t.bytes.size();
    }
  } else {
    // The buffer around the tensors, and the tensors from their attributes.
    pieces.push_back(ArrayRef<uint8_t>(begin, tensorsBegin));
    for (const InitialBytes &t : tensorBytes)
      pieces.push_back(t.bytes);
    pieces.push_back(ArrayRef<uint8_t>(tensorsBegin + weightDataBytes,
                                       begin + fbb.GetSize()));
  }
  std::string error;
  if (!writeFileAtomic(path, pieces, error))
    return planned.emitError()
           << "cannot write package '" << path << "': " << error;
  // The atomic write creates the file owner-only; a package is readable.
  llvm::sys::fs::setPermissions(path, llvm::sys::fs::all_read |
                                          llvm::sys::fs::owner_write);
  return success();
}

} // namespace

LogicalResult writePackage(ModuleOp planned, StringRef path,
                           const PackageOptions &options) {
  auto planOr = PlanBuilder(planned, /*requirePlanned=*/true).build();
  if (failed(planOr))
    return failure();
  Plan &plan = *planOr;
  PhaseTimer generation(options.times, "kernel generation");
  auto cuda = emitCudaKernels(planned);
  if (failed(cuda))
    return failure();
  // Launch steps index the distinct kernels of |cuda|.
  if (failed(resolveLaunchSteps(planned, plan, *cuda)))
    return failure();
  const unsigned jobCount = compileJobs(options.jobs);
  auto hostSources = emitHostUnits(planned, 4 * jobCount);
  if (failed(hostSources))
    return failure();
  generation.stop();

  PhaseTimer hostCompile(options.times, "host compile");
  auto hostLib = compileHostLibrary(planned.getLoc(), *hostSources,
                                    options.hostCompiler, options.cache,
                                    jobCount, options.cacheReport);
  if (failed(hostLib))
    return failure();
  hostCompile.stop();

  // Cubins: every (arch, kernel) pair, compiled in parallel.
  PhaseTimer nvrtc(options.cudaArchs.empty() ? nullptr : options.times,
                   "NVRTC");
  auto cubinImages =
      compileCubins(planned.getLoc(), *cuda, options.cudaArchs, options.cache,
                    jobCount, options.cacheReport);
  if (failed(cubinImages))
    return failure();
  nvrtc.stop();
  PhaseTimer packageWrite(options.times, "package write");

  // Weights: a safetensors header, then each variable's bytes copied once,
  // straight from its attribute into the package (below).
  auto weights = collectWeights(planned, plan);
  if (failed(weights))
    return failure();
  const std::vector<dlrt::safetensors::TensorInfo> &tensors = weights->tensors;
  const uint64_t weightDataBytes = weights->dataBytes;
  // Large weights go to the weights section after the FlatBuffer (format
  // version 8), which FlatBuffers' 2 GiB does not limit; smaller ones stay
  // in the `weights` safetensors blob inside it, as before.
  const bool weightsSection =
      !tensors.empty() && weightDataBytes >= options.weightsSectionThreshold;
  std::vector<uint8_t> weightHeader;
  if (!weightsSection)
    weightHeader = dlrt::safetensors::serializeHeader(
        tensors, {{"producer", options.producer}});
  // The FlatBuffer: 32-bit offsets, at most 2 GiB (FlatBuffers 2.0).
  // Checked before building it, as offsets past that would wrap silently
  // and give a package dlrt rejects as corrupt.
  auto tooLarge = [&](uint64_t bytes) {
    if (weightsSection)
      return planned.emitError()
             << "the package's plan, kernels and host library need " << bytes
             << " bytes (" << llvm::formatv("{0:F2}", bytes / 1e9).str()
             << " GB, without the weights); they are one FlatBuffers buffer, "
                "which holds at most "
             << FLATBUFFERS_MAX_BUFFER_SIZE << " bytes (2 GiB)";
    return planned.emitError()
           << "the package needs " << bytes << " bytes ("
           << llvm::formatv("{0:F2}", bytes / 1e9).str() << " GB, of which "
           << weightDataBytes << " bytes of weights); one FlatBuffers buffer "
           << "holds at most " << FLATBUFFERS_MAX_BUFFER_SIZE
           << " bytes (2 GiB): lower the weights section threshold "
              "($DLC_WEIGHTS_SECTION_THRESHOLD) to put the weights after it";
  };
  uint64_t lowerBound = weightHeader.size() + hostLib->size() +
                        (weightsSection ? 0 : weightDataBytes);
  for (const auto &images : *cubinImages)
    for (const auto &image : images)
      lowerBound += image.size();
  if (lowerBound > FLATBUFFERS_MAX_BUFFER_SIZE)
    return tooLarge(lowerBound);

  // A pipeline package's step function and its Pipeline table.
  flatbuffers::Offset<pkg::Pipeline> pipelineTable = 0;
  int64_t stepInputBytes = 0;
  // Room for the weights and the host library up front: growing the
  // builder by doubling would copy them again (the bytes written do not
  // depend on the initial size).
  flatbuffers::FlatBufferBuilder fbb((1 << 20) + weightHeader.size() +
                                     (weightsSection ? 0 : weightDataBytes) +
                                     hostLib->size());
  if (exec::getPipelineRecord(planned)) {
    auto table =
        buildPipelineTable(planned, plan, options, fbb, stepInputBytes);
    if (failed(table))
      return failure();
    pipelineTable = *table;
  }

  if (options.training) {
    bool hasLoss = false;
    for (const PlanFunction &fn : plan.functions)
      for (auto &out : fn.outputs)
        hasLoss |= out.first == options.lossOutput;
    if (!hasLoss)
      return planned.emitError() << "training package: no function has an "
                                    "output named '"
                                 << options.lossOutput << "'";
  }

  std::vector<flatbuffers::Offset<pkg::Buffer>> buffers;
  for (const PlanBuffer &b : plan.buffers)
    buffers.push_back(
        pkg::CreateBufferDirect(fbb, b.name.c_str(), b.kind, b.dtype, &b.shape,
                                b.bytes, b.offset, b.aliasOf, b.init.c_str(),
                                b.viewOffset,
                                b.viewStrides.empty() ? nullptr
                                                      : &b.viewStrides));
  std::vector<flatbuffers::Offset<pkg::Kernel>> kernels;
  for (const KernelSource &k : *cuda)
    kernels.push_back(pkg::CreateKernelDirect(
        fbb, k.name.c_str(), k.cudaSource.c_str(), k.numThreads, k.blockSize));
  std::vector<flatbuffers::Offset<pkg::Function>> functions =
      buildFunctions(fbb, plan);
  flatbuffers::Offset<pkg::TrainingInfo> training = 0;
  if (options.training)
    training = pkg::CreateTrainingInfoDirect(
        fbb, options.lossOutput.c_str(), options.optimizer.c_str(),
        options.learningRate, options.batchSize, "__step", options.modelFlops,
        options.peakFlops);
  std::vector<flatbuffers::Offset<pkg::Cubin>> cubins;
  for (auto [a, arch] : llvm::enumerate(options.cudaArchs))
    for (auto [k, image] : llvm::enumerate((*cubinImages)[a]))
      cubins.push_back(pkg::CreateCubinDirect(
          fbb, arch.c_str(), (*cuda)[k].name.c_str(), &image));
  // The session's memory as dlc --stats reports it (docs/memory.md); an
  // optional table, so the format version stays.
  const PlanStats stats = computePlanStats(planned);
  auto memory = pkg::CreateMemoryPlan(
      fbb, stats.persistentBytes, stats.inputBytes + stepInputBytes,
      stats.arenaBytes, stats.workspaceBytes);
  // CreatePackageDirect's order of creation (the bytes depend on it), with
  // the weights written in place instead of from one more copy.
  auto producerString = fbb.CreateString(options.producer);
  auto modelNameString = fbb.CreateString(options.modelName);
  auto bufferVector = fbb.CreateVector(buffers);
  auto kernelVector = fbb.CreateVector(kernels);
  auto functionVector = fbb.CreateVector(functions);
  auto hostLibVector = fbb.CreateVector(*hostLib);
  // The tensors' bytes are left out of the builder (its pages there are
  // never touched, so never resident): they go from their attributes (a
  // dense attribute's storage, or a dense_resource blob such as the mapping
  // of an ONNX external data file) straight to the file below. Copied into
  // the builder, a model's weights were held twice at the end of a compile.
  uint8_t *weightData = nullptr;
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> weightVector = 0;
  if (!weightsSection) {
    weightVector = fbb.CreateUninitializedVector(
        weightHeader.size() + weightDataBytes, &weightData);
    std::memcpy(weightData, weightHeader.data(), weightHeader.size());
  }
  const uint8_t *tensorsBegin = weightData + weightHeader.size();
  auto cubinVector = fbb.CreateVector(cubins);
  // The weights section: each tensor at the next multiple of
  // kWeightAlignment from the section's start.
  std::vector<uint64_t> sectionOffsets;
  uint64_t sectionBytes = 0;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<pkg::WeightRef>>>
      weightRefVector = 0;
  if (weightsSection) {
    std::vector<flatbuffers::Offset<pkg::WeightRef>> refs;
    for (auto [i, t] : llvm::enumerate(tensors)) {
      sectionBytes = llvm::alignTo(sectionBytes, kWeightAlignment);
      sectionOffsets.push_back(sectionBytes);
      refs.push_back(pkg::CreateWeightRefDirect(
          fbb, t.name.c_str(), weights->tensorDTypes[i], &t.shape, sectionBytes,
          t.bytes));
      sectionBytes += t.bytes;
    }
    weightRefVector = fbb.CreateVector(refs);
  }
  // The section's offset is set once the FlatBuffer's size is known.
  pkg::WeightsSection sectionPlaceholder(0, sectionBytes);
  auto root = pkg::CreatePackage(
      fbb, kFormatVersion, producerString, modelNameString, bufferVector,
      kernelVector, functionVector, training, hostLibVector, weightVector,
      cubinVector, memory, pipelineTable,
      weightsSection ? &sectionPlaceholder : nullptr, weightRefVector);
  pkg::FinishPackageBuffer(fbb, root);
  if (fbb.GetSize() > FLATBUFFERS_MAX_BUFFER_SIZE)
    return tooLarge(fbb.GetSize());

  return writePackageFile(planned, path, fbb,
                          weightsSection ? &sectionOffsets : nullptr,
                          weights->tensorBytes, tensorsBegin, weightDataBytes);
}

std::string describePlan(ModuleOp planned) {
  auto planOr = PlanBuilder(planned, /*requirePlanned=*/false).build();
  if (failed(planOr))
    return "error: the module cannot be described as a plan (see the "
           "diagnostics)\n";
  const Plan &plan = *planOr;
  std::string out;
  llvm::raw_string_ostream os(out);
  auto shapeOf = [&](uint32_t idx) {
    const PlanBuffer &b = plan.buffers[idx];
    std::string s = dtypeName(b.dtype);
    s += "[";
    for (size_t i = 0; i < b.shape.size(); ++i)
      s += (i ? "x" : "") + std::to_string(b.shape[i]);
    return s + "]";
  };
  auto bufferRef = [&](uint32_t idx) {
    const PlanBuffer &b = plan.buffers[idx];
    return "#" + std::to_string(idx) +
           (b.name.empty() ? "" : " '" + b.name + "'") + " " + shapeOf(idx);
  };
  for (const PlanFunction &fn : plan.functions) {
    os << "function " << fn.name << ": arena ";
    if (fn.arenaBytes >= 0)
      os << fn.arenaBytes << " bytes";
    else
      os << "not planned";
    os << ", " << fn.steps.size() << " steps\n";
    for (auto &[name, idx] : fn.inputs)
      os << "  input  " << name << " = " << bufferRef(idx) << "\n";
    for (auto &[name, idx] : fn.outputs)
      os << "  output " << name << " = " << bufferRef(idx) << "\n";
    for (size_t i = 0; i < fn.steps.size(); ++i) {
      const PlanStep &s = fn.steps[i];
      if (s.collective != PlanStep::Collective::None) {
        os << "  " << i << ": "
           << (s.collective == PlanStep::Collective::Wait
                   ? "wait "
                   : (s.average ? "all_reduce avg " : "all_reduce sum "))
           << bufferRef(s.args[0]) << "\n";
        continue;
      }
      os << "  " << i << ": " << (s.isLaunch ? "kernel " : "library ") << s.name
         << " ins(";
      for (size_t a = 0; a < s.args.size(); ++a) {
        if (a == s.numInputs)
          os << ") outs(";
        else if (a)
          os << ", ";
        os << bufferRef(s.args[a]);
      }
      if (s.numInputs == s.args.size())
        os << ") outs(";
      os << ")";
      if (!s.isLaunch)
        os << describeLibraryCall(s.call);
      os << "\n";
    }
  }
  os << "buffers:\n";
  int64_t persistent = 0;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const PlanBuffer &b = plan.buffers[i];
    os << "  #" << i << " " << kindName(b.kind) << " "
       << (b.name.empty() ? "<temp>" : b.name) << " " << shapeOf(i) << " "
       << b.bytes << " bytes";
    if (b.kind == pkg::BufferKind::Arena)
      os << " @ " << (b.offset >= 0 ? std::to_string(b.offset) : "?");
    if (b.kind == pkg::BufferKind::Alias)
      os << " of #" << b.aliasOf;
    if (!b.viewStrides.empty()) {
      os << " at " << b.viewOffset << " strides";
      for (int64_t st : b.viewStrides)
        os << " " << st;
    }
    if (!b.init.empty())
      os << " init";
    os << "\n";
    if (b.kind == pkg::BufferKind::Parameter ||
        b.kind == pkg::BufferKind::OptimizerState ||
        b.kind == pkg::BufferKind::Buffer || b.kind == pkg::BufferKind::Constant)
      persistent += b.bytes;
  }
  os << "persistent bytes: " << persistent << "\n";
  return out;
}

} // namespace dlc::codegen
