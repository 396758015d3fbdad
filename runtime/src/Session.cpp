//===- Session.cpp - the executor: memory, step functions, checkpoints ----===//
#include "runtime/src/Session.h"
#include "runtime/src/PipelineState.h"

#include <cmath>
#include <cstdlib>

#include <signal.h>

#include <algorithm>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "runtime/schema/Safetensors.h"

namespace dlrt::exec {

Status Context::create(const dlrt_context_options_t &options,
                       std::unique_ptr<Context> *out) {
  out->reset();
  auto ctx = std::unique_ptr<Context>(new Context());
  // A distributed job's environment is read first: it is checked before any
  // device is opened, and each local rank takes its own GPU.
  comm::Rendezvous rendezvous;
  if (options.distributed) {
    Status st = comm::rendezvousFromEnvironment(&rendezvous);
    if (!st.ok())
      return st;
  }
  const int ordinal = options.device_ordinal + rendezvous.localRank;
  switch (options.device) {
  case DLRT_DEVICE_HOST:
    ctx->device_ = createHostDevice();
    break;
  case DLRT_DEVICE_CUDA: {
    Status s = createCudaDevice(ordinal, &ctx->device_);
    if (!s.ok())
      return s;
    if (!ctx->device_)
      return Status::error(DLRT_UNAVAILABLE, "the CUDA device is unavailable");
    break;
  }
  case DLRT_DEVICE_AUTO: {
    Status s = createCudaDevice(ordinal, &ctx->device_);
    if (!s.ok() || !ctx->device_) {
      ctx->device_ = createHostDevice();
      if (options.notice) {
        std::string message =
            "no usable CUDA device (" +
            (s.ok() ? std::string("none created") : s.message) +
            "); using the host device";
        options.notice(options.notice_user_data, message.c_str());
      }
    }
    break;
  }
  default:
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "unknown device kind " +
                             std::to_string(static_cast<int>(options.device)));
  }
  ctx->name_ = ctx->device_->name();
  // The test-only CUDA stand-in (runtime/cuda/CudaApi.h) must never pass
  // for a GPU: say so wherever the device is announced.
  const char *standin = std::getenv("DLRT_CUDA_STANDIN");
  if (ctx->device_->kind() == DLRT_DEVICE_CUDA && standin && *standin &&
      options.notice) {
    std::string message =
        std::string("DLRT_CUDA_STANDIN=") + standin +
        ": the CUDA device is the host stand-in used to test dlrt's CUDA "
        "path, not a GPU; its timings mean nothing";
    options.notice(options.notice_user_data, message.c_str());
  }
  if (options.distributed) {
    Status st = ctx->join(options, rendezvous);
    if (!st.ok())
      return st;
  }
  *out = std::move(ctx);
  return Status::OK();
}

Status Context::join(const dlrt_context_options_t &options,
                     const comm::Rendezvous &r) {
  double seconds = options.comm_timeout_seconds;
  if (!(seconds >= 0) || !std::isfinite(seconds))
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "the communication timeout must be a finite number "
                         "of seconds >= 0 (0: the default), got " +
                             std::to_string(seconds));
  // Beyond about 30 years the milliseconds would overflow; nobody waits
  // that long.
  std::chrono::milliseconds timeout =
      seconds == 0 ? comm::kDefaultTimeout
                   : std::chrono::milliseconds(static_cast<int64_t>(
                         std::ceil(std::min(seconds, 1e9) * 1000)));
  if (r.worldSize == 1)
    return Status::OK(); // one rank: the collectives are the identity
  // Gloo's TCP transport writes without MSG_NOSIGNAL: a peer that dies would
  // end this process with SIGPIPE instead of failing the collective with a
  // message naming it. Python does the same for PyTorch (SIGPIPE ignored).
  struct sigaction current;
  if (sigaction(SIGPIPE, nullptr, &current) == 0 &&
      current.sa_handler == SIG_DFL)
    signal(SIGPIPE, SIG_IGN);
  Status st =
      comm::TcpStore::create(comm::tcpStoreOptions(r, timeout), &store_);
  if (!st.ok())
    return st;
  hostsStore_ = r.rank == 0;
  if (device_->kind() == DLRT_DEVICE_CUDA)
    st = comm::createNcclCommunicator(r, store_.get(), device_->stream(),
                                      timeout, &communicator_);
  else
    st = comm::createGlooCommunicator(r, store_.get(), timeout, &communicator_);
  if (!st.ok())
    return st;
  if (options.notice) {
    std::string message = "joined the job as " + r.describe() + "; " +
                          communicator_->backend() + " communicator";
    options.notice(options.notice_user_data, message.c_str());
  }
  return Status::OK();
}

