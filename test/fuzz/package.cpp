//===- package.cpp - fuzz target: .dlcp bytes -> validated package ---------===//
// Parses and validates the bytes as `dlrt_model_load` does (parsePackage:
// the checks, of the FlatBuffer and of the weights section after it, that
// loadPackage runs on the file's mapping; the seed
// corpus/package/mlp_infer_section.dlcp has a weights section), then, for a
// package the loader accepts, creates a session and runs every function on
// a CheckingDevice: the executor trusts what the loader accepted,
// so any buffer, alias, arena or library-call size that the loader let
// through and that would make the executor touch memory outside its buffers
// is a finding. The package's host library is never loaded.
#include "CheckingDevice.h"
#include "runtime/src/Package.h"
#include "runtime/src/Session.h"

using namespace dlrt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Package pkg;
  Status s = parsePackage(data, size, "fuzz.dlcp", &pkg);
  if (!s.ok()) {
    if (s.message.empty() ||
        (s.code != DLRT_CORRUPT && s.code != DLRT_INCOMPATIBLE))
      fuzz::violation("parsePackage failed with code " +
                      std::to_string(s.code) + " and message '" + s.message +
                      "'");
    return 0;
  }
  // What the C API and dlrt read from an accepted package.
  for (const FunctionInfo &fn : pkg.functions)
    for (const auto *list : {&fn.inputs, &fn.outputs})
      for (const NamedBufferInfo &nb : *list)
        if (nb.buffer >= pkg.buffers.size() ||
            pkg.buffers[nb.buffer].shape.size() > 8)
          fuzz::violation("a named buffer the C API cannot describe");

  std::shared_ptr<exec::Context> ctx =
      exec::Context::withDevice(std::make_unique<fuzz::CheckingDevice>());
  auto model = std::make_shared<exec::Model>(ctx, std::move(pkg));
  const Package &p = model->package();
  std::unique_ptr<exec::Session> session;
  if (!exec::Session::create(model, &session).ok())
    return 0; // e.g. more memory than the checking device lends
  for (const FunctionInfo &fn : p.functions) {
    // Host copies of inputs and outputs stay small: a package may name one
    // large buffer many times.
    int64_t hostBytes = 0;
    for (const auto *list : {&fn.inputs, &fn.outputs})
      for (const NamedBufferInfo &nb : *list)
        hostBytes += p.buffers[nb.buffer].sizeBytes;
    if (hostBytes > (int64_t(64) << 20))
      continue;
    for (const NamedBufferInfo &nb : fn.inputs) {
      std::vector<uint8_t> zeros(p.buffers[nb.buffer].sizeBytes);
      if (!session->setInput(fn.name, nb.name, zeros.data(), zeros.size())
               .ok())
        fuzz::violation("setInput of '" + nb.name + "' with its own size failed");
    }
    if (!session->run(fn.name).ok())
      continue;
    for (const NamedBufferInfo &nb : fn.outputs) {
      std::vector<uint8_t> out(p.buffers[nb.buffer].sizeBytes);
      if (!session->getOutput(fn.name, nb.name, out.data(), out.size()).ok())
        fuzz::violation("getOutput of '" + nb.name + "' with its own size failed");
    }
  }
  for (uint32_t i : session->stateBuffers()) {
    const BufferInfo &b = p.buffers[i];
    if (b.sizeBytes > (int64_t(16) << 20))
      continue;
    std::vector<uint8_t> bytes(b.sizeBytes);
    if (!session->readState(b.name, bytes.data(), bytes.size()).ok() ||
        !session->writeState(b.name, bytes.data(), bytes.size()).ok())
      fuzz::violation("state tensor '" + b.name + "' cannot be read back");
  }
  return 0;
}
