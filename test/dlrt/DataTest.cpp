//===- DataTest.cpp - GoogleTest for dlrt's data loaders ------------------===//
// NumPy .npy/.npz (round trip, deflate entries made by NumPy itself,
// truncated/garbage files, missing arrays, float16 both ways, bfloat16
// written as float32, rounding conversions to f16/bf16), IDX (round trip, bad
// magic, truncation) and the seeded epoch permutation.
#include "runtime/data/Array.h"
#include "runtime/data/FashionMnist.h"
#include "runtime/data/Idx.h"
#include "runtime/data/Npy.h"
#include "runtime/data/Shuffle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>
#include <zlib.h>

using namespace dlrt::data;

namespace {

/// A fresh temporary folder per test.
class DataTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dlrt-data-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir + "'";
    (void)std::system(cmd.c_str());
  }
  std::string path(const std::string &name) { return dir + "/" + name; }
  std::string dir;
};

Array makeF32(std::vector<int64_t> shape) {
  Array a;
  a.dtype = DType::F32;
  a.shape = std::move(shape);
  a.data.resize(a.numel() * 4);
  float *p = reinterpret_cast<float *>(a.data.data());
  for (int64_t i = 0; i < a.numel(); ++i)
    p[i] = 0.5f * static_cast<float>(i) - 3.25f;
  return a;
}

Array makeI64(std::vector<int64_t> values) {
  Array a;
  a.dtype = DType::I64;
  a.shape = {static_cast<int64_t>(values.size())};
  a.data.resize(values.size() * 8);
  std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

void writeBytes(const std::string &p, const std::vector<uint8_t> &b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char *>(b.data()), b.size());
}

TEST_F(DataTest, NpyRoundTripAllDtypes) {
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32, DType::U8,
                  DType::Bool, DType::F16}) {
    Array a;
    a.dtype = t;
    a.shape = {2, 3};
    a.data.resize(6 * dtypeSize(t));
    for (size_t i = 0; i < a.data.size(); ++i)
      a.data[i] = t == DType::Bool ? (i % 2) : static_cast<uint8_t>(i * 7);
    std::string err;
    ASSERT_TRUE(writeNpyFile(path("a.npy"), a, err)) << err;
    Array b;
    ASSERT_TRUE(readNpyFile(path("a.npy"), b, err)) << err;
    EXPECT_EQ(b.dtype, t);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
  }
  // Header is padded to a multiple of 64 bytes as NumPy does.
  std::vector<uint8_t> bytes = serializeNpy(makeF32({5}));
  EXPECT_EQ((bytes.size() - 20) % 64, 0u);
}

TEST_F(DataTest, NpyScalarAndEmpty) {
  Array s = makeF32({});
  EXPECT_EQ(s.numel(), 1);
  std::vector<uint8_t> bytes = serializeNpy(s);
  Array r;
  std::string err;
  ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), "s", r, err)) << err;
  EXPECT_TRUE(r.shape.empty());
  EXPECT_EQ(r.data.size(), 4u);
  Array e = makeF32({0, 3});
  bytes = serializeNpy(e);
  ASSERT_TRUE(parseNpy(bytes.data(), bytes.size(), "e", r, err)) << err;
  EXPECT_EQ(r.shape, (std::vector<int64_t>{0, 3}));
}

