//===- StandaloneMain.cpp - replay fuzz inputs without libFuzzer -----------===//
// Builds without -DDLC_FUZZ=ON link each fuzz target with this main(): it
// runs LLVMFuzzerTestOneInput on every file named on the command line (the
// files of a named folder, sorted), so the regression inputs replay in every
// build, sanitized or not. libFuzzer's flags (-foo=bar) are ignored.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-", 0) == 0)
      continue;
    struct stat st;
    if (stat(arg.c_str(), &st) != 0) {
      std::fprintf(stderr, "cannot read '%s'\n", arg.c_str());
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      files.push_back(arg);
      continue;
    }
    std::vector<std::string> inDir;
    if (DIR *d = opendir(arg.c_str())) {
      while (dirent *e = readdir(d))
        if (e->d_name[0] != '.')
          inDir.push_back(arg + "/" + e->d_name);
      closedir(d);
    }
    std::sort(inDir.begin(), inDir.end());
    files.insert(files.end(), inDir.begin(), inDir.end());
  }
  for (const std::string &f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read '%s'\n", f.c_str());
      return 1;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    std::fprintf(stderr, "Running: %s (%zu bytes)\n", f.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::fprintf(stderr, "Executed %zu inputs\n", files.size());
  return 0;
}
