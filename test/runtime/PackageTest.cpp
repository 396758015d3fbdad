//===- PackageTest.cpp - package loading: good, bad and hostile files ----===//
#include <functional>
#include <tuple>

#include <gtest/gtest.h>

#include "runtime/src/Package.h"
#include "runtime/schema/Safetensors.h"
#include "TestPackage.h"
#include "dlrt/dlrt.h"

using namespace dlrt;
using namespace dlrt::test;

namespace {

/// A small valid package: y = k0(x, w) through an arena buffer and an alias.
PkgSpec validSpec() {
  PkgSpec s;
  s.buffers = {
      {"x", 3, 0, {2, 3}},                   // 0 Input
      {"w", 0, 0, {2, 3}, -1, -1, "w_init"}, // 1 Parameter
      {"", 4, 0, {2, 3}, 0},                 // 2 Arena @0
      {"", 5, 0, {6}, -1, 2},                // 3 Alias of 2
      {"m", 1, 0, {2, 3}},                   // 4 OptimizerState, zeros
  };
  s.kernels = {"k0"};
  FnSpec f;
  f.name = "forward";
  f.inputs = {{"x", 0}};
  f.outputs = {{"y", 3}};
  StepSpec step;
  step.kernel = 0;
  step.args = {0, 1, 2};
  f.steps = {step};
  f.arenaBytes = 24;
  s.functions = {f};
  s.weights = safetensors::serialize(
      {{"w_init", "F32", {2, 3}, floatBytes({1, 2, 3, 4, 5, 6})}});
  return s;
}

Status parse(const PkgSpec &spec) {
  std::vector<uint8_t> bytes = buildPackage(spec);
  Package p;
  return parsePackage(bytes.data(), bytes.size(), "t.dlcp", &p);
}

/// Loads |bytes| written to a file through the C API; returns code and
/// message.
std::pair<dlrt_status_code_t, std::string>
loadViaCApi(const std::string &path) {
  dlrt_context_options_t opts;
  dlrt_context_options_init(&opts);
  opts.device = DLRT_DEVICE_HOST;
  dlrt_context_t ctx = nullptr;
  dlrt_status_t s = dlrt_context_create(&opts, &ctx);
  EXPECT_EQ(s, nullptr) << dlrt_status_message(s);
  dlrt_model_t model = reinterpret_cast<dlrt_model_t>(0x1);
  s = dlrt_model_load(ctx, path.c_str(), &model);
  auto result =
      std::make_pair(dlrt_status_code(s), std::string(dlrt_status_message(s)));
  if (s)
    EXPECT_EQ(model, nullptr) << "out_model is set to NULL on failure";
  dlrt_status_free(s);
  dlrt_model_release(model);
  dlrt_context_release(ctx);
  return result;
}

void expectOneLine(const std::string &message) {
  EXPECT_FALSE(message.empty());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

} // namespace

TEST(Package, LoadsValidPackage) {
  std::vector<uint8_t> bytes = buildPackage(validSpec());
  Package p;
  Status s = parsePackage(bytes.data(), bytes.size(), "t.dlcp", &p);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(p.formatVersion, 1u);
  EXPECT_EQ(p.modelName, "test-model");
  ASSERT_EQ(p.buffers.size(), 5u);
  EXPECT_EQ(p.buffers[1].kind, BufferKind::Parameter);
  EXPECT_EQ(p.buffers[3].aliasOf, 2);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].name, "k0");
  ASSERT_NE(p.function("forward"), nullptr);
  EXPECT_EQ(p.function("train_step"), nullptr);
  EXPECT_EQ(p.weights.at("w_init").size(), 24u);
  EXPECT_FALSE(p.hasTraining);
}

TEST(Package, MissingFile) {
  TempDir dir;
  auto [code, message] = loadViaCApi(dir.file("nope.dlcp"));
  EXPECT_EQ(code, DLRT_NOT_FOUND);
  EXPECT_EQ(message, "cannot open package '" + dir.file("nope.dlcp") +
                         "': No such file or directory");
}

TEST(Package, GarbageFile) {
  TempDir dir;
  std::string text = "this is certainly not a flatbuffer package\n";
  writeBytes(dir.file("g.dlcp"),
             std::vector<uint8_t>(text.begin(), text.end()));
  auto [code, message] = loadViaCApi(dir.file("g.dlcp"));
  EXPECT_EQ(code, DLRT_CORRUPT);
  EXPECT_EQ(message.find("'" + dir.file("g.dlcp") + "' is not a dlc package"),
            0u)
      << message;
  expectOneLine(message);

  writeBytes(dir.file("tiny.dlcp"), {1, 2, 3});
  std::tie(code, message) = loadViaCApi(dir.file("tiny.dlcp"));
  EXPECT_EQ(code, DLRT_CORRUPT);
  EXPECT_NE(message.find("is not a dlc package (only 3 bytes)"),
            std::string::npos)
      << message;
}

TEST(Package, TruncatedPackage) {
  TempDir dir;
  std::vector<uint8_t> bytes = buildPackage(validSpec());
  bytes.resize(bytes.size() / 2);
  writeBytes(dir.file("t.dlcp"), bytes);
  auto [code, message] = loadViaCApi(dir.file("t.dlcp"));
  EXPECT_EQ(code, DLRT_CORRUPT);
  EXPECT_EQ(message.find("'" + dir.file("t.dlcp") + "' is corrupt: "), 0u)
      << message;
  expectOneLine(message);
}

