//===- Info.cpp - `dlrt info`: describe a package
//--------------------------===//
// Validates the package with dlrt_model_load (so errors match the C API's),
// then reads the FlatBuffers plan directly for what the C API does not
// expose: kernels, steps, arena sizes, persistent buffers, cubins; the
// memory plan comes from dlrt_model_memory.
#include "Commands.h"
#include "Common.h"

#include "dlc_schema/package_generated.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dlrt::cli {

namespace fb = dlc::package;

namespace {

/// The package file |path| mapped read-only (mmap); fails (one line) when
/// it cannot be. dlrt_model_load has read it already.
struct MappedPackage {
  explicit MappedPackage(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size == 0)
      fail("cannot map package '" + path + "': " + std::strerror(errno));
    size = static_cast<size_t>(st.st_size);
    void *m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    if (m == MAP_FAILED)
      fail("cannot map package '" + path + "': " + std::strerror(err));
    data = static_cast<const uint8_t *>(m);
  }
  ~MappedPackage() { ::munmap(const_cast<uint8_t *>(data), size); }
  MappedPackage(const MappedPackage &) = delete;
  MappedPackage &operator=(const MappedPackage &) = delete;

  const uint8_t *data = nullptr;
  size_t size = 0;
};

const char *kindName(fb::BufferKind k) {
  switch (k) {
  case fb::BufferKind::Parameter:
    return "parameter";
  case fb::BufferKind::OptimizerState:
    return "optimizer-state";
  case fb::BufferKind::Buffer:
    return "buffer";
  case fb::BufferKind::Input:
    return "input";
  case fb::BufferKind::Arena:
    return "arena";
  case fb::BufferKind::Alias:
    return "alias";
  case fb::BufferKind::Constant:
    return "constant";
  }
  return "?";
}

const char *fbDtype(fb::DType t) {
  switch (t) {
  case fb::DType::F32:
    return "f32";
  case fb::DType::F64:
    return "f64";
  case fb::DType::I64:
    return "i64";
  case fb::DType::I32:
    return "i32";
  case fb::DType::Bool:
    return "bool";
  case fb::DType::F16:
    return "f16";
  case fb::DType::BF16:
    return "bf16";
  }
  return "?";
}

std::string str(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

std::string bufferDesc(const fb::Package *p, uint32_t index) {
  if (!p->buffers() || index >= p->buffers()->size())
    return "<bad buffer index>";
  const fb::Buffer *b = p->buffers()->Get(index);
  std::string s = "[";
  if (b->shape())
    for (uint32_t i = 0; i < b->shape()->size(); ++i)
      s += (i ? ", " : "") + std::to_string(b->shape()->Get(i));
  return s + "] " + fbDtype(b->dtype());
}

std::string humanBytes(int64_t bytes) {
  char buf[64];
  if (bytes >= (int64_t(1) << 20))
    std::snprintf(buf, sizeof(buf), "%lld bytes (%.1f MiB)",
                  static_cast<long long>(bytes), bytes / 1048576.0);
  else if (bytes >= 1024)
    std::snprintf(buf, sizeof(buf), "%lld bytes (%.1f KiB)",
                  static_cast<long long>(bytes), bytes / 1024.0);
  else
    std::snprintf(buf, sizeof(buf), "%lld bytes", static_cast<long long>(bytes));
  return buf;
}
} // namespace

