//===- Package.cpp - load and validate a .dlcp package --------------------===//
#include "runtime/src/Package.h"
#include "runtime/src/PackageChecks.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <new>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/schema/Safetensors.h"
#include "runtime/schema/Limits.h"
#include "dlc_schema/package_generated.h"

static_assert(sizeof(dlrt_tensor_info_t::shape) / sizeof(int64_t) ==
                  dlc::schema::kMaxBufferRank,
              "the C API's tensor descriptor holds kMaxBufferRank dims");

namespace dlrt {
namespace fb = dlc::package;
using loader::Checker;
using loader::checkArgs;
using loader::convertLibraryCall;
using loader::elementsAligned;
using loader::mulOk;
using loader::product;
using loader::str;

// The schema's DType and the C API's dlrt_dtype_t share their values.
static_assert(static_cast<int>(fb::DType::F32) == DLRT_F32 &&
                  static_cast<int>(fb::DType::F64) == DLRT_F64 &&
                  static_cast<int>(fb::DType::I64) == DLRT_I64 &&
                  static_cast<int>(fb::DType::I32) == DLRT_I32 &&
                  static_cast<int>(fb::DType::Bool) == DLRT_BOOL &&
                  static_cast<int>(fb::DType::F16) == DLRT_F16 &&
                  static_cast<int>(fb::DType::BF16) == DLRT_BF16 &&
                  static_cast<int>(fb::DType::MAX) == DLRT_BF16,
              "package.fbs DType and dlrt_dtype_t must agree");

bool isPersistent(BufferKind kind) {
  return kind == BufferKind::Parameter || kind == BufferKind::OptimizerState ||
         kind == BufferKind::Buffer || kind == BufferKind::Constant;
}

bool isCheckpointed(BufferKind kind) {
  return kind == BufferKind::Parameter || kind == BufferKind::OptimizerState ||
         kind == BufferKind::Buffer;
}

const char *safetensorsDType(dlrt_dtype_t dtype) {
  switch (dtype) {
  case DLRT_F32:
    return "F32";
  case DLRT_F64:
    return "F64";
  case DLRT_I64:
    return "I64";
  case DLRT_I32:
    return "I32";
  case DLRT_BOOL:
    return "BOOL";
  case DLRT_F16:
    return "F16";
  case DLRT_BF16:
    return "BF16";
  }
  return "?";
}

/// The largest size a MemoryPlan field holds (2^60 bytes), so that the sum
/// of the four never overflows; larger sums (only a damaged package has
/// them) saturate there, and allocating them fails.
constexpr int64_t kMaxPlanBytes = int64_t(1) << 60;

MemoryPlan computeMemoryPlan(const Package &pkg) {
  MemoryPlan m;
  auto add = [](int64_t &total, int64_t bytes) {
    total = std::min(kMaxPlanBytes, total + std::min(kMaxPlanBytes, bytes));
  };
  for (const BufferInfo &b : pkg.buffers) {
    if (isPersistent(b.kind))
      add(m.persistentBytes, dlc::exec::allocationBytes(
                                 std::min(kMaxPlanBytes, b.sizeBytes)));
    else if (b.kind == BufferKind::Input)
      add(m.inputBytes, dlc::exec::allocationBytes(
                            std::min(kMaxPlanBytes, b.sizeBytes)));
  }
  int64_t largestCallOutput = 0, largestFallback = 0;
  for (const FunctionInfo &f : pkg.functions) {
    m.arenaBytes =
        std::max(m.arenaBytes, std::min(kMaxPlanBytes, f.arenaBytes));
    for (const StepInfo &s : f.steps)
      if (s.kind == StepInfo::Kind::LibraryCall &&
          !s.args.empty()) { // the output is the last argument
        largestCallOutput =
            std::max(largestCallOutput, pkg.buffers[s.args.back()].sizeBytes);
        largestFallback = std::max(
            largestFallback,
            std::min(kMaxPlanBytes,
                     dlc::exec::libraryCallFallbackScratchBytes(s.call)));
      }
  }
  int64_t workspace =
      dlc::exec::workspaceBytesFor(largestCallOutput, largestFallback);
  m.workspaceBytes = workspace > 0 ? dlc::exec::allocationBytes(workspace) : 0;
  if (m.arenaBytes > 0)
    m.arenaBytes = dlc::exec::allocationBytes(m.arenaBytes);
  return m;
}

const FunctionInfo *Package::function(const std::string &name) const {
  for (const FunctionInfo &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

Status readFile(const std::string &path, const char *what,
                std::vector<uint8_t> *out) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    int err = errno;
    return Status::error(err == ENOENT ? DLRT_NOT_FOUND : DLRT_IO_ERROR,
                         std::string("cannot open ") + what + " '" + path +
                             "': " + std::strerror(err));
  }
  out->clear();
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
    out->insert(out->end(), chunk, chunk + n);
  bool failed = std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (failed)
    return Status::error(DLRT_IO_ERROR, std::string("cannot read ") + what +
                                            " '" + path +
                                            "': " + std::strerror(err));
  return Status::OK();
}

namespace {

/// Reads Package.format_version (field 0) with explicit bounds checks, for
/// buffers that fail verification (a newer format may not verify against
/// this schema, but should still say "incompatible", not "corrupt").
bool peekFormatVersion(const uint8_t *data, size_t size, uint32_t *out) {
  auto rd32 = [&](size_t at, uint32_t *v) {
    if (at > size || size - at < 4)
      return false;
    std::memcpy(v, data + at, 4);
    return true;
  };
  uint32_t root;
  if (!rd32(0, &root))
    return false;
  uint32_t soff;
  if (!rd32(root, &soff))
    return false;
  int64_t vtable = static_cast<int64_t>(root) - static_cast<int32_t>(soff);
  if (vtable < 0 || static_cast<uint64_t>(vtable) + 6 > size)
    return false;
  uint16_t vsize, fieldOff;
  std::memcpy(&vsize, data + vtable, 2);
  if (vsize < 6)
    return false;
  std::memcpy(&fieldOff, data + vtable + 4, 2);
  if (fieldOff == 0) {
    *out = 0;
    return true;
  }
  uint32_t v;
  if (!rd32(static_cast<size_t>(root) + fieldOff, &v))
    return false;
  *out = v;
  return true;
}

} // namespace

uint32_t resolveAlias(const std::vector<BufferInfo> &buffers, uint32_t index,
                      int64_t *byteOffset) {
  *byteOffset = 0;
  while (buffers[index].kind == BufferKind::Alias) {
    const BufferInfo &b = buffers[index];
    *byteOffset += b.viewOffset * int64_t(dlrt_dtype_size(b.dtype));
    index = static_cast<uint32_t>(b.aliasOf);
  }
  return index;
}

namespace {

/// Whether this runtime reads packages of format |version|.
bool readsVersion(uint32_t version) {
  return version >= kOldestPackageFormatVersion &&
         version <= kPackageFormatVersion;
}

bool convertBuffers(const fb::Package *pkg, Package *out, Checker &c) {
  if (!pkg->buffers())
    return true;
  for (uint32_t i = 0; i < pkg->buffers()->size(); ++i) {
    const fb::Buffer *b = pkg->buffers()->Get(i);
    std::string where = "buffer " + std::to_string(i);
    BufferInfo info;
    info.name = str(b->name());
    int kind = static_cast<int>(b->kind());
    int dtype = static_cast<int>(b->dtype());
    if (kind < 0 || kind > 6)
      return c.fail(where + " has unknown kind " + std::to_string(kind));
    // fb::DType and dlrt_dtype_t share their values.
    if (dtype < static_cast<int>(fb::DType::MIN) ||
        dtype > static_cast<int>(fb::DType::MAX))
      return c.fail(where + " has unknown dtype " + std::to_string(dtype) +
                    " (supported: 0 f32, 1 f64, 2 i64, 3 i32, 4 bool, 5 f16, "
                    "6 bf16)");
    // Writers before format version 3 knew no 16-bit floats.
    if (dtype >= DLRT_F16 && pkg->format_version() < 3)
      return c.fail(where + " has dtype " +
                    (dtype == DLRT_F16 ? "f16" : "bf16") +
                    ", which needs format version 3 (the package is version " +
                    std::to_string(pkg->format_version()) + ")");
    info.kind = static_cast<BufferKind>(kind);
    info.dtype = static_cast<dlrt_dtype_t>(dtype);
    int64_t numel = 1;
    if (!elementsAligned(b->shape()))
      return c.fail(where + " has a misaligned shape vector");
    if (b->shape()) {
      if (b->shape()->size() > size_t(dlc::schema::kMaxBufferRank))
        return c.fail(where + " has rank " +
                      std::to_string(b->shape()->size()) + " (at most " +
                      std::to_string(dlc::schema::kMaxBufferRank) + ")");
      for (int64_t d : *b->shape()) {
        if (d < 0 || !mulOk(numel, d, &numel))
          return c.fail(where + " has an invalid shape");
        info.shape.push_back(d);
      }
    }
    int64_t bytes;
    if (!mulOk(numel, static_cast<int64_t>(dlrt_dtype_size(info.dtype)),
               &bytes))
      return c.fail(where + " has an invalid shape");
    info.sizeBytes = b->size_bytes();
    if (info.sizeBytes != bytes)
      return c.fail(where + " has size_bytes " +
                    std::to_string(info.sizeBytes) +
                    " but its shape and dtype need " + std::to_string(bytes));
    info.arenaOffset = b->arena_offset();
    info.aliasOf = b->alias_of();
    info.init = str(b->init());
    if (b->view_strides()) {
      if (info.kind != BufferKind::Alias ||
          b->view_strides()->size() != info.shape.size())
        return c.fail(where + " has view_strides but is not an alias with " +
                      "one stride per dim");
      info.viewOffset = b->view_offset();
      for (int64_t st : *b->view_strides())
        info.viewStrides.push_back(st);
    }
    out->buffers.push_back(std::move(info));
  }
  int64_t n = static_cast<int64_t>(out->buffers.size());
  std::set<std::string> stateNames;
  for (int64_t i = 0; i < n; ++i) {
    const BufferInfo &b = out->buffers[i];
    if (!isCheckpointed(b.kind))
      continue;
    if (b.name.empty())
      return c.fail("persistent buffer " + std::to_string(i) + " has no name");
    if (!stateNames.insert(b.name).second)
      return c.fail("two persistent buffers are named '" + b.name + "'");
  }
  for (int64_t i = 0; i < n; ++i) {
    const BufferInfo &b = out->buffers[i];
    std::string where = "buffer " + std::to_string(i);
    if (b.kind == BufferKind::Arena && b.arenaOffset < 0)
      return c.fail(where + " is an arena buffer without an arena_offset");
    if (b.kind == BufferKind::Alias) {
      // Follow the chain: it must end at a non-alias buffer within n hops.
      int64_t j = i;
      for (int64_t hops = 0; out->buffers[j].kind == BufferKind::Alias;
           ++hops) {
        int64_t next = out->buffers[j].aliasOf;
        if (next < 0 || next >= n)
          return c.fail(where + " aliases buffer " + std::to_string(next) +
                        " of " + std::to_string(n));
        if (hops > n)
          return c.fail(where + " is part of an alias cycle");
        j = next;
      }
      if (!b.viewStrides.empty()) {
        // The last element of the window lies inside the viewed buffer.
        int64_t last = b.viewOffset, elem = dlrt_dtype_size(b.dtype);
        bool ok = b.viewOffset >= 0;
        for (size_t d = 0; d < b.shape.size() && ok; ++d) {
          int64_t step;
          ok = b.viewStrides[d] >= 0 && b.shape[d] > 0 &&
               mulOk(b.shape[d] - 1, b.viewStrides[d], &step) &&
               !__builtin_add_overflow(last, step, &last);
        }
        const BufferInfo &src = out->buffers[b.aliasOf];
        if (!ok || src.dtype != b.dtype || (last + 1) * elem > src.sizeBytes)
          return c.fail(where + " is a strided view outside buffer " +
                        std::to_string(b.aliasOf));
      } else if (out->buffers[b.aliasOf].sizeBytes < b.sizeBytes) {
        return c.fail(where + " (" + std::to_string(b.sizeBytes) +
                      " bytes) aliases the smaller buffer " +
                      std::to_string(b.aliasOf));
      }
    }
  }
  return true;
}

/// The weights section (format version 8): checks that it lies inside the
/// |fileSize| bytes at |file|, after the FlatBuffer, and that every
/// WeightRef lies inside it, and adds the tensors to out->weights, viewing
/// the file's |mapping| (which holds |file|) when given, else one copy of
/// the section (so that overlapping tensors are not copied each); either
/// becomes out->mapping.
bool convertWeightRefs(const fb::Package *pkg, const uint8_t *file,
                       size_t fileSize,
                       const std::shared_ptr<const MappedFile> &mapping,
                       Package *out, Checker &c) {
  const fb::WeightsSection *section = pkg->weights_section();
  if (!section) {
    if (pkg->weight_refs() && pkg->weight_refs()->size() > 0)
      return c.fail("it lists weights in a weights section but has none");
    return true;
  }
  if (pkg->format_version() < kWeightsSectionFormatVersion)
    return c.fail("it has a weights section, which needs format version " +
                  std::to_string(kWeightsSectionFormatVersion) +
                  " (the package is version " +
                  std::to_string(pkg->format_version()) + ")");
  const uint64_t start = section->offset(), length = section->length();
  // Where each name is used, to name the buffer in messages.
  std::map<std::string, size_t> bufferOf;
  for (size_t i = 0; i < out->buffers.size(); ++i)
    if (isPersistent(out->buffers[i].kind) && !out->buffers[i].init.empty())
      bufferOf.emplace(out->buffers[i].init, i);
  const std::string sectionText = "the weights section (" +
                                  std::to_string(length) + " bytes at offset " +
                                  std::to_string(start) + ")";
  if (start % kWeightsSectionAlignment != 0 || start > fileSize ||
      length > fileSize - start)
    return c.fail(sectionText + " is misaligned or outside the file of " +
                  std::to_string(fileSize) + " bytes");
  // The FlatBuffer ends before the section: it verifies within the bytes
  // before it (and within 2 GiB, as any FlatBuffer).
  flatbuffers::Verifier before(
      file, static_cast<size_t>(
                std::min<uint64_t>(start, FLATBUFFERS_MAX_BUFFER_SIZE - 1)));
  if (!fb::VerifyPackageBuffer(before))
    return c.fail(sectionText + " overlaps the FlatBuffer");
  if (!pkg->weight_refs() || pkg->weight_refs()->size() == 0)
    return true;
  out->mapping =
      mapping ? mapping
              : MappedFile::copyOf(file + start, static_cast<size_t>(length));
  const uint8_t *base =
      mapping ? file + start : out->mapping->data(); // the section's start
  for (uint32_t i = 0; i < pkg->weight_refs()->size(); ++i) {
    const fb::WeightRef *r = pkg->weight_refs()->Get(i);
    const std::string name = str(r->name());
    std::string where = "weight " + std::to_string(i);
    if (!name.empty()) {
      where = "weight '" + name + "'";
      auto b = bufferOf.find(name);
      if (b != bufferOf.end())
        where += " (buffer " + std::to_string(b->second) + ")";
    }
    if (name.empty())
      return c.fail(where + " has no name");
    int dtype = static_cast<int>(r->dtype());
    if (dtype < static_cast<int>(fb::DType::MIN) ||
        dtype > static_cast<int>(fb::DType::MAX))
      return c.fail(where + " has unknown dtype " + std::to_string(dtype));
    if (!elementsAligned(r->shape()))
      return c.fail(where + " has a misaligned shape vector");
    TensorData t;
    t.dtype = safetensorsDType(static_cast<dlrt_dtype_t>(dtype));
    int64_t bytes = int64_t(dlrt_dtype_size(static_cast<dlrt_dtype_t>(dtype)));
    if (r->shape()) {
      if (r->shape()->size() > size_t(dlc::schema::kMaxBufferRank))
        return c.fail(where + " has rank " +
                      std::to_string(r->shape()->size()));
      for (int64_t d : *r->shape()) {
        if (d < 0 || !mulOk(bytes, d, &bytes))
          return c.fail(where + " has an invalid shape");
        t.shape.push_back(d);
      }
    }
    const uint64_t offset = r->offset(), size = r->length();
    if (size != static_cast<uint64_t>(bytes))
      return c.fail(where + " has length " + std::to_string(size) +
                    " but its shape and dtype need " + std::to_string(bytes));
    if (offset % kWeightsSectionAlignment != 0 || offset > length ||
        size > length - offset)
      return c.fail(where + " has " + std::to_string(size) +
                    " bytes at offset " + std::to_string(offset) +
                    ", misaligned or outside " + sectionText);
    if (out->weights.count(name))
      return c.fail(where + " is stored twice");
    t.mapped = base + offset;
    t.mappedSize = static_cast<size_t>(size);
    out->weights.emplace(name, std::move(t));
  }
  return true;
}

bool convertWeights(const fb::Package *pkg, const uint8_t *file,
                    size_t fileSize,
                    const std::shared_ptr<const MappedFile> &mapping,
                    Package *out, Checker &c) {
  if (pkg->weights() && pkg->weights()->size() > 0) {
    std::vector<safetensors::Tensor> tensors;
    std::string error;
    if (!safetensors::parse(pkg->weights()->data(), pkg->weights()->size(),
                            &tensors, nullptr, &error))
      return c.fail("weights: " + error);
    for (safetensors::Tensor &t : tensors) {
      TensorData &d = out->weights[t.name];
      d.dtype = std::move(t.dtype);
      d.shape = std::move(t.shape);
      d.owned = std::move(t.data);
    }
  }
  if (!convertWeightRefs(pkg, file, fileSize, mapping, out, c))
    return false;
  for (size_t i = 0; i < out->buffers.size(); ++i) {
    const BufferInfo &b = out->buffers[i];
    if (!isPersistent(b.kind) || b.init.empty())
      continue;
    auto it = out->weights.find(b.init);
    std::string where = "buffer " + std::to_string(i) + " ('" + b.name + "')";
    if (it == out->weights.end())
      return c.fail(where + " is initialized from weight '" + b.init +
                    "', which the package does not contain");
    if (it->second.dtype != safetensorsDType(b.dtype) ||
        static_cast<int64_t>(it->second.size()) != b.sizeBytes)
      return c.fail(where + " is " + safetensorsDType(b.dtype) + " of " +
                    std::to_string(b.sizeBytes) + " bytes but weight '" +
                    b.init + "' is " + it->second.dtype + " of " +
                    std::to_string(it->second.size()) + " bytes");
  }
  return true;
}

/// Checks that every arena buffer |fn| touches lies within its arena.
bool checkArena(const Package &pkg, const FunctionInfo &fn, Checker &c) {
  std::set<uint32_t> used;
  for (const StepInfo &s : fn.steps)
    used.insert(s.args.begin(), s.args.end());
  for (const NamedBufferInfo &nb : fn.inputs)
    used.insert(nb.buffer);
  for (const NamedBufferInfo &nb : fn.outputs)
    used.insert(nb.buffer);
  for (uint32_t i : used) {
    uint32_t j = i;
    while (pkg.buffers[j].kind == BufferKind::Alias)
      j = static_cast<uint32_t>(pkg.buffers[j].aliasOf);
    const BufferInfo &b = pkg.buffers[j];
    if (b.kind != BufferKind::Arena)
      continue;
    int64_t end;
    if (__builtin_add_overflow(b.arenaOffset, b.sizeBytes, &end) ||
        end > fn.arenaBytes)
      return c.fail("buffer " + std::to_string(j) + " at arena offset " +
                    std::to_string(b.arenaOffset) + " (" +
                    std::to_string(b.sizeBytes) + " bytes) lies outside the " +
                    std::to_string(fn.arenaBytes) +
                    "-byte arena of function '" + fn.name + "'");
  }
  return true;
}

bool convertNamed(
    const flatbuffers::Vector<flatbuffers::Offset<fb::NamedBuffer>> *v,
    const Package &pkg, const std::string &where,
    std::vector<NamedBufferInfo> *out, Checker &c) {
  if (!v)
    return true;
  std::set<std::string> names;
  for (uint32_t i = 0; i < v->size(); ++i) {
    NamedBufferInfo nb{str(v->Get(i)->name()), v->Get(i)->buffer()};
    if (nb.buffer >= pkg.buffers.size())
      return c.fail(where + " '" + nb.name + "' is buffer " +
                    std::to_string(nb.buffer) + " of " +
                    std::to_string(pkg.buffers.size()));
    if (!names.insert(nb.name).second)
      return c.fail(where + " '" + nb.name + "' appears twice");
    out->push_back(std::move(nb));
  }
  return true;
}

bool convertFunctions(const fb::Package *p, Package *out, Checker &c) {
  if (!p->functions())
    return true;
  std::set<std::string> names;
  for (uint32_t fi = 0; fi < p->functions()->size(); ++fi) {
    const fb::Function *f = p->functions()->Get(fi);
    FunctionInfo fn;
    fn.name = str(f->name());
    if (!names.insert(fn.name).second)
      return c.fail("function '" + fn.name + "' appears twice");
    fn.arenaBytes = f->arena_bytes();
    if (fn.arenaBytes < 0)
      return c.fail("function '" + fn.name + "' has a negative arena size");
    if (!convertNamed(f->inputs(), *out, "input", &fn.inputs, c) ||
        !convertNamed(f->outputs(), *out, "output", &fn.outputs, c))
      return false;
    if (f->steps()) {
      for (uint32_t si = 0; si < f->steps()->size(); ++si) {
        const fb::Step *s = f->steps()->Get(si);
        std::string where =
            "step " + std::to_string(si) + " of function '" + fn.name + "'";
        StepInfo step;
        if (const fb::LaunchKernel *lk = s->op_as_LaunchKernel()) {
          step.kernel = lk->kernel();
          if (step.kernel >= out->kernels.size())
            return c.fail(where + " launches kernel " +
                          std::to_string(step.kernel) + " of " +
                          std::to_string(out->kernels.size()));
          if (lk->args())
            step.args.assign(lk->args()->begin(), lk->args()->end());
          if (!checkArgs(step.args, out->buffers.size(), where, c))
            return false;
        } else if (const fb::LibraryCall *lc = s->op_as_LibraryCall()) {
          step.kind = StepInfo::Kind::LibraryCall;
          if (!convertLibraryCall(lc, out->formatVersion, *out, &step, where, c))
            return false;
        } else if (const fb::AllReduce *ar = s->op_as_AllReduce()) {
          step.kind = StepInfo::Kind::AllReduce;
          step.args = {ar->buffer()};
          step.average = ar->reduction() == fb::ReduceOp::Avg;
          if (ar->reduction() != fb::ReduceOp::Sum && !step.average)
            return c.fail(where + " has an unknown reduction " +
                          std::to_string(int(ar->reduction())));
          if (!checkArgs(step.args, out->buffers.size(), where, c))
            return false;
          dlrt_dtype_t t = out->buffers[ar->buffer()].dtype;
          if (t != DLRT_F32 && t != DLRT_F16 && t != DLRT_BF16)
            return c.fail(where + " all-reduces buffer " +
                          std::to_string(ar->buffer()) +
                          ", which is not f32, f16 or bf16");
        } else if (const fb::WaitCollective *w = s->op_as_WaitCollective()) {
          step.kind = StepInfo::Kind::Wait;
          step.args = {w->buffer()};
          if (!checkArgs(step.args, out->buffers.size(), where, c))
            return false;
        } else {
          return c.fail(where + " has no operation");
        }
        fn.steps.push_back(std::move(step));
      }
    }
    if (!checkArena(*out, fn, c))
      return false;
    out->functions.push_back(std::move(fn));
  }
  return true;
}

} // namespace

/// Reads and checks the Pipeline table (PipelineInfo's invariants).
bool convertPipeline(const fb::Pipeline *pl, Package *out, Checker &c) {
  PipelineInfo &info = out->pipeline;
  info.schedule = str(pl->schedule());
  info.microBatches = pl->micro_batches();
  info.lossStage = pl->loss_stage();
  info.stepFunction = str(pl->step_function());
  if (info.schedule != "gpipe" && info.schedule != "1f1b")
    return c.fail("the pipeline has unknown schedule '" + info.schedule +
                  "' (supported: gpipe, 1f1b)");
  if (info.microBatches < 1)
    return c.fail("the pipeline has " + std::to_string(info.microBatches) +
                  " micro-batches");
  const FunctionInfo *step = out->function(info.stepFunction);
  if (!step || !step->steps.empty())
    return c.fail("the pipeline's step function '" + info.stepFunction +
                  "' is missing or has steps");
  if (pl->stages())
    for (const fb::PipelineStage *st : *pl->stages()) {
      PipelineInfo::Stage stage;
      stage.forward = str(st->forward());
      stage.backward = str(st->backward());
      stage.update = str(st->update());
      for (const std::string &fn : {stage.forward, stage.backward, stage.update})
        if (!out->function(fn))
          return c.fail("pipeline stage " + std::to_string(info.stages.size()) +
                        " names a missing function '" + fn + "'");
      if (st->gradient_accumulators())
        for (const flatbuffers::String *a : *st->gradient_accumulators())
          stage.gradientAccumulators.push_back(str(a));
      info.stages.push_back(std::move(stage));
    }
  const int32_t stages = static_cast<int32_t>(info.stages.size());
  if (stages < 1 || info.lossStage < 0 || info.lossStage >= stages)
    return c.fail("the pipeline has " + std::to_string(stages) +
                  " stages and loss stage " + std::to_string(info.lossStage));
  auto has = [](const std::vector<NamedBufferInfo> &list,
                const std::string &name) {
    return std::any_of(list.begin(), list.end(),
                       [&](const NamedBufferInfo &nb) { return nb.name == name; });
  };
  if (pl->transfers())
    for (const fb::PipelineTransfer *t : *pl->transfers()) {
      PipelineInfo::Transfer tr{str(t->name()), t->from_stage(), t->to_stage(),
                                t->backward()};
      std::string where = "pipeline transfer '" + tr.name + "'";
      if (tr.fromStage < 0 || tr.fromStage >= stages || tr.toStage < 0 ||
          tr.toStage >= stages || tr.fromStage == tr.toStage ||
          (tr.backward ? tr.fromStage < tr.toStage
                       : tr.fromStage > tr.toStage))
        return c.fail(where + " goes from stage " +
                      std::to_string(tr.fromStage) + " to stage " +
                      std::to_string(tr.toStage));
      const PipelineInfo::Stage &from = info.stages[tr.fromStage];
      const PipelineInfo::Stage &to = info.stages[tr.toStage];
      const FunctionInfo *sender =
          out->function(tr.backward ? from.backward : from.forward);
      if (!has(sender->outputs, tr.name))
        return c.fail(where + " is not an output of '" + sender->name + "'");
      const FunctionInfo *fwd = out->function(to.forward);
      const FunctionInfo *bwd = out->function(to.backward);
      if (!(tr.backward ? has(bwd->inputs, tr.name)
                        : has(fwd->inputs, tr.name) ||
                              has(bwd->inputs, tr.name)))
        return c.fail(where + " is not an input of stage " +
                      std::to_string(tr.toStage));
      info.transfers.push_back(std::move(tr));
    }
  if (pl->inputs())
    for (const flatbuffers::String *name : *pl->inputs()) {
      info.inputs.push_back(str(name));
      if (!has(step->inputs, info.inputs.back()))
        return c.fail("pipeline input '" + info.inputs.back() +
                      "' is not an input of '" + info.stepFunction + "'");
    }
  // Every input of a stage function comes from somewhere, with the size
  // the runtime copies into it: a micro-batch's slice of a step input, or
  // the value of that name a stage function outputs.
  auto sizeOf = [&](const std::vector<NamedBufferInfo> &list,
                    const std::string &name) -> int64_t {
    for (const NamedBufferInfo &nb : list)
      if (nb.name == name)
        return out->buffers[nb.buffer].sizeBytes;
    return -1;
  };
  for (int32_t s = 0; s < stages; ++s) {
    const PipelineInfo::Stage &stage = info.stages[s];
    for (const std::string &fnName : {stage.forward, stage.backward}) {
      const FunctionInfo *fn = out->function(fnName);
      for (const NamedBufferInfo &in : fn->inputs) {
        const int64_t size = out->buffers[in.buffer].sizeBytes;
        std::string where = "input '" + in.name + "' of '" + fnName + "'";
        if (int64_t global = sizeOf(step->inputs, in.name); global >= 0) {
          if (global != size * info.microBatches)
            return c.fail(where + " is " + std::to_string(size) +
                          " bytes, not 1/" +
                          std::to_string(info.microBatches) + " of the " +
                          std::to_string(global) + "-byte step input");
          continue;
        }
        int64_t sent = -1;
        if (fnName == stage.backward)
          sent = sizeOf(out->function(stage.forward)->outputs, in.name);
        for (const PipelineInfo::Transfer &t : info.transfers)
          if (t.toStage == s && t.name == in.name) {
            const PipelineInfo::Stage &from = info.stages[t.fromStage];
            sent = sizeOf(out->function(t.backward ? from.backward
                                                   : from.forward)
                              ->outputs,
                          t.name);
          }
        if (sent < 0)
          return c.fail(where + " comes from no step input, transfer or "
                                "forward");
        if (sent != size)
          return c.fail(where + " is " + std::to_string(size) +
                        " bytes, but the value sent is " +
                        std::to_string(sent));
      }
    }
  }
  out->hasPipeline = true;
  return true;
}

namespace {

/// parsePackage and loadPackage: |mapping|, when given, holds |data| and
/// the weights of the weights section view it.
Status parseBytes(const uint8_t *data, size_t size, const std::string &path,
                  const std::shared_ptr<const MappedFile> &mapping,
                  Package *out) {
  *out = Package();
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
    // FlatBuffers aligns relative to the buffer start: give it an 8-byte
    // aligned copy (nothing in |out| points into the bytes).
    std::vector<uint64_t> aligned((size + 7) / 8);
    if (size)
      std::memcpy(aligned.data(), data, size);
    return parseBytes(reinterpret_cast<const uint8_t *>(aligned.data()), size,
                      path, nullptr, out);
  }
  if (size < 8)
    return Status::error(DLRT_CORRUPT, "'" + path +
                                           "' is not a dlc package (only " +
                                           std::to_string(size) + " bytes)");
  if (!fb::PackageBufferHasIdentifier(data))
    return Status::error(DLRT_CORRUPT,
                         "'" + path + "' is not a dlc package (no \"" +
                             fb::PackageIdentifier() + "\" file identifier)");
  auto incompatible = [&](uint32_t version) {
    return Status::error(DLRT_INCOMPATIBLE,
                         "'" + path + "' has package format version " +
                             std::to_string(version) +
                             "; this runtime reads versions " +
                             std::to_string(kOldestPackageFormatVersion) +
                             " to " + std::to_string(kPackageFormatVersion) +
                             " — recompile it with a matching dlc");
  };
  // The FlatBuffer comes first and holds at most 2 GiB; a weights section
  // may follow it (convertWeightRefs checks that the two do not overlap).
  flatbuffers::Verifier verifier(
      data, std::min<size_t>(size, FLATBUFFERS_MAX_BUFFER_SIZE - 1));
  if (!fb::VerifyPackageBuffer(verifier)) {
    uint32_t version;
    if (peekFormatVersion(data, size, &version) && !readsVersion(version))
      return incompatible(version);
    return Status::error(DLRT_CORRUPT,
                         "'" + path +
                             "' is corrupt: FlatBuffers verification "
                             "failed (truncated or damaged file)");
  }
  const fb::Package *p = fb::GetPackage(data);
  if (!readsVersion(p->format_version()))
    return incompatible(p->format_version());