TEST_F(DataTest, NpyVersion2Header) {
  // A hand-made version 2.0 file (u32 header length).
  std::string header = "{'descr': '<i4', 'fortran_order': False, "
                       "'shape': (2,), }";
  header.append(64 - (12 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
  uint32_t len = header.size();
  for (int i = 0; i < 4; ++i)
    b.push_back(uint8_t(len >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  int32_t vals[2] = {7, -9};
  b.insert(b.end(), reinterpret_cast<uint8_t *>(vals),
           reinterpret_cast<uint8_t *>(vals) + 8);
  Array r;
  std::string err;
  ASSERT_TRUE(parseNpy(b.data(), b.size(), "v2", r, err)) << err;
  EXPECT_EQ(r.dtype, DType::I32);
  int32_t got[2];
  std::memcpy(got, r.data.data(), 8);
  EXPECT_EQ(got[0], 7);
  EXPECT_EQ(got[1], -9);
}

TEST_F(DataTest, NpyErrors) {
  std::vector<uint8_t> good = serializeNpy(makeF32({4, 3}));
  Array r;
  std::string err;
  // Every truncation fails cleanly with a message naming the file.
  for (size_t n = 0; n < good.size(); ++n) {
    err.clear();
    EXPECT_FALSE(parseNpy(good.data(), n, "t.npy", r, err)) << n;
    EXPECT_EQ(err.rfind("t.npy: ", 0), 0u) << err;
  }
  EXPECT_FALSE(parseNpy(good.data(), good.size() - 20, "t.npy", r, err));
  EXPECT_NE(err.find("truncated data: expected 48 bytes for shape (4, 3), found 28"), std::string::npos)
      << err;

  std::string g(good.begin(), good.end());
  std::string fortran = g;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_FALSE(parseNpy(reinterpret_cast<const uint8_t *>(fortran.data()),
                        fortran.size(), "f.npy", r, err));
  EXPECT_NE(err.find("fortran_order"), std::string::npos) << err;

  std::string big = g;
  big.replace(big.find("<f4"), 3, ">f4");
  EXPECT_FALSE(parseNpy(reinterpret_cast<const uint8_t *>(big.data()),
                        big.size(), "b.npy", r, err));
  EXPECT_NE(err.find("unsupported dtype '>f4'"), std::string::npos) << err;

  // Garbage: random bytes never crash.
  std::vector<uint8_t> garbage(300);
  srand(1);
  for (int trial = 0; trial < 200; ++trial) {
    for (auto &c : garbage)
      c = static_cast<uint8_t>(rand());
    if (trial % 2)
      std::memcpy(garbage.data(), good.data(), 10);
    EXPECT_FALSE(parseNpy(garbage.data(), garbage.size(), "g", r, err));
  }
  // A header claiming a huge shape is rejected, not allocated.
  std::string huge = g;
  huge.replace(huge.find("(4, 3)"), 6, "(99999999999, 99999999999)");
  huge.resize(huge.size());
  EXPECT_FALSE(parseNpy(reinterpret_cast<const uint8_t *>(huge.data()),
                        huge.size(), "h", r, err));

  EXPECT_FALSE(readNpyFile(path("missing.npy"), r, err));
  EXPECT_NE(err.find("missing.npy: cannot open"), std::string::npos) << err;
}

TEST_F(DataTest, NpzRoundTripAndMissingArray) {
  std::vector<NamedArray> arrays = {{"x", makeF32({3, 2, 2})},
                                    {"labels", makeI64({1, 0, 2})}};
  std::string err;
  ASSERT_TRUE(writeNpz(path("d.npz"), arrays, err)) << err;
  std::vector<NamedArray> back;
  ASSERT_TRUE(readNpz(path("d.npz"), back, err)) << err;
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "x");
  EXPECT_EQ(back[0].array.shape, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(back[0].array.data, arrays[0].array.data);
  EXPECT_EQ(back[1].name, "labels");
  EXPECT_EQ(back[1].array.data, arrays[1].array.data);

  EXPECT_NE(findArray(back, "labels", "d.npz", err), nullptr);
  EXPECT_EQ(findArray(back, "input", "d.npz", err), nullptr);
  EXPECT_EQ(err, "d.npz: no array named 'input' (the file has: x, labels)");
}

TEST_F(DataTest, NpzTruncatedAndCorrupt) {
  std::vector<NamedArray> arrays = {{"x", makeF32({8, 4})}};
  std::string err;
  ASSERT_TRUE(writeNpz(path("d.npz"), arrays, err)) << err;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(readFileBytes(path("d.npz"), bytes, err));
  std::vector<NamedArray> back;
  for (size_t n : {size_t(0), size_t(10), size_t(30), bytes.size() / 2,
                   bytes.size() - 1}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    writeBytes(path("cut.npz"), cut);
    err.clear();
    EXPECT_FALSE(readNpz(path("cut.npz"), back, err)) << n;
    EXPECT_EQ(err.rfind(path("cut.npz") + ": ", 0), 0u) << err;
  }
  // A flipped data byte is caught by the CRC.
  std::vector<uint8_t> flipped = bytes;
  flipped[200] ^= 0x40;
  writeBytes(path("flip.npz"), flipped);
  EXPECT_FALSE(readNpz(path("flip.npz"), back, err));
  EXPECT_NE(err.find("CRC mismatch"), std::string::npos) << err;
  // Not a zip at all.
  writeBytes(path("text.npz"), std::vector<uint8_t>(100, 'a'));
  EXPECT_FALSE(readNpz(path("text.npz"), back, err));
  EXPECT_NE(err.find("not a valid .npz"), std::string::npos) << err;
}

TEST_F(DataTest, NpzDeflateFromNumPy) {
  // NumPy's savez_compressed writes deflate entries (with zip64 extras).
  std::string out = path("c.npz");
  std::string cmd =
      "/usr/bin/python3 -c \"import numpy as np; "
      "np.savez_compressed('" + out + "', "
      "x=np.arange(1000, dtype=np.float32).reshape(10, 100) * 0.5, "
      "labels=np.arange(10, dtype=np.int64) % 3, "
      "flags=np.array([True, False, True]))\"";
  if (std::system(cmd.c_str()) != 0)
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  std::vector<NamedArray> back;
  std::string err;
  ASSERT_TRUE(readNpz(out, back, err)) << err;
  const NamedArray *x = findArray(back, "x", out, err);
  ASSERT_NE(x, nullptr) << err;
  EXPECT_EQ(x->array.dtype, DType::F32);
  EXPECT_EQ(x->array.shape, (std::vector<int64_t>{10, 100}));
  const float *xp = reinterpret_cast<const float *>(x->array.data.data());
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(xp[i], 0.5f * i) << i;
  const NamedArray *l = findArray(back, "labels", out, err);
  ASSERT_NE(l, nullptr) << err;
  const int64_t *lp = reinterpret_cast<const int64_t *>(l->array.data.data());
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(lp[i], i % 3);
  const NamedArray *f = findArray(back, "flags", out, err);
  ASSERT_NE(f, nullptr) << err;
  EXPECT_EQ(f->array.dtype, DType::Bool);
  EXPECT_EQ(f->array.data, (std::vector<uint8_t>{1, 0, 1}));

  // Random byte flips anywhere in a deflate archive never crash: either the
  // zip structure, the inflater or the CRC catches them (or, rarely, a
  // flip lands in an unchecked field and the file still reads).
  {
    std::vector<uint8_t> orig;
    ASSERT_TRUE(readFileBytes(out, orig, err));
    srand(5);
    int failures = 0;
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<uint8_t> bad = orig;
      for (int k = 0; k < 3; ++k)
        bad[rand() % bad.size()] ^= static_cast<uint8_t>(1 + rand() % 255);
      writeBytes(path("fuzz.npz"), bad);
      failures += !readNpz(path("fuzz.npz"), back, err);
    }
    EXPECT_GT(failures, 200);
  }
  // A truncated deflate entry fails cleanly.
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(readFileBytes(out, bytes, err));
  bytes.resize(bytes.size() - 150);
  writeBytes(path("cut.npz"), bytes);
  EXPECT_FALSE(readNpz(path("cut.npz"), back, err));

  // And NumPy reads what we write.
  ASSERT_TRUE(writeNpz(path("w.npz"), {{"y", makeF32({2, 3})}}, err)) << err;
  std::string check = "/usr/bin/python3 -c \"import numpy as np; "
                      "d = np.load('" + path("w.npz") + "'); "
                      "assert d['y'].dtype == np.float32; "
                      "assert d['y'].shape == (2, 3); "
                      "assert d['y'][1, 2] == 0.5 * 5 - 3.25\"";
  EXPECT_EQ(std::system(check.c_str()), 0);
}

/// A one-entry .npz whose deflate entry "x.npy" holds |npy| but whose
/// headers claim |claimedRawSize| uncompressed bytes.
std::vector<uint8_t> deflateNpz(const std::vector<uint8_t> &npy,
                                uint32_t claimedRawSize) {
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::vector<uint8_t> comp(deflateBound(&zs, npy.size()));
  zs.next_in = const_cast<Bytef *>(npy.data());
  zs.avail_in = npy.size();
  zs.next_out = comp.data();
  zs.avail_out = comp.size();
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  comp.resize(zs.total_out);
  deflateEnd(&zs);
  uint32_t crc = crc32(0, npy.data(), npy.size());
  std::vector<uint8_t> z;
  auto w16 = [&](uint32_t v) {
    z.push_back(v & 0xff);
    z.push_back(v >> 8 & 0xff);
  };
  auto w32 = [&](uint32_t v) {
    w16(v & 0xffff);
    w16(v >> 16);
  };
  const std::string name = "x.npy";
  auto header = [&](bool central) {
    w32(central ? 0x02014b50 : 0x04034b50);
    if (central)
      w16(20);
    w16(20); // version needed
    w16(0);  // flags
    w16(8);  // deflate
    w32(0);  // time, date
    w32(crc);
    w32(comp.size());
    w32(claimedRawSize);
    w16(name.size());
    w16(0); // extra
    if (central) {
      w32(0); // comment, disk
      w16(0); // internal attributes
      w32(0); // external attributes
      w32(0); // local header offset
    }
    z.insert(z.end(), name.begin(), name.end());
  };
  header(false);
  z.insert(z.end(), comp.begin(), comp.end());
  uint32_t cd = z.size();
  header(true);
  uint32_t cdSize = z.size() - cd;
  w32(0x06054b50);
  w32(0);
  w16(1);
  w16(1);
  w32(cdSize);
  w32(cd);
  w16(0);
  return z;
}

// A deflate entry's recorded size is only a claim: reading allocates what
// the data inflates to, and a mismatch either way is an error (fuzz
// regression: a 100-byte file once made the reader allocate 2.5 GiB).
TEST_F(DataTest, NpzDeflateSizeMismatch) {
  Array a = makeF32({4, 8});
  std::vector<uint8_t> npy = serializeNpy(a);
  std::vector<NamedArray> back;
  std::string err;
  std::vector<uint8_t> good = deflateNpz(npy, npy.size());
  ASSERT_TRUE(parseNpz(good.data(), good.size(), "g.npz", back, err)) << err;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].array.data, a.data);

  std::vector<uint8_t> huge = deflateNpz(npy, 0xFFFFFFF0u);
  EXPECT_FALSE(parseNpz(huge.data(), huge.size(), "h.npz", back, err));
  EXPECT_NE(err.find("h.npz: entry 'x.npy': deflate data smaller than its "
                     "recorded size"),
            std::string::npos)
      << err;
  std::vector<uint8_t> small = deflateNpz(npy, npy.size() - 1);
  EXPECT_FALSE(parseNpz(small.data(), small.size(), "s.npz", back, err));
  EXPECT_NE(err.find("deflate data larger than its recorded size"),
            std::string::npos)
      << err;
}

TEST_F(DataTest, IdxRoundTripGzipAndPlain) {
  Array a;
  a.dtype = DType::U8;
  a.shape = {3, 4, 5};
  a.data.resize(60);
  for (int i = 0; i < 60; ++i)
    a.data[i] = static_cast<uint8_t>(i * 4);
  Array f = makeF32({6});
  for (bool gz : {true, false}) {
    std::string p = path(gz ? "a.idx.gz" : "a.idx");
    std::string err;
    ASSERT_TRUE(writeIdx(p, a, gz, err)) << err;
    Array b;
    ASSERT_TRUE(readIdx(p, b, err)) << err;
    EXPECT_EQ(b.dtype, DType::U8);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
    // Multi-byte elements are big-endian on disk and native in memory.
    ASSERT_TRUE(writeIdx(p, f, gz, err)) << err;
    ASSERT_TRUE(readIdx(p, b, err)) << err;
    EXPECT_EQ(b.dtype, DType::F32);
    EXPECT_EQ(b.data, f.data);
  }
  // The plain file really is plain: magic bytes 00 00 08 03.
  std::vector<uint8_t> bytes;
  std::string err;
  ASSERT_TRUE(writeIdx(path("p.idx"), a, false, err));
  ASSERT_TRUE(readFileBytes(path("p.idx"), bytes, err));
  ASSERT_GE(bytes.size(), 16u);
  EXPECT_EQ(bytes[2], 0x08);
  EXPECT_EQ(bytes[3], 3);
  EXPECT_EQ(bytes.size(), 16u + 60u);
}

TEST_F(DataTest, IdxErrors) {
  std::string err;
  Array r;
  writeBytes(path("bad.idx"), {0x12, 0x34, 0x08, 0x01, 0, 0, 0, 1, 7});
  EXPECT_FALSE(readIdx(path("bad.idx"), r, err));
  EXPECT_NE(err.find("bad magic 0x12340801"), std::string::npos) << err;
  writeBytes(path("type.idx"), {0, 0, 0x07, 0x01, 0, 0, 0, 1, 7});
  EXPECT_FALSE(readIdx(path("type.idx"), r, err));
  EXPECT_NE(err.find("bad magic"), std::string::npos) << err;
  writeBytes(path("short.idx"), {0, 0, 0x08, 0x01, 0, 0, 0, 5, 1, 2});
  EXPECT_FALSE(readIdx(path("short.idx"), r, err));
  EXPECT_NE(err.find("truncated data"), std::string::npos) << err;
  writeBytes(path("long.idx"), {0, 0, 0x08, 0x01, 0, 0, 0, 1, 1, 2});
  EXPECT_FALSE(readIdx(path("long.idx"), r, err));
  EXPECT_NE(err.find("trailing bytes"), std::string::npos) << err;
  EXPECT_FALSE(readIdx(path("none.idx"), r, err));
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
  // A truncated gzip stream.
  Array a;
  a.dtype = DType::U8;
  a.shape = {1000};
  a.data.resize(1000);
  for (int i = 0; i < 1000; ++i)
    a.data[i] = static_cast<uint8_t>((i * 7919) >> 3);
  ASSERT_TRUE(writeIdx(path("z.gz"), a, true, err)) << err;
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(readFileBytes(path("z.gz"), bytes, err));
  bytes.resize(bytes.size() / 2);
  writeBytes(path("zcut.gz"), bytes);
  EXPECT_FALSE(readIdx(path("zcut.gz"), r, err));
}

TEST_F(DataTest, FashionMnistFromGeneratedFiles) {
  Array images;
  images.dtype = DType::U8;
  images.shape = {2, 28, 28};
  images.data.assign(2 * 784, 0);
  images.data[0] = 255;
  images.data[784 + 5] = 51;
  Array labels;
  labels.dtype = DType::U8;
  labels.shape = {2};
  labels.data = {9, 3};
  std::string err;
  ASSERT_TRUE(writeIdx(path("t10k-images-idx3-ubyte.gz"), images, true, err));
  ASSERT_TRUE(writeIdx(path("t10k-labels-idx1-ubyte.gz"), labels, true, err));
  LabelledSplit s;
  ASSERT_TRUE(loadFashionMnist(dir, /*train=*/false, s, err)) << err;
  EXPECT_EQ(s.images.dtype, DType::F32);
  const float *p = reinterpret_cast<const float *>(s.images.data.data());
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[784 + 5], 51.0f / 255.0f);
  EXPECT_EQ(p[1], 0.0f);
  EXPECT_EQ(s.labels.dtype, DType::I64);
  const int64_t *l = reinterpret_cast<const int64_t *>(s.labels.data.data());
  EXPECT_EQ(l[0], 9);
  EXPECT_EQ(l[1], 3);
  // The train split is missing here.
  EXPECT_FALSE(loadFashionMnist(dir, /*train=*/true, s, err));
  EXPECT_NE(err.find("apt-get install dataset-fashion-mnist"),
            std::string::npos) << err;
  EXPECT_FALSE(loadFashionMnist(path("nowhere"), true, s, err));
  EXPECT_NE(err.find("fashion-mnist:DIR"), std::string::npos) << err;
  // Out-of-range labels are rejected.
  labels.data = {9, 10};
  ASSERT_TRUE(writeIdx(path("t10k-labels-idx1-ubyte.gz"), labels, true, err));
  EXPECT_FALSE(loadFashionMnist(dir, false, s, err));
  EXPECT_NE(err.find("outside 0..9"), std::string::npos) << err;
}

