//===- MakeTestPackage.cpp - write dlrt's CLI test package ----------------===//
// dlrt-test-package OUT.dlcp [--features 4|5] [--mnist] [--inference]
//                   [--format-version N] [--half]
// Writes a softmax-regression package (batch 4, 3 classes, momentum SGD;
// --mnist: batch 64, 784 features, 10 classes; kernels in TestKernels.cpp)
// with the FlatBuffers builder, for the lit tests of `dlrt` that must not
// depend on dlc. --inference leaves out train_step and the training info.
// --half writes instead a format-version-3 inference package with f16 and
// bf16 inputs, outputs and a bf16 parameter (forward_half).
#include "dlc_schema/package_generated.h"
#include "runtime/schema/Safetensors.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fb = dlc::package;

static std::vector<uint8_t> floatBytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// The --half package: forward(xh f16 [2, 3], xb bf16 [2, 3]) -> yh f16,
/// yb bf16 with parameter s bf16 [3] = [1, 2, -0.5] (TestKernels.cpp).
static void buildHalfPackage(flatbuffers::FlatBufferBuilder &b,
                             const std::vector<uint8_t> &hostLibrary) {
  using K = fb::BufferKind;
  using D = fb::DType;
  std::vector<int64_t> x = {2, 3}, v = {3};
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers = {
      fb::CreateBufferDirect(b, "xh", K::Input, D::F16, &x, 12),
      fb::CreateBufferDirect(b, "xb", K::Input, D::BF16, &x, 12),
      fb::CreateBufferDirect(b, "s", K::Parameter, D::BF16, &v, 6, -1, -1, "s"),
      fb::CreateBufferDirect(b, "", K::Arena, D::F16, &x, 12, 0),
      fb::CreateBufferDirect(b, "", K::Arena, D::BF16, &x, 12, 16)};
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels = {
      fb::CreateKernelDirect(b, "forward_half", "// host-only test kernel", 1,
                             1)};
  std::vector<uint32_t> args = {0, 1, 2, 3, 4};
  std::vector<flatbuffers::Offset<fb::Step>> steps = {
      fb::CreateStep(b, fb::Op::LaunchKernel,
                     fb::CreateLaunchKernelDirect(b, 0, &args).Union())};
  std::vector<flatbuffers::Offset<fb::NamedBuffer>> ins = {
      fb::CreateNamedBufferDirect(b, "xh", 0),
      fb::CreateNamedBufferDirect(b, "xb", 1)};
  std::vector<flatbuffers::Offset<fb::NamedBuffer>> outs = {
      fb::CreateNamedBufferDirect(b, "yh", 3),
      fb::CreateNamedBufferDirect(b, "yb", 4)};
  std::vector<flatbuffers::Offset<fb::Function>> functions = {
      fb::CreateFunctionDirect(b, "forward", &ins, &outs, &steps, 28)};
  // bf16 1, 2, -0.5.
  std::vector<uint8_t> s = {0x80, 0x3f, 0x00, 0x40, 0x00, 0xbf};
  std::vector<uint8_t> weights =
      dlrt::safetensors::serialize({{"s", "BF16", {3}, s}});
  auto pkg = fb::CreatePackageDirect(b, 3, "dlrt-test-package", "half-model",
                                     &buffers, &kernels, &functions, 0,
                                     &hostLibrary, &weights, nullptr);
  fb::FinishPackageBuffer(b, pkg);
}