Context::~Context() {
  // The communicator may ask the store which peer failed; the server (on
  // rank 0) goes after it.
  communicator_.reset();
  // When a rank died, the others learn which one from the server's lost
  // ranks as their collectives fail, which may be just as rank 0's closed
  // connections (above) break them: rank 0 keeps serving a moment longer,
  // or they would blame rank 0 for the store that went away.
  std::vector<int> lost;
  if (store_ && hostsStore_ && store_->lostRanks(&lost).ok() && !lost.empty())
    std::this_thread::sleep_for(std::chrono::seconds(1));
  store_.reset();
}

namespace {
/// Runs the operation |issue| makes on the |bytes| of host memory at |host|
/// (given its base address): directly on Gloo; on NCCL, whose pointers are
/// device memory, on a device copy that is copied back afterwards.
template <typename Issue>
Status onHostMemory(Device &device, comm::Communicator &c, void *host,
                    size_t bytes, Issue issue) {
  if (std::string(c.backend()) != "nccl")
    return issue(host)->wait();
  DeviceBuffer buf;
  Status st = device.allocate(bytes, &buf);
  if (!st.ok())
    return st;
  st = device.copyToDevice(buf.data, host, bytes);
  if (st.ok())
    st = issue(buf.data)->wait();
  if (st.ok())
    st = device.copyToHost(host, buf.data, bytes);
  device.release(buf);
  return st;
}
} // namespace

Status Context::average(double *values, size_t count) {
  if (!communicator_ || count == 0)
    return Status::OK();
  comm::Communicator &c = *communicator_;
  const size_t w = static_cast<size_t>(c.size());
  // [this rank's values | every rank's, by rank]; doubles travel as i64 bit
  // patterns, so no reduction type is involved.
  std::vector<double> staging(count + count * w);
  std::copy(values, values + count, staging.begin());
  Status st = onHostMemory(*device_, c, staging.data(),
                           staging.size() * sizeof(double), [&](void *base) {
                             double *p = static_cast<double *>(base);
                             return c.allGather(p, p + count, count,
                                                comm::DataType::I64);
                           });
  if (!st.ok())
    return st;
  for (size_t i = 0; i < count; ++i) {
    double sum = 0;
    for (size_t r = 0; r < w; ++r)
      sum += staging[count + r * count + i];
    values[i] = sum / static_cast<double>(w);
  }
  return Status::OK();
}

Status Context::broadcast(void *data, size_t bytes, int root) {
  if (!communicator_ || bytes == 0)
    return Status::OK();
  if (bytes % 8 != 0)
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "broadcast of " + std::to_string(bytes) +
                             " bytes: not a multiple of 8");
  comm::Communicator &c = *communicator_;
  return onHostMemory(*device_, c, data, bytes, [&](void *base) {
    return c.broadcast(base, bytes / 8, comm::DataType::I64, root);
  });
}

Status Context::barrier() {
  if (!communicator_)
    return Status::OK();
  return communicator_->barrier()->wait();
}

std::unique_ptr<Context> Context::withDevice(std::unique_ptr<Device> device) {
  auto ctx = std::unique_ptr<Context>(new Context());
  ctx->device_ = std::move(device);
  ctx->name_ = ctx->device_->name();
  return ctx;
}

Status Model::kernels(std::vector<std::unique_ptr<DeviceKernel>> **out) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!kernelsLoaded_) {
    Status s = context_->device().loadKernels(package_.hostLibrary,
                                              package_.kernels, &kernels_);
    if (!s.ok())
      return s;
    if (kernels_.size() != package_.kernels.size())
      return Status::error(
          DLRT_INTERNAL,
          "the device loaded " + std::to_string(kernels_.size()) + " of " +
              std::to_string(package_.kernels.size()) + " kernels");
    kernelsLoaded_ = true;
  }
  *out = &kernels_;
  return Status::OK();
}

