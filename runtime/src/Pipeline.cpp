//===- Pipeline.cpp - the training step of a pipeline package -------------===//
//
// A pipeline package (package.fbs Pipeline; docs/pipeline.md, "Running a
// pipeline") splits the step into S stages. On S x D ranks, rank r runs
// stage r / D of replica r % D; with one process, the process runs every
// stage itself. Each stage runs its forward and backward once per
// micro-batch, in the order its schedule (GPipe or 1F1B) gives: a forward
// receives its inputs from earlier stages and sends its outputs on; a
// backward receives the gradients of later stages and sends its own back.
// The forward values a micro-batch needs in its backward stay in a stash
// slot from the forward to the backward. After the last backward the
// gradient accumulators are averaged over the stage's replicas and the
// update runs.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/PipelineState.h"

#include <algorithm>
#include <cstring>

namespace dlrt::exec {

namespace {

using dlc::exec::PipelineAction;

const NamedBufferInfo *findIn(const std::vector<NamedBufferInfo> &list,
                              const std::string &name) {
  for (const NamedBufferInfo &nb : list)
    if (nb.name == name)
      return &nb;
  return nullptr;
}

/// The element type and count a point-to-point message of |bytes| bytes is
/// sent as (the type only sizes the message).
Status messageType(int64_t bytes, comm::DataType *type, size_t *count) {
  if (bytes % 4 == 0) {
    *type = comm::DataType::F32;
    *count = static_cast<size_t>(bytes / 4);
  } else if (bytes % 2 == 0) {
    *type = comm::DataType::F16;
    *count = static_cast<size_t>(bytes / 2);
  } else {
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "a pipeline transfer of " + std::to_string(bytes) +
                             " bytes (an odd size) is not supported");
  }
  return Status::OK();
}

} // namespace

/// One training step of a pipeline package on this rank (or, with one
/// process, on every stage): the schedule's actions, each a method (a
/// stage's forward or backward of one micro-batch, with the receives and
/// sends around it), then the all-reduce of the gradients over the stage's
/// replicas and the optimizer update, then the loss of the global batch.
class Session::PipelineStepRunner {
public:
  PipelineStepRunner(Session &session, PipelineState &state)
      : session(session), pkg(session.model_->package()), info(pkg.pipeline),
        context(session.model_->context()), world(context.communicator()),
        S(static_cast<int32_t>(info.stages.size())), M(info.microBatches),
        p(state), step(pkg.function(info.stepFunction)),
        device_(session.device_), trace_(session.trace_),
        pointers_(session.pointers_) {}

  /// The first step's setup: the rank's place, its schedule, its replica
  /// group, and what a run of a stage function can bind instead of copying.
  static Status createState(Session &session,
                            std::shared_ptr<PipelineState> *out);

  /// Runs the step; the loss output gets the mean loss of the global batch.
  Status run();

private:
  // Schedule actions.
  /// Every action of the schedule in order: locally every stage's forwards,
  /// then the backwards from the last stage down.
  Status runSchedule();
  /// One action of stage |s|: its forward or backward of one micro-batch.
  Status runAction(int32_t s, const PipelineAction &a);
  Status forward(int32_t s, int64_t m) {
    return runAction(s, {PipelineAction::Kind::Forward, m});
  }
  Status backward(int32_t s, int64_t m) {
    return runAction(s, {PipelineAction::Kind::Backward, m});
  }
  /// Posts the receives of stage |s| (gradients or forward values) for
  /// micro-batch |m|, once.
  Status post(bool gradients, int32_t s, int64_t m);
  /// Waits for micro-batch |m|'s value |name|; returns its buffer.
  Status received(bool gradients, int64_t m, const std::string &name,
                  void **data);
  /// Sends |bytes| at |data| to the peer of stage |toStage|.
  Status send(const void *data, int64_t bytes, int32_t toStage);
  /// Waits for the sends in flight from |data| (before it is written again).
  Status waitSendsFrom(const void *data);
  /// The all-reduce (mean) of stage |stage|'s gradient accumulators over
  /// its replicas.
  Status allReduceGradients(const PipelineInfo::Stage &stage);
  /// The optimizer: stage |s|'s update function, after the all-reduce.
  Status update(int32_t s);
  /// The loss of the global batch: the mean over the micro-batches, and
  /// over the last stage's replicas; every rank gets it.
  Status globalLoss(double *loss);