  Checker c(path);
  out->formatVersion = p->format_version();
  out->producer = str(p->producer());
  out->modelName = str(p->model_name());
  if (p->kernels()) {
    std::set<std::string> names;
    for (uint32_t i = 0; i < p->kernels()->size(); ++i) {
      const fb::Kernel *k = p->kernels()->Get(i);
      Device::KernelSpec spec;
      spec.name = str(k->name());
      spec.cuda_source = str(k->cuda_source());
      spec.num_threads = k->num_threads();
      spec.block_size = k->block_size();
      if (spec.name.empty())
        return (c.fail("kernel " + std::to_string(i) + " has no name"),
                c.status);
      out->kernels.push_back(std::move(spec));
    }
  }
  if (p->cubins()) {
    for (const fb::Cubin *cb : *p->cubins()) {
      std::string kernel = str(cb->kernel());
      for (Device::KernelSpec &spec : out->kernels)
        if (spec.name == kernel && cb->image())
          spec.cubins.emplace_back(
              str(cb->arch()),
              std::vector<uint8_t>(cb->image()->begin(), cb->image()->end()));
    }
  }
  if (!convertBuffers(p, out, c) ||
      !convertWeights(p, data, size, mapping, out, c) ||
      !convertFunctions(p, out, c))
    return c.status;
  if (const fb::TrainingInfo *t = p->training()) {
    out->hasTraining = true;
    out->lossOutput = str(t->loss_output());
    out->optimizer = str(t->optimizer());
    out->learningRate = t->learning_rate();
    out->batchSize = t->batch_size();
    out->stepCounter = str(t->step_counter());
    out->modelFlops = t->model_flops();
    out->peakFlops = t->peak_flops();
  }
  if (const fb::MemoryPlan *m = p->memory()) {
    out->memory.persistentBytes = m->persistent_bytes();
    out->memory.inputBytes = m->input_bytes();
    out->memory.arenaBytes = m->arena_bytes();
    out->memory.workspaceBytes = m->workspace_bytes();
    out->memory.fromPackage = true;
    for (int64_t v : {m->persistent_bytes(), m->input_bytes(), m->arena_bytes(),
                      m->workspace_bytes()})
      if (v < 0 || v > kMaxPlanBytes)
        return (c.fail("the memory plan has a negative or huge size (" +
                       std::to_string(v) + " bytes)"),
                c.status);
  } else {
    out->memory = computeMemoryPlan(*out);
  }
  if (const fb::Pipeline *pl = p->pipeline())
    if (!convertPipeline(pl, out, c))
      return c.status;
  if (p->host_library())
    out->hostLibrary.assign(p->host_library()->begin(),
                            p->host_library()->end());
  return Status::OK();
}

} // namespace