Status Session::create(std::shared_ptr<Model> model,
                       std::unique_ptr<Session> *out) {
  out->reset();
  std::unique_ptr<Session> s(new Session(model));
  const Package &pkg = model->package();
  Status st = model->kernels(&s->kernels_);
  if (!st.ok())
    return st;

  size_t n = pkg.buffers.size();
  s->pointers_.assign(n, nullptr);
  // A rank of a pipeline allocates the persistent buffers and the arena of
  // its stage's functions only (the rest waits for allocateDeferredState).
  std::vector<bool> stageBuffers;
  std::vector<const FunctionInfo *> stageFunctions;
  const Context &ctx = model->context();
  if (pkg.hasPipeline && ctx.worldSize() > 1 &&
      ctx.worldSize() % static_cast<int32_t>(pkg.pipeline.stages.size()) ==
          0) {
    const int32_t D = ctx.worldSize() /
                      static_cast<int32_t>(pkg.pipeline.stages.size());
    const PipelineInfo::Stage &stage =
        pkg.pipeline.stages[static_cast<size_t>(ctx.rank() / D)];
    stageBuffers.assign(n, false);
    for (const std::string &name :
         {stage.forward, stage.backward, stage.update,
          pkg.pipeline.stepFunction}) {
      const FunctionInfo *fn = pkg.function(name); // checked by the loader
      stageFunctions.push_back(fn);
      for (const StepInfo &step : fn->steps)
        for (uint32_t a : step.args)
          stageBuffers[a] = true;
      for (const auto *list : {&fn->inputs, &fn->outputs})
        for (const NamedBufferInfo &nb : *list)
          stageBuffers[nb.buffer] = true;
    }
    // An alias held makes what it resolves to held.
    for (size_t i = 0; i < n; ++i)
      if (stageBuffers[i])
        for (size_t j = i; pkg.buffers[j].kind == BufferKind::Alias;) {
          j = static_cast<size_t>(pkg.buffers[j].aliasOf);
          stageBuffers[j] = true;
        }
  }
  for (size_t i = 0; i < n; ++i) {
    const BufferInfo &b = pkg.buffers[i];
    if (!isPersistent(b.kind) && b.kind != BufferKind::Input)
      continue;
    if (isCheckpointed(b.kind))
      s->state_.push_back(static_cast<uint32_t>(i));
    if (!stageBuffers.empty() && !stageBuffers[i]) {
      s->deferred_.push_back(static_cast<uint32_t>(i));
      continue;
    }
    DeviceBuffer mem;
    st = s->device_.allocate(static_cast<size_t>(b.sizeBytes), &mem);
    if (!st.ok())
      return st;
    s->allocations_.push_back(mem);
    s->pointers_[i] = mem.data;
    if (isPersistent(b.kind) && !b.init.empty()) {
      const TensorData &t = pkg.weights.at(b.init); // checked by the loader
      st = s->device_.copyToDevice(mem.data, t.data(), t.size());
      pkg.releaseWeightPages(t);
    } else {
      st = s->device_.fillZero(mem.data, mem.bytes);
    }
    if (!st.ok())
      return st;
  }

  int64_t arenaBytes = 0;
  for (const FunctionInfo &f : pkg.functions)
    arenaBytes = std::max(arenaBytes, f.arenaBytes);
  s->fullArenaBytes_ = arenaBytes;
  s->stageOnly_ = !stageBuffers.empty();
  if (s->stageOnly_) {
    arenaBytes = 0;
    for (const FunctionInfo *f : stageFunctions)
      arenaBytes = std::max(arenaBytes, f->arenaBytes);
  }
  if (arenaBytes > 0) {
    st = s->device_.allocate(static_cast<size_t>(arenaBytes), &s->arena_);
    if (!st.ok())
      return st;
    // Not needed for correctness; makes a bad plan fail deterministically.
    st = s->device_.fillZero(s->arena_.data, s->arena_.bytes);
    if (!st.ok())
      return st;
  }
  // The planned workspace, whether or not this device uses it, so a session
  // holds what the plan predicts on every device.
  if (pkg.memory.workspaceBytes > 0) {
    st = s->device_.allocate(static_cast<size_t>(pkg.memory.workspaceBytes),
                             &s->workspace_);
    if (!st.ok())
      return st;
  }
  for (size_t i = 0; i < n; ++i) {
    const BufferInfo &b = pkg.buffers[i];
    // Arena buffers no function touches may lie outside the arena (the
    // loader checks the ones that are used); they keep a null pointer.
    int64_t end;
    if (b.kind == BufferKind::Arena &&
        !__builtin_add_overflow(b.arenaOffset, b.sizeBytes, &end) &&
        end <= arenaBytes)
      s->pointers_[i] = static_cast<uint8_t *>(s->arena_.data) + b.arenaOffset;
  }
  for (size_t i = 0; i < n; ++i) {
    int64_t offset = 0; // acyclic per loader
    size_t j = resolveAlias(pkg.buffers, static_cast<uint32_t>(i), &offset);
    s->pointers_[i] =
        s->pointers_[j] ? static_cast<uint8_t *>(s->pointers_[j]) + offset
                        : nullptr;
  }
  // The ranks of a pipeline start from the package's initializers, which
  // are the same on every rank; rank 0 does not hold the later stages'.
  if (s->stageOnly_) {
    *out = std::move(s);
    return Status::OK();
  }
  st = s->broadcastState();
  if (!st.ok())
    return st;
  *out = std::move(s);
  return Status::OK();
}