  // Pieces of an action.
  /// Points inputs and outputs of a stage function at the pipeline's
  /// memory; the function's own pointers come back when it is destroyed.
  struct Binding {
    PipelineState &p;
    std::vector<void *> &pointers;
    std::vector<std::pair<uint32_t, void *>> bound;
    ~Binding() {
      for (auto it = bound.rbegin(); it != bound.rend(); ++it)
        pointers[it->first] = it->second;
    }
    void bind(uint32_t buffer, const void *data) {
      for (uint32_t j : p.sharers[buffer]) {
        bound.emplace_back(j, pointers[j]);
        pointers[j] = const_cast<void *>(data); // inputs are only read
      }
    }
  };
  using Slot = std::map<std::string, DeviceBuffer>;
  using Outputs =
      std::vector<std::pair<const NamedBufferInfo *, DeviceBuffer *>>;
  /// Forward values from earlier stages, kept in |slot| when the backward
  /// |bwd| reads them too.
  Status receiveForwardValues(int32_t s, int64_t m, const FunctionInfo *bwd,
                              Slot &slot);
  /// Binds or copies every input of |fn| for micro-batch |m|.
  Status bindInputs(const FunctionInfo *fn, int64_t m, bool forward, Slot &slot,
                    Binding &binding);
  /// The buffers the outputs of |fn| go to, bound where they can be.
  Status prepareOutputs(const FunctionInfo *fn, int64_t m, bool forward,
                        Slot &slot, Binding &binding, Outputs *outputs);
  /// Runs |fn| (one graph per micro-batch) and adds its loss to lossSum.
  Status compute(const FunctionInfo *fn, int64_t m, bool forward);
  /// Copies the outputs that were not bound and sends stage |s|'s outgoing
  /// values in the order of the package's transfers.
  Status sendOutputs(int32_t s, bool forward, const FunctionInfo *fn,
                     const Outputs &outputs);

  // Memory and peers.
  /// Device memory of the pipeline, kept across steps.
  Status bufferOf(std::map<std::string, DeviceBuffer> &map,
                  const std::string &name, int64_t bytes, DeviceBuffer **out);
  int32_t peerRank(int32_t stage) const {
    return stage * p.replicas + p.replica;
  }
  int64_t bytesOf(const NamedBufferInfo &nb) const {
    return pkg.buffers[nb.buffer].sizeBytes;
  }
  std::vector<const PipelineInfo::Transfer *> incoming(bool gradients,
                                                       int32_t s) const;
  void sliceOf(const std::string &name, int64_t m, const void **data,
               int64_t *bytes) const;
  int64_t stashBytes(int64_t slot) const;

  Session &session;
  const Package &pkg;
  const PipelineInfo &info;
  Context &context;
  comm::Communicator *world;
  const int32_t S;
  const int64_t M;
  PipelineState &p;
  const FunctionInfo *step;
  Device &device_;
  Trace &trace_;
  std::vector<void *> &pointers_;

