//===- TestPackage.cpp - build .dlcp packages and host kernels in tests --===//
#include "TestPackage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "dlc_schema/package_generated.h"
#include <gtest/gtest.h>

namespace dlrt::test {
namespace fb = dlc::package;

/// The package DType of a library call's element type.
static fb::DType packageDType(dlc::exec::ElementType type) {
  switch (type) {
  case dlc::exec::ElementType::F16:
    return fb::DType::F16;
  case dlc::exec::ElementType::BF16:
    return fb::DType::BF16;
  case dlc::exec::ElementType::F64:
    return fb::DType::F64;
  case dlc::exec::ElementType::F32:
    break;
  }
  return fb::DType::F32;
}

/// The typed attribute table of |call| (as codegen's package writer
/// builds it).
static std::pair<fb::LibraryCallAttrs, flatbuffers::Offset<void>>
typedAttrs(flatbuffers::FlatBufferBuilder &b,
           const dlc::exec::LibraryCallParams &call) {
  using dlc::exec::LibraryCallFamily;
  switch (dlc::exec::libraryCallInfo(call.call).family) {
  case LibraryCallFamily::Gemm: {
    const auto &g = call.gemm;
    return {fb::LibraryCallAttrs::GemmAttrs,
            fb::CreateGemmAttrs(b, g.m, g.n, g.k, g.trans_a, g.trans_b,
                                g.has_c, g.c_is_row_vector, g.alpha, g.beta,
                                packageDType(g.dtype),
                                static_cast<fb::GemmEpilogue>(g.epilogue))
                .Union()};
  }
  case LibraryCallFamily::BatchedGemm: {
    const auto &g = call.batched;
    return {fb::LibraryCallAttrs::BatchedGemmAttrs,
            fb::CreateBatchedGemmAttrsDirect(
                b, g.m, g.n, g.k, &g.batch, &g.stride_a, &g.stride_b,
                packageDType(g.dtype), g.trans_a, g.trans_b)
                .Union()};
  }
  case LibraryCallFamily::Conv:
    break;
  }
  const auto &c = call.conv;
  bool is3 = c.spatial == 3;
  auto sp = [&](int64_t d, int64_t h, int64_t w) {
    return is3 ? std::vector<int64_t>{d, h, w} : std::vector<int64_t>{h, w};
  };
  std::vector<int64_t> in = sp(c.d, c.h, c.w), filter = sp(c.t, c.r, c.s),
                       out = sp(c.o, c.p, c.q),
                       strides = sp(c.stride_d, c.stride_h, c.stride_w),
                       pads = sp(c.pad_front, c.pad_top, c.pad_left),
                       end = sp(c.pad_back, c.pad_bottom, c.pad_right),
                       dil = sp(c.dilation_d, c.dilation_h, c.dilation_w);
  pads.insert(pads.end(), end.begin(), end.end());
  return {fb::LibraryCallAttrs::ConvAttrs,
          fb::CreateConvAttrsDirect(b, c.spatial, c.n, c.c, c.k, c.group,
                                    c.has_bias, &in, &filter, &out, &strides,
                                    &pads, &dil, packageDType(c.dtype))
              .Union()};
}

std::vector<uint8_t> buildPackage(const PkgSpec &spec) {
  flatbuffers::FlatBufferBuilder b;
  static const int kSizes[] = {4, 8, 8, 4, 1, 2, 2}; // by package.fbs DType
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const BufSpec &s : spec.buffers) {
    int64_t size = s.sizeBytes;
    if (size < 0) {
      size = s.dtype >= 0 && s.dtype < 7 ? kSizes[s.dtype] : 4;
      for (int64_t d : s.shape)
        size *= d;
    }
    buffers.push_back(fb::CreateBufferDirect(
        b, s.name.c_str(), static_cast<fb::BufferKind>(s.kind),
        static_cast<fb::DType>(s.dtype), &s.shape, size, s.arenaOffset,
        s.aliasOf, s.init.c_str()));
  }
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  for (const std::string &k : spec.kernels)
    kernels.push_back(fb::CreateKernelDirect(b, k.c_str(), "", 1, 256));
  std::vector<flatbuffers::Offset<fb::Function>> functions;
  for (const FnSpec &f : spec.functions) {
    std::vector<flatbuffers::Offset<fb::NamedBuffer>> ins, outs;
    for (const auto &in : f.inputs)
      ins.push_back(
          fb::CreateNamedBufferDirect(b, in.first.c_str(), in.second));
    for (const auto &out : f.outputs)
      outs.push_back(
          fb::CreateNamedBufferDirect(b, out.first.c_str(), out.second));
    std::vector<flatbuffers::Offset<fb::Step>> steps;
    for (const StepSpec &s : f.steps) {
      if (s.collective == 1) {
        auto op = fb::CreateAllReduce(
            b, s.args.at(0), s.average ? fb::ReduceOp::Avg : fb::ReduceOp::Sum);
        steps.push_back(fb::CreateStep(b, fb::Op::AllReduce, op.Union()));
      } else if (s.collective == 2) {
        auto op = fb::CreateWaitCollective(b, s.args.at(0));
        steps.push_back(
            fb::CreateStep(b, fb::Op::WaitCollective, op.Union()));
      } else if (s.launch) {
        auto op = fb::CreateLaunchKernelDirect(b, s.kernel, &s.args);
        steps.push_back(fb::CreateStep(b, fb::Op::LaunchKernel, op.Union()));
      } else {
        auto attrs = s.params ? typedAttrs(b, *s.params)
                              : std::pair<fb::LibraryCallAttrs,
                                          flatbuffers::Offset<void>>{};
        auto op = fb::CreateLibraryCallDirect(
            b, s.callee.c_str(), &s.args,
            s.intAttrs.empty() ? nullptr : &s.intAttrs,
            s.floatAttrs.empty() ? nullptr : &s.floatAttrs, attrs.first,
            attrs.second);
        steps.push_back(fb::CreateStep(b, fb::Op::LibraryCall, op.Union()));
      }
    }
    functions.push_back(fb::CreateFunctionDirect(b, f.name.c_str(), &ins, &outs,
                                                 &steps, f.arenaBytes));
  }
  flatbuffers::Offset<fb::TrainingInfo> training;
  if (spec.training)
    training = fb::CreateTrainingInfoDirect(b, "loss", "sgd", 0.1f, 2, "");
  flatbuffers::Offset<fb::MemoryPlan> memory;
  if (spec.memoryPlan)
    memory =
        fb::CreateMemoryPlan(b, (*spec.memoryPlan)[0], (*spec.memoryPlan)[1],
                             (*spec.memoryPlan)[2], (*spec.memoryPlan)[3]);
  flatbuffers::Offset<fb::Pipeline> pipeline;
  if (const std::optional<PipelineSpec> &p = spec.pipeline) {
    std::vector<flatbuffers::Offset<fb::PipelineStage>> stages;
    for (const PipelineSpec::Stage &st : p->stages) {
      std::vector<flatbuffers::Offset<flatbuffers::String>> accs;
      for (const std::string &a : st.accumulators)
        accs.push_back(b.CreateString(a));
      stages.push_back(fb::CreatePipelineStageDirect(
          b, st.forward.c_str(), st.backward.c_str(), st.update.c_str(),
          &accs));
    }
    std::vector<flatbuffers::Offset<fb::PipelineTransfer>> transfers;
    for (const PipelineSpec::Transfer &t : p->transfers)
      transfers.push_back(fb::CreatePipelineTransferDirect(
          b, t.name.c_str(), t.from, t.to, t.backward));
    std::vector<flatbuffers::Offset<flatbuffers::String>> inputs;
    for (const std::string &in : p->inputs)
      inputs.push_back(b.CreateString(in));
    pipeline = fb::CreatePipelineDirect(
        b, p->schedule.c_str(), p->microBatches, p->lossStage,
        p->stepFunction.c_str(), &stages, &transfers, &inputs);
  }
  // The weights section: where each tensor goes, from the section's start.
  std::vector<uint64_t> at;
  uint64_t sectionBytes = 0;
  std::vector<flatbuffers::Offset<fb::WeightRef>> refs;
  for (const WeightRefSpec &w : spec.weightRefs) {
    uint64_t offset =
        w.offset >= 0 ? uint64_t(w.offset) : (sectionBytes + 63) / 64 * 64;
    at.push_back(offset);
    if (!w.data.empty())
      sectionBytes = std::max<uint64_t>(sectionBytes, offset + w.data.size());
    refs.push_back(fb::CreateWeightRefDirect(
        b, w.name.c_str(), static_cast<fb::DType>(w.dtype), &w.shape, offset,
        w.length >= 0 ? uint64_t(w.length) : w.data.size()));
  }
  fb::WeightsSection section(
      0, spec.sectionLength >= 0 ? uint64_t(spec.sectionLength) : sectionBytes);
  auto pkg = fb::CreatePackageDirect(
      b, spec.formatVersion, "dlc test", "test-model", &buffers, &kernels,
      &functions, training,
      spec.hostLibrary.empty() ? nullptr : &spec.hostLibrary,
      spec.weights.empty() ? nullptr : &spec.weights, nullptr, memory, pipeline,
      spec.weightsSection ? &section : nullptr,
      spec.weightRefs.empty() ? nullptr : &refs);
  fb::FinishPackageBuffer(b, pkg);
  std::vector<uint8_t> bytes(b.GetBufferPointer(),
                             b.GetBufferPointer() + b.GetSize());
  if (!spec.weightsSection)
    return bytes;
  const uint64_t start = (bytes.size() + 63) / 64 * 64;
  fb::GetMutablePackage(bytes.data())
      ->mutable_weights_section()
      ->mutate_offset(spec.sectionOffset >= 0 ? uint64_t(spec.sectionOffset)
                                              : start);
  bytes.resize(start + sectionBytes, 0);
  for (size_t i = 0; i < spec.weightRefs.size(); ++i)
    std::copy(spec.weightRefs[i].data.begin(), spec.weightRefs[i].data.end(),
              bytes.begin() + start + at[i]);
  return bytes;
}

