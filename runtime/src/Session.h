//===- Session.h - contexts, models and sessions behind the C API -*- C++
//-*-===//
// A Context owns a device; a Model owns a validated Package and (once the
// first session asks) its loaded kernels; a Session owns device memory for
// persistent buffers, inputs, one activation arena and one library-call
// workspace (the package's MemoryPlan), and runs functions.
#ifndef DLRT_SRC_SESSION_H
#define DLRT_SRC_SESSION_H

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/device/Device.h"
#include "runtime/src/Package.h"
#include "runtime/src/Trace.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/Rendezvous.h"
#include "runtime/comm/TcpStore.h"

namespace dlrt {
/// The objects behind the C API handles; in their own namespace so they
/// never collide with the dlrt.hpp wrapper classes of the same names.
namespace exec {

class Context {
public:
  /// Opens the device |options| asks for. DLRT_DEVICE_AUTO falls back to the
  /// host device (with a notice) when no CUDA device is usable. With
  /// |options.distributed|, reads the job from the environment
  /// (comm::rendezvousFromEnvironment) and, for a world size above 1, joins
  /// it: the TCP store (rank 0 hosts it) and a communicator, Gloo on the
  /// host device and NCCL on CUDA (on GPU device_ordinal + LOCAL_RANK, so
  /// that the ranks of a node take one GPU each), both bounded by
  /// |options.comm_timeout_seconds| (0: comm::kDefaultTimeout). Errors:
  /// DLRT_UNAVAILABLE (DLRT_DEVICE_CUDA without a usable GPU; the store or a
  /// peer unreachable within the timeout, the port taken, NCCL missing),
  /// DLRT_INVALID_ARGUMENT (unknown device kind, a bad rendezvous
  /// environment, a negative or non-finite timeout).
  static Status create(const dlrt_context_options_t &options,
                       std::unique_ptr<Context> *out);
  /// A context on |device| (not null), for tests and fuzz targets that bring
  /// a device of their own.
  static std::unique_ptr<Context> withDevice(std::unique_ptr<Device> device);
  Device &device() { return *device_; }
  const std::string &deviceName() const { return name_; }
  /// Held by Session::run for the length of a run: the device takes one
  /// session's workspace at a time (Device::setWorkspace).
  std::mutex &runMutex() { return runMutex_; }
  /// The communicator of a distributed context (world size > 1), or null:
  /// a package's collectives are then the identity (one rank).
  comm::Communicator *communicator() { return communicator_.get(); }
  /// This process's rank and the number of ranks (0 and 1 without a
  /// communicator).
  int rank() const { return communicator_ ? communicator_->rank() : 0; }
  int worldSize() const { return communicator_ ? communicator_->size() : 1; }

  /// Replaces each of the |count| host doubles at |values| by its mean over
  /// the ranks: an all-gather of their bits (so no precision is lost in the
  /// transfer) summed in rank order, identical on every rank. Through a
  /// device buffer on NCCL. Errors: those of the communicator's wait().
  Status average(double *values, size_t count);
  /// Replaces the |bytes| bytes (a multiple of 8) of host memory at |data|
  /// by rank |root|'s, through a device buffer on NCCL. Errors: those of the
  /// communicator's wait(), DLRT_INVALID_ARGUMENT (|bytes| not a multiple of
  /// 8).
  Status broadcast(void *data, size_t bytes, int root);
  /// Returns when every rank has called it. Errors: those of wait().
  Status barrier();

  /// Ends the communicator first, then the store it may still ask (Gloo
  /// names failed ranks through it), then the device. On rank 0, when a
  /// rank has died, the store serves 1 s longer so that the others can
  /// still name it.
  ~Context();

private:
  /// Joins the job of |rendezvous| (Context::create with distributed).
  Status join(const dlrt_context_options_t &options,
              const comm::Rendezvous &rendezvous);