  // Sends in flight, waited for before their buffer is written again and at
  // the end of the step.
  std::vector<std::pair<const void *, std::shared_ptr<comm::Work>>> sends;
  struct DrainSends {
    std::vector<std::pair<const void *, std::shared_ptr<comm::Work>>> &works;
    ~DrainSends() {
      for (auto &w : works)
        (void)w.second->wait();
    }
  } drain{sends};
  // Receives are posted one micro-batch ahead, into two buffers per value
  // (by micro-batch parity), so that a value moves while the receiving
  // stage still computes (a Gloo send moves its data only once the
  // receive is posted). Peers send one kind each (forward values come from
  // earlier stages, gradients from later ones), in micro-batch order, so
  // posting ahead keeps every pair's messages in order.
  struct Posted {
    std::shared_ptr<comm::Work> work;
    int64_t bytes = 0;
  };
  std::map<std::pair<int64_t, std::string>, Posted> posted[2]; // by kind
  std::set<int64_t> postedBatches[2]; // by kind: micro-batches posted

  double lossSum = 0;
  int64_t inFlight = 0, stashPeak = 0, slotBytes = 0;
};

Status
Session::PipelineStepRunner::createState(Session &session,
                                         std::shared_ptr<PipelineState> *out) {
  const Package &pkg = session.model_->package();
  const PipelineInfo &info = pkg.pipeline;
  Context &context = session.model_->context();
  comm::Communicator *world = context.communicator();
  const int32_t S = static_cast<int32_t>(info.stages.size());
  const int64_t M = info.microBatches;

  auto state = std::make_shared<PipelineState>();
  state->stages = S;
  const int32_t W = context.worldSize();
  auto kind = dlc::exec::parsePipelineSchedule(info.schedule, nullptr);
  std::string error;
  if (W == 1) {
    state->local = true;
    state->slots = M;
    if (!dlc::exec::buildPipelineSchedule(
            dlc::exec::PipelineScheduleKind::GPipe, S, M, state->actions,
            &error))
      return Status::error(DLRT_INTERNAL, error);
  } else {
    if (W % S != 0)
      return Status::error(
          DLRT_INVALID_ARGUMENT,
          "a pipeline of " + std::to_string(S) +
              " stages runs on a multiple of " + std::to_string(S) +
              " ranks (stages x data-parallel replicas), got " +
              std::to_string(W) + " ranks");
    state->replicas = W / S;
    state->stage = context.rank() / state->replicas;
    state->replica = context.rank() % state->replicas;
    state->actions.resize(1);
    if (!kind || !dlc::exec::buildStageSchedule(*kind, S, state->stage, M,
                                                state->actions[0], &error))
      return Status::error(DLRT_INTERNAL, error);
    // In flight on stage s: M for GPipe, min(S - s, M) for 1F1B.
    state->slots = *kind == dlc::exec::PipelineScheduleKind::GPipe
                       ? M
                       : std::min<int64_t>(S - state->stage, M);
    // Every rank makes every stage's replica group, in stage order.
    if (state->replicas > 1)
      for (int32_t s = 0; s < S; ++s) {
        std::vector<int> ranks;
        for (int32_t d = 0; d < state->replicas; ++d)
          ranks.push_back(s * state->replicas + d);
        std::unique_ptr<comm::Communicator> group;
        if (Status st = comm::createSubCommunicator(*world, ranks, &group);
            !st.ok())
          return st;
        if (s == state->stage)
          state->replicaGroup = std::move(group);
      }
  }
  state->stash.resize(static_cast<size_t>(state->slots));
  // What a run of a stage function can bind instead of copying.
  const size_t n = pkg.buffers.size();
  auto root = [&](uint32_t i) {
    while (pkg.buffers[i].kind == BufferKind::Alias)
      i = static_cast<uint32_t>(pkg.buffers[i].aliasOf); // acyclic
    return i;
  };
  state->sharers.resize(n);
  for (uint32_t i = 0; i < n; ++i)
    state->sharers[root(i)].push_back(i);
  for (const PipelineInfo::Stage &stage : info.stages)
    for (const std::string &name : {stage.forward, stage.backward}) {
      const FunctionInfo *fn = pkg.function(name);
      std::map<uint32_t, int> uses; // by root
      for (const auto *list : {&fn->inputs, &fn->outputs})
        for (const NamedBufferInfo &nb : *list)
          ++uses[root(nb.buffer)];
      std::set<uint32_t> &ok = state->bindable[name];
      for (const auto *list : {&fn->inputs, &fn->outputs})
        for (const NamedBufferInfo &nb : *list)
          if (pkg.buffers[nb.buffer].kind != BufferKind::Alias &&
              uses[nb.buffer] == 1)
            ok.insert(nb.buffer);
    }
  *out = std::move(state);
  return Status::OK();
}

