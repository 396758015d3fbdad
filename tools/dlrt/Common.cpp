//===- Common.cpp - shared pieces of the dlrt subcommands -----------------===//
#include "Common.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace dlrt::cli {

void fail(const std::string &message) { throw Error(message); }

void check(dlrt_status_t status) {
  if (!status)
    return;
  std::string message = dlrt_status_message(status);
  dlrt_status_free(status);
  fail(message.empty() ? "runtime call failed" : message);
}

static void printNotice(void *, const char *message) {
  std::fprintf(stderr, "dlrt: note: %s\n", message);
}

static dlrt_device_kind_t deviceKind(const std::string &device) {
  if (device == "auto")
    return DLRT_DEVICE_AUTO;
  if (device == "host")
    return DLRT_DEVICE_HOST;
  if (device == "cuda")
    return DLRT_DEVICE_CUDA;
  fail("unknown device '" + device + "' (expected auto, host or cuda)");
}

ContextPtr openContext(const std::string &device, bool announce) {
  dlrt_context_options_t options;
  dlrt_context_options_init(&options);
  options.device = deviceKind(device);
  options.notice = printNotice;
  dlrt_context_t context = nullptr;
  check(dlrt_context_create(&options, &context));
  ContextPtr owned(context);
  if (announce) {
    std::printf("device: %s\n", dlrt_context_device_name(context));
    std::fflush(stdout);
  }
  return owned;
}

static void keepNotice(void *notices, const char *message) {
  static_cast<std::vector<std::string> *>(notices)->push_back(message);
}

ContextPtr openDistributedContext(const std::string &device, bool announce,
                                  double commTimeout) {
  dlrt_context_options_t options;
  dlrt_context_options_init(&options);
  options.device = deviceKind(device);
  options.distributed = 1;
  options.comm_timeout_seconds = commTimeout;
  // The rank is known only once the context exists: keep the notices until
  // then, so that ranks other than 0 print nothing but errors.
  std::vector<std::string> notices;
  options.notice = keepNotice;
  options.notice_user_data = &notices;
  dlrt_context_t context = nullptr;
  check(dlrt_context_create(&options, &context));
  ContextPtr owned(context);
  int32_t rank, worldSize;
  contextRank(context, &rank, &worldSize);
  if (rank != 0)
    return owned;
  for (const std::string &notice : notices)
    printNotice(nullptr, notice.c_str());
  if (announce) {
    std::printf("device: %s\n", dlrt_context_device_name(context));
    if (worldSize > 1)
      std::printf("ranks: %d\n", worldSize);
    std::fflush(stdout);
  }
  return owned;
}

void contextRank(dlrt_context_t context, int32_t *rank, int32_t *worldSize) {
  check(dlrt_context_rank(context, rank, worldSize));
}

double commTimeoutSeconds(double flag) {
  if (flag > 0)
    return flag;
  const char *env = std::getenv("DLRT_COMM_TIMEOUT");
  if (!env)
    return 300;
  char *end = nullptr;
  double v = std::strtod(env, &end);
  if (!*env || *end != '\0' || !(v > 0) || !std::isfinite(v))
    fail(std::string("DLRT_COMM_TIMEOUT='") + env +
         "' is not a positive number of seconds");
  return v;
}

ModelPtr loadModel(dlrt_context_t context, const std::string &path) {
  dlrt_model_t model = nullptr;
  check(dlrt_model_load(context, path.c_str(), &model));
  return ModelPtr(model);
}

SessionPtr createSession(dlrt_model_t model) {
  dlrt_session_t session = nullptr;
  check(dlrt_session_create(model, &session));
  return SessionPtr(session);
}

std::vector<dlrt_tensor_info_t> inputInfos(dlrt_model_t model,
                                           const char *function) {
  std::vector<dlrt_tensor_info_t> out;
  int32_t n = dlrt_model_input_count(model, function);
  for (int32_t i = 0; i < n; ++i) {
    dlrt_tensor_info_t info;
    check(dlrt_model_input_info(model, function, i, &info));
    out.push_back(info);
  }
  return out;
}

std::vector<dlrt_tensor_info_t> outputInfos(dlrt_model_t model,
                                            const char *function) {
  std::vector<dlrt_tensor_info_t> out;
  int32_t n = dlrt_model_output_count(model, function);
  for (int32_t i = 0; i < n; ++i) {
    dlrt_tensor_info_t info;
    check(dlrt_model_output_info(model, function, i, &info));
    out.push_back(info);
  }
  return out;
}