Status Session::broadcastState() {
  Context &ctx = model_->context();
  if (ctx.worldSize() == 1 || state_.empty())
    return Status::OK();
  const Package &pkg = model_->package();
  // One broadcast of every state buffer, each at an 8-byte aligned offset
  // of a host staging buffer.
  auto padded = [](int64_t bytes) {
    return (static_cast<size_t>(bytes) + 7) / 8 * 8;
  };
  size_t total = 0;
  for (uint32_t i : state_)
    total += padded(pkg.buffers[i].sizeBytes);
  std::vector<uint64_t> staging(total / 8, 0);
  uint8_t *base = reinterpret_cast<uint8_t *>(staging.data());
  Status st;
  size_t offset = 0;
  if (ctx.rank() == 0)
    for (uint32_t i : state_) {
      st = device_.copyToHost(base + offset, pointers_[i],
                              static_cast<size_t>(pkg.buffers[i].sizeBytes));
      if (!st.ok())
        return st;
      offset += padded(pkg.buffers[i].sizeBytes);
    }
  st = ctx.broadcast(base, total, /*root=*/0);
  if (!st.ok())
    return Status::error(st.code, "broadcasting the model state from rank 0: " +
                                      st.message);
  if (ctx.rank() == 0)
    return Status::OK();
  offset = 0;
  for (uint32_t i : state_) {
    st = device_.copyToDevice(pointers_[i], base + offset,
                              static_cast<size_t>(pkg.buffers[i].sizeBytes));
    if (!st.ok())
      return st;
    offset += padded(pkg.buffers[i].sizeBytes);
  }
  return Status::OK();
}

Status Session::allocateDeferredState() {
  if (!stageOnly_)
    return Status::OK();
  const Package &pkg = model_->package();
  for (uint32_t i : deferred_) {
    const BufferInfo &b = pkg.buffers[i];
    DeviceBuffer mem;
    if (Status st = device_.allocate(static_cast<size_t>(b.sizeBytes), &mem);
        !st.ok())
      return st;
    allocations_.push_back(mem);
    pointers_[i] = mem.data;
    Status st;
    if (auto it = deferredValues_.find(i); it != deferredValues_.end()) {
      st = device_.copyToDevice(mem.data, it->second.data(),
                                it->second.size());
    } else if (!b.init.empty()) {
      const TensorData &t = pkg.weights.at(b.init); // checked by the loader
      st = device_.copyToDevice(mem.data, t.data(), t.size());
      pkg.releaseWeightPages(t);
    } else {
      st = device_.fillZero(mem.data, mem.bytes);
    }
    if (!st.ok())
      return st;
  }
  deferred_.clear();
  deferredValues_.clear();
  stageOnly_ = false;
  // Every function's arena; the functions' arena buffers move with it, and
  // step graphs captured with the old pointers are dropped.
  if (fullArenaBytes_ > static_cast<int64_t>(arena_.bytes)) {
    DeviceBuffer arena;
    if (Status st = device_.allocate(static_cast<size_t>(fullArenaBytes_),
                                     &arena);
        !st.ok())
      return st;
    if (Status st = device_.fillZero(arena.data, arena.bytes); !st.ok()) {
      device_.release(arena);
      return st;
    }
    if (arena_.data)
      device_.release(arena_);
    arena_ = arena;
    for (size_t i = 0; i < pkg.buffers.size(); ++i) {
      const BufferInfo &b = pkg.buffers[i];
      int64_t end;
      if (b.kind == BufferKind::Arena &&
          !__builtin_add_overflow(b.arenaOffset, b.sizeBytes, &end) &&
          end <= fullArenaBytes_)
        pointers_[i] = static_cast<uint8_t *>(arena_.data) + b.arenaOffset;
    }
    graphs_.clear();
  }
  for (size_t i = 0; i < pkg.buffers.size(); ++i) {
    int64_t offset = 0;
    size_t j = resolveAlias(pkg.buffers, static_cast<uint32_t>(i), &offset);
    pointers_[i] = pointers_[j]
                       ? static_cast<uint8_t *>(pointers_[j]) + offset
                       : nullptr;
  }
  return Status::OK();
}

Session::~Session() {
  if (pipeline_)
    for (DeviceBuffer &b : pipeline_->allocations)
      device_.release(b);
  for (DeviceBuffer &b : allocations_)
    device_.release(b);
  if (arena_.data)
    device_.release(arena_);
  if (workspace_.data)
    device_.release(workspace_);
}

Status Session::memory(MemoryPlan *predicted, MemoryUsage *measured) {
  *predicted = model_->package().memory;
  // A pipeline rank that holds only its stage: what it holds.
  if (stageOnly_) {
    for (uint32_t i : deferred_) {
      const BufferInfo &b = model_->package().buffers[i];
      (b.kind == BufferKind::Input ? predicted->inputBytes
                                   : predicted->persistentBytes) -=
          b.sizeBytes;
    }
    predicted->arenaBytes = static_cast<int64_t>(arena_.bytes);
  }
  return device_.memoryUsage(measured);
}

namespace {

const NamedBufferInfo *findNamed(const std::vector<NamedBufferInfo> &list,
                                 const std::string &name) {
  for (const NamedBufferInfo &nb : list)
    if (nb.name == name)
      return &nb;
  return nullptr;
}

Status noFunction(const std::string &function) {
  return Status::error(DLRT_NOT_FOUND,
                       "the model has no function '" + function + "'");
}

Status sizeMismatch(const char *what, const std::string &name, size_t got,
                    int64_t want) {
  return Status::error(DLRT_INVALID_ARGUMENT,
                       std::string(what) + " '" + name + "' is " +
                           std::to_string(want) + " bytes, got " +
                           std::to_string(got));
}

} // namespace