Status
Session::PipelineStepRunner::bufferOf(std::map<std::string, DeviceBuffer> &map,
                                      const std::string &name, int64_t bytes,
                                      DeviceBuffer **out) {
  DeviceBuffer &b = map[name];
  if (!b.data) {
    if (Status st = device_.allocate(static_cast<size_t>(bytes), &b); !st.ok())
      return st;
    p.allocations.push_back(b);
  }
  *out = &b;
  return Status::OK();
}

Status Session::PipelineStepRunner::waitSendsFrom(const void *data) {
  for (auto it = sends.begin(); it != sends.end();) {
    if (it->first != data) {
      ++it;
      continue;
    }
    Status st = it->second->wait();
    it = sends.erase(it);
    if (!st.ok())
      return st;
  }
  return Status::OK();
}

Status Session::PipelineStepRunner::send(const void *data, int64_t bytes,
                                         int32_t toStage) {
  comm::DataType type;
  size_t count;
  if (Status st = messageType(bytes, &type, &count); !st.ok())
    return st;
  if (device_.kind() == DLRT_DEVICE_HOST)
    if (Status st = device_.synchronize(); !st.ok())
      return st;
  sends.emplace_back(data, world->send(data, count, type, peerRank(toStage)));
  return Status::OK();
}

std::vector<const PipelineInfo::Transfer *>
Session::PipelineStepRunner::incoming(bool gradients, int32_t s) const {
  std::vector<const PipelineInfo::Transfer *> list;
  for (const PipelineInfo::Transfer &t : info.transfers)
    if (t.backward == gradients && t.toStage == s)
      list.push_back(&t);
  return list;
}

Status Session::PipelineStepRunner::post(bool gradients, int32_t s, int64_t m) {
  if (m >= M || !postedBatches[gradients].insert(m).second)
    return Status::OK();
  const PipelineInfo::Stage &stage = info.stages[static_cast<size_t>(s)];
  for (const PipelineInfo::Transfer *t : incoming(gradients, s)) {
    const NamedBufferInfo *nb =
        findIn(pkg.function(gradients ? stage.backward : stage.forward)->inputs,
               t->name);
    if (!nb)
      nb = findIn(pkg.function(stage.backward)->inputs, t->name);
    DeviceBuffer *b;
    if (Status st =
            bufferOf(p.received[gradients][m % 2], t->name, bytesOf(*nb), &b);
        !st.ok())
      return st;
    comm::DataType type;
    size_t count;
    if (Status st = messageType(bytesOf(*nb), &type, &count); !st.ok())
      return st;
    posted[gradients][{m, t->name}] = {
        world->recv(b->data, count, type, peerRank(t->fromStage)),
        bytesOf(*nb)};
  }
  return Status::OK();
}

Status Session::PipelineStepRunner::received(bool gradients, int64_t m,
                                             const std::string &name,
                                             void **data) {
  auto it = posted[gradients].find({m, name});
  if (it == posted[gradients].end())
    return Status::error(DLRT_INTERNAL,
                         "pipeline: '" + name + "' of micro-batch " +
                             std::to_string(m) + " was not received");
  const int64_t begin = trace_.enabled() ? Trace::now() : 0;
  Status st = it->second.work->wait();
  if (trace_.enabled())
    trace_.add({"recv " + name, "pipeline_wait", begin, Trace::now(),
                Trace::Compute, it->second.bytes});
  posted[gradients].erase(it);
  *data = p.received[gradients][m % 2][name].data;
  return st;
}