int main(int argc, char **argv) {
  std::string out;
  int features = 4;
  bool inference = false, mnist = false, half = false;
  uint32_t formatVersion = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--inference")
      inference = true;
    else if (a == "--mnist")
      mnist = true;
    else if (a == "--half")
      half = true;
    else if (a == "--format-version" && i + 1 < argc)
      formatVersion = static_cast<uint32_t>(std::atoi(argv[++i]));
    else if (a == "--features" && i + 1 < argc)
      features = std::atoi(argv[++i]);
    else
      out = a;
  }
  if (out.empty() || (features != 4 && features != 5)) {
    std::fprintf(stderr, "usage: dlrt-test-package OUT.dlcp [--features 4|5] "
                         "[--inference]\n");
    return 2;
  }
  const int64_t B = mnist ? 64 : 4, F = mnist ? 784 : features,
                C = mnist ? 10 : 3;
  std::string suffix = mnist ? "_mnist" : "_f" + std::to_string(F);

  std::ifstream so(DLRT_TEST_KERNELS, std::ios::binary);
  std::vector<uint8_t> hostLibrary((std::istreambuf_iterator<char>(so)),
                                   std::istreambuf_iterator<char>());
  if (hostLibrary.empty()) {
    std::fprintf(stderr, "cannot read %s\n", DLRT_TEST_KERNELS);
    return 1;
  }

  flatbuffers::FlatBufferBuilder b;
  if (half) {
    buildHalfPackage(b, hostLibrary);
    std::ofstream f(out, std::ios::binary);
    f.write(reinterpret_cast<const char *>(b.GetBufferPointer()), b.GetSize());
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", out.c_str());
      return 1;
    }
    return 0;
  }
  struct Buf {
    const char *name;
    fb::BufferKind kind;
    fb::DType dtype;
    std::vector<int64_t> shape;
    int64_t offset;
    const char *init;
  };
  using K = fb::BufferKind;
  std::vector<Buf> bufs = {
      {"x", K::Input, fb::DType::F32, {B, F}, -1, ""},               // 0
      {"labels", K::Input, fb::DType::I64, {B}, -1, ""},             // 1
      {"w", K::Parameter, fb::DType::F32, {F, C}, -1, "w"},          // 2
      {"b", K::Parameter, fb::DType::F32, {C}, -1, "b"},             // 3
      {"w.velocity", K::OptimizerState, fb::DType::F32, {F, C}, -1, ""}, // 4
      {"b.velocity", K::OptimizerState, fb::DType::F32, {C}, -1, ""},    // 5
      {"step", K::Buffer, fb::DType::F32, {}, -1, ""},                // 6
      {"", K::Arena, fb::DType::F32, {}, 0, ""},                     // 7 loss
      {"", K::Arena, fb::DType::F32, {B, C}, 0, ""},                 // 8 logits
  };
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const Buf &x : bufs) {
    int64_t size = x.dtype == fb::DType::I64 ? 8 : 4;
    for (int64_t d : x.shape)
      size *= d;
    buffers.push_back(fb::CreateBufferDirect(b, x.name, x.kind, x.dtype,
                                             &x.shape, size, x.offset, -1,
                                             x.init));
  }
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels = {
      fb::CreateKernelDirect(b, ("train_step" + suffix).c_str(),
                             "// host-only test kernel", 1, 1),
      fb::CreateKernelDirect(b, ("forward" + suffix).c_str(),
                             "// host-only test kernel", 1, 1)};
  auto launch = [&](uint32_t kernel, std::vector<uint32_t> args) {
    auto op = fb::CreateLaunchKernelDirect(b, kernel, &args);
    return fb::CreateStep(b, fb::Op::LaunchKernel, op.Union());
  };
  auto named = [&](const char *n, uint32_t buf) {
    return fb::CreateNamedBufferDirect(b, n, buf);
  };
  std::vector<flatbuffers::Offset<fb::Function>> functions;
  if (!inference) {
    std::vector<flatbuffers::Offset<fb::NamedBuffer>> ins = {
        named("x", 0), named("labels", 1)};
    std::vector<flatbuffers::Offset<fb::NamedBuffer>> outs = {named("loss", 7)};
    std::vector<flatbuffers::Offset<fb::Step>> steps = {
        launch(0, {0, 1, 2, 3, 4, 5, 6, 7})};
    functions.push_back(
        fb::CreateFunctionDirect(b, "train_step", &ins, &outs, &steps, 64));
  }
  {
    std::vector<flatbuffers::Offset<fb::NamedBuffer>> ins = {named("x", 0)};
    std::vector<flatbuffers::Offset<fb::NamedBuffer>> outs = {
        named("logits", 8)};
    std::vector<flatbuffers::Offset<fb::Step>> steps = {launch(1, {0, 2, 3, 8})};
    functions.push_back(
        fb::CreateFunctionDirect(b, "forward", &ins, &outs, &steps, B * C * 4));
  }
  flatbuffers::Offset<fb::TrainingInfo> training;
  if (!inference)
    training = fb::CreateTrainingInfoDirect(b, "loss", "sgd",
                                            mnist ? 0.001f : 0.1f, B, "step");

  std::vector<float> w(F * C), bias(C);
  for (int64_t i = 0; i < F * C; ++i)
    w[i] = (mnist ? 0.01f : 1.0f) *
           (0.05f * static_cast<float>((i * 7) % 11) - 0.25f);
  for (int64_t c = 0; c < C; ++c)
    bias[c] = 0.1f * static_cast<float>(c);
  std::vector<uint8_t> weights = dlrt::safetensors::serialize(
      {{"w", "F32", {F, C}, floatBytes(w)},
       {"b", "F32", {C}, floatBytes(bias)}});

  auto pkg = fb::CreatePackageDirect(
      b, formatVersion, "dlrt-test-package", inference ? "softmax-regression-inference"
                                           : "softmax-regression",
      &buffers, &kernels, &functions, training, &hostLibrary, &weights,
      nullptr);
  fb::FinishPackageBuffer(b, pkg);
  std::ofstream f(out, std::ios::binary);
  f.write(reinterpret_cast<const char *>(b.GetBufferPointer()), b.GetSize());
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", out.c_str());
    return 1;
  }
  return 0;
}