Status parsePackage(const uint8_t *data, size_t size, const std::string &path,
                    Package *out) {
  return parseBytes(data, size, path, nullptr, out);
}

Status loadPackage(const std::string &path, Package *out) {
  std::shared_ptr<const MappedFile> mapping;
  Status s = MappedFile::open(path, "package", &mapping);
  if (s.ok())
    return parseBytes(mapping->data(), mapping->size(), path, mapping, out);
  if (s.code == DLRT_NOT_FOUND)
    return s;
  // Not a regular file, or mmap failed: read it.
  std::vector<uint8_t> bytes;
  s = readFile(path, "package", &bytes);
  if (!s.ok())
    return s;
  return parsePackage(bytes.data(), bytes.size(), path, out);
}

Status MappedFile::open(const std::string &path, const char *what,
                        std::shared_ptr<const MappedFile> *out) {
  out->reset();
  auto ioError = [&](const char *doing, int err) {
    return Status::error(err == ENOENT ? DLRT_NOT_FOUND : DLRT_IO_ERROR,
                         std::string("cannot ") + doing + " " + what + " '" +
                             path + "': " + std::strerror(err));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return ioError("open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ioError("map", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return ioError("map", ENODEV);
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void *p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return ioError("map", err);
    }
    file->data_ = static_cast<const uint8_t *>(p);
  }
  ::close(fd); // the mapping keeps the file
  *out = std::move(file);
  return Status::OK();
}