void Session::PipelineStepRunner::sliceOf(const std::string &name, int64_t m,
                                          const void **data,
                                          int64_t *bytes) const {
  const NamedBufferInfo *nb = findIn(step->inputs, name);
  *bytes = pkg.buffers[nb->buffer].sizeBytes / M;
  *data = static_cast<const uint8_t *>(pointers_[nb->buffer]) + m * *bytes;
}

int64_t Session::PipelineStepRunner::stashBytes(int64_t slot) const {
  int64_t total = 0;
  for (auto &[name, b] : p.stash[static_cast<size_t>(slot)])
    total += static_cast<int64_t>(b.bytes);
  return total;
}

Status Session::PipelineStepRunner::receiveForwardValues(
    int32_t s, int64_t m, const FunctionInfo *bwd, Slot &slot) {
  for (const PipelineInfo::Transfer *t : incoming(false, s)) {
    void *data;
    if (Status st = received(false, m, t->name, &data); !st.ok())
      return st;
    if (const NamedBufferInfo *nb = findIn(bwd->inputs, t->name)) {
      DeviceBuffer *b;
      if (Status st = bufferOf(slot, t->name, bytesOf(*nb), &b); !st.ok())
        return st;
      if (Status st = device_.copyOnDevice(b->data, data, bytesOf(*nb));
          !st.ok())
        return st;
    }
  }
  return Status::OK();
}

Status Session::PipelineStepRunner::bindInputs(const FunctionInfo *fn,
                                               int64_t m, bool forward,
                                               Slot &slot, Binding &binding) {
  const std::set<uint32_t> &bindable = p.bindable.at(fn->name);
  for (const NamedBufferInfo &in : fn->inputs) {
    const int64_t bytes = bytesOf(in);
    const void *src = nullptr;
    int64_t sliceBytes;
    if (findIn(step->inputs, in.name)) {
      sliceOf(in.name, m, &src, &sliceBytes);
    } else if (!p.local && p.received[!forward][m % 2].count(in.name)) {
      if (!forward) { // a gradient: wait for it now
        void *data;
        if (Status st = received(true, m, in.name, &data); !st.ok())
          return st;
      }
      src = p.received[!forward][m % 2][in.name].data;
    } else if (auto it = slot.find(in.name); it != slot.end()) {
      src = it->second.data;
    } else {
      return Status::error(DLRT_INTERNAL, "pipeline: '" + in.name + "' of '" +
                                              fn->name +
                                              "' is not in micro-batch " +
                                              std::to_string(m) + "'s stash");
    }
    if (bindable.count(in.buffer))
      binding.bind(in.buffer, src);
    else if (Status st = device_.copyOnDevice(pointers_[in.buffer], src, bytes);
             !st.ok())
      return st;
  }
  return Status::OK();
}

Status Session::PipelineStepRunner::prepareOutputs(const FunctionInfo *fn,
                                                   int64_t m, bool forward,
                                                   Slot &slot, Binding &binding,
                                                   Outputs *outputs) {
  const std::set<uint32_t> &bindable = p.bindable.at(fn->name);
  for (const NamedBufferInfo &out : fn->outputs) {
    if (out.name == pkg.lossOutput)
      continue;
    DeviceBuffer *b = nullptr;
    Status st = forward || p.local ? bufferOf(slot, out.name, bytesOf(out), &b)
                                   : bufferOf(p.gradientOut[m % 2], out.name,
                                              bytesOf(out), &b);
    if (!st.ok())
      return st;
    if (Status st = waitSendsFrom(b->data); !st.ok())
      return st;
    if (bindable.count(out.buffer))
      binding.bind(out.buffer, b->data);
    outputs->emplace_back(&out, b);
  }
  return Status::OK();
}

