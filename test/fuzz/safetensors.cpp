//===- safetensors.cpp - fuzz target: safetensors weights and checkpoints --===//
// Parses the bytes as package weights and checkpoints are parsed
// (safetensors::parse); an accepted file must survive a serialize/parse
// round trip unchanged, and is then restored as a checkpoint into a session
// of a small model (on a CheckingDevice), which checks names, dtypes and
// shapes against the model before writing anything.
#include "CheckingDevice.h"
#include "runtime/src/Package.h"
#include "runtime/schema/Safetensors.h"
#include "runtime/src/Session.h"

using namespace dlrt;

namespace {

/// A session of a model with three checkpointed tensors: w f32[2,3],
/// b f32[3] and step i64[] (the names and shapes of the seed checkpoints).
exec::Session &session() {
  static exec::Session *s = [] {
    Package pkg;
    pkg.formatVersion = kPackageFormatVersion;
    auto add = [&](const char *name, BufferKind kind, dlrt_dtype_t dtype,
                   std::vector<int64_t> shape, int64_t bytes) {
      BufferInfo b;
      b.name = name;
      b.kind = kind;
      b.dtype = dtype;
      b.shape = std::move(shape);
      b.sizeBytes = bytes;
      pkg.buffers.push_back(b);
    };
    add("w", BufferKind::Parameter, DLRT_F32, {2, 3}, 24);
    add("b", BufferKind::Parameter, DLRT_F32, {3}, 12);
    add("step", BufferKind::Buffer, DLRT_I64, {}, 8);
    std::shared_ptr<exec::Context> ctx =
        exec::Context::withDevice(std::make_unique<fuzz::CheckingDevice>());
    auto model = std::make_shared<exec::Model>(ctx, std::move(pkg));
    std::unique_ptr<exec::Session> out;
    if (!exec::Session::create(model, &out).ok())
      fuzz::violation("cannot create the checkpoint session");
    return out.release(); // lives as long as the process
  }();
  return *s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<safetensors::Tensor> tensors;
  std::map<std::string, std::string> metadata;
  std::string error;
  if (!safetensors::parse(data, size, &tensors, &metadata, &error)) {
    if (error.empty())
      fuzz::violation("parse failed without a message");
  } else {
    std::map<std::string, const safetensors::Tensor *> byName;
    for (const safetensors::Tensor &t : tensors) {
      uint64_t bytes = safetensors::dtypeSize(t.dtype);
      for (int64_t d : t.shape)
        bytes *= static_cast<uint64_t>(d);
      if (bytes != t.data.size() || t.name == "__metadata__" ||
          !byName.emplace(t.name, &t).second)
        fuzz::violation("parse accepted an inconsistent tensor '" + t.name +
                        "'");
    }
    std::vector<uint8_t> again = safetensors::serialize(tensors, metadata);
    std::vector<safetensors::Tensor> back;
    std::map<std::string, std::string> backMetadata;
    if (!safetensors::parse(again.data(), again.size(), &back, &backMetadata,
                            &error))
      fuzz::violation("the serialized form does not parse: " + error);
    if (back.size() != tensors.size() || backMetadata != metadata)
      fuzz::violation("the round trip changed the tensor count or metadata");
    for (const safetensors::Tensor &t : back) {
      auto it = byName.find(t.name);
      if (it == byName.end() || it->second->dtype != t.dtype ||
          it->second->shape != t.shape || it->second->data != t.data)
        fuzz::violation("the round trip changed tensor '" + t.name + "'");
    }
  }
  std::string restored;
  Status s = session().loadCheckpointBytes(data, size, "fuzz.safetensors",
                                           &restored);
  if (!s.ok() && s.message.empty())
    fuzz::violation("loadCheckpointBytes failed without a message");
  return 0;
}