/// validSpec with w_init in the weights section (format version 8) instead
/// of the safetensors blob.
PkgSpec sectionSpec() {
  PkgSpec s = validSpec();
  s.formatVersion = 8;
  s.weights.clear();
  s.weightsSection = true;
  s.weightRefs = {{"w_init", 0, {2, 3}, floatBytes({1, 2, 3, 4, 5, 6})}};
  return s;
}

/// The DLRT_CORRUPT message of parsing |spec|'s bytes, cut to |keep| bytes
/// when not negative.
std::string corruptMessage(const PkgSpec &spec, int64_t keep = -1) {
  std::vector<uint8_t> bytes = buildPackage(spec);
  if (keep >= 0)
    bytes.resize(static_cast<size_t>(keep));
  Package p;
  Status s = parsePackage(bytes.data(), bytes.size(), "t.dlcp", &p);
  EXPECT_EQ(s.code, DLRT_CORRUPT) << s.message;
  expectOneLine(s.message);
  return s.message;
}

TEST(Package, WeightsSectionLoadsInPlace) {
  std::vector<uint8_t> bytes = buildPackage(sectionSpec());
  const std::vector<uint8_t> expected = floatBytes({1, 2, 3, 4, 5, 6});
  // The section starts at a multiple of 64 after the FlatBuffer and ends
  // the file.
  ASSERT_EQ(bytes.size() % 64, 24u);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), bytes.end() - 24));
  // From memory: copied.
  Package p;
  Status s = parsePackage(bytes.data(), bytes.size(), "t.dlcp", &p);
  ASSERT_TRUE(s.ok()) << s.message;
  const TensorData &w = p.weights.at("w_init");
  EXPECT_EQ(w.dtype, "F32");
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  ASSERT_NE(p.mapping, nullptr); // a copy of the section
  EXPECT_EQ(w.mapped, p.mapping->data());
  EXPECT_EQ(std::vector<uint8_t>(w.data(), w.data() + w.size()), expected);
  bytes.assign(bytes.size(), 0); // |p| holds its own copy
  EXPECT_EQ(std::vector<uint8_t>(w.data(), w.data() + w.size()), expected);
  p.releaseWeightPages(w); // not a file's pages: nothing dropped
  EXPECT_EQ(std::vector<uint8_t>(w.data(), w.data() + w.size()), expected);
  bytes = buildPackage(sectionSpec());
  // From a file: read in place from the mapping, which the package keeps.
  TempDir dir;
  writeBytes(dir.file("s.dlcp"), bytes);
  Package q;
  s = loadPackage(dir.file("s.dlcp"), &q);
  ASSERT_TRUE(s.ok()) << s.message;
  const TensorData &v = q.weights.at("w_init");
  ASSERT_NE(q.mapping, nullptr);
  EXPECT_EQ(v.mapped, q.mapping->data() + bytes.size() - 24);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.mapped) % 64, 0u);
  EXPECT_EQ(std::vector<uint8_t>(v.data(), v.data() + v.size()), expected);
  // Dropping the resident pages keeps the bytes (read again from the file).
  q.releaseWeightPages(v);
  EXPECT_EQ(std::vector<uint8_t>(v.data(), v.data() + v.size()), expected);
  Package copy = q; // shares the mapping
  q = Package();
  EXPECT_EQ(std::vector<uint8_t>(copy.weights.at("w_init").data(),
                                 copy.weights.at("w_init").data() + 24),
            expected);
  auto [code, message] = loadViaCApi(dir.file("s.dlcp"));
  EXPECT_EQ(code, DLRT_OK) << message;
}

