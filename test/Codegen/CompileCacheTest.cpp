//===- CompileCacheTest.cpp - the compile cache and kernel dedup helpers --===//
#include "codegen/CompileCache.h"
#include "codegen/KernelDedup.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

using namespace dlc::codegen;

namespace {

/// A fresh folder under the system temporary folder, removed afterwards.
struct TempDir {
  TempDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("dlc-cache-test", path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string sub(llvm::StringRef name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  llvm::SmallString<128> path;
};

/// The one entry file under |dir| (the cache's layout is kind/xx/key).
std::string onlyEntry(const std::string &dir) {
  std::string found;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end;
       it != end && !ec; it.increment(ec))
    if (it->type() == llvm::sys::fs::file_type::regular_file) {
      EXPECT_TRUE(found.empty()) << "a second entry " << it->path();
      found = it->path();
    }
  return found;
}

/// Cuts the file at |path| to its first |size| bytes.
void truncateFile(const std::string &path, uint64_t size) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  in.close();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << bytes.substr(0, size);
}

TEST(KernelDedup, AbstractsWholeIdentifiersOnly) {
  using dlc::codegen::detail::abstractIdentifier;
  EXPECT_EQ(abstractIdentifier("void k1(int k10) { k1_x(k1); }", "k1", "@"),
            "void @(int k10) { k1_x(@); }");
  EXPECT_EQ(abstractIdentifier("k1", "k1", "@"), "@");
  EXPECT_EQ(abstractIdentifier("ak1 k1a _k1", "k1", "@"), "ak1 k1a _k1");
  EXPECT_EQ(abstractIdentifier("", "k1", "@"), "");
}

TEST(CompileCache, ContentKeySeparatesParts) {
  std::string a = contentKey({"ab", "c"}), b = contentKey({"a", "bc"});
  EXPECT_NE(a, b);
  EXPECT_EQ(a, contentKey({"ab", "c"}));
  EXPECT_EQ(a.size(), 64u);
}

TEST(CompileCache, DisabledStoresNothing) {
  CompileCache cache;
  EXPECT_FALSE(cache.enabled());
  cache.store("cubin", contentKey({"x"}), std::vector<uint8_t>{1, 2, 3});
  EXPECT_FALSE(cache.lookup("cubin", contentKey({"x"})));
  EXPECT_EQ(cache.stores, 0u);
}

TEST(CompileCache, RoundTripAndCorruptEntries) {
  TempDir dir;
  CompileCache cache(dir.sub("c"));
  std::string key = contentKey({"kernel source"});
  std::vector<uint8_t> data = {0, 1, 2, 255, 7};
  EXPECT_FALSE(cache.lookup("host-obj", key));
  EXPECT_EQ(cache.misses, 1u);
  cache.store("host-obj", key, data);
  auto hit = cache.lookup("host-obj", key);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, data);
  EXPECT_EQ(cache.hits, 1u);
  // Another kind with the same key is another entry.
  EXPECT_FALSE(cache.lookup("cubin", key));

  std::string entry = onlyEntry(dir.sub("c"));
  ASSERT_FALSE(entry.empty());
  // One payload byte flipped: the digest no longer matches.
  {
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put(char(0x42));
  }
  EXPECT_FALSE(cache.lookup("host-obj", key));
  EXPECT_EQ(cache.corrupt, 1u);
  // Truncated (a half-written file), and empty.
  cache.store("host-obj", key, data);
  ASSERT_TRUE(cache.lookup("host-obj", key));
  truncateFile(entry, 30);
  EXPECT_FALSE(cache.lookup("host-obj", key));
  truncateFile(entry, 0);
  EXPECT_FALSE(cache.lookup("host-obj", key));
  EXPECT_EQ(cache.corrupt, 3u);
  // The next store replaces the bad entry.
  cache.store("host-obj", key, data);
  hit = cache.lookup("host-obj", key);
  ASSERT_TRUE(hit);
  EXPECT_EQ(*hit, data);
  EXPECT_EQ(onlyEntry(dir.sub("c")), entry); // no temporary files left
}