Status Session::PipelineStepRunner::compute(const FunctionInfo *fn, int64_t m,
                                            bool forward) {
  const int64_t begin = trace_.enabled() ? Trace::now() : 0;
  if (Status st = session.execute(*fn, fn->name + "#" + std::to_string(m));
      !st.ok())
    return st;
  if (trace_.enabled())
    trace_.add({(forward ? "F" : "B") + std::to_string(m), "pipeline", begin,
                Trace::now(), Trace::Compute, -1});
  if (const NamedBufferInfo *lossOut = findIn(fn->outputs, pkg.lossOutput)) {
    float loss = 0;
    if (Status st =
            device_.copyToHost(&loss, pointers_[lossOut->buffer], sizeof loss);
        !st.ok())
      return st;
    lossSum += loss;
  }
  return Status::OK();
}

Status Session::PipelineStepRunner::sendOutputs(int32_t s, bool forward,
                                                const FunctionInfo *fn,
                                                const Outputs &outputs) {
  const std::set<uint32_t> &bindable = p.bindable.at(fn->name);
  std::map<std::string, std::pair<const void *, int64_t>> outgoing;
  for (auto [out, b] : outputs) {
    if (!bindable.count(out->buffer))
      if (Status st = device_.copyOnDevice(b->data, pointers_[out->buffer],
                                           bytesOf(*out));
          !st.ok())
        return st;
    outgoing[out->name] = {b->data, bytesOf(*out)};
  }
  // Sent in the order of the package's transfers, the order in which the
  // receivers post their receives (incoming).
  if (!p.local)
    for (const PipelineInfo::Transfer &t : info.transfers)
      if (t.fromStage == s && t.backward == !forward) {
        auto [data, bytes] = outgoing.at(t.name); // checked by the loader
        if (Status st = send(data, bytes, t.toStage); !st.ok())
          return st;
      }
  return Status::OK();
}

Status Session::PipelineStepRunner::runAction(int32_t s,
                                              const PipelineAction &a) {
  const PipelineInfo::Stage &stage = info.stages[static_cast<size_t>(s)];
  const int64_t m = a.microBatch;
  auto &slot = p.stash[static_cast<size_t>(m % p.slots)];
  const bool forward = a.kind == PipelineAction::Kind::Forward;
  const FunctionInfo *fn =
      pkg.function(forward ? stage.forward : stage.backward);
  const FunctionInfo *bwd = pkg.function(stage.backward);
  // Inputs. Forward values from earlier stages are kept in the slot when
  // the backward reads them too.
  if (!p.local) {
    if (Status st = post(!forward, s, m); !st.ok())
      return st;
    if (Status st = post(!forward, s, m + 1); !st.ok())
      return st;
  }
  if (forward && !p.local)
    if (Status st = receiveForwardValues(s, m, bwd, slot); !st.ok())
      return st;
  // A run points its bindable inputs and outputs at the pipeline's memory
  // (no copies); the function's own pointers come back when it is done.
  Binding binding{p, pointers_, {}};
  if (Status st = bindInputs(fn, m, forward, slot, binding); !st.ok())
    return st;
  // Forward values go to the slot (their own backward, or locally later
  // stages, read them there), gradients to two buffers per name, by
  // micro-batch parity (locally to the slot, where the earlier stage's
  // backward reads them); sends leave from there, and the last send from
  // a buffer ends before it is written again.
  Outputs outputs;
  if (Status st = prepareOutputs(fn, m, forward, slot, binding, &outputs);
      !st.ok())
    return st;
  // The function: one graph per micro-batch, whose pointers these are.
  if (Status st = compute(fn, m, forward); !st.ok())
    return st;
  // Outputs.
  if (Status st = sendOutputs(s, forward, fn, outputs); !st.ok())
    return st;
  // The memory of micro-batches in flight.
  if (forward) {
    ++inFlight;
    slotBytes = std::max(slotBytes, stashBytes(m % p.slots));
    stashPeak = std::max(stashPeak, inFlight * slotBytes);
  } else {
    --inFlight;
  }
  return Status::OK();
}