TEST(Package, WeightsSectionCorrupt) {
  const std::string section = "the weights section (24 bytes at offset ";
  // A weight past the section's end, or misaligned in it.
  PkgSpec spec = sectionSpec();
  spec.weightRefs[0].offset = 64;
  spec.sectionLength = 24;
  EXPECT_NE(corruptMessage(spec).find(
                "'t.dlcp' is corrupt: weight 'w_init' (buffer 1) has 24 bytes "
                "at offset 64, misaligned or outside " +
                section),
            std::string::npos)
      << corruptMessage(spec);
  spec = sectionSpec();
  spec.weightRefs[0].offset = 8;
  spec.sectionLength = 32;
  EXPECT_NE(corruptMessage(spec).find("weight 'w_init' (buffer 1) has 24 "
                                      "bytes at offset 8, misaligned"),
            std::string::npos);
  // Offsets and lengths that overflow when added.
  spec = sectionSpec();
  spec.weightRefs.insert(spec.weightRefs.begin(),
                         {"pad", 0, {6}, floatBytes({0, 0, 0, 0, 0, 0})});
  spec.weightRefs[1].offset = int64_t(0x7fffffffffffffc0);
  spec.weightRefs[1].data.clear();
  spec.weightRefs[1].length = 24;
  EXPECT_NE(corruptMessage(spec).find(", misaligned or outside"),
            std::string::npos);
  // A length its shape and dtype do not give.
  spec = sectionSpec();
  spec.weightRefs[0].length = 20;
  EXPECT_NE(corruptMessage(spec).find("weight 'w_init' (buffer 1) has length "
                                      "20 but its shape and dtype need 24"),
            std::string::npos);
  // The section past the end of the file: a truncated package.
  std::vector<uint8_t> whole = buildPackage(sectionSpec());
  std::string m = corruptMessage(sectionSpec(), int64_t(whole.size()) - 1);
  EXPECT_NE(m.find(section), std::string::npos) << m;
  EXPECT_NE(m.find("is misaligned or outside the file of " +
                   std::to_string(whole.size() - 1) + " bytes"),
            std::string::npos)
      << m;
  // A misaligned section; one overlapping the FlatBuffer.
  spec = sectionSpec();
  spec.sectionOffset = int64_t(whole.size()) - 24 - 8;
  EXPECT_NE(corruptMessage(spec).find("is misaligned or outside the file"),
            std::string::npos);
  spec = sectionSpec();
  spec.sectionOffset = 64;
  EXPECT_NE(corruptMessage(spec).find("overlaps the FlatBuffer"),
            std::string::npos);
  // The section's members in an older format version; refs without one.
  spec = sectionSpec();
  spec.formatVersion = 7;
  EXPECT_NE(corruptMessage(spec).find("it has a weights section, which needs "
                                      "format version 8 (the package is "
                                      "version 7)"),
            std::string::npos);
  spec = sectionSpec();
  spec.weightsSection = false;
  EXPECT_NE(corruptMessage(spec).find("lists weights in a weights section but "
                                      "has none"),
            std::string::npos);
  // A name both inside the FlatBuffer and in the section.
  spec = sectionSpec();
  spec.weights = safetensors::serialize(
      {{"w_init", "F32", {2, 3}, floatBytes({1, 2, 3, 4, 5, 6})}});
  EXPECT_NE(corruptMessage(spec).find("weight 'w_init' (buffer 1) is stored "
                                      "twice"),
            std::string::npos);
  // A weight the buffer does not match.
  spec = sectionSpec();
  spec.weightRefs[0].shape = {3};
  spec.weightRefs[0].data.resize(12);
  EXPECT_NE(corruptMessage(spec).find("buffer 1 ('w') is F32 of 24 bytes but "
                                      "weight 'w_init' is F32 of 12 bytes"),
            std::string::npos);
  // Through the C API from a truncated file: the same one line.
  TempDir dir;
  writeBytes(dir.file("cut.dlcp"),
             std::vector<uint8_t>(whole.begin(), whole.end() - 1));
  auto [code, message] = loadViaCApi(dir.file("cut.dlcp"));
  EXPECT_EQ(code, DLRT_CORRUPT);
  expectOneLine(message);
  EXPECT_EQ(
      message.rfind("'" + dir.file("cut.dlcp") + "' is corrupt: " + section, 0),
      0u)
      << message;
}

TEST(Package, WrongVersion) {
  TempDir dir;
  PkgSpec spec = validSpec();
  spec.formatVersion = 9;
  writeBytes(dir.file("v9.dlcp"), buildPackage(spec));
  auto [code, message] = loadViaCApi(dir.file("v9.dlcp"));
  EXPECT_EQ(code, DLRT_INCOMPATIBLE);
  EXPECT_EQ(message, "'" + dir.file("v9.dlcp") +
                         "' has package format version 9; this runtime reads "
                         "versions 1 to 8 — recompile it with a matching dlc");
}

TEST(Package, OutOfRangeBufferIndex) {
  TempDir dir;
  PkgSpec spec = validSpec();
  spec.functions[0].steps[0].args = {0, 1, 99};
  writeBytes(dir.file("b.dlcp"), buildPackage(spec));
  auto [code, message] = loadViaCApi(dir.file("b.dlcp"));
  EXPECT_EQ(code, DLRT_CORRUPT);
  EXPECT_NE(message.find("step 0 of function 'forward' uses buffer 99 of 5"),
            std::string::npos)
      << message;
  expectOneLine(message);
}

/// Each corruption of a verifiable package is a DLRT_CORRUPT naming the
/// problem.
struct Corruption {
  const char *name;
  std::function<void(PkgSpec &)> apply;
  const char *expect;
};