int runInfo(const InfoOptions &o) {
  dlrt_memory_info_t memory;
  {
    // Validate through the C API first: same one-line errors as libdlrt.
    ContextPtr context = openContext("host", /*announce=*/false);
    ModelPtr model = loadModel(context.get(), o.package);
    check(dlrt_model_memory(model.get(), &memory));
  }
  // Mapped, not read: a package's weights section may hold gigabytes that
  // info never touches.
  MappedPackage bytes(o.package);
  // The FlatBuffer comes first, within 2 GiB (docs/package-format.md).
  flatbuffers::Verifier verifier(
      bytes.data,
      std::min<size_t>(bytes.size, FLATBUFFERS_MAX_BUFFER_SIZE - 1));
  if (!fb::VerifyPackageBuffer(verifier))
    fail("'" + o.package + "' is corrupt: FlatBuffers verification failed");
  const fb::Package *p = fb::GetPackage(bytes.data);

  std::printf("package: %s\n", o.package.c_str());
  std::printf("model: %s\n", str(p->model_name()).c_str());
  std::printf("producer: %s\n", str(p->producer()).c_str());
  std::printf("format version: %u\n", p->format_version());
  if (const fb::TrainingInfo *t = p->training())
    std::printf("training: optimizer %s, learning rate %g, batch size %lld, "
                "loss output '%s'\n",
                str(t->optimizer()).c_str(), t->learning_rate(),
                static_cast<long long>(t->batch_size()),
                str(t->loss_output()).c_str());
  else
    std::printf("training: none (inference package)\n");
  if (const fb::Pipeline *pl = p->pipeline()) {
    int64_t stages = pl->stages() ? pl->stages()->size() : 0;
    std::printf("pipeline: %lld stages, %d micro-batches, schedule %s; runs "
                "on one process or on a multiple of %lld ranks\n",
                static_cast<long long>(stages), pl->micro_batches(),
                str(pl->schedule()).c_str(), static_cast<long long>(stages));
    if (pl->stages())
      for (uint32_t s = 0; s < pl->stages()->size(); ++s) {
        const fb::PipelineStage *st = pl->stages()->Get(s);
        std::printf("  stage %u: %s, %s, %s\n", s,
                    str(st->forward()).c_str(), str(st->backward()).c_str(),
                    str(st->update()).c_str());
      }
    if (pl->transfers())
      for (const fb::PipelineTransfer *t : *pl->transfers())
        std::printf("  transfer %s: stage %d -> stage %d (%s)\n",
                    str(t->name()).c_str(), t->from_stage(), t->to_stage(),
                    t->backward() ? "gradient" : "activation");
  }

  if (p->functions())
    for (const fb::Function *f : *p->functions()) {
      std::printf("function %s:\n", str(f->name()).c_str());
      if (f->inputs())
        for (const fb::NamedBuffer *nb : *f->inputs())
          std::printf("  input  %s: %s\n", str(nb->name()).c_str(),
                      bufferDesc(p, nb->buffer()).c_str());
      if (f->outputs())
        for (const fb::NamedBuffer *nb : *f->outputs())
          std::printf("  output %s: %s\n", str(nb->name()).c_str(),
                      bufferDesc(p, nb->buffer()).c_str());
      int64_t launches = 0;
      std::map<std::string, int64_t> calls;
      if (f->steps())
        for (const fb::Step *s : *f->steps()) {
          if (s->op_type() == fb::Op::LaunchKernel)
            ++launches;
          else if (const fb::LibraryCall *c = s->op_as_LibraryCall())
            ++calls[str(c->callee())];
        }
      std::printf("  kernel launches: %lld\n",
                  static_cast<long long>(launches));
      std::string callText;
      int64_t totalCalls = 0;
      for (const auto &[callee, n] : calls) {
        callText += (callText.empty() ? "" : ", ") + callee + " " +
                    std::to_string(n);
        totalCalls += n;
      }
      std::printf("  library calls: %lld%s%s%s\n",
                  static_cast<long long>(totalCalls),
                  callText.empty() ? "" : " (", callText.c_str(),
                  callText.empty() ? "" : ")");
      std::printf("  arena: %s\n", humanBytes(f->arena_bytes()).c_str());
    }

  std::map<std::string, std::pair<int64_t, int64_t>> persistent;
  int64_t persistentCount = 0, persistentBytes = 0;
  if (p->buffers())
    for (const fb::Buffer *b : *p->buffers()) {
      fb::BufferKind k = b->kind();
      if (k == fb::BufferKind::Parameter ||
          k == fb::BufferKind::OptimizerState ||
          k == fb::BufferKind::Buffer || k == fb::BufferKind::Constant) {
        auto &e = persistent[kindName(k)];
        ++e.first;
        e.second += b->size_bytes();
        ++persistentCount;
        persistentBytes += b->size_bytes();
      }
    }
  std::printf("persistent buffers: %lld, %s\n",
              static_cast<long long>(persistentCount),
              humanBytes(persistentBytes).c_str());
  for (const auto &[kind, e] : persistent)
    std::printf("  %s: %lld, %s\n", kind.c_str(),
                static_cast<long long>(e.first), humanBytes(e.second).c_str());
  // 16-bit float buffers (f16, bf16), by dtype; only when there are any,
  // so the listing of f32 packages stays as it was.
  std::map<std::string, std::pair<int64_t, int64_t>> half;
  if (p->buffers())
    for (const fb::Buffer *b : *p->buffers())
      if (b->dtype() == fb::DType::F16 || b->dtype() == fb::DType::BF16) {
        auto &e = half[fbDtype(b->dtype())];
        ++e.first;
        e.second += b->size_bytes();
      }
  if (!half.empty()) {
    std::string text;
    for (const auto &[dtype, e] : half)
      text += (text.empty() ? "" : ", ") + dtype + " " +
              std::to_string(e.first) + " (" + humanBytes(e.second) + ")";
    std::printf("16-bit float buffers: %s\n", text.c_str());
  }
  // Where the initial values are (docs/package-format.md): the weights
  // section after the FlatBuffer (format version 8), or inside it.
  if (const fb::WeightsSection *w = p->weights_section())
    std::printf("weights: %u tensors, %s in the weights section after the "
                "FlatBuffer (at byte %llu)\n",
                p->weight_refs() ? p->weight_refs()->size() : 0u,
                humanBytes(static_cast<int64_t>(w->length())).c_str(),
                static_cast<unsigned long long>(w->offset()));
  else
    std::printf("weights: %s inside the FlatBuffer\n",
                humanBytes(p->weights() ? p->weights()->size() : 0).c_str());
  std::printf("kernels: %u\n", p->kernels() ? p->kernels()->size() : 0u);
  std::printf("host library: %s\n",
              humanBytes(p->host_library() ? p->host_library()->size() : 0)
                  .c_str());
  std::set<std::string> archs;
  if (p->cubins())
    for (const fb::Cubin *c : *p->cubins())
      archs.insert(str(c->arch()));
  std::string archText;
  for (const std::string &a : archs)
    archText += (archText.empty() ? "" : " ") + a;
  std::printf("cubins: %u%s%s\n", p->cubins() ? p->cubins()->size() : 0u,
              archText.empty() ? " (kernels are compiled by NVRTC at load)"
                               : " for ",
              archText.c_str());
  // What a session holds on its device (docs/memory.md).
  std::printf("memory: predicted peak %s%s\n",
              humanBytes(memory.predicted_peak_bytes).c_str(),
              memory.plan_from_package
                  ? ""
                  : " (computed from the plan: the package predates its "
                    "memory plan)");
  const std::pair<const char *, int64_t> parts[] = {
      {"persistent", memory.persistent_bytes},
      {"inputs", memory.input_bytes},
      {"arena", memory.arena_bytes},
      {"workspace", memory.workspace_bytes}};
  for (const auto &[what, bytes] : parts)
    std::printf("  %s: %s\n", what, humanBytes(bytes).c_str());
  // The environment decides what `--device cuda` would run on.
  if (const char *standin = std::getenv("DLRT_CUDA_STANDIN");
      standin && *standin)
    std::printf("cuda: DLRT_CUDA_STANDIN=%s is set: --device cuda runs these "
                "kernels on the host stand-in (a test of the CUDA path), not "
                "on a GPU\n",
                standin);
  return 0;
}

} // namespace dlrt::cli
