// dlrt.hpp - a thin RAII C++ wrapper over the C API in dlrt.h.
//
// Each class owns one C handle and releases it in its destructor; errors are
// returned as dlrt::Error values (never thrown), so the C API's rules carry
// over unchanged:
//
//   dlrt::Context ctx;
//   if (dlrt::Error e = dlrt::Context::create(nullptr, &ctx))
//     std::cerr << e.message() << "\n";
#ifndef DLRT_DLRT_HPP
#define DLRT_DLRT_HPP

#include <string>
#include <utility>

#include "dlrt/dlrt.h"

namespace dlrt {

/// Owns a dlrt_status_t; converts to true when it holds an error.
class Error {
public:
  Error() = default;
  explicit Error(dlrt_status_t status) : status_(status) {}
  Error(Error &&other) noexcept
      : status_(std::exchange(other.status_, nullptr)) {}
  Error &operator=(Error &&other) noexcept {
    std::swap(status_, other.status_);
    return *this;
  }
  Error(const Error &) = delete;
  Error &operator=(const Error &) = delete;
  ~Error() { dlrt_status_free(status_); }

  explicit operator bool() const { return status_ != nullptr; }
  dlrt_status_code_t code() const { return dlrt_status_code(status_); }
  /// One line; "" when OK.
  const char *message() const { return dlrt_status_message(status_); }
  dlrt_status_t get() const { return status_; }

private:
  dlrt_status_t status_ = nullptr;
};

namespace detail {
/// A move-only owner of a C handle released by |Release|.
template <typename T, void (*Release)(T)> class Handle {
public:
  Handle() = default;
  explicit Handle(T handle) : handle_(handle) {}
  Handle(Handle &&other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)) {}
  Handle &operator=(Handle &&other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  ~Handle() {
    if (handle_)
      Release(handle_);
  }
  T get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

protected:
  T handle_ = nullptr;
};
} // namespace detail

/// An open device (dlrt_context_t).
class Context : public detail::Handle<dlrt_context_t, dlrt_context_release> {
public:
  using Handle::Handle;
  /// |options| may be null for the defaults (AUTO device, ordinal 0).
  static Error create(const dlrt_context_options_t *options, Context *out) {
    dlrt_context_t c = nullptr;
    Error e(dlrt_context_create(options, &c));
    *out = Context(c);
    return e;
  }
  dlrt_device_kind_t device() const { return dlrt_context_device(handle_); }
  const char *deviceName() const { return dlrt_context_device_name(handle_); }
  /// dlrt_context_gemm_epilogue_fallbacks.
  Error gemmEpilogueFallbacks(int64_t *count) const {
    return Error(dlrt_context_gemm_epilogue_fallbacks(handle_, count));
  }
  /// This process's rank and the job's world size (dlrt_context_rank).
  Error rank(int32_t *rank, int32_t *worldSize) const {
    return Error(dlrt_context_rank(handle_, rank, worldSize));
  }
  /// Mean over the ranks of |count| host doubles (dlrt_context_average).
  Error average(double *values, size_t count) {
    return Error(dlrt_context_average(handle_, values, count));
  }
  /// Waits for every rank (dlrt_context_barrier).
  Error barrier() { return Error(dlrt_context_barrier(handle_)); }
};

/// A loaded package (dlrt_model_t).
class Model : public detail::Handle<dlrt_model_t, dlrt_model_release> {
public:
  using Handle::Handle;
  static Error load(const Context &context, const std::string &path,
                    Model *out) {
    dlrt_model_t m = nullptr;
    Error e(dlrt_model_load(context.get(), path.c_str(), &m));
    *out = Model(m);
    return e;
  }
  bool hasFunction(const char *function) const {
    return dlrt_model_has_function(handle_, function) != 0;
  }
  int32_t inputCount(const char *function) const {
    return dlrt_model_input_count(handle_, function);
  }
  int32_t outputCount(const char *function) const {
    return dlrt_model_output_count(handle_, function);
  }
  Error inputInfo(const char *function, int32_t index,
                  dlrt_tensor_info_t *out) const {
    return Error(dlrt_model_input_info(handle_, function, index, out));
  }
  Error outputInfo(const char *function, int32_t index,
                   dlrt_tensor_info_t *out) const {
    return Error(dlrt_model_output_info(handle_, function, index, out));
  }
  const char *lossOutput() const { return dlrt_model_loss_output(handle_); }
  const char *optimizer() const { return dlrt_model_optimizer(handle_); }
  int64_t batchSize() const { return dlrt_model_batch_size(handle_); }
  /// The predicted memory of a session, bytes (dlrt_model_memory).
  Error memory(dlrt_memory_info_t *out) const {
    return Error(dlrt_model_memory(handle_, out));
  }
};

/// Device memory and state for running a model (dlrt_session_t).
class Session : public detail::Handle<dlrt_session_t, dlrt_session_release> {
public:
  using Handle::Handle;
  static Error create(const Model &model, Session *out) {
    dlrt_session_t s = nullptr;
    Error e(dlrt_session_create(model.get(), &s));
    *out = Session(s);
    return e;
  }
  Error setInput(const char *function, const char *name, const void *data,
                 size_t bytes) {
    return Error(dlrt_session_set_input(handle_, function, name, data, bytes));
  }
  Error run(const char *function) {
    return Error(dlrt_session_run(handle_, function));
  }
  Error getOutput(const char *function, const char *name, void *data,
                  size_t bytes) {
    return Error(dlrt_session_get_output(handle_, function, name, data, bytes));
  }
  int32_t stateCount() const { return dlrt_session_state_count(handle_); }
  Error stateInfo(int32_t index, dlrt_tensor_info_t *out) const {
    return Error(dlrt_session_state_info(handle_, index, out));
  }
  Error readState(const char *name, void *data, size_t bytes) {
    return Error(dlrt_session_read_state(handle_, name, data, bytes));
  }
  Error writeState(const char *name, const void *data, size_t bytes) {
    return Error(dlrt_session_write_state(handle_, name, data, bytes));
  }
  /// |metadataJson| may be null.
  Error saveCheckpoint(const std::string &path,
                       const char *metadataJson = nullptr) {
    return Error(
        dlrt_session_save_checkpoint(handle_, path.c_str(), metadataJson));
  }
  /// |metadataJson| (may be null) receives the checkpoint's metadata as a
  /// JSON object.
  Error loadCheckpoint(const std::string &path,
                       std::string *metadataJson = nullptr) {
    char *meta = nullptr;
    Error e(dlrt_session_load_checkpoint(handle_, path.c_str(),
                                         metadataJson ? &meta : nullptr));
    if (meta && metadataJson)
      *metadataJson = meta;
    dlrt_string_free(meta);
    return e;
  }
  /// Step graphs on or off (dlrt_session_set_graphs).
  Error setGraphs(bool enabled) {
    return Error(dlrt_session_set_graphs(handle_, enabled ? 1 : 0));
  }
  /// Whether the last run of |function| replayed a graph; |reason| (may be
  /// null) gets why a capture tried did not succeed, else "".
  Error graphStatus(const char *function, bool *replayed,
                    std::string *reason = nullptr) const {
    int32_t r = 0;
    const char *why = nullptr;
    Error e(dlrt_session_graph_status(handle_, function, &r, &why));
    *replayed = r != 0;
    if (reason)
      *reason = why ? why : "";
    return e;
  }
  /// Predicted and measured memory, bytes (dlrt_session_memory).
  Error memory(dlrt_memory_info_t *out) const {
    return Error(dlrt_session_memory(handle_, out));
  }
};

} // namespace dlrt

#endif // DLRT_DLRT_HPP