TEST(Package, InvalidPlansAreCorrupt) {
  const Corruption cases[] = {
      {"kernel index", [](PkgSpec &s) { s.functions[0].steps[0].kernel = 3; },
       "launches kernel 3 of 1"},
      {"alias out of range", [](PkgSpec &s) { s.buffers[3].aliasOf = 17; },
       "aliases buffer 17"},
      {"alias cycle",
       [](PkgSpec &s) {
         s.buffers[2] = {"", 5, 0, {2, 3}, -1, 3};
       },
       "alias cycle"},
      {"arena overflow", [](PkgSpec &s) { s.functions[0].arenaBytes = 20; },
       "lies outside the 20-byte arena"},
      {"arena offset", [](PkgSpec &s) { s.buffers[2].arenaOffset = 8; },
       "lies outside the 24-byte arena"},
      {"missing weight", [](PkgSpec &s) { s.buffers[1].init = "nope"; },
       "weight 'nope', which the package does not contain"},
      {"weight size",
       [](PkgSpec &s) {
         s.weights = safetensors::serialize(
             {{"w_init", "F32", {2}, floatBytes({1, 2})}});
       },
       "but weight 'w_init' is F32 of 8 bytes"},
      {"bad weights",
       [](PkgSpec &s) { s.weights = {1, 2, 3, 4, 5, 6, 7, 8, 9}; },
       "weights: "},
      {"size_bytes", [](PkgSpec &s) { s.buffers[0].sizeBytes = 1000; },
       "size_bytes 1000"},
      {"negative dim",
       [](PkgSpec &s) {
         s.buffers[0].shape = {-2, 3};
       },
       "invalid shape"},
      {"unknown kind", [](PkgSpec &s) { s.buffers[4].kind = 42; },
       "unknown kind 42"},
      {"unnamed state", [](PkgSpec &s) { s.buffers[4].name = ""; },
       "persistent buffer 4 has no name"},
      {"duplicate state", [](PkgSpec &s) { s.buffers[4].name = "w"; },
       "two persistent buffers are named 'w'"},
      {"output index",
       [](PkgSpec &s) {
         s.functions[0].outputs = {{"y", 5}};
       },
       "output 'y' is buffer 5 of 5"},
      {"unknown callee",
       [](PkgSpec &s) {
         s.functions[0].steps[0] = {false, 0, "fft", {0, 1, 2}, {}, {}};
       },
       "unknown library call 'fft'"},
      {"gemm too small",
       // Y[2,3] = X[2,3] * W[3,3]: W has only 6 floats.
       [](PkgSpec &s) {
         s.functions[0].steps[0] = {
             false, 0, "gemm", {0, 1, 2}, {2, 3, 3, 0, 0, 0, 0}, {1, 0}};
       },
       "B (buffer 1, 24 bytes) is smaller than 9 floats"},
      {"gemm attrs",
       [](PkgSpec &s) {
         s.functions[0].steps[0] = {false,     0,      "gemm",
                                    {0, 1, 2}, {2, 3}, {1, 0}};
       },
       "gemm needs 7 int_attrs"},
      {"conv output size",
       [](PkgSpec &s) {
         // x as [1,1,2,3], w as [1,1,2,3] -> y [1,1,1,1], but claims 2x2.
         s.functions[0].steps[0] = {
             false,
             0,
             "conv2d_forward",
             {0, 1, 2},
             {1, 1, 2, 3, 1, 2, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},
             {}};
       },
       "does not match"},
      {"conv group",
       [](PkgSpec &s) {
         s.functions[0].steps[0] = {
             false,
             0,
             "conv2d_forward",
             {0, 1, 2},
             {1, 1, 2, 3, 1, 2, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2, 0},
             {}};
       },
       "not divisible by group 2"},
      {"conv3d attrs",
       // The 2-D attribute layout under a 3-D callee.
       [](PkgSpec &s) {
         s.functions[0].steps[0] = {
             false,
             0,
             "conv3d_forward",
             {0, 1, 2},
             {1, 1, 2, 3, 1, 2, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},
             {}};
       },
       "'conv3d_forward' needs 26 int_attrs, got 19"},
      {"conv3d output depth",
       // x [1,1,1,2,3] * w [1,1,1,2,3] -> y [1,1,1,1,1], but claims depth 2.
       [](PkgSpec &s) {
         s.functions[0].steps[0] = {
             false,
             0,
             "conv3d_forward",
             {0, 1, 2},
             {1, 1, 1, 2, 3, 1, 1, 2, 3, 2, 1, 1, 1, 1, 1,
              0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0},
             {}};
       },
       "output depth 2 does not match"},
  };
  for (const Corruption &c : cases) {
    SCOPED_TRACE(c.name);
    PkgSpec spec = validSpec();
    c.apply(spec);
    Status s = parse(spec);
    EXPECT_EQ(s.code, DLRT_CORRUPT) << s.message;
    EXPECT_NE(s.message.find(c.expect), std::string::npos) << s.message;
    EXPECT_EQ(s.message.find("'t.dlcp' is corrupt: "), 0u) << s.message;
    expectOneLine(s.message);
  }
}

TEST(Package, ValidLibraryCallsParse) {
  PkgSpec spec = validSpec();
  // Y[2,3] = A[2,2] * W[2,3]: A reads the first 4 of x's 6 floats, which the
  // size check allows (buffers may be larger than a call needs).
  spec.functions[0].steps[0] = {
      false, 0, "gemm", {0, 1, 2}, {2, 3, 2, 0, 0, 0, 0}, {1, 0}};
  Status s = parse(spec);
  EXPECT_TRUE(s.ok()) << s.message;
}

TEST(Package, Conv3dCallParses) {
  PkgSpec spec = validSpec();
  // x [1,1,1,2,3] * w [1,1,1,2,3] -> y [1,1,1,1,1] (the 26-value layout).
  spec.functions[0].steps[0] = {false,
                                0,
                                "conv3d_backward_filter",
                                {0, 2, 1},
                                {1, 1, 1, 2, 3, 1, 1, 2, 3, 1, 1, 1, 1,
                                 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0},
                                {}};
  Status s = parse(spec);
  EXPECT_TRUE(s.ok()) << s.message;
}