  std::unique_ptr<Device> device_;
  /// The rendezvous store of a distributed context; lives as long as the
  /// communicator (rank 0 hosts the server, which must outlive the peers'
  /// last lookups of failed ranks).
  std::unique_ptr<comm::TcpStore> store_;
  bool hostsStore_ = false; ///< rank 0 runs the store's server
  std::unique_ptr<comm::Communicator> communicator_;
  std::string name_;
  std::mutex runMutex_;
};

class Model {
public:
  Model(std::shared_ptr<Context> context, Package package)
      : context_(std::move(context)), package_(std::move(package)) {}
  Context &context() { return *context_; }
  const Package &package() const { return package_; }
  /// The package's kernels loaded on the context's device, loading them on
  /// first use. Errors: those of Device::loadKernels.
  Status kernels(std::vector<std::unique_ptr<DeviceKernel>> **out);

private:
  std::shared_ptr<Context> context_; // kept alive by its models
  Package package_;
  std::mutex mutex_;
  bool kernelsLoaded_ = false;
  std::vector<std::unique_ptr<DeviceKernel>> kernels_;
};

class Session {
public:
  /// Allocates and initializes the memory of |model|'s buffers: persistent
  /// and Input buffers, the arena and the library-call workspace, exactly
  /// what the package's MemoryPlan predicts; on a context of several ranks
  /// then broadcasts the state from rank 0 (broadcastState), so every rank
  /// must create its sessions in the same order.
  static Status create(std::shared_ptr<Model> model,
                       std::unique_ptr<Session> *out);
  ~Session();

  Status setInput(const std::string &function, const std::string &name,
                  const void *data, size_t bytes);
  /// Runs every step of |function| and waits for the device; then copies
  /// its outputs to host memory for getOutput.
  Status run(const std::string &function);
  Status getOutput(const std::string &function, const std::string &name,
                   void *data, size_t bytes);

  /// Indices (into the package buffers) of the checkpointed buffers, in
  /// package order.
  const std::vector<uint32_t> &stateBuffers() const { return state_; }
  Status readState(const std::string &name, void *data, size_t bytes);
  Status writeState(const std::string &name, const void *data, size_t bytes);
  /// |metadata| is a JSON object of strings or empty.
  Status saveCheckpoint(const std::string &path, const std::string &metadata);
  Status loadCheckpoint(const std::string &path, std::string *metadataJson);
  /// Restores the safetensors checkpoint |data| of |size| bytes, named
  /// |what| in messages. Checks every tensor (names, dtypes, shapes) before
  /// writing any, so a mismatched checkpoint leaves the session as it was.
  /// Errors: DLRT_CORRUPT (not valid safetensors), DLRT_INVALID_ARGUMENT
  /// (does not match the model), those of the device.
  Status loadCheckpointBytes(const uint8_t *data, size_t size,
                             const std::string &what,
                             std::string *metadataJson);

  const Model &model() const { return *model_; }
  /// The package's memory plan (predicted) and the device's measured memory
  /// since it was created (every session of the context counts). Errors:
  /// those of Device::memoryUsage.
  Status memory(MemoryPlan *predicted, MemoryUsage *measured);

  /// The timeline of this session's runs (Trace.h), recorded while enabled:
  /// every step of every run, and each collective's transfer.
  Trace &trace() { return trace_; }

  /// Step graphs (dlrt_session_set_graphs): on by default; off drops the
  /// graphs captured so far.
  void setGraphs(bool enabled);
  /// Whether the last run of |function| replayed a graph, and why a capture
  /// that was tried did not succeed (empty if none was tried or it did).
  /// Errors: DLRT_NOT_FOUND (no such function).
  Status graphStatus(const std::string &function, bool *replayed,
                     const std::string **reason) const;