Status Session::PipelineStepRunner::runSchedule() {
  if (p.local) {
    // One process: every stage's forward of every micro-batch, then the
    // backwards from the last stage down (GPipe order over the stages).
    for (int64_t m = 0; m < M; ++m)
      for (int32_t s = 0; s < S; ++s)
        if (Status st = forward(s, m); !st.ok())
          return st;
    for (int64_t m = 0; m < M; ++m)
      for (int32_t s = S - 1; s >= 0; --s)
        if (Status st = backward(s, m); !st.ok())
          return st;
    return Status::OK();
  }
  // The first micro-batch's activations and gradients can move as soon as
  // their senders have them.
  for (bool gradients : {false, true})
    if (Status st = post(gradients, p.stage, 0); !st.ok())
      return st;
  for (const PipelineAction &a : p.actions[0])
    if (Status st = runAction(p.stage, a); !st.ok())
      return st;
  return Status::OK();
}

Status Session::PipelineStepRunner::allReduceGradients(
    const PipelineInfo::Stage &stage) {
  if (device_.kind() == DLRT_DEVICE_HOST)
    if (Status st = device_.synchronize(); !st.ok())
      return st;
  std::vector<std::shared_ptr<comm::Work>> works;
  for (const std::string &name : stage.gradientAccumulators) {
    int64_t idx = session.findState(name);
    if (idx < 0)
      return Status::error(DLRT_INTERNAL,
                           "pipeline: no accumulator '" + name + "'");
    const BufferInfo &b = pkg.buffers[static_cast<size_t>(idx)];
    works.push_back(
        p.replicaGroup->allReduce(pointers_[static_cast<size_t>(idx)],
                                  static_cast<size_t>(b.sizeBytes / 4),
                                  comm::DataType::F32, comm::ReduceOp::Avg));
  }
  for (auto &w : works)
    if (Status st = w->wait(); !st.ok())
      return st;
  return Status::OK();
}

Status Session::PipelineStepRunner::update(int32_t s) {
  const PipelineInfo::Stage &stage = info.stages[static_cast<size_t>(s)];
  if (p.replicaGroup)
    if (Status st = allReduceGradients(stage); !st.ok())
      return st;
  const int64_t begin = trace_.enabled() ? Trace::now() : 0;
  Status st = session.execute(*pkg.function(stage.update));
  if (trace_.enabled())
    trace_.add({"update", "pipeline", begin, Trace::now(), Trace::Compute, -1});
  return st;
}

Status Session::PipelineStepRunner::globalLoss(double *loss) {
  const int32_t W = context.worldSize();
  std::vector<double> mine(1, 0.0), all(static_cast<size_t>(W));
  if (p.stage == info.lossStage)
    mine[0] = *loss;
  DeviceBuffer in, out;
  // All-gather of the doubles' bits, through device memory.
  if (Status st = device_.allocate(sizeof(double), &in); !st.ok())
    return st;
  struct Release {
    Device &d;
    DeviceBuffer &a, &b;
    ~Release() {
      if (a.data)
        d.release(a);
      if (b.data)
        d.release(b);
    }
  } release{device_, in, out};
  if (Status st = device_.allocate(sizeof(double) * W, &out); !st.ok())
    return st;
  if (Status st = device_.copyToDevice(in.data, mine.data(), sizeof(double));
      !st.ok())
    return st;
  if (device_.kind() == DLRT_DEVICE_HOST)
    if (Status st = device_.synchronize(); !st.ok())
      return st;
  if (Status st =
          world->allGather(in.data, out.data, 1, comm::DataType::I64)->wait();
      !st.ok())
    return st;
  if (Status st = device_.copyToHost(all.data(), out.data, sizeof(double) * W);
      !st.ok())
    return st;
  double sum = 0;
  for (int32_t d = 0; d < p.replicas; ++d)
    sum += all[static_cast<size_t>(info.lossStage * p.replicas + d)];
  *loss = sum / p.replicas;
  return Status::OK();
}