Status Session::setInput(const std::string &function, const std::string &name,
                         const void *data, size_t bytes) {
  const Package &pkg = model_->package();
  const FunctionInfo *fn = pkg.function(function);
  if (!fn)
    return noFunction(function);
  const NamedBufferInfo *nb = findNamed(fn->inputs, name);
  if (!nb)
    return Status::error(DLRT_NOT_FOUND, "function '" + function +
                                             "' has no input '" + name + "'");
  const BufferInfo &b = pkg.buffers[nb->buffer];
  if (static_cast<int64_t>(bytes) != b.sizeBytes)
    return sizeMismatch("input", name, bytes, b.sizeBytes);
  if (bytes > 0 && !data)
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "input '" + name + "': data is NULL");
  if (Status st = materializeOutputs(); !st.ok())
    return st;
  return device_.copyToDevice(pointers_[nb->buffer], data, bytes);
}

/// Issues |step|'s all-reduce of the buffer at |data| (AllReduce steps hold
/// f32, f16 or bf16 buffers; Package checks it) on |communicator|. On the
/// host device the device is synchronized first, so that the buffer holds
/// its final values when the communicator's thread reads it; the NCCL
/// communicator orders itself after the CUDA device's stream.
Status Session::startAllReduce(comm::Communicator &communicator,
                               const StepInfo &step, void *data,
                               std::map<uint32_t, InFlight> *inFlight) {
  const BufferInfo &buffer = model_->package().buffers[step.args[0]];
  comm::DataType type = buffer.dtype == DLRT_F16    ? comm::DataType::F16
                        : buffer.dtype == DLRT_BF16 ? comm::DataType::BF16
                                                    : comm::DataType::F32;
  if (device_.kind() == DLRT_DEVICE_HOST) {
    Status st = device_.synchronize();
    if (!st.ok())
      return st;
  }
  size_t count =
      static_cast<size_t>(buffer.sizeBytes) / comm::dataTypeBytes(type);
  InFlight &entry = (*inFlight)[step.args[0]];
  entry.issuedNs = trace_.enabled() ? Trace::now() : 0;
  entry.work = communicator.allReduce(
      data, count, type,
      step.average ? comm::ReduceOp::Avg : comm::ReduceOp::Sum);
  return Status::OK();
}

void Session::traceStep(const StepInfo &step, int64_t beginNs) {
  const Package &pkg = model_->package();
  Trace::Event e;
  e.beginNs = beginNs;
  e.endNs = Trace::now();
  switch (step.kind) {
  case StepInfo::Kind::Launch:
    e.category = "kernel";
    e.name = pkg.kernels[step.kernel].name;
    break;
  case StepInfo::Kind::LibraryCall:
    e.category = "library";
    e.name = dlc::exec::libraryCallInfo(step.call.call).name;
    break;
  case StepInfo::Kind::AllReduce:
    e.category = "all_reduce";
    e.name = "issue all_reduce #" + std::to_string(step.args[0]);
    break;
  case StepInfo::Kind::Wait:
    e.category = "wait";
    e.name = "wait #" + std::to_string(step.args[0]);
    break;
  }
  if (!step.args.empty())
    e.bytes = pkg.buffers[step.args.back()].sizeBytes;
  trace_.add(std::move(e));
}

void Session::traceTransfer(uint32_t buffer, const InFlight &entry) {
  if (!trace_.enabled())
    return;
  Trace::Event e;
  e.category = "all_reduce";
  e.name = "all_reduce #" + std::to_string(buffer);
  e.lane = Trace::Communication;
  e.bytes = model_->package().buffers[buffer].sizeBytes;
  std::chrono::steady_clock::time_point start, end;
  if (entry.work->timing(&start, &end)) {
    e.beginNs = Trace::ns(start);
    e.endNs = Trace::ns(end);
  } else { // the backend does not measure: from the issue to the wait's end
    e.beginNs = entry.issuedNs;
    e.endNs = Trace::now();
  }
  trace_.add(std::move(e));
}

void Session::setGraphs(bool enabled) {
  graphsEnabled_ = enabled;
  if (!enabled)
    graphs_.clear();
}

Status Session::graphStatus(const std::string &function, bool *replayed,
                            const std::string **reason) const {
  if (!model_->package().function(function))
    return noFunction(function);
  auto it = graphs_.find(function);
  *replayed = it != graphs_.end() && it->second.lastReplayed;
  *reason = it != graphs_.end() && !it->second.lastReplayed ? &it->second.reason
                                                            : nullptr;
  return Status::OK();
}

