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

#include "Device.h"
#include "Package.h"
#include "Trace.h"
#include "../comm/Communicator.h"

namespace dlrt {
/// The objects behind the C API handles; in their own namespace so they
/// never collide with the dlrt.hpp wrapper classes of the same names.
namespace exec {

class Context {
public:
  /// Opens the device |options| asks for. DLRT_DEVICE_AUTO falls back to the
  /// host device (with a notice) when no CUDA device is usable. Errors:
  /// DLRT_UNAVAILABLE (DLRT_DEVICE_CUDA without a usable GPU),
  /// DLRT_INVALID_ARGUMENT (unknown device kind).
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

private:
  std::unique_ptr<Device> device_;
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
  /// what the package's MemoryPlan predicts.
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

private:
  explicit Session(std::shared_ptr<Model> model) : model_(std::move(model)) {}
  /// The checkpointed buffer named |name|, or -1.
  int64_t findState(const std::string &name) const;
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
  std::vector<std::unique_ptr<DeviceKernel>> *kernels_ = nullptr;
  Trace trace_;
  /// Host copies of each function's outputs after its last run.
  std::map<std::string, std::map<std::string, std::vector<uint8_t>>> outputs_;
};

} // namespace exec
} // namespace dlrt

#endif