TempDir::TempDir() {
  const char *tmp = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/dlrt-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data()))
    throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::string cmd = "rm -rf '" + path_ + "'";
  (void)std::system(cmd.c_str());
}

void writeBytes(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f),
                              std::istreambuf_iterator<char>());
}

std::vector<uint8_t> compileHostLibrary(const std::string &source,
                                        std::string *error) {
  TempDir dir;
  std::string src = dir.file("kernels.cpp"), so = dir.file("kernels.so");
  {
    std::ofstream f(src);
    f << source;
  }
  std::string cmd = std::string(DLRT_TEST_CXX) + " -O2 -shared -fPIC -o '" +
                    so + "' '" + src + "' 2>&1";
  FILE *p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[256];
  while (p && fgets(buf, sizeof(buf), p))
    out += buf;
  int rc = p ? pclose(p) : -1;
  if (rc != 0) {
    *error = "'" + cmd + "' failed: " + out;
    return {};
  }
  return readBytes(so);
}

std::vector<uint8_t> floatBytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(v.size() * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

} // namespace dlrt::test

std::vector<float> dlrt::test::randomVector(size_t n, uint32_t seed,
                                            uint32_t salt) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + salt;
  for (float &x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

void dlrt::test::expectClose(const std::vector<float> &got,
                             const std::vector<double> &ref,
                             const char *what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < ref.size() && bad < 5; ++i)
    if (!(std::fabs(got[i] - ref[i]) <= 1e-4 * (1 + std::fabs(ref[i])))) {
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", expected "
                    << ref[i];
      ++bad;
    }
}