Status Session::materializeOutputs() {
  if (deviceOutputs_.empty())
    return Status::OK();
  const Package &pkg = model_->package();
  const FunctionInfo *fn = pkg.function(deviceOutputs_);
  std::map<std::string, std::vector<uint8_t>> outs;
  for (const NamedBufferInfo &nb : fn->outputs) {
    std::vector<uint8_t> &host = outs[nb.name];
    host.resize(static_cast<size_t>(pkg.buffers[nb.buffer].sizeBytes));
    Status st = device_.copyToHost(host.data(), pointers_[nb.buffer],
                                   host.size());
    if (!st.ok())
      return st;
  }
  outputs_[deviceOutputs_] = std::move(outs);
  deviceOutputs_.clear();
  return Status::OK();
}

Status Session::run(const std::string &function) {
  const Package &pkg = model_->package();
  const FunctionInfo *fn = pkg.function(function);
  if (!fn)
    return noFunction(function);
  // Another function's outputs still on the device are copied before this
  // run can overwrite them; this function's own are replaced.
  if (deviceOutputs_ == function)
    deviceOutputs_.clear();
  if (Status st = materializeOutputs(); !st.ok())
    return st;
  outputs_.erase(function);
  const bool pipelineStep =
      pkg.hasPipeline && function == pkg.pipeline.stepFunction;
  if (!pipelineStep)
    if (Status st = allocateDeferredState(); !st.ok())
      return st;
  Status st = pipelineStep ? runPipelineStep() : execute(*fn);
  if (!st.ok())
    return st;
  deviceOutputs_ = function;
  return Status::OK();
}

Status Session::execute(const FunctionInfo &info,
                        const std::string &graphKey) {
  const FunctionInfo *fn = &info;
  const std::string &function = info.name;
  // The device uses this session's workspace until the run ends.
  std::lock_guard<std::mutex> lock(model_->context().runMutex());
  device_.setWorkspace(workspace_.data, workspace_.bytes);
  struct ClearWorkspace {
    Device &device;
    ~ClearWorkspace() { device.setWorkspace(nullptr, 0); }
  } clearWorkspace{device_};
  // Collectives in flight, by buffer (docs/distributed.md): issued by
  // AllReduce steps, waited for by Wait steps; whatever is still in flight
  // when the run ends early (an error) is waited for before its buffers can
  // be reused.
  comm::Communicator *communicator = model_->context().communicator();
  std::map<uint32_t, InFlight> inFlight;
  struct DrainCollectives {
    std::map<uint32_t, InFlight> &works;
    ~DrainCollectives() {
      for (auto &entry : works)
        (void)entry.second.work->wait();
    }
  } drain{inFlight};
  const int64_t runBegin = trace_.enabled() ? Trace::now() : 0;
  std::vector<void *> args;
  // Issues every step of |fn| on the device (or records them, in a capture).
  auto issueSteps = [&]() -> Status {
    for (size_t i = 0; i < fn->steps.size(); ++i) {
      const StepInfo &step = fn->steps[i];
      args.clear();
      for (uint32_t a : step.args)
        args.push_back(pointers_[a]);
      auto f = [&](size_t k) { return args[k]; };
      const int64_t stepBegin = trace_.enabled() ? Trace::now() : 0;
      Status st;
      if (step.kind == StepInfo::Kind::AllReduce) {
        if (communicator && communicator->size() > 1)
          st = startAllReduce(*communicator, step, args[0], &inFlight);
      } else if (step.kind == StepInfo::Kind::Wait) {
        auto it = inFlight.find(step.args[0]);
        if (it != inFlight.end()) {
          st = it->second.work->wait();
          traceTransfer(step.args[0], it->second);
          inFlight.erase(it);
        }
      } else if (step.isLaunch()) {
        st = device_.launch(*(*kernels_)[step.kernel], args);
      } else {
        const dlc::exec::LibraryCallParams &call = step.call;
        const dlc::exec::LibraryCallInfo &info =
            dlc::exec::libraryCallInfo(call.call);
        using dlc::exec::ConvDirection;
        using dlc::exec::LibraryCallFamily;
        switch (info.family) {
        case LibraryCallFamily::Gemm: {
          // args: A, B[, C][, Aux], Y[, dBias or Aux] (gemmOperandSlots).
          const dlc::exec::GemmOperandSlots slot =
              dlc::exec::gemmOperandSlots(call.gemm.has_c, call.gemm.epilogue);
          auto at = [&](int i) { return i < 0 ? nullptr : f(size_t(i)); };
          st = device_.gemm(call.gemm, f(0), f(1), at(slot.c), f(slot.y),
                            at(slot.biasGrad),
                            slot.maskIn >= 0 ? at(slot.maskIn)
                                             : at(slot.maskOut));
          break;
        }
        case LibraryCallFamily::BatchedGemm:
          st = device_.batchedGemm(call.batched, f(0), f(1), f(2));
          break;
        case LibraryCallFamily::Conv:
          switch (info.direction) {
          case ConvDirection::Forward:
          case ConvDirection::None:
            st = device_.convForward(call.conv, f(0), f(1),
                                     call.conv.has_bias ? f(2) : nullptr,
                                     f(args.size() - 1));
            break;
          case ConvDirection::BackwardData:
            st = device_.convBackwardData(call.conv, f(0), f(1), f(2));
            break;
          case ConvDirection::BackwardFilter:
            st = device_.convBackwardFilter(call.conv, f(0), f(1), f(2));
            break;
          }
          break;
        }
      }
      if (trace_.enabled())
        traceStep(step, stepBegin);
      if (!st.ok())
        return Status::error(st.code, "step " + std::to_string(i) +
                                          " of function '" + function +
                                          "': " + st.message);
    }
    return Status::OK();
  };
  // A graph replays the steps with the pointers they had when captured;
  // collectives run on the host between steps and the trace times each
  // step, so those runs go step by step.
  auto [entry, first] =
      graphs_.try_emplace(graphKey.empty() ? function : graphKey);
  FunctionGraph &graph = entry->second;
  if (first)
    graph.hasCollectives =
        std::any_of(fn->steps.begin(), fn->steps.end(), [](const StepInfo &s) {
          return s.kind == StepInfo::Kind::AllReduce ||
                 s.kind == StepInfo::Kind::Wait;
        });
  graph.lastReplayed = false;
  const bool graphable =
      graphsEnabled_ && !trace_.enabled() && !graph.hasCollectives;
  if (graphable && !graph.graph && !graph.failed && graph.plainRuns > 0) {
    Status begun = device_.beginCapture();
    if (begun.ok()) {
      Status issued = issueSteps();
      std::unique_ptr<Device::Graph> captured;
      Status ended = device_.endCapture(&captured);
      if (issued.ok() && ended.ok())
        graph.graph = std::move(captured);
      else
        graph.reason = !issued.ok() ? issued.message : ended.message;
    } else {
      graph.reason = begun.message;
    }
    graph.failed = !graph.graph;
  }
  if (graphable && graph.graph) {
    Status st = device_.launchGraph(*graph.graph);
    if (!st.ok())
      return Status::error(st.code,
                           "function '" + function + "': " + st.message);
    graph.lastReplayed = true;
  } else {
    if (Status issued = issueSteps(); !issued.ok())
      return issued;
    ++graph.plainRuns;
  }
  Status st = device_.synchronize();
  if (!st.ok())
    return Status::error(st.code, "function '" + function + "': " + st.message);
  if (trace_.enabled())
    trace_.add({function, "step", runBegin, Trace::now(), Trace::Compute, -1});
  return Status::OK();
}

