//===- SafetensorsTest.cpp - safetensors reader/writer and atomic writes --===//
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include "runtime/schema/Safetensors.h"
#include "TestPackage.h"

namespace st = dlrt::safetensors;
using dlrt::test::TempDir;

namespace {

std::vector<uint8_t> withHeader(const std::string &json,
                                const std::vector<uint8_t> &data = {}) {
  std::vector<uint8_t> out(8);
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), json.begin(), json.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

bool parseFails(const std::vector<uint8_t> &bytes, std::string *error) {
  std::vector<st::Tensor> tensors;
  std::map<std::string, std::string> meta;
  return !st::parse(bytes.data(), bytes.size(), &tensors, &meta, error);
}

} // namespace

TEST(Safetensors, RoundTrip) {
  std::vector<st::Tensor> in;
  in.push_back(
      {"w", "F32", {2, 3}, dlrt::test::floatBytes({1, 2, 3, 4, 5, 6})});
  in.push_back({"step", "I64", {}, std::vector<uint8_t>(8, 0)});
  in[1].data[0] = 42;
  in.push_back({"empty", "F64", {0, 4}, {}});
  in.push_back({"mask", "BOOL", {3}, {1, 0, 1}});
  in.push_back({"idx", "I32", {1}, {7, 0, 0, 0}});
  std::map<std::string, std::string> meta = {{"epoch", "3"}, {"note", "a\"b"}};
  std::vector<uint8_t> bytes = st::serialize(in, meta);

  uint64_t headerLen = 0;
  std::memcpy(&headerLen, bytes.data(), 8);
  EXPECT_EQ(headerLen % 8, 0u) << "header is padded to 8 bytes";
  EXPECT_EQ(bytes.size(), 8 + headerLen + 24 + 8 + 0 + 3 + 4);

  std::vector<st::Tensor> out;
  std::map<std::string, std::string> outMeta;
  std::string error;
  ASSERT_TRUE(st::parse(bytes.data(), bytes.size(), &out, &outMeta, &error))
      << error;
  EXPECT_EQ(outMeta, meta);
  ASSERT_EQ(out.size(), in.size());
  // Tensors come back in data order, which is the order they were written.
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].name, in[i].name);
    EXPECT_EQ(out[i].dtype, in[i].dtype);
    EXPECT_EQ(out[i].shape, in[i].shape);
    EXPECT_EQ(out[i].data, in[i].data);
  }
}

TEST(Safetensors, ReadsHandWrittenFile) {
  // As another writer (e.g. Python safetensors) would produce it: unpadded
  // header, keys in any order.
  std::vector<uint8_t> data = dlrt::test::floatBytes({0.5f, -1.0f});
  auto bytes =
      withHeader(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                 R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                 data);
  std::vector<st::Tensor> out;
  std::string error;
  ASSERT_TRUE(st::parse(bytes.data(), bytes.size(), &out, nullptr, &error))
      << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "a");
  float a;
  std::memcpy(&a, out[0].data.data(), 4);
  EXPECT_EQ(a, 0.5f);
}

TEST(Safetensors, TruncatedHeader) {
  std::string error;
  EXPECT_TRUE(parseFails({1, 2, 3}, &error));
  EXPECT_NE(error.find("too small"), std::string::npos) << error;
  auto bytes =
      withHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                 {0, 0, 0, 0});
  bytes.resize(20); // the header claims more bytes than there are
  EXPECT_TRUE(parseFails(bytes, &error));
  EXPECT_NE(error.find("exceeds the file size"), std::string::npos) << error;
}

TEST(Safetensors, OffsetsOutOfRange) {
  std::string error;
  auto bytes =
      withHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                 {0, 0, 0, 0});
  EXPECT_TRUE(parseFails(bytes, &error));
  EXPECT_NE(error.find("outside"), std::string::npos) << error;
  bytes =
      withHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",
                 {0, 0, 0, 0});
  EXPECT_TRUE(parseFails(bytes, &error));
  bytes =
      withHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})",
                 {0, 0, 0, 0});
  EXPECT_TRUE(parseFails(bytes, &error));
}

TEST(Safetensors, ShapeDisagreesWithOffsets) {
  std::string error;
  auto bytes =
      withHeader(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                 std::vector<uint8_t>(8));
  EXPECT_TRUE(parseFails(bytes, &error));
  EXPECT_NE(error.find("need 12 bytes"), std::string::npos) << error;
  // A shape whose byte size overflows 64 bits.
  bytes = withHeader(R"({"a":{"dtype":"F64","shape":[4611686018427387904,4],)"
                     R"("data_offsets":[0,8]}})",
                     std::vector<uint8_t>(8));
  EXPECT_TRUE(parseFails(bytes, &error));
}

TEST(Safetensors, BadJson) {
  std::string error;
  EXPECT_TRUE(parseFails(withHeader(R"({"a": {"dtype": )"), &error));
  EXPECT_NE(error.find("not a JSON object"), std::string::npos) << error;
  EXPECT_TRUE(parseFails(withHeader("[1, 2]"), &error));
  EXPECT_TRUE(parseFails(withHeader(R"({"a": 3})"), &error));
  EXPECT_NE(error.find("tensor 'a'"), std::string::npos) << error;
  EXPECT_TRUE(parseFails(
      withHeader(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}})",
                 {0}),
      &error));
  EXPECT_NE(error.find("unknown dtype"), std::string::npos) << error;
  EXPECT_TRUE(parseFails(withHeader(R"({"__metadata__":{"k":1}})"), &error));
  EXPECT_NE(error.find("not a string"), std::string::npos) << error;
}