namespace {

/// gemm Y[2,3] = A[2,2] * W[2,3] (the call of ValidLibraryCallsParse).
dlc::exec::LibraryCallParams gemmParams() {
  dlc::exec::LibraryCallParams p;
  p.call = dlc::exec::LibraryCall::Gemm;
  p.gemm.m = 2, p.gemm.n = 3, p.gemm.k = 2;
  p.gemm.alpha = 1, p.gemm.beta = 0;
  return p;
}

/// conv3d x [1,1,1,2,3] * w [1,1,1,2,3] -> y [1,1,1,1,1] (Conv3dCallParses).
dlc::exec::LibraryCallParams conv3dParams(dlc::exec::LibraryCall call) {
  dlc::exec::LibraryCallParams p;
  p.call = call;
  dlc::exec::ConvParams &c = p.conv;
  c.spatial = 3;
  c.n = 1, c.c = 1, c.k = 1, c.group = 1;
  c.d = 1, c.h = 2, c.w = 3, c.t = 1, c.r = 2, c.s = 3, c.o = 1, c.p = 1,
  c.q = 1;
  return p;
}

/// The package with step 0 of |spec| replaced by |step|, parsed.
Status parseWithStep(PkgSpec spec, const StepSpec &step, Package *out) {
  spec.functions[0].steps[0] = step;
  std::vector<uint8_t> bytes = buildPackage(spec);
  return parsePackage(bytes.data(), bytes.size(), "t.dlcp", out);
}

} // namespace

TEST(Package, TypedLibraryCallsParse) {
  // Format version 2: the same calls as ValidLibraryCallsParse and
  // Conv3dCallParses, with typed parameters; they decode to the parameters
  // of the version-1 positional form.
  PkgSpec v1 = validSpec(), v2 = validSpec();
  v2.formatVersion = 2;
  StepSpec gemm1{false, 0, "gemm", {0, 1, 2}, {2, 3, 2, 0, 0, 0, 0}, {1, 0}};
  StepSpec gemm2{false, 0, "gemm", {0, 1, 2}, {}, {}, gemmParams()};
  Package p1, p2;
  ASSERT_TRUE(parseWithStep(v1, gemm1, &p1).ok());
  Status s = parseWithStep(v2, gemm2, &p2);
  ASSERT_TRUE(s.ok()) << s.message;
  const GemmParams &g1 = p1.functions[0].steps[0].call.gemm,
                   &g2 = p2.functions[0].steps[0].call.gemm;
  EXPECT_EQ(p2.functions[0].steps[0].call.call, dlc::exec::LibraryCall::Gemm);
  EXPECT_EQ(std::make_tuple(g1.m, g1.n, g1.k, g1.trans_a, g1.trans_b, g1.has_c,
                            g1.c_is_row_vector, g1.alpha, g1.beta),
            std::make_tuple(g2.m, g2.n, g2.k, g2.trans_a, g2.trans_b, g2.has_c,
                            g2.c_is_row_vector, g2.alpha, g2.beta));

  auto call = dlc::exec::LibraryCall::Conv3dBackwardFilter;
  StepSpec conv1{false,
                 0,
                 "conv3d_backward_filter",
                 {0, 2, 1},
                 {1, 1, 1, 2, 3, 1, 1, 2, 3, 1, 1, 1, 1,
                  1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0},
                 {}};
  StepSpec conv2{
      false, 0, "conv3d_backward_filter", {0, 2, 1}, {}, {}, conv3dParams(call)};
  ASSERT_TRUE(parseWithStep(v1, conv1, &p1).ok());
  s = parseWithStep(v2, conv2, &p2);
  ASSERT_TRUE(s.ok()) << s.message;
  const ConvParams &c1 = p1.functions[0].steps[0].call.conv,
                   &c2 = p2.functions[0].steps[0].call.conv;
  EXPECT_EQ(p2.functions[0].steps[0].call.call, call);
  EXPECT_EQ(std::make_tuple(c1.spatial, c1.n, c1.c, c1.d, c1.h, c1.w, c1.k,
                            c1.t, c1.r, c1.s, c1.o, c1.p, c1.q),
            std::make_tuple(c2.spatial, c2.n, c2.c, c2.d, c2.h, c2.w, c2.k,
                            c2.t, c2.r, c2.s, c2.o, c2.p, c2.q));
}