TEST(Shuffle, DeterministicPermutation) {
  for (int64_t n : {0, 1, 2, 7, 1000}) {
    std::vector<int64_t> p = epochPermutation(n, 42, 3);
    EXPECT_EQ(p, epochPermutation(n, 42, 3));
    std::vector<int64_t> sorted = p;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(sorted[i], i);
  }
  std::vector<int64_t> a = epochPermutation(1000, 42, 0);
  EXPECT_NE(a, epochPermutation(1000, 42, 1));
  EXPECT_NE(a, epochPermutation(1000, 43, 0));
  std::vector<int64_t> id(1000);
  for (int i = 0; i < 1000; ++i)
    id[i] = i;
  EXPECT_NE(a, id);
  // Pinned values: the order must not change between builds or platforms
  // (std::mt19937_64 is fully specified; the bounded draw is our own).
  std::vector<int64_t> small = epochPermutation(8, 0, 0);
  std::string s;
  for (int64_t v : small)
    s += std::to_string(v) + " ";
  EXPECT_EQ(s, "7 4 0 1 5 2 3 6 ") << "permutation of 8 changed: " << s;
}

TEST(Shuffle, UniformBelowIsRoughlyUniform) {
  std::mt19937_64 e(7);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i)
    ++counts[uniformBelow(e, 3)];
  // Each bucket expects 10000; 5 sigma is about 410.
  for (int c : counts)
    EXPECT_NEAR(c, 10000, 410);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(uniformBelow(e, 1), 0u);
}