Status Session::getOutput(const std::string &function, const std::string &name,
                          void *data, size_t bytes) {
  const FunctionInfo *fn = model_->package().function(function);
  if (!fn)
    return noFunction(function);
  if (!findNamed(fn->outputs, name))
    return Status::error(DLRT_NOT_FOUND, "function '" + function +
                                             "' has no output '" + name + "'");
  if (deviceOutputs_ == function) {
    const NamedBufferInfo *nb = findNamed(fn->outputs, name);
    int64_t size = model_->package().buffers[nb->buffer].sizeBytes;
    if (static_cast<int64_t>(bytes) != size)
      return sizeMismatch("output", name, bytes, size);
    if (bytes > 0 && !data)
      return Status::error(DLRT_INVALID_ARGUMENT,
                           "output '" + name + "': data is NULL");
    return device_.copyToHost(data, pointers_[nb->buffer], bytes);
  }
  auto it = outputs_.find(function);
  if (it == outputs_.end())
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "function '" + function + "' has not run yet");
  const std::vector<uint8_t> &host = it->second.at(name);
  if (bytes != host.size())
    return sizeMismatch("output", name, bytes,
                        static_cast<int64_t>(host.size()));
  if (bytes > 0 && !data)
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "output '" + name + "': data is NULL");
  std::copy(host.begin(), host.end(), static_cast<uint8_t *>(data));
  return Status::OK();
}

int64_t Session::findState(const std::string &name) const {
  for (uint32_t i : state_)
    if (model_->package().buffers[i].name == name)
      return i;
  return -1;
}

Status Session::readState(const std::string &name, void *data, size_t bytes) {
  int64_t i = findState(name);
  if (i < 0)
    return Status::error(DLRT_NOT_FOUND,
                         "the model has no persistent tensor '" + name + "'");
  const BufferInfo &b = model_->package().buffers[i];
  if (static_cast<int64_t>(bytes) != b.sizeBytes)
    return sizeMismatch("persistent tensor", name, bytes, b.sizeBytes);
  if (bytes > 0 && !data)
    return Status::error(DLRT_INVALID_ARGUMENT, "data is NULL");
  if (Status st = allocateDeferredState(); !st.ok())
    return st;
  return device_.copyToHost(data, pointers_[i], bytes);
}