TEST(Package, GemmEpiloguesParse) {
  // Format version 4: GemmAttrs.epilogue decodes; a bias-gradient epilogue
  // takes a fifth buffer, dBias, of N (BiasGradB) or M (BiasGradA) elements.
  PkgSpec v4 = validSpec();
  v4.formatVersion = 4;
  auto relu = gemmParams(), bgrad = gemmParams();
  relu.gemm.epilogue = dlc::exec::GemmEpilogue::Relu;
  bgrad.gemm.epilogue = dlc::exec::GemmEpilogue::BiasGradB;
  Package p;
  Status s = parseWithStep(
      v4, StepSpec{false, 0, "gemm", {0, 1, 2}, {}, {}, relu}, &p);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(p.functions[0].steps[0].call.gemm.epilogue,
            dlc::exec::GemmEpilogue::Relu);
  s = parseWithStep(v4, StepSpec{false, 0, "gemm", {0, 1, 2, 4}, {}, {}, bgrad},
                    &p);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(p.functions[0].steps[0].call.gemm.epilogue,
            dlc::exec::GemmEpilogue::BiasGradB);
  EXPECT_EQ(p.functions[0].steps[0].args, (std::vector<uint32_t>{0, 1, 2, 4}));
  // Without its dBias buffer the call is corrupt.
  s = parseWithStep(v4, StepSpec{false, 0, "gemm", {0, 1, 2}, {}, {}, bgrad},
                    &p);
  EXPECT_EQ(s.code, DLRT_CORRUPT) << s.message;
  EXPECT_NE(s.message.find("'gemm' takes 4 buffers, got 3"), std::string::npos)
      << s.message;
  // The packages of older dlc versions have no epilogue field: None.
  PkgSpec v3 = validSpec();
  v3.formatVersion = 3;
  s = parseWithStep(
      v3, StepSpec{false, 0, "gemm", {0, 1, 2}, {}, {}, gemmParams()}, &p);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(p.functions[0].steps[0].call.gemm.epilogue,
            dlc::exec::GemmEpilogue::None);
}

TEST(Package, GemmReluMaskEpiloguesParse) {
  // Format version 5: ReluAux writes the ReLU bit-mask after Y (args A, B,
  // Y, Aux); DReluBiasGrad reads it before Y (A, B, Aux, Y, dBias). The mask
  // is an I32 buffer of M x reluMaskWords(N) words (2 x 4 here).
  PkgSpec v5 = validSpec();
  v5.formatVersion = 5;
  v5.buffers.push_back({"", 4, 3, {2, 4}, 32}); // 5 Arena @32, i32
  v5.functions[0].arenaBytes = 64;
  auto relu = gemmParams(), drelu = gemmParams();
  relu.gemm.epilogue = dlc::exec::GemmEpilogue::ReluAux;
  drelu.gemm.epilogue = dlc::exec::GemmEpilogue::DReluBiasGrad;
  Package p;
  Status s = parseWithStep(
      v5, StepSpec{false, 0, "gemm", {0, 1, 2, 5}, {}, {}, relu}, &p);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(p.functions[0].steps[0].call.gemm.epilogue,
            dlc::exec::GemmEpilogue::ReluAux);
  s = parseWithStep(
      v5, StepSpec{false, 0, "gemm", {0, 1, 5, 2, 4}, {}, {}, drelu}, &p);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(p.functions[0].steps[0].call.gemm.epilogue,
            dlc::exec::GemmEpilogue::DReluBiasGrad);
  // An f32 buffer is not a mask; a missing mask is a wrong arg count.
  s = parseWithStep(
      v5, StepSpec{false, 0, "gemm", {0, 1, 4, 2, 4}, {}, {}, drelu}, &p);
  EXPECT_EQ(s.code, DLRT_CORRUPT) << s.message;
  EXPECT_NE(s.message.find("is not the ReLU bit-mask of 8 i32 words"),
            std::string::npos)
      << s.message;
  s = parseWithStep(v5, StepSpec{false, 0, "gemm", {0, 1, 2}, {}, {}, relu},
                    &p);
  EXPECT_EQ(s.code, DLRT_CORRUPT) << s.message;
  EXPECT_NE(s.message.find("'gemm' takes 4 buffers, got 3"), std::string::npos)
      << s.message;
}