TEST(ArrayTest, ConvertAndGather) {
  Array a;
  a.dtype = DType::U8;
  a.shape = {3, 2};
  a.data = {1, 2, 3, 4, 5, 6};
  int64_t idx[3] = {2, -1, 0};
  float out[6];
  gatherSamples(a, idx, 3, DType::F32, out);
  EXPECT_EQ(out[0], 5.f);
  EXPECT_EQ(out[1], 6.f);
  EXPECT_EQ(out[2], 0.f);
  EXPECT_EQ(out[3], 0.f);
  EXPECT_EQ(out[4], 1.f);
  EXPECT_EQ(out[5], 2.f);
  double d[2] = {2.75, -1.5};
  int64_t i64[2];
  convertElements(d, DType::F64, i64, DType::I64, 2);
  EXPECT_EQ(i64[0], 2);
  EXPECT_EQ(i64[1], -1);
  EXPECT_EQ(a.describe(), "(3, 2) uint8");
}


//===----------------------------------------------------------------------===//
// f16 and bf16.
//===----------------------------------------------------------------------===//

Array makeHalf(DType t, std::vector<uint16_t> bits,
               std::vector<int64_t> shape) {
  Array a;
  a.dtype = t;
  a.shape = std::move(shape);
  a.data.resize(bits.size() * 2);
  std::memcpy(a.data.data(), bits.data(), a.data.size());
  return a;
}