TEST(Safetensors, HalfDtypesRoundTripAndNumPyReadsThem) {
  // F16 [2, 2] = 1, -2, 2^-24, inf; BF16 [3] = 1, -5.03125, NaN (payload).
  std::vector<uint8_t> f16 = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c};
  std::vector<uint8_t> bf16 = {0x80, 0x3f, 0xa1, 0xc0, 0xc1, 0x7f};
  std::vector<st::Tensor> in = {{"h", "F16", {2, 2}, f16},
                                {"b", "BF16", {3}, bf16}};
  std::vector<uint8_t> bytes = st::serialize(in);
  std::vector<st::Tensor> out;
  std::string error;
  ASSERT_TRUE(st::parse(bytes.data(), bytes.size(), &out, nullptr, &error))
      << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dtype, "F16");
  EXPECT_EQ(out[0].data, f16);
  EXPECT_EQ(out[1].dtype, "BF16");
  EXPECT_EQ(out[1].data, bf16);
  EXPECT_EQ(st::dtypeSize("F16"), 2u);
  EXPECT_EQ(st::dtypeSize("BF16"), 2u);

  // Element size 2: 3 BF16 elements are 6 bytes, not 12.
  EXPECT_TRUE(parseFails(
      withHeader(R"({"b":{"dtype":"BF16","shape":[3],"data_offsets":[0,12]}})",
                 std::vector<uint8_t>(12)),
      &error));
  EXPECT_NE(error.find("shape and dtype need 6"), std::string::npos) << error;
  // Lower case is not the spec's name.
  EXPECT_TRUE(parseFails(
      withHeader(R"({"b":{"dtype":"bf16","shape":[1],"data_offsets":[0,2]}})",
                 std::vector<uint8_t>(2)),
      &error));
  EXPECT_NE(error.find("unknown dtype 'bf16'"), std::string::npos) << error;

  // The tests' NumPy reader gets float16 and exactly widened float32.
  TempDir dir;
  std::string path = dir.file("h.safetensors");
  ASSERT_TRUE(st::writeFileAtomic(path, bytes.data(), bytes.size(), &error))
      << error;
  std::string cmd =
      "/usr/bin/python3 -c \"import sys; sys.path.insert(0, '" +
      std::string(DLRT_TEST_E2E_DIR) +
      "'); import numpy as np; from safetensors_np import read_safetensors; "
      "t, _ = read_safetensors('" + path + "'); "
      "assert t['h'].dtype == np.float16 and t['h'].shape == (2, 2); "
      "assert t['h'].ravel().tolist() == [1.0, -2.0, 2.0 ** -24, "
      "float('inf')], t['h']; "
      "assert t['b'].dtype == np.float32 and t['b'].shape == (3,); "
      "assert t['b'][:2].tolist() == [1.0, -5.03125], t['b']; "
      "assert t['b'][2:].view(np.uint32).tolist() == [0x7fc10000]\"";
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

namespace {
std::vector<std::string> listDir(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *d = opendir(path.c_str())) {
    while (dirent *e = readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
        names.push_back(e->d_name);
    closedir(d);
  }
  return names;
}
} // namespace

TEST(Safetensors, WriteFileAtomicReplaces) {
  TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  std::string error;
  std::vector<uint8_t> v1(100, 1), v2(50, 2);
  ASSERT_TRUE(st::writeFileAtomic(path, v1.data(), v1.size(), &error)) << error;
  ASSERT_TRUE(st::writeFileAtomic(path, v2.data(), v2.size(), &error)) << error;
  EXPECT_EQ(dlrt::test::readBytes(path), v2);
  EXPECT_EQ(listDir(dir.path()), std::vector<std::string>{"ckpt.safetensors"});
}

TEST(Safetensors, WriteFileAtomicMissingDirectory) {
  TempDir dir;
  std::string error;
  std::vector<uint8_t> v(10, 1);
  EXPECT_FALSE(st::writeFileAtomic(dir.file("gone/ckpt.safetensors"), v.data(),
                                   v.size(), &error));
  EXPECT_NE(error.find("No such file or directory"), std::string::npos)
      << error;
}

TEST(Safetensors, WriteFileAtomicKeepsOldFileOnWriteFailure) {
  TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  std::vector<uint8_t> old(1000, 7), big(1 << 20, 9);
  std::string error;
  ASSERT_TRUE(st::writeFileAtomic(path, old.data(), old.size(), &error))
      << error;

  // Make write() fail halfway (EFBIG) with a file size limit; this works
  // for root too, unlike a read-only directory.
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto previous = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = saved;
  limited.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  bool ok = st::writeFileAtomic(path, big.data(), big.size(), &error);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);

  EXPECT_FALSE(ok);
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
  EXPECT_EQ(dlrt::test::readBytes(path), old) << "old file must be intact";
  EXPECT_EQ(listDir(dir.path()), std::vector<std::string>{"ckpt.safetensors"})
      << "the temporary file must be removed";
}