Status Session::PipelineStepRunner::run() {
  if (Status st = runSchedule(); !st.ok())
    return st;
  p.peakStashBytes = std::max(p.peakStashBytes, stashPeak);
  if (trace_.enabled())
    trace_.add({"activations in flight (peak)", "pipeline_memory", Trace::now(),
                Trace::now(), Trace::Compute, stashPeak});
  for (auto &w : sends)
    if (Status st = w.second->wait(); !st.ok())
      return st;
  sends.clear();

  // The update: the accumulated gradients averaged over the replicas.
  if (p.local) {
    for (int32_t s = 0; s < S; ++s)
      if (Status st = update(s); !st.ok())
        return st;
  } else if (Status st = update(p.stage); !st.ok()) {
    return st;
  }

  // The loss of the global batch: the mean over the micro-batches, and over
  // the last stage's replicas; every rank gets it (rank 0 logs it).
  double loss = lossSum / static_cast<double>(M);
  if (!p.local)
    if (Status st = globalLoss(&loss); !st.ok())
      return st;
  const NamedBufferInfo *lossOut = findIn(step->outputs, pkg.lossOutput);
  float loss32 = static_cast<float>(loss);
  return device_.copyToDevice(pointers_[lossOut->buffer], &loss32,
                              sizeof loss32);
}

Status Session::runPipelineStep() {
  if (!pipeline_)
    if (Status st = PipelineStepRunner::createState(*this, &pipeline_);
        !st.ok())
      return st;
  PipelineStepRunner runner(*this, *pipeline_);
  return runner.run();
}

Status Session::syncPipelineState() {
  const Package &pkg = model_->package();
  Context &context = model_->context();
  if (!pkg.hasPipeline || context.worldSize() == 1)
    return Status::OK();
  const int32_t S = static_cast<int32_t>(pkg.pipeline.stages.size());
  const int32_t W = context.worldSize();
  if (W % S != 0)
    return Status::error(DLRT_INVALID_ARGUMENT,
                         "a pipeline of " + std::to_string(S) +
                             " stages runs on a multiple of " +
                             std::to_string(S) + " ranks, got " +
                             std::to_string(W));
  const int32_t D = W / S;
  if (Status st = allocateDeferredState(); !st.ok())
    return st;
  // The state each stage's functions write is that stage's; the rest (the
  // step counter every stage counts) is the same on every rank.
  for (int32_t s = 0; s < S; ++s) {
    const PipelineInfo::Stage &stage = pkg.pipeline.stages[static_cast<size_t>(s)];
    std::vector<uint32_t> owned;
    for (const std::string &fnName : {stage.forward, stage.backward,
                                      stage.update}) {
      const FunctionInfo *fn = pkg.function(fnName);
      for (const StepInfo &step : fn->steps)
        for (uint32_t a : step.args)
          if (isCheckpointed(pkg.buffers[a].kind) &&
              std::find(owned.begin(), owned.end(), a) == owned.end())
            owned.push_back(a);
    }
    std::sort(owned.begin(), owned.end());
    for (uint32_t a : owned) {
      const BufferInfo &b = pkg.buffers[a];
      std::vector<uint8_t> host(static_cast<size_t>(b.sizeBytes + 7) / 8 * 8);
      if (Status st = device_.copyToHost(host.data(), pointers_[a],
                                         static_cast<size_t>(b.sizeBytes));
          !st.ok())
        return st;
      if (Status st = context.broadcast(host.data(), host.size(), s * D);
          !st.ok())
        return st;
      if (Status st = device_.copyToDevice(pointers_[a], host.data(),
                                           static_cast<size_t>(b.sizeBytes));
          !st.ok())
        return st;
    }
  }
  return Status::OK();
}

} // namespace dlrt::exec