std::vector<uint16_t> halfBits(const Array &a) {
  std::vector<uint16_t> v(a.data.size() / 2);
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

TEST_F(DataTest, Float16NpzRoundTripWithNumPy) {
  // NumPy writes float16 (every special: subnormals, -0, inf, NaN, the
  // largest finite); we read the same bits as DType::F16.
  std::string in = path("h.npz");
  std::string cmd =
      "/usr/bin/python3 -c \"import numpy as np; "
      "np.savez('" + in + "', h=np.array([[1.0, -2.5, 6.0e-8, -0.0], "
      "[65504.0, np.inf, np.nan, 0.333]], dtype=np.float16))\"";
  if (std::system(cmd.c_str()) != 0)
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  std::vector<NamedArray> back;
  std::string err;
  ASSERT_TRUE(readNpz(in, back, err)) << err;
  const NamedArray *h = findArray(back, "h", in, err);
  ASSERT_NE(h, nullptr) << err;
  EXPECT_EQ(h->array.dtype, DType::F16);
  EXPECT_EQ(h->array.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(h->array.describe(), "(2, 4) float16");
  // 0.333 -> 0x3554 (0.33325195...), 6e-8 -> the smallest subnormal 0x0001.
  EXPECT_EQ(halfBits(h->array),
            (std::vector<uint16_t>{0x3c00, 0xc100, 0x0001, 0x8000, 0x7bff,
                                   0x7c00, 0x7e00, 0x3554}));

  // We write float16 ('<f2') that NumPy reads back bit for bit.
  Array w = makeHalf(DType::F16, {0x3c00, 0x0001, 0xfbff, 0x7c01}, {4});
  ASSERT_TRUE(writeNpz(path("w.npz"), {{"y", w}}, err)) << err;
  std::string check =
      "/usr/bin/python3 -c \"import numpy as np; "
      "d = np.load('" + path("w.npz") + "'); "
      "assert d['y'].dtype == np.float16, d['y'].dtype; "
      "assert d['y'].view(np.uint16).tolist() == "
      "[0x3c00, 0x0001, 0xfbff, 0x7c01], d['y'].view(np.uint16)\"";
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST_F(DataTest, BFloat16IsWrittenAsExactFloat32) {
  // NumPy has no bfloat16: a BF16 array becomes float32 with the same
  // values (bits << 16), NaN payloads included.
  Array b =
      makeHalf(DType::BF16, {0x3f80, 0xc0a1, 0x0001, 0xff80, 0x7fc1}, {5});
  EXPECT_EQ(b.describe(), "(5,) bfloat16");
  std::string err;
  ASSERT_TRUE(writeNpz(path("b.npz"), {{"b", b}}, err)) << err;
  std::vector<NamedArray> back;
  ASSERT_TRUE(readNpz(path("b.npz"), back, err)) << err;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].array.dtype, DType::F32);
  std::vector<uint32_t> bits(5);
  ASSERT_EQ(back[0].array.data.size(), 20u);
  std::memcpy(bits.data(), back[0].array.data.data(), 20);
  EXPECT_EQ(bits, (std::vector<uint32_t>{0x3f800000, 0xc0a10000, 0x00010000,
                                         0xff800000, 0x7fc10000}));
  std::string check =
      "/usr/bin/python3 -c \"import numpy as np; "
      "d = np.load('" + path("b.npz") + "'); "
      "assert d['b'].dtype == np.float32; "
      "assert d['b'][:2].tolist() == [1.0, -5.03125], d['b']\"";
  int rc = std::system(check.c_str());
  if (rc != 0 && std::system("/usr/bin/python3 -c 'import numpy'") != 0)
    GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  EXPECT_EQ(rc, 0);
}

TEST_F(DataTest, ConversionsToHalfRoundToNearestEven) {
  auto toHalf = [](const void *src, DType from, DType to, size_t n) {
    std::vector<uint16_t> out(n);
    convertElements(src, from, out.data(), to, n);
    return out;
  };
  // f32: a tie (1 + 2^-11) goes to even, 1 + 3 * 2^-11 up; 65520 overflows.
  float f[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65520.0f, -1e-9f, NAN};
  EXPECT_EQ(toHalf(f, DType::F32, DType::F16, 5),
            (std::vector<uint16_t>{0x3c00, 0x3c02, 0x7c00, 0x8000, 0x7fff}));
  float g[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 3.4e38f, -2.0f};
  EXPECT_EQ(toHalf(g, DType::F32, DType::BF16, 4),
            (std::vector<uint16_t>{0x3f80, 0x3f82, 0x7f80, 0xc000}));
  // f64 is rounded once: just above a tie rounds up, which going through
  // f32 (where it becomes the tie) would not.
  double d[] = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8 + 0x1p-40, 0.1};
  EXPECT_EQ(toHalf(d, DType::F64, DType::F16, 3)[0], 0x3c01);
  EXPECT_EQ(toHalf(d, DType::F64, DType::BF16, 3)[1], 0x3f81);
  EXPECT_EQ(toHalf(d, DType::F64, DType::F16, 3)[2], 0x2e66);
  EXPECT_EQ(toHalf(d, DType::F64, DType::BF16, 3)[2], 0x3dcd);
  // Integers and bools.
  int64_t i[] = {3, -2049, 100000};
  EXPECT_EQ(toHalf(i, DType::I64, DType::F16, 3),
            (std::vector<uint16_t>{0x4200, 0xe800, 0x7c00}));
  uint8_t u[] = {255, 0};
  EXPECT_EQ(toHalf(u, DType::U8, DType::BF16, 2),
            (std::vector<uint16_t>{0x437f, 0x0000}));

  // Widening is exact; to integers it truncates as static_cast does.
  uint16_t h[] = {0x3e00, 0x0001, 0xc500, 0x0000};
  float hf[4];
  convertElements(h, DType::F16, hf, DType::F32, 4);
  EXPECT_EQ(hf[0], 1.5f);
  EXPECT_EQ(hf[1], 0x1p-24f);
  EXPECT_EQ(hf[2], -5.0f);
  double hd[4];
  convertElements(h, DType::F16, hd, DType::F64, 4);
  EXPECT_EQ(hd[1], 0x1p-24);
  int32_t hi[4];
  convertElements(h, DType::F16, hi, DType::I32, 4);
  EXPECT_EQ(hi[0], 1);
  EXPECT_EQ(hi[2], -5);
  uint8_t hb[4];
  convertElements(h, DType::F16, hb, DType::Bool, 4);
  EXPECT_EQ(std::vector<uint8_t>(hb, hb + 4),
            (std::vector<uint8_t>{1, 1, 1, 0}));
  uint16_t bf[] = {0x4049, 0x8001};
  float bff[2];
  convertElements(bf, DType::BF16, bff, DType::F32, 2);
  EXPECT_EQ(bff[0], 3.140625f);
  uint32_t neg;
  std::memcpy(&neg, &bff[1], 4);
  EXPECT_EQ(neg, 0x80010000u);
  // f16 -> bf16 widens exactly, then rounds: 1 + 2^-10 is below half a bf16
  // ulp (2^-8) above 1.
  uint16_t fromF16[1] = {0x3c01};
  EXPECT_EQ(toHalf(fromF16, DType::F16, DType::BF16, 1)[0], 0x3f80);
}