Status Session::writeState(const std::string &name, const void *data,
                           size_t bytes) {
  int64_t i = findState(name);
  if (i < 0)
    return Status::error(DLRT_NOT_FOUND,
                         "the model has no persistent tensor '" + name + "'");
  const BufferInfo &b = model_->package().buffers[i];
  if (static_cast<int64_t>(bytes) != b.sizeBytes)
    return sizeMismatch("persistent tensor", name, bytes, b.sizeBytes);
  if (bytes > 0 && !data)
    return Status::error(DLRT_INVALID_ARGUMENT, "data is NULL");
  if (Status st = materializeOutputs(); !st.ok())
    return st;
  if (Status st = allocateDeferredState(); !st.ok())
    return st;
  return device_.copyToDevice(pointers_[i], data, bytes);
}

Status Session::saveCheckpoint(const std::string &path,
                               const std::string &metadataJson) {
  std::map<std::string, std::string> metadata;
  if (!metadataJson.empty()) {
    nlohmann::json j = nlohmann::json::parse(metadataJson, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return Status::error(DLRT_INVALID_ARGUMENT,
                           "checkpoint metadata is not a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!it.value().is_string())
        return Status::error(DLRT_INVALID_ARGUMENT,
                             "checkpoint metadata value '" + it.key() +
                                 "' is not a string");
      metadata[it.key()] = it.value().get<std::string>();
    }
  }
  if (Status st = allocateDeferredState(); !st.ok())
    return st;
  const Package &pkg = model_->package();
  std::vector<safetensors::Tensor> tensors;
  for (uint32_t i : state_) {
    const BufferInfo &b = pkg.buffers[i];
    safetensors::Tensor t;
    t.name = b.name;
    t.dtype = safetensorsDType(b.dtype);
    t.shape = b.shape;
    t.data.resize(static_cast<size_t>(b.sizeBytes));
    Status st = device_.copyToHost(t.data.data(), pointers_[i], t.data.size());
    if (!st.ok())
      return st;
    tensors.push_back(std::move(t));
  }
  std::vector<uint8_t> bytes = safetensors::serialize(tensors, metadata);
  std::string error;
  if (!safetensors::writeFileAtomic(path, bytes.data(), bytes.size(), &error))
    return Status::error(DLRT_IO_ERROR, "cannot save checkpoint: " + error);
  return Status::OK();
}

Status Session::loadCheckpoint(const std::string &path,
                               std::string *metadataJson) {
  std::vector<uint8_t> bytes;
  Status st = readFile(path, "checkpoint", &bytes);
  if (!st.ok())
    return st;
  return loadCheckpointBytes(bytes.data(), bytes.size(), path, metadataJson);
}

Status Session::loadCheckpointBytes(const uint8_t *data, size_t size,
                                    const std::string &what,
                                    std::string *metadataJson) {
  Status st;
  std::vector<safetensors::Tensor> tensors;
  std::map<std::string, std::string> metadata;
  std::string error;
  if (!safetensors::parse(data, size, &tensors, &metadata, &error))
    return Status::error(DLRT_CORRUPT,
                         "'" + what + "' is not a valid checkpoint: " + error);
  // Check everything before writing anything, so a mismatched checkpoint
  // leaves the session as it was.
  const Package &pkg = model_->package();
  std::map<std::string, const safetensors::Tensor *> byName;
  for (const safetensors::Tensor &t : tensors) {
    if (findState(t.name) < 0)
      return Status::error(DLRT_INVALID_ARGUMENT,
                           "checkpoint '" + what + "' has tensor '" + t.name +
                               "', which this model does not have");
    byName[t.name] = &t;
  }
  auto shapeString = [](const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
  };
  for (uint32_t i : state_) {
    const BufferInfo &b = pkg.buffers[i];
    auto it = byName.find(b.name);
    if (it == byName.end())
      return Status::error(DLRT_INVALID_ARGUMENT, "checkpoint '" + what +
                                                      "' lacks tensor '" +
                                                      b.name + "'");
    const safetensors::Tensor &t = *it->second;
    if (t.dtype != safetensorsDType(b.dtype) || t.shape != b.shape)
      return Status::error(DLRT_INVALID_ARGUMENT,
                           "checkpoint tensor '" + b.name + "' is " + t.dtype +
                               shapeString(t.shape) + " but the model has " +
                               safetensorsDType(b.dtype) +
                               shapeString(b.shape));
  }
  if (st = materializeOutputs(); !st.ok())
    return st;
  for (uint32_t i : state_) {
    const safetensors::Tensor &t = *byName.at(pkg.buffers[i].name);
    if (std::find(deferred_.begin(), deferred_.end(), i) != deferred_.end()) {
      deferredValues_[i] = t.data; // held until the rank needs them
      continue;
    }
    st = device_.copyToDevice(pointers_[i], t.data.data(), t.data.size());
    if (!st.ok())
      return st;
  }
  if (metadataJson)
    *metadataJson = nlohmann::json(metadata).dump();
  return Status::OK();
}

} // namespace dlrt::exec