std::shared_ptr<const MappedFile> MappedFile::copyOf(const uint8_t *data,
                                                     size_t size) {
  std::shared_ptr<MappedFile> file(new MappedFile());
  if (size > 0) {
    // 64-byte aligned, as the section's tensors are in a file's mapping.
    void *p = ::operator new[](size, std::align_val_t(64));
    std::memcpy(p, data, size);
    file->data_ = static_cast<const uint8_t *>(p);
    file->size_ = size;
    file->copied_ = true;
  }
  return file;
}

MappedFile::~MappedFile() {
  if (data_ && copied_)
    ::operator delete[](const_cast<uint8_t *>(data_), std::align_val_t(64));
  else if (data_)
    ::munmap(const_cast<uint8_t *>(data_), size_);
}

void MappedFile::releasePages(const uint8_t *begin, size_t bytes) const {
  // MADV_DONTNEED zeroes anonymous memory: only a file's pages are dropped.
  if (copied_)
    return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page *
                       page,
                  hi = (reinterpret_cast<uintptr_t>(begin) + bytes) / page *
                       page;
  if (!data_ || begin < data_ || begin + bytes > data_ + size_ || hi <= lo)
    return;
  (void)::madvise(reinterpret_cast<void *>(lo), hi - lo, MADV_DONTNEED);
}

void Package::releaseWeightPages(const TensorData &t) const {
  if (mapping && t.mapped)
    mapping->releasePages(t.mapped, t.mappedSize);
}

} // namespace dlrt