TEST_F(DataTest, GatherSamplesIntoHalf) {
  // Batches for an f16/bf16 input from an f32 array, with zero padding.
  Array a = makeF32({3, 2}); // 0.5 i - 3.25
  int64_t idx[] = {2, -1, 0};
  std::vector<uint16_t> out(6, 0xffff);
  gatherSamples(a, idx, 3, DType::F16, out.data());
  // -1.25 -> 0xbd00, -0.75 -> 0xba00; -3.25 -> 0xc280, -2.75 -> 0xc180.
  EXPECT_EQ(out, (std::vector<uint16_t>{0xbd00, 0xba00, 0, 0, 0xc280, 0xc180}));
  gatherSamples(a, idx, 3, DType::BF16, out.data());
  EXPECT_EQ(out, (std::vector<uint16_t>{0xbfa0, 0xbf40, 0, 0, 0xc050, 0xc030}));
}

TEST_F(DataTest, NpyBFloat16DescrIsNotNumPy) {
  // NumPy has no '<V2'-style bfloat16 descr that we would guess at: such a
  // file is refused with the list of supported dtypes.
  std::string header = "{'descr': '<V2', 'fortran_order': False, "
                       "'shape': (1,), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                            static_cast<uint8_t>(header.size()), 0};
  b.insert(b.end(), header.begin(), header.end());
  b.push_back(0x80);
  b.push_back(0x3f);
  Array r;
  std::string err;
  EXPECT_FALSE(parseNpy(b.data(), b.size(), "v.npy", r, err));
  EXPECT_EQ(err, "v.npy: unsupported dtype '<V2' (supported: <f4 <f8 <f2 <i8 "
                 "<i4 |u1 |b1)");
}

} // namespace