  /// A pipeline package (Package::hasPipeline): makes every rank's copy of
  /// every stage's checkpointed buffers the values of that stage's first
  /// rank (one broadcast per stage), so that any rank can evaluate or save
  /// the whole model. Every rank must call it. A no-op for other packages
  /// and on one rank. Errors: those of Context::broadcast.
  Status syncPipelineState();

private:
  explicit Session(std::shared_ptr<Model> model) : model_(std::move(model)) {}
  /// Runs every step of |fn| and waits for the device (run without the
  /// output bookkeeping). |graphKey| names its entry in graphs_ (default:
  /// the function's name): a captured graph replays the pointers it was
  /// captured with, so a caller that points the function's buffers
  /// elsewhere between runs (the pipeline) passes one key per pointer set.
  Status execute(const FunctionInfo &fn, const std::string &graphKey = {});
  /// One training step of a pipeline package (Pipeline.cpp): this rank's
  /// stage's forwards and backwards over the micro-batches in the
  /// schedule's order, exchanging activations and gradients with the
  /// neighbouring stages, then the update; the loss output gets the mean
  /// loss of the global batch.
  Status runPipelineStep();
  struct PipelineState;
  /// Runs the schedule's actions of one pipeline step (Pipeline.cpp).
  class PipelineStepRunner;
  std::shared_ptr<PipelineState> pipeline_; // shared_ptr: an incomplete type here
  /// On a context of several ranks, makes every checkpointed buffer
  /// (parameters, optimizer state, running statistics, step counters) rank
  /// 0's: one broadcast of them all (DistributedDataParallel broadcasts its
  /// parameters and buffers at construction the same way). Errors: those of
  /// Context::broadcast and of the device's copies.
  Status broadcastState();
  /// The checkpointed buffer named |name|, or -1.
  int64_t findState(const std::string &name) const;
  /// Allocates the buffers a pipeline rank deferred (deferred_)
  /// and grows the arena to every function's; their values come from a
  /// checkpoint loaded meanwhile, or the package's initializers, or zeros.
  /// Called before anything that needs the whole model (evaluation, state
  /// reads and writes, saving, syncPipelineState). Errors: the device's.
  Status allocateDeferredState();
  /// A collective issued by an AllReduce step and not yet waited for.
  struct InFlight {
    std::shared_ptr<comm::Work> work;
    int64_t issuedNs = 0; // Trace::now() at the issue, when tracing
  };
  Status startAllReduce(comm::Communicator &communicator, const StepInfo &step,
                        void *data, std::map<uint32_t, InFlight> *inFlight);
  /// Trace events of one step that began at |beginNs| and of the transfer
  /// of the collective on |buffer| that a wait has just finished.
  void traceStep(const StepInfo &step, int64_t beginNs);
  void traceTransfer(uint32_t buffer, const InFlight &entry);

  std::shared_ptr<Model> model_; // kept alive by its sessions
  Device &device_ = model_->context().device();
  std::vector<DeviceBuffer> allocations_;
  DeviceBuffer arena_;
  DeviceBuffer workspace_;       // the library calls' scratch (MemoryPlan)
  std::vector<void *> pointers_; // per package buffer
  std::vector<uint32_t> state_;
  /// On a rank of a pipeline (several ranks), the persistent and input
  /// buffers that its stage's functions do not touch: not allocated until
  /// the whole model is needed (allocateDeferredState), so that a rank
  /// holds its stage's parameters and optimizer state, not the model's.
  /// With the values a checkpoint gave them meanwhile, by buffer.
  std::vector<uint32_t> deferred_;
  std::map<uint32_t, std::vector<uint8_t>> deferredValues_;
  int64_t fullArenaBytes_ = 0; // every function's arena, once all is held
  bool stageOnly_ = false;      // deferred_ and the arena are the stage's
  std::vector<std::unique_ptr<DeviceKernel>> *kernels_ = nullptr;
  Trace trace_;
  /// Per function: its step graph, once captured (Device::beginCapture),
  /// after one run step by step (which initializes what the library calls
  /// set up lazily, so that the capture records only stream work).
  struct FunctionGraph {
    bool hasCollectives = false; // set at the first run: never graphed
    int plainRuns = 0;
    bool failed = false;       // a capture was tried and did not succeed
    std::string reason;        // why, for graphStatus
    bool lastReplayed = false; // the last run replayed |graph|
    std::unique_ptr<Device::Graph> graph;
  };
  bool graphsEnabled_ = true;
  std::map<std::string, FunctionGraph> graphs_;
  /// Host copies of each function's outputs after its last run, made when
  /// something could overwrite them on the device (materializeOutputs).
  std::map<std::string, std::map<std::string, std::vector<uint8_t>>> outputs_;
  /// The function whose last run's outputs are still only on the device
  /// (read by getOutput straight from its buffers), or "" for none: a run
  /// does not copy its outputs to the host, so that reading 4 bytes of a
  /// loss does not cost a copy of every output.
  std::string deviceOutputs_;
  /// Copies the outputs of |deviceOutputs_| to outputs_ (before a call that
  /// may overwrite the device buffers holding them: another run, an input,
  /// a state write) and clears it.
  Status materializeOutputs();
};

} // namespace exec
} // namespace dlrt

#endif