TEST(CompileCache, ConcurrentWritersNeverExposeAPartialEntry) {
  TempDir dir;
  std::string key = contentKey({"shared"});
  std::vector<uint8_t> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = uint8_t(i * 7 + 3);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      CompileCache cache(dir.sub("c"));
      for (int i = 0; i < 20; ++i) {
        cache.store("host-so", key, data);
        auto hit = cache.lookup("host-so", key);
        if (!hit || *hit != data)
          ++bad;
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(bad, 0);
  EXPECT_FALSE(onlyEntry(dir.sub("c")).empty());
}

TEST(CompileCache, DefaultDirFollowsTheEnvironment) {
  auto saved = [](const char *name) {
    const char *v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  auto noCache = saved("DLC_NO_CACHE"), cacheDir = saved("DLC_CACHE_DIR"),
       xdg = saved("XDG_CACHE_HOME"), home = saved("HOME");
  unsetenv("DLC_NO_CACHE");
  setenv("DLC_CACHE_DIR", "/tmp/a", 1);
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  setenv("HOME", "/tmp/home", 1);
  EXPECT_EQ(CompileCache::defaultDir(), "/tmp/a");
  setenv("DLC_CACHE_DIR", "", 1);
  EXPECT_EQ(CompileCache::defaultDir(), "/tmp/xdg/dlc");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(CompileCache::defaultDir(), "/tmp/home/.cache/dlc");
  setenv("DLC_NO_CACHE", "0", 1);
  EXPECT_EQ(CompileCache::defaultDir(), "/tmp/home/.cache/dlc");
  setenv("DLC_NO_CACHE", "1", 1);
  EXPECT_EQ(CompileCache::defaultDir(), "");
  auto restore = [](const char *name, const std::optional<std::string> &v) {
    if (v)
      setenv(name, v->c_str(), 1);
    else
      unsetenv(name);
  };
  restore("DLC_NO_CACHE", noCache);
  restore("DLC_CACHE_DIR", cacheDir);
  restore("XDG_CACHE_HOME", xdg);
  restore("HOME", home);
}

} // namespace

/// Sets the modification time of |path| to |secondsAgo| seconds ago.
static void age(const std::string &path, int secondsAgo) {
  auto when = std::chrono::system_clock::now() - std::chrono::seconds(secondsAgo);
  int fd = -1;
  ASSERT_FALSE(llvm::sys::fs::openFileForWrite(path, fd,
                                               llvm::sys::fs::CD_OpenExisting,
                                               llvm::sys::fs::OF_Append));
  EXPECT_FALSE(llvm::sys::fs::setLastAccessAndModificationTime(
      fd, llvm::sys::toTimePoint(std::chrono::system_clock::to_time_t(when))));
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
}

TEST(CompileCache, TrimEvictsTheLeastRecentlyUsedEntries) {
  TempDir dir;
  CompileCache cache(dir.sub("c"));
  std::vector<uint8_t> payload(1000, 7);
  std::string keys[3];
  for (int i = 0; i < 3; ++i) {
    keys[i] = contentKey({"entry", std::to_string(i)});
    cache.store("obj", keys[i], payload);
  }
  // Entry 0 is the oldest write, but a hit makes it the most recent use.
  auto path = [&](int i) {
    llvm::SmallString<128> p(dir.sub("c"));
    llvm::sys::path::append(p, "obj", llvm::StringRef(keys[i]).take_front(2),
                            keys[i]);
    return std::string(p);
  };
  age(path(0), 300);
  age(path(1), 200);
  age(path(2), 100);
  ASSERT_TRUE(cache.lookup("obj", keys[0]).has_value());
  // A crashed writer's temporary file, two hours old, goes too.
  std::string temp = path(2) + ".tmp-abcdefgh";
  std::ofstream(temp) << "partial";
  age(temp, 7200);

  uint64_t entryBytes = 0;
  ASSERT_FALSE(llvm::sys::fs::file_size(path(1), entryBytes));
  EXPECT_EQ(cache.trim(0), 0u) << "0 is no limit";
  EXPECT_EQ(cache.trim(3 * entryBytes), 7u) << "under the limit: only the "
                                                "stale temporary file";
  // Over 2 entries' worth: down to 90% of it, so the two least recently
  // used entries (1, then 2) go and the one just hit (0) stays.
  EXPECT_EQ(cache.trim(2 * entryBytes), 2 * entryBytes);
  EXPECT_TRUE(llvm::sys::fs::exists(path(0)));
  EXPECT_FALSE(llvm::sys::fs::exists(path(1)));
  EXPECT_FALSE(llvm::sys::fs::exists(path(2)));
  EXPECT_TRUE(cache.lookup("obj", keys[0]).has_value());
}

TEST(CompileCache, MaxSizeFromTheEnvironment) {
  const char *saved = std::getenv("DLC_CACHE_MAX_SIZE");
  std::string savedValue = saved ? saved : "";
  std::string error;
  unsetenv("DLC_CACHE_MAX_SIZE");
  EXPECT_EQ(CompileCache::maxBytesFromEnvironment(&error),
            CompileCache::kDefaultMaxBytes);
  EXPECT_EQ(CompileCache::kDefaultMaxBytes, uint64_t(5) << 30);
  setenv("DLC_CACHE_MAX_SIZE", "123", 1);
  EXPECT_EQ(CompileCache::maxBytesFromEnvironment(&error), 123u);
  setenv("DLC_CACHE_MAX_SIZE", "64M", 1);
  EXPECT_EQ(CompileCache::maxBytesFromEnvironment(&error), uint64_t(64) << 20);
  setenv("DLC_CACHE_MAX_SIZE", "2G", 1);
  EXPECT_EQ(CompileCache::maxBytesFromEnvironment(&error), uint64_t(2) << 30);
  setenv("DLC_CACHE_MAX_SIZE", "0", 1);
  EXPECT_EQ(CompileCache::maxBytesFromEnvironment(&error), 0u);
  EXPECT_TRUE(error.empty()) << error;
  setenv("DLC_CACHE_MAX_SIZE", "5 GB", 1);
  EXPECT_EQ(CompileCache::maxBytesFromEnvironment(&error),
            CompileCache::kDefaultMaxBytes);
  EXPECT_EQ(error, "DLC_CACHE_MAX_SIZE='5 GB' is not a size (bytes, or a "
                   "number with K, M or G); using the default 5G");
  error.clear();
  setenv("DLC_CACHE_MAX_SIZE", "99999999999G", 1);
  CompileCache::maxBytesFromEnvironment(&error);
  EXPECT_FALSE(error.empty()) << "overflows 64 bits";
  if (saved)
    setenv("DLC_CACHE_MAX_SIZE", savedValue.c_str(), 1);
  else
    unsetenv("DLC_CACHE_MAX_SIZE");
}