int64_t numel(const dlrt_tensor_info_t &info) {
  int64_t n = 1;
  for (int32_t i = 0; i < info.rank; ++i)
    n *= info.shape[i];
  return n;
}

size_t byteSize(const dlrt_tensor_info_t &info) {
  return static_cast<size_t>(numel(info)) * dlrt_dtype_size(info.dtype);
}

const char *dtypeName(dlrt_dtype_t dtype) {
  switch (dtype) {
  case DLRT_F32:
    return "f32";
  case DLRT_F64:
    return "f64";
  case DLRT_I64:
    return "i64";
  case DLRT_I32:
    return "i32";
  case DLRT_BOOL:
    return "bool";
  case DLRT_F16:
    return "f16";
  case DLRT_BF16:
    return "bf16";
  }
  return "?";
}

std::string describe(const dlrt_tensor_info_t &info) {
  std::string s = "[";
  for (int32_t i = 0; i < info.rank; ++i)
    s += (i ? ", " : "") + std::to_string(info.shape[i]);
  return s + "] " + dtypeName(info.dtype);
}

data::DType toDataType(dlrt_dtype_t dtype) {
  switch (dtype) {
  case DLRT_F32:
    return data::DType::F32;
  case DLRT_F64:
    return data::DType::F64;
  case DLRT_I64:
    return data::DType::I64;
  case DLRT_I32:
    return data::DType::I32;
  case DLRT_BOOL:
    return data::DType::Bool;
  case DLRT_F16:
    return data::DType::F16;
  case DLRT_BF16:
    return data::DType::BF16;
  }
  return data::DType::F32;
}

void checkFeedable(const dlrt_tensor_info_t &info, int64_t batch,
                   const data::Array &src, const std::string &what) {
  if (info.rank < 1 || info.shape[0] != batch)
    fail("input '" + std::string(info.name) + "' has shape " +
         describe(info) + ", whose first dimension is not the batch size " +
         std::to_string(batch));
  if (src.shape.empty())
    fail(what + ": array '" + info.name +
         "' is a scalar; expected samples along its first axis");
  int64_t perSample = numel(info) / batch;
  if (src.sampleNumel() != perSample) {
    std::vector<int64_t> want(info.shape + 1, info.shape + info.rank);
    std::vector<int64_t> have(src.shape.begin() + 1, src.shape.end());
    fail(what + ": array '" + info.name + "' has samples of shape " +
         data::shapeString(have) + " (" + std::to_string(src.sampleNumel()) +
         " elements); input '" + info.name + "' " + describe(info) +
         " needs " + data::shapeString(want) + " (" +
         std::to_string(perSample) + " elements) per sample");
  }
}

void feedBatch(dlrt_session_t session, const char *function,
               std::vector<Binding> &bindings, const int64_t *indices,
               int64_t batch) {
  for (Binding &b : bindings) {
    b.staging.resize(byteSize(b.info));
    if (b.windows) {
      const int64_t t = b.windows->seqLen;
      std::vector<int64_t> ids(static_cast<size_t>(batch * t));
      for (int64_t i = 0; i < batch; ++i)
        if (indices[i] >= 0) // else padding: zero ids
          b.windows->file->copy(indices[i] + b.shift, t, ids.data() + i * t);
      data::convertElements(ids.data(), data::DType::I64, b.staging.data(),
                            toDataType(b.info.dtype), ids.size());
    } else {
      data::gatherSamples(*b.src, indices, static_cast<size_t>(batch),
                          toDataType(b.info.dtype), b.staging.data());
    }
    check(dlrt_session_set_input(session, function, b.info.name,
                                 b.staging.data(), b.staging.size()));
  }
}

std::vector<double> readOutput(dlrt_session_t session, const char *function,
                               const dlrt_tensor_info_t &info) {
  std::vector<uint8_t> raw(byteSize(info));
  check(dlrt_session_get_output(session, function, info.name, raw.data(),
                                raw.size()));
  std::vector<double> out(static_cast<size_t>(numel(info)));
  data::convertElements(raw.data(), toDataType(info.dtype), out.data(),
                        data::DType::F64, out.size());
  return out;
}

} // namespace dlrt::cli
