//===- CApi.cpp - the C API of libdlrt (dlrt.h) over the C++ runtime ------===//
#include "runtime/src/Session.h"

#include <cstdlib>
#include <cstring>

struct dlrt_status {
  dlrt_status_code_t code;
  std::string message;
};

// Models hold their context and sessions their model, so the handles may be
// released in any order.
struct dlrt_context {
  std::shared_ptr<dlrt::exec::Context> impl;
};

struct dlrt_model {
  std::shared_ptr<dlrt::exec::Model> impl;
};

struct dlrt_session {
  std::unique_ptr<dlrt::exec::Session> impl;
};

namespace {

/// Returned when allocating a status fails, so an error is never reported as
/// OK; dlrt_status_free leaves it alone.
dlrt_status kOutOfMemoryStatus{DLRT_OUT_OF_MEMORY, "out of host memory"};

dlrt_status_t error(dlrt_status_code_t code, std::string message) {
  try {
    return new dlrt_status{code, std::move(message)};
  } catch (...) {
    return &kOutOfMemoryStatus;
  }
}

dlrt_status_t wrap(const dlrt::Status &s) {
  if (s.ok())
    return nullptr;
  return error(s.code, s.message);
}

dlrt_status_t nullArgument(const char *what) {
  return error(DLRT_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

/// Runs |f|, turning any C++ exception into a DLRT_INTERNAL status so none
/// crosses the C boundary.
template <typename F> dlrt_status_t guarded(F &&f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    return error(DLRT_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    return error(DLRT_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return error(DLRT_INTERNAL, "internal error");
  }
}

const dlrt::FunctionInfo *findFunction(dlrt_model_t model,
                                       const char *function) {
  if (!model || !function)
    return nullptr;
  return model->impl->package().function(function);
}

void fillInfo(const dlrt::BufferInfo &b, const std::string &name,
              dlrt_tensor_info_t *out) {
  out->name = name.c_str();
  out->dtype = b.dtype;
  out->rank = static_cast<int32_t>(b.shape.size()); // <= 8 per loader
  for (size_t i = 0; i < b.shape.size() && i < 8; ++i)
    out->shape[i] = b.shape[i];
}

dlrt_status_t namedInfo(dlrt_model_t model, const char *function, int32_t index,
                        bool input, dlrt_tensor_info_t *out_info) {
  if (!out_info)
    return nullArgument("out_info");
  *out_info = dlrt_tensor_info_t();
  out_info->name = "";
  if (!model)
    return nullArgument("model");
  if (!function)
    return nullArgument("function");
  const dlrt::FunctionInfo *fn = findFunction(model, function);
  if (!fn)
    return error(DLRT_NOT_FOUND,
                 std::string("the model has no function '") + function + "'");
  const auto &list = input ? fn->inputs : fn->outputs;
  if (index < 0 || static_cast<size_t>(index) >= list.size())
    return error(DLRT_INVALID_ARGUMENT,
                 std::string(input ? "input" : "output") + " index " +
                     std::to_string(index) + " is out of range (function '" +
                     function + "' has " + std::to_string(list.size()) + ")");
  const dlrt::NamedBufferInfo &nb = list[index];
  fillInfo(model->impl->package().buffers[nb.buffer], nb.name, out_info);
  return nullptr;
}

} // namespace

extern "C" {

dlrt_status_code_t dlrt_status_code(dlrt_status_t status) {
  return status ? status->code : DLRT_OK;
}

const char *dlrt_status_message(dlrt_status_t status) {
  return status ? status->message.c_str() : "";
}

void dlrt_status_free(dlrt_status_t status) {
  if (status != &kOutOfMemoryStatus)
    delete status;
}

size_t dlrt_dtype_size(dlrt_dtype_t dtype) {
  switch (dtype) {
  case DLRT_F32:
  case DLRT_I32:
    return 4;
  case DLRT_F64:
  case DLRT_I64:
    return 8;
  case DLRT_F16:
  case DLRT_BF16:
    return 2;
  case DLRT_BOOL:
    return 1;
  }
  return 0;
}

void dlrt_context_options_init(dlrt_context_options_t *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof(*options));
  options->device = DLRT_DEVICE_AUTO;
  options->device_ordinal = 0;
  options->notice = nullptr;
  options->notice_user_data = nullptr;
  options->distributed = 0;
  options->comm_timeout_seconds = 0;
}

dlrt_status_t dlrt_context_create(const dlrt_context_options_t *options,
                                  dlrt_context_t *out_context) {
  if (!out_context)
    return nullArgument("out_context");
  *out_context = nullptr;
  return guarded([&]() -> dlrt_status_t {
    dlrt_context_options_t defaults;
    dlrt_context_options_init(&defaults);
    std::unique_ptr<dlrt::exec::Context> ctx;
    dlrt::Status s =
        dlrt::exec::Context::create(options ? *options : defaults, &ctx);
    if (!s.ok())
      return wrap(s);
    *out_context = new dlrt_context{std::move(ctx)};
    return nullptr;
  });
}

void dlrt_context_release(dlrt_context_t context) { delete context; }

dlrt_device_kind_t dlrt_context_device(dlrt_context_t context) {
  return context ? context->impl->device().kind() : DLRT_DEVICE_HOST;
}

const char *dlrt_context_device_name(dlrt_context_t context) {
  return context ? context->impl->deviceName().c_str() : "";
}

dlrt_status_t dlrt_context_gemm_epilogue_fallbacks(dlrt_context_t context,
                                                   int64_t *out_count) {
  if (out_count)
    *out_count = 0;
  if (!context)
    return nullArgument("context");
  if (!out_count)
    return nullArgument("out_count");
  *out_count = context->impl->device().gemmEpilogueFallbacks();
  return nullptr;
}

dlrt_status_t dlrt_context_rank(dlrt_context_t context, int32_t *out_rank,
                                int32_t *out_world_size) {
  if (out_rank)
    *out_rank = 0;
  if (out_world_size)
    *out_world_size = 0;
  if (!context)
    return nullArgument("context");
  if (!out_rank)
    return nullArgument("out_rank");
  if (!out_world_size)
    return nullArgument("out_world_size");
  *out_rank = context->impl->rank();
  *out_world_size = context->impl->worldSize();
  return nullptr;
}

dlrt_status_t dlrt_context_average(dlrt_context_t context, double *values,
                                   size_t count) {
  if (!context)
    return nullArgument("context");
  if (!values && count > 0)
    return nullArgument("values");
  return guarded([&] { return wrap(context->impl->average(values, count)); });
}

dlrt_status_t dlrt_context_barrier(dlrt_context_t context) {
  if (!context)
    return nullArgument("context");
  return guarded([&] { return wrap(context->impl->barrier()); });
}

dlrt_status_t dlrt_model_load(dlrt_context_t context, const char *path,
                              dlrt_model_t *out_model) {
  if (!out_model)
    return nullArgument("out_model");
  *out_model = nullptr;
  if (!context)
    return nullArgument("context");
  if (!path)
    return nullArgument("path");
  return guarded([&]() -> dlrt_status_t {
    dlrt::Package pkg;
    dlrt::Status s = dlrt::loadPackage(path, &pkg);
    if (!s.ok())
      return wrap(s);
    *out_model = new dlrt_model{
        std::make_shared<dlrt::exec::Model>(context->impl, std::move(pkg))};
    return nullptr;
  });
}

void dlrt_model_release(dlrt_model_t model) { delete model; }

int dlrt_model_has_function(dlrt_model_t model, const char *function) {
  return findFunction(model, function) != nullptr;
}

int32_t dlrt_model_input_count(dlrt_model_t model, const char *function) {
  const dlrt::FunctionInfo *fn = findFunction(model, function);
  return fn ? static_cast<int32_t>(fn->inputs.size()) : 0;
}

int32_t dlrt_model_output_count(dlrt_model_t model, const char *function) {
  const dlrt::FunctionInfo *fn = findFunction(model, function);
  return fn ? static_cast<int32_t>(fn->outputs.size()) : 0;
}

dlrt_status_t dlrt_model_input_info(dlrt_model_t model, const char *function,
                                    int32_t index,
                                    dlrt_tensor_info_t *out_info) {
  return guarded(
      [&] { return namedInfo(model, function, index, true, out_info); });
}

dlrt_status_t dlrt_model_output_info(dlrt_model_t model, const char *function,
                                     int32_t index,
                                     dlrt_tensor_info_t *out_info) {
  return guarded(
      [&] { return namedInfo(model, function, index, false, out_info); });
}

const char *dlrt_model_loss_output(dlrt_model_t model) {
  return model ? model->impl->package().lossOutput.c_str() : "";
}

const char *dlrt_model_optimizer(dlrt_model_t model) {
  return model ? model->impl->package().optimizer.c_str() : "";
}

int64_t dlrt_model_batch_size(dlrt_model_t model) {
  return model ? model->impl->package().batchSize : 0;
}

double dlrt_model_flops_per_step(dlrt_model_t model) {
  return model ? model->impl->package().modelFlops : 0;
}

double dlrt_model_peak_flops(dlrt_model_t model) {
  return model ? model->impl->package().peakFlops : 0;
}

int32_t dlrt_model_pipeline_stages(dlrt_model_t model) {
  if (!model || !model->impl->package().hasPipeline)
    return 0;
  return static_cast<int32_t>(model->impl->package().pipeline.stages.size());
}

int32_t dlrt_model_pipeline_micro_batches(dlrt_model_t model) {
  if (!model || !model->impl->package().hasPipeline)
    return 0;
  return model->impl->package().pipeline.microBatches;
}

dlrt_status_t dlrt_session_create(dlrt_model_t model,
                                  dlrt_session_t *out_session) {
  if (!out_session)
    return nullArgument("out_session");
  *out_session = nullptr;
  if (!model)
    return nullArgument("model");
  return guarded([&]() -> dlrt_status_t {
    std::unique_ptr<dlrt::exec::Session> session;
    dlrt::Status s = dlrt::exec::Session::create(model->impl, &session);
    if (!s.ok())
      return wrap(s);
    *out_session = new dlrt_session{std::move(session)};
    return nullptr;
  });
}

void dlrt_session_release(dlrt_session_t session) { delete session; }

dlrt_status_t dlrt_session_set_input(dlrt_session_t session,
                                     const char *function, const char *name,
                                     const void *data, size_t bytes) {
  if (!session)
    return nullArgument("session");
  if (!function)
    return nullArgument("function");
  if (!name)
    return nullArgument("name");
  return guarded([&] {
    return wrap(session->impl->setInput(function, name, data, bytes));
  });
}

dlrt_status_t dlrt_session_run(dlrt_session_t session, const char *function) {
  if (!session)
    return nullArgument("session");
  if (!function)
    return nullArgument("function");
  return guarded([&] { return wrap(session->impl->run(function)); });
}

dlrt_status_t dlrt_session_get_output(dlrt_session_t session,
                                      const char *function, const char *name,
                                      void *data, size_t bytes) {
  if (!session)
    return nullArgument("session");
  if (!function)
    return nullArgument("function");
  if (!name)
    return nullArgument("name");
  return guarded([&] {
    return wrap(session->impl->getOutput(function, name, data, bytes));
  });
}

int32_t dlrt_session_state_count(dlrt_session_t session) {
  return session ? static_cast<int32_t>(session->impl->stateBuffers().size())
                 : 0;
}

dlrt_status_t dlrt_session_state_info(dlrt_session_t session, int32_t index,
                                      dlrt_tensor_info_t *out_info) {
  if (!out_info)
    return nullArgument("out_info");
  *out_info = dlrt_tensor_info_t();
  out_info->name = "";
  if (!session)
    return nullArgument("session");
  const auto &state = session->impl->stateBuffers();
  if (index < 0 || static_cast<size_t>(index) >= state.size())
    return error(DLRT_INVALID_ARGUMENT, "state index " + std::to_string(index) +
                                            " is out of range (the model has " +
                                            std::to_string(state.size()) +
                                            " persistent tensors)");
  const dlrt::BufferInfo &b =
      session->impl->model().package().buffers[state[index]];
  fillInfo(b, b.name, out_info);
  return nullptr;
}

dlrt_status_t dlrt_session_read_state(dlrt_session_t session, const char *name,
                                      void *data, size_t bytes) {
  if (!session)
    return nullArgument("session");
  if (!name)
    return nullArgument("name");
  return guarded(
      [&] { return wrap(session->impl->readState(name, data, bytes)); });
}

dlrt_status_t dlrt_session_write_state(dlrt_session_t session, const char *name,
                                       const void *data, size_t bytes) {
  if (!session)
    return nullArgument("session");
  if (!name)
    return nullArgument("name");
  return guarded(
      [&] { return wrap(session->impl->writeState(name, data, bytes)); });
}

dlrt_status_t dlrt_session_save_checkpoint(dlrt_session_t session,
                                           const char *path,
                                           const char *metadata_json) {
  if (!session)
    return nullArgument("session");
  if (!path)
    return nullArgument("path");
  return guarded([&] {
    return wrap(session->impl->saveCheckpoint(
        path, metadata_json ? metadata_json : ""));
  });
}

dlrt_status_t dlrt_session_load_checkpoint(dlrt_session_t session,
                                           const char *path,
                                           char **out_metadata_json) {
  if (out_metadata_json)
    *out_metadata_json = nullptr;
  if (!session)
    return nullArgument("session");
  if (!path)
    return nullArgument("path");
  return guarded([&]() -> dlrt_status_t {
    std::string metadata;
    dlrt::Status s = session->impl->loadCheckpoint(path, &metadata);
    if (!s.ok())
      return wrap(s);
    if (out_metadata_json) {
      char *copy = static_cast<char *>(std::malloc(metadata.size() + 1));
      if (!copy)
        return error(DLRT_OUT_OF_MEMORY, "out of host memory");
      std::memcpy(copy, metadata.c_str(), metadata.size() + 1);
      *out_metadata_json = copy;
    }
    return nullptr;
  });
}

void dlrt_string_free(char *s) { std::free(s); }

} // extern "C"

namespace {
/// The predicted fields of |out| from |plan|.
void fillPredicted(const dlrt::MemoryPlan &plan, dlrt_memory_info_t *out) {
  out->persistent_bytes = plan.persistentBytes;
  out->input_bytes = plan.inputBytes;
  out->arena_bytes = plan.arenaBytes;
  out->workspace_bytes = plan.workspaceBytes;
  out->predicted_peak_bytes = plan.predictedPeakBytes();
  out->plan_from_package = plan.fromPackage ? 1 : 0;
}
} // namespace

dlrt_status_t dlrt_model_memory(dlrt_model_t model,
                                dlrt_memory_info_t *out_info) {
  if (out_info)
    *out_info = dlrt_memory_info_t();
  if (!model)
    return nullArgument("model");
  if (!out_info)
    return nullArgument("out_info");
  fillPredicted(model->impl->package().memory, out_info);
  return nullptr;
}

dlrt_status_t dlrt_session_memory(dlrt_session_t session,
                                  dlrt_memory_info_t *out_info) {
  if (out_info)
    *out_info = dlrt_memory_info_t();
  if (!session)
    return nullArgument("session");
  if (!out_info)
    return nullArgument("out_info");
  return guarded([&]() -> dlrt_status_t {
    dlrt::MemoryPlan plan;
    dlrt::MemoryUsage usage;
    dlrt::Status st = session->impl->memory(&plan, &usage);
    if (!st.ok())
      return wrap(st);
    fillPredicted(plan, out_info);
    out_info->measured_peak_bytes = usage.reservedPeakBytes;
    out_info->used_peak_bytes = usage.usedPeakBytes;
    return nullptr;
  });
}

dlrt_status_t dlrt_session_set_trace(dlrt_session_t session, int32_t enabled) {
  if (!session)
    return nullArgument("session");
  return guarded([&]() -> dlrt_status_t {
    dlrt::Trace &trace = session->impl->trace();
    if (enabled && !trace.enabled())
      trace.clear();
    trace.setEnabled(enabled != 0);
    return nullptr;
  });
}

dlrt_status_t dlrt_session_sync_pipeline_state(dlrt_session_t session) {
  if (!session)
    return nullArgument("session");
  return guarded([&]() -> dlrt_status_t {
    return wrap(session->impl->syncPipelineState());
  });
}

dlrt_status_t dlrt_session_set_graphs(dlrt_session_t session,
                                      int32_t enabled) {
  if (!session)
    return nullArgument("session");
  return guarded([&]() -> dlrt_status_t {
    session->impl->setGraphs(enabled != 0);
    return nullptr;
  });
}

dlrt_status_t dlrt_session_graph_status(dlrt_session_t session,
                                        const char *function,
                                        int32_t *out_replayed,
                                        const char **out_reason) {
  if (out_replayed)
    *out_replayed = 0;
  if (out_reason)
    *out_reason = nullptr;
  if (!session)
    return nullArgument("session");
  if (!function)
    return nullArgument("function");
  if (!out_replayed)
    return nullArgument("out_replayed");
  return guarded([&]() -> dlrt_status_t {
    bool replayed = false;
    const std::string *reason = nullptr;
    dlrt::Status st = session->impl->graphStatus(function, &replayed, &reason);
    if (!st.ok())
      return wrap(st);
    *out_replayed = replayed ? 1 : 0;
    if (out_reason)
      *out_reason = reason && !reason->empty() ? reason->c_str() : nullptr;
    return nullptr;
  });
}

dlrt_status_t dlrt_session_write_trace(dlrt_session_t session,
                                       const char *path, int32_t pid,
                                       const char *process_name) {
  if (!session)
    return nullArgument("session");
  if (!path)
    return nullArgument("path");
  if (!process_name)
    return nullArgument("process_name");
  return guarded([&]() -> dlrt_status_t {
    return wrap(session->impl->trace().write(path, pid, process_name));
  });
}