TEST(Package, InvalidTypedLibraryCallsAreCorrupt) {
  PkgSpec v2 = validSpec();
  v2.formatVersion = 2;
  auto conv = conv3dParams(dlc::exec::LibraryCall::Conv3dForward);
  auto conv2d = conv;
  conv2d.call = dlc::exec::LibraryCall::Conv2dForward;
  conv2d.conv.spatial = 2;
  auto deep = conv;
  deep.conv.o = 2;
  auto badGemm = gemmParams();
  badGemm.gemm.k = 3; // W [2,3] holds 6 floats, not 9
  const struct {
    const char *name;
    StepSpec step;
    const char *expect;
  } cases[] = {
      {"no attrs table",
       {false, 0, "gemm", {0, 1, 2}, {2, 3, 2, 0, 0, 0, 0}, {1, 0}},
       "'gemm' needs its parameters in a GemmAttrs table"},
      {"wrong table",
       {false, 0, "gemm", {0, 1, 2}, {}, {}, conv},
       "'gemm' needs its parameters in a GemmAttrs table"},
      {"spatial dims",
       {false, 0, "conv3d_forward", {0, 1, 2}, {}, {}, conv2d},
       "'conv3d_forward' has spatial_dims 2, expected 3"},
      {"output depth",
       {false, 0, "conv3d_forward", {0, 1, 2}, {}, {}, deep},
       "output depth 2 does not match"},
      {"gemm too small",
       {false, 0, "gemm", {0, 1, 2}, {}, {}, badGemm},
       "B (buffer 1, 24 bytes) is smaller than 9 floats"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    Package p;
    Status s = parseWithStep(v2, c.step, &p);
    EXPECT_EQ(s.code, DLRT_CORRUPT) << s.message;
    EXPECT_NE(s.message.find(c.expect), std::string::npos) << s.message;
    expectOneLine(s.message);
  }
}

TEST(Package, FormatVersionsDecodeToTheSameCalls) {
  // The fuzz seeds hold each tiny model compiled by the dlc of format
  // version 1 (positional int_attrs) and of version 2 (typed tables): both
  // load, and every library call decodes to the same parameters, so the
  // devices receive identical arguments.
  for (const char *seed : {"cnn_sgd", "mlp_adam", "mlp_infer"}) {
    SCOPED_TRACE(seed);
    Package p[2];
    for (int v = 0; v < 2; ++v) {
      std::string path = std::string(DLRT_TEST_PACKAGE_SEEDS) + "/" + seed +
                         (v == 0 ? "-v1" : "") + ".dlcp";
      Status s = loadPackage(path, &p[v]);
      ASSERT_TRUE(s.ok()) << s.message;
      EXPECT_EQ(p[v].formatVersion, v == 0 ? 1u : 2u);
    }
    ASSERT_EQ(p[0].functions.size(), p[1].functions.size());
    size_t calls = 0;
    for (size_t f = 0; f < p[0].functions.size(); ++f) {
      const auto &s0 = p[0].functions[f].steps, &s1 = p[1].functions[f].steps;
      ASSERT_EQ(s0.size(), s1.size());
      for (size_t i = 0; i < s0.size(); ++i) {
        ASSERT_EQ(s0[i].kind, s1[i].kind);
        EXPECT_EQ(s0[i].args, s1[i].args);
        if (s0[i].isLaunch())
          continue;
        ++calls;
        const dlc::exec::LibraryCallParams &a = s0[i].call, &b = s1[i].call;
        ASSERT_EQ(a.call, b.call);
        const GemmParams &g = a.gemm, &h = b.gemm;
        EXPECT_EQ(std::make_tuple(g.m, g.n, g.k, g.trans_a, g.trans_b, g.has_c,
                                  g.c_is_row_vector, g.alpha, g.beta),
                  std::make_tuple(h.m, h.n, h.k, h.trans_a, h.trans_b, h.has_c,
                                  h.c_is_row_vector, h.alpha, h.beta));
        const ConvParams &c = a.conv, &d = b.conv;
        EXPECT_EQ(std::make_tuple(c.n, c.c, c.h, c.w, c.k, c.r, c.s, c.p, c.q,
                                  c.stride_h, c.stride_w, c.pad_top, c.pad_left,
                                  c.pad_bottom, c.pad_right, c.dilation_h,
                                  c.dilation_w, c.group, c.has_bias, c.spatial),
                  std::make_tuple(d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.p, d.q,
                                  d.stride_h, d.stride_w, d.pad_top, d.pad_left,
                                  d.pad_bottom, d.pad_right, d.dilation_h,
                                  d.dilation_w, d.group, d.has_bias,
                                  d.spatial));
      }
    }
    EXPECT_GT(calls, 0u);
  }
}

TEST(Package, HostileBytesNeverCrash) {
  // Every truncation and many single-byte corruptions of a valid package
  // must give OK or an error status.
  std::vector<uint8_t> good = buildPackage(validSpec());
  for (size_t n = 0; n < good.size(); ++n) {
    Package p;
    Status s = parsePackage(good.data(), n, "t.dlcp", &p);
    EXPECT_TRUE(s.code == DLRT_CORRUPT || s.code == DLRT_INCOMPATIBLE || s.ok())
        << n << ": " << s.message;
    // Only trailing alignment padding may be cut without losing content.
    if (n + 8 < good.size())
      EXPECT_FALSE(s.ok()) << "truncated to " << n << " of " << good.size();
  }
  for (size_t i = 0; i < good.size(); ++i)
    for (uint8_t v : {0x00, 0xff, 0x7f, 0x80}) {
      std::vector<uint8_t> bad = good;
      bad[i] ^= v;
      Package p;
      Status s = parsePackage(bad.data(), bad.size(), "t.dlcp", &p);
      if (s.ok())
        continue;
      EXPECT_TRUE(s.code == DLRT_CORRUPT || s.code == DLRT_INCOMPATIBLE)
          << s.message;
      expectOneLine(s.message);
    }
}

namespace {

/// A two-stage pipeline package (no kernels): stage 0's forward sends x.0 to
/// stage 1's forward, which outputs the loss; stage 1's backward sends g.1
/// back to stage 0's backward, which also reads its own forward's x.0.
PkgSpec pipelineSpec() {
  PkgSpec s;
  s.training = true;
  s.buffers = {
      {"input", 3, 0, {4}},   // 0 Input: train_step's global batch
      {"loss", 3, 0, {}},     // 1 Input: train_step's loss output
      {"input", 3, 0, {2}},   // 2 Input of stage0_forward
      {"", 4, 0, {2}, 0},     // 3 Arena: x.0
      {"x.0", 3, 0, {2}},     // 4 Input of stage1_forward
      {"", 4, 0, {}, 8},      // 5 Arena: loss
      {"x.0", 3, 0, {2}},     // 6 Input of stage1_backward
      {"", 4, 0, {2}, 0},     // 7 Arena: g.1
      {"x.0", 3, 0, {2}},     // 8 Input of stage0_backward
      {"g.1", 3, 0, {2}},     // 9 Input of stage0_backward
  };
  auto fn = [](std::string name,
               std::vector<std::pair<std::string, uint32_t>> ins,
               std::vector<std::pair<std::string, uint32_t>> outs) {
    FnSpec f;
    f.name = std::move(name);
    f.inputs = std::move(ins);
    f.outputs = std::move(outs);
    f.arenaBytes = 12;
    return f;
  };
  s.functions = {fn("train_step", {{"input", 0}}, {{"loss", 1}}),
                 fn("stage0_forward", {{"input", 2}}, {{"x.0", 3}}),
                 fn("stage0_backward", {{"x.0", 8}, {"g.1", 9}}, {}),
                 fn("stage0_update", {}, {}),
                 fn("stage1_forward", {{"x.0", 4}}, {{"loss", 5}}),
                 fn("stage1_backward", {{"x.0", 6}}, {{"g.1", 7}}),
                 fn("stage1_update", {}, {})};
  s.functions[0].arenaBytes = 0;
  PipelineSpec p;
  p.lossStage = 1;
  p.stages = {{"stage0_forward", "stage0_backward", "stage0_update", {}},
              {"stage1_forward", "stage1_backward", "stage1_update", {}}};
  p.transfers = {{"x.0", 0, 1, false}, {"g.1", 1, 0, true}};
  p.inputs = {"input"};
  s.pipeline = p;
  return s;
}

} // namespace

TEST(Package, PipelineTableParses) {
  std::vector<uint8_t> bytes = buildPackage(pipelineSpec());
  Package p;
  Status st = parsePackage(bytes.data(), bytes.size(), "t.dlcp", &p);
  ASSERT_TRUE(st.ok()) << st.message;
  ASSERT_TRUE(p.hasPipeline);
  EXPECT_EQ(p.pipeline.schedule, "1f1b");
  EXPECT_EQ(p.pipeline.microBatches, 2);
  EXPECT_EQ(p.pipeline.lossStage, 1);
  ASSERT_EQ(p.pipeline.stages.size(), 2u);
  EXPECT_EQ(p.pipeline.stages[1].backward, "stage1_backward");
  ASSERT_EQ(p.pipeline.transfers.size(), 2u);
  EXPECT_TRUE(p.pipeline.transfers[1].backward);
  EXPECT_EQ(p.pipeline.transfers[1].toStage, 0);
  EXPECT_EQ(p.pipeline.inputs, std::vector<std::string>{"input"});
  // Packages without the table are not pipelines.
  std::vector<uint8_t> plain = buildPackage(validSpec());
  Package q;
  ASSERT_TRUE(parsePackage(plain.data(), plain.size(), "t.dlcp", &q).ok());
  EXPECT_FALSE(q.hasPipeline);
}

TEST(Package, InvalidPipelineTablesAreCorrupt) {
  const Corruption cases[] = {
      {"schedule", [](PkgSpec &s) { s.pipeline->schedule = "zb"; },
       "unknown schedule 'zb' (supported: gpipe, 1f1b)"},
      {"micro-batches", [](PkgSpec &s) { s.pipeline->microBatches = 0; },
       "0 micro-batches"},
      {"step function",
       [](PkgSpec &s) { s.pipeline->stepFunction = "step"; },
       "step function 'step' is missing or has steps"},
      {"missing function",
       [](PkgSpec &s) { s.pipeline->stages[1].update = "nope"; },
       "pipeline stage 1 names a missing function 'nope'"},
      {"loss stage", [](PkgSpec &s) { s.pipeline->lossStage = 2; },
       "2 stages and loss stage 2"},
      {"forward against the pipeline",
       [](PkgSpec &s) { s.pipeline->transfers[0] = {"x.0", 1, 0, false}; },
       "pipeline transfer 'x.0' goes from stage 1 to stage 0"},
      {"not an output",
       [](PkgSpec &s) { s.pipeline->transfers[1].name = "x.0"; },
       "pipeline transfer 'x.0' is not an output of 'stage1_backward'"},
      {"input from nowhere",
       [](PkgSpec &s) { s.pipeline->transfers.pop_back(); },
       "input 'g.1' of 'stage0_backward' comes from no step input, transfer "
       "or forward"},
      {"unknown input",
       [](PkgSpec &s) { s.pipeline->inputs = {"labels"}; },
       "pipeline input 'labels' is not an input of 'train_step'"},
      {"slice size",
       [](PkgSpec &s) { s.buffers[0].shape = {6}; },
       "input 'input' of 'stage0_forward' is 8 bytes, not 1/2 of the "
       "24-byte step input"},
      {"transfer size",
       [](PkgSpec &s) { s.buffers[4].shape = {3}; },
       "input 'x.0' of 'stage1_forward' is 12 bytes, but the value sent is 8"},
  };
  for (const Corruption &c : cases) {
    SCOPED_TRACE(c.name);
    PkgSpec spec = pipelineSpec();
    c.apply(spec);
    Status s = parse(spec);
    EXPECT_EQ(s.code, DLRT_CORRUPT) << s.message;
    EXPECT_NE(s.message.find(c.expect), std::string::npos) << s.message;
    expectOneLine(s.message);
  }
}
