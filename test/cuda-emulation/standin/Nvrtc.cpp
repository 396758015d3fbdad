//===- Nvrtc.cpp - stand-in NVRTC: CUDA C++ to a host shared object -------===//
// nvrtcCompileProgram compiles the program with the host C++ compiler and
// dlc_cuda_emulation.h into a shared object whose bytes stand in for the
// CUBIN; the stand-in driver's cuModuleLoadData loads it. Kernels must be
// `extern "C" __global__` (their names are looked up unmangled, as dlc's
// are); each gets DLC_EMU_EXPORT_KERNEL in a generated wrapper.
#include "DriverInternal.h"

#include "dlc_cuda_emulation_abi.h"

#include <nvrtc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct _nvrtcProgram {
  std::string source;
  std::string name;
  std::vector<std::pair<std::string, std::string>> headers; // include, text
  std::string log;
  std::string image; // the shared object, once compiled
  bool compiled = false;
};

namespace {

std::mutex gMutex;
std::set<nvrtcProgram> gPrograms;

bool live(nvrtcProgram program) {
  std::lock_guard<std::mutex> lock(gMutex);
  return gPrograms.count(program) != 0;
}

/// |source| with comments replaced by spaces (newlines kept), so that
/// offsets and line numbers still match.
std::string stripComments(const std::string &source) {
  std::string out = source;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (c == '"' || c == '\'') { // skip literals: "//" inside is no comment
      for (++i; i < out.size() && out[i] != c; ++i)
        if (out[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < out.size() && out[i + 1] == '/') {
      for (; i < out.size() && out[i] != '\n'; ++i)
        out[i] = ' ';
    } else if (c == '/' && i + 1 < out.size() && out[i + 1] == '*') {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n')
          out[i] = ' ';
      --i;
    }
  }
  return out;
}

bool isIdent(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

int lineOf(const std::string &text, size_t offset) {
  return 1 + int(std::count(text.begin(), text.begin() + offset, '\n'));
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// A kernel of the program: its name and, when it has __launch_bounds__,
/// the expression of its maximum threads per block.
struct Kernel {
  std::string name;
  std::string maxThreads;
};

/// Finds the kernels of |code| (comments stripped). Appends an NVRTC-style
/// error line to |log| for each `__global__` that is not extern "C" or whose
/// name cannot be found; returns false then.
bool findKernels(const std::string &code, const std::string &name,
                 std::vector<Kernel> *kernels, std::string *log) {
  bool ok = true;
  static const std::string kGlobal = "__global__";
  for (size_t at = code.find(kGlobal); at != std::string::npos;
       at = code.find(kGlobal, at + kGlobal.size())) {
    if ((at > 0 && isIdent(code[at - 1])) ||
        (at + kGlobal.size() < code.size() &&
         isIdent(code[at + kGlobal.size()])))
      continue;
    size_t lineStart = code.rfind('\n', at);
    lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
    if (trim(code.substr(lineStart, at - lineStart)).rfind('#', 0) == 0)
      continue; // inside a macro definition
    size_t start = code.find_last_of(";{}", at == 0 ? 0 : at - 1);
    std::string before =
        code.substr(start == std::string::npos ? 0 : start + 1,
                    at - (start == std::string::npos ? 0 : start + 1));
    bool externC = before.find("extern \"C\"") != std::string::npos;
    if (!externC && start != std::string::npos && code[start] == '{') {
      // `extern "C" { __global__ void k(...) ... }`
      size_t prev = code.find_last_of(";{}", start == 0 ? 0 : start - 1);
      std::string head =
          trim(code.substr(prev == std::string::npos ? 0 : prev + 1,
                           start - (prev == std::string::npos ? 0 : prev + 1)));
      externC = head.size() >= 10 &&
                head.compare(head.size() - 10, 10, "extern \"C\"") == 0;
    }
    // The name: the last identifier before the parameter list's '(',
    // skipping __launch_bounds__(...) and __align__(...).
    std::string kernel, last, maxThreads;
    size_t i = at + kGlobal.size();
    while (i < code.size()) {
      char c = code[i];
      if (isIdent(c)) {
        size_t b = i;
        while (i < code.size() && isIdent(code[i]))
          ++i;
        last = code.substr(b, i - b);
        if (last == "__launch_bounds__" || last == "__align__") {
          size_t open = code.find('(', i);
          if (open == std::string::npos)
            break;
          int depth = 0;
          size_t firstComma = std::string::npos;
          for (i = open; i < code.size(); ++i) {
            depth += code[i] == '(' ? 1 : code[i] == ')' ? -1 : 0;
            if (depth == 1 && code[i] == ',' && firstComma == std::string::npos)
              firstComma = i;
            if (depth == 0)
              break;
          }
          if (last == "__launch_bounds__")
            maxThreads =
                code.substr(open + 1, std::min(firstComma, i) - open - 1);
          ++i;
          last.clear();
        }
        continue;
      }
      if (c == '(') {
        kernel = last;
        break;
      }
      if (c == ';' || c == '{')
        break;
      ++i;
    }
    int line = lineOf(code, at);
    if (!externC) {
      *log += name + "(" + std::to_string(line) +
              "): error: __global__ function " +
              (kernel.empty() ? std::string("") : "\"" + kernel + "\" ") +
              "is not extern \"C\": the dlrt CUDA stand-in supports only "
              "extern \"C\" kernels\n";
      ok = false;
      continue;
    }
    if (kernel.empty()) {
      *log += name + "(" + std::to_string(line) +
              "): error: the dlrt CUDA stand-in cannot find this __global__ "
              "function's name\n";
      ok = false;
      continue;
    }
    if (std::find_if(kernels->begin(), kernels->end(), [&](const Kernel &k) {
          return k.name == kernel;
        }) == kernels->end())
      kernels->push_back({kernel, trim(maxThreads)});
  }
  return ok;
}

/// `extern __shared__ T name[];` -> `T *name = (T
/// *)::dlc_emu::dynamic_shared();` (the emulation header's dynamic shared
/// memory), newlines kept.
std::string rewriteDynamicShared(const std::string &source) {
  static const std::regex pattern(
      R"(extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?)"
      R"(([A-Za-z_][\w:<>\s]*?)\s+(\w+)\s*\[\s*\]\s*)"
      R"((?:__align__\s*\(\s*\d+\s*\)\s*)?;)");
  std::string out;
  auto begin = source.cbegin();
  std::smatch match;
  while (std::regex_search(begin, source.cend(), match, pattern)) {
    out.append(begin, match[0].first);
    std::string type = trim(match[1].str());
    out += type + " *" + match[2].str() + " = (" + type +
           " *)::dlc_emu::dynamic_shared();";
    out.append(size_t(std::count(match[0].first, match[0].second, '\n')), '\n');
    begin = match[0].second;
  }
  out.append(begin, source.cend());
  return out;
}

bool usesCollectives(const std::string &code) {
  static const char *const kNames[] = {
      "__syncthreads", "__syncwarp", "__shfl",
      "__ballot_sync", "__any_sync", "__all_sync",
      "__activemask",  "__match_",   "__reduce_"};
  for (const char *n : kNames)
    if (code.find(n) != std::string::npos)
      return true;
  return false;
}

bool startsWith(const std::string &s, const char *prefix) {
  return s.rfind(prefix, 0) == 0;
}

/// Translates NVRTC options into host compiler flags. Returns false with a
/// log line for an option NVRTC does not know.
bool parseOptions(int count, const char *const *options, int *arch,
                  std::vector<std::string> *flags, std::string *stdFlag,
                  std::string *log) {
  // Options that change code generation on a GPU only; NVRTC documents
  // them (nvrtc "Supported Compile Options").
  static const char *const kIgnored[] = {"-default-device",
                                         "--device-as-default-execution-space",
                                         "-lineinfo",
                                         "--generate-line-info",
                                         "-G",
                                         "--device-debug",
                                         "-restrict",
                                         "--restrict",
                                         "-extra-device-vectorization",
                                         "--extra-device-vectorization",
                                         "-dopt=on",
                                         "-dopt=off",
                                         "--dopt=on",
                                         "--dopt=off",
                                         "-rdc=false",
                                         "--relocatable-device-code=false",
                                         "-dlto",
                                         "--dlink-time-opt",
                                         "-ewp",
                                         "--extensible-whole-program",
                                         "-no-source-include",
                                         "--no-source-include",
                                         "-std=c++17"};
  static const char *const kIgnoredPrefixes[] = {"-ftz=",
                                                 "--ftz=",
                                                 "-prec-sqrt=",
                                                 "--prec-sqrt=",
                                                 "-prec-div=",
                                                 "--prec-div=",
                                                 "-fmad=",
                                                 "--fmad=",
                                                 "-maxrregcount=",
                                                 "--maxrregcount=",
                                                 "-Xptxas=",
                                                 "--ptxas-options=",
                                                 "--diag-suppress=",
                                                 "-diag-suppress=",
                                                 "--diag-error=",
                                                 "--diag-warn=",
                                                 "-split-compile=",
                                                 "--split-compile="};
  for (int i = 0; i < count; ++i) {
    if (!options[i]) {
      *log += "error: option " + std::to_string(i) + " is null\n";
      return false;
    }
    std::string o = options[i];
    std::string value;
    if (startsWith(o, "--gpu-architecture=") || startsWith(o, "-arch=")) {
      value = o.substr(o.find('=') + 1);
      std::smatch m;
      static const std::regex archPattern(R"((sm|compute)_(\d+)[af]?)");
      if (!std::regex_match(value, m, archPattern)) {
        *log += "error: invalid value for --gpu-architecture (-arch): \"" +
                value + "\"\n";
        return false;
      }
      *arch = std::stoi(m[2].str());
    } else if (startsWith(o, "--std=") || startsWith(o, "-std=")) {
      value = o.substr(o.find('=') + 1);
      static const std::set<std::string> known = {"c++03", "c++11", "c++14",
                                                  "c++17", "c++20"};
      if (!known.count(value)) {
        *log += "error: invalid value for --std: \"" + value + "\"\n";
        return false;
      }
      *stdFlag = "-std=" + value;
    } else if (startsWith(o, "-I") && o.size() > 2) {
      flags->push_back(o);
    } else if (startsWith(o, "--include-path=")) {
      flags->push_back("-I" + o.substr(15));
    } else if (startsWith(o, "-D") && o.size() > 2) {
      flags->push_back(o);
    } else if (startsWith(o, "--define-macro=")) {
      flags->push_back("-D" + o.substr(15));
    } else if (startsWith(o, "-U") && o.size() > 2) {
      flags->push_back(o);
    } else if (startsWith(o, "--undefine-macro=")) {
      flags->push_back("-U" + o.substr(17));
    } else if (o == "-w" || o == "--disable-warnings") {
      flags->push_back("-w");
    } else if (o == "--use_fast_math" || o == "-use_fast_math") {
      *log += "note: " + o +
              " accepted and ignored: the dlrt CUDA stand-in computes with "
              "the host's IEEE math\n";
    } else if (std::find_if(std::begin(kIgnored), std::end(kIgnored),
                            [&](const char *k) { return o == k; }) !=
                   std::end(kIgnored) ||
               std::find_if(std::begin(kIgnoredPrefixes),
                            std::end(kIgnoredPrefixes), [&](const char *k) {
                              return startsWith(o, k);
                            }) != std::end(kIgnoredPrefixes)) {
      continue; // meaningful on a GPU only
    } else {
      *log += "error: unrecognized option \"" + o +
              "\" (the dlrt CUDA stand-in accepts NVRTC's documented options "
              "that apply to host code)\n";
      return false;
    }
  }
  return true;
}

/// Runs |argv| and returns its exit status (-1: could not start), with its
/// stdout and stderr in |*output|.
int run(const std::vector<std::string> &argv, std::string *output) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0)
    return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipeFds[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipeFds[0]);
  posix_spawn_file_actions_addclose(&actions, pipeFds[1]);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int spawned =
      posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipeFds[1]);
  if (spawned != 0) {
    close(pipeFds[0]);
    *output +=
        "error: cannot run " + argv[0] + ": " + std::strerror(spawned) + "\n";
    return -1;
  }
  char buffer[4096];
  for (ssize_t n; (n = read(pipeFds[0], buffer, sizeof buffer)) > 0;)
    output->append(buffer, size_t(n));
  close(pipeFds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void replaceAll(std::string *text, const std::string &from,
                const std::string &to) {
  if (from.empty())
    return;
  for (size_t at = text->find(from); at != std::string::npos;
       at = text->find(from, at + to.size()))
    text->replace(at, from.size(), to);
}

/// The emulation header to -include: $DLRT_CUDA_STANDIN_EMULATION_HEADER,
/// else the precompiled one beside its .gch (unless
/// $DLRT_CUDA_STANDIN_NO_PCH is set), else the source tree's.
std::string emulationHeader() {
  if (const char *h = std::getenv("DLRT_CUDA_STANDIN_EMULATION_HEADER"))
    return h;
#ifdef DLC_EMU_PCH_HEADER
  if (!std::getenv("DLRT_CUDA_STANDIN_NO_PCH"))
    return DLC_EMU_PCH_HEADER;
#endif
  return DLC_EMU_INCLUDE_DIR "/dlc_cuda_emulation.h";
}

std::vector<std::string> compilerCommand() {
  const char *cxx = std::getenv("DLRT_CUDA_STANDIN_CXX");
  std::istringstream words(cxx && *cxx ? cxx : DLC_EMU_CXX);
  std::vector<std::string> argv;
  for (std::string w; words >> w;)
    argv.push_back(w);
  return argv;
}

nvrtcResult compile(_nvrtcProgram &p, int numOptions,
                    const char *const *options) {
  p.log.clear();
  p.image.clear();
  p.compiled = false;
  int arch = 75; // NVRTC 13's default virtual architecture
  std::vector<std::string> userFlags;
  std::string stdFlag = "-std=c++17";
  if (!parseOptions(numOptions, options, &arch, &userFlags, &stdFlag, &p.log))
    return NVRTC_ERROR_INVALID_OPTION;

  std::string code = stripComments(p.source);
  std::vector<Kernel> kernels;
  if (!findKernels(code, p.name, &kernels, &p.log))
    return NVRTC_ERROR_COMPILATION;

  const char *tmp = std::getenv("TMPDIR");
  std::string dirTemplate =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/dlrt-nvrtc-XXXXXX";
  if (!mkdtemp(dirTemplate.data())) {
    p.log += "error: cannot create a temporary directory\n";
    return NVRTC_ERROR_INTERNAL_ERROR;
  }
  namespace fs = std::filesystem;
  const std::string dir = dirTemplate;
  std::string fileName = p.name;
  std::replace(fileName.begin(), fileName.end(), '/', '_');
  const std::string sourcePath = dir + "/" + fileName;
  const std::string wrapperPath = dir + "/dlc_emu_wrapper.cpp";
  const std::string modulePath = dir + "/module.so";
  auto writeFile = [](const std::string &path, const std::string &text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
    return bool(out);
  };
  bool written = writeFile(sourcePath, rewriteDynamicShared(p.source));
  for (auto &[include, text] : p.headers)
    written = written && writeFile(dir + "/include/" + include,
                                   rewriteDynamicShared(text));

  // Headers given to nvrtcCreateProgram may hold the barriers too.
  bool collectives = usesCollectives(code);
  for (auto &[include, text] : p.headers)
    collectives = collectives || usesCollectives(stripComments(text));
  std::string wrapper = "#define __CUDA_ARCH__ " + std::to_string(arch * 10) +
                        "\n#define __CUDACC_RTC__ 1\n#include \"" + sourcePath +
                        "\"\n";
  for (const Kernel &k : kernels) {
    wrapper += "DLC_EMU_EXPORT_KERNEL(" + k.name + ")\n";
    // The stand-in's own export (not the header's): the driver checks
    // launches against __launch_bounds__ as a real one checks them against
    // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK. The compiler evaluates the
    // expression, macros included.
    if (!k.maxThreads.empty())
      wrapper += "extern \"C\" const int dlc_emu_standin_max_threads_" +
                 k.name + " = (" + k.maxThreads + ");\n";
  }
  wrapper += "extern \"C\" const int dlc_emu_abi_version = "
             "DLC_EMU_ABI_VERSION;\n"
             "extern \"C\" const int dlc_emu_uses_collectives = " +
             std::string(collectives ? "1" : "0") + ";\n";
  written = written && writeFile(wrapperPath, wrapper);

  nvrtcResult result = NVRTC_SUCCESS;
  if (!written) {
    p.log += "error: cannot write the program to " + dir + "\n";
    result = NVRTC_ERROR_INTERNAL_ERROR;
  } else {
    // Keep these flags in step with the precompiled header's rule in
    // CMakeLists.txt, or GCC silently ignores the .gch.
    std::vector<std::string> argv = compilerCommand();
    for (const char *f : {"-O1", "-fPIC", "-shared"})
      argv.push_back(f);
    argv.push_back(stdFlag);
    argv.push_back("-include");
    argv.push_back(emulationHeader());
    argv.push_back("-I" DLC_EMU_INCLUDE_DIR);
    argv.push_back("-I" DLC_EMU_CUDA_INCLUDE_DIR);
    argv.push_back("-I" + dir + "/include");
    for (const std::string &f : userFlags)
      argv.push_back(f);
    if (std::getenv("DLRT_CUDA_STANDIN_CHECK_PCH"))
      argv.push_back("-Winvalid-pch");
    argv.push_back("-o");
    argv.push_back(modulePath);
    argv.push_back(wrapperPath);
    std::string output;
    auto started = std::chrono::steady_clock::now();
    int status = run(argv, &output);
    dlc::standin::log(
        "nvrtc: " + p.name + ": " + std::to_string(kernels.size()) +
        " kernel(s) compiled in " +
        std::to_string(std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - started)
                           .count()) +
        " s with " + emulationHeader());
    replaceAll(&output, sourcePath, p.name);
    replaceAll(&output, wrapperPath, p.name + " (stand-in wrapper)");
    replaceAll(&output, dir + "/include/", "");
    p.log += output;
    if (status != 0) {
      result = NVRTC_ERROR_COMPILATION;
    } else {
      std::ifstream in(modulePath, std::ios::binary);
      p.image.assign(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
      if (p.image.empty()) {
        p.log += "error: the host compiler wrote no module\n";
        result = NVRTC_ERROR_INTERNAL_ERROR;
      } else {
        p.compiled = true;
      }
    }
  }
  std::error_code ignored;
  if (!std::getenv("DLRT_CUDA_STANDIN_KEEP"))
    fs::remove_all(dir, ignored);
  else
    dlc::standin::log("kept " + dir, true);
  return result;
}

} // namespace

extern "C" {

const char *nvrtcGetErrorString(nvrtcResult result) {
  switch (result) {
#define DLC_NVRTC_CASE(name)                                                   \
  case name:                                                                   \
    return #name;
    DLC_NVRTC_CASE(NVRTC_SUCCESS)
    DLC_NVRTC_CASE(NVRTC_ERROR_OUT_OF_MEMORY)
    DLC_NVRTC_CASE(NVRTC_ERROR_PROGRAM_CREATION_FAILURE)
    DLC_NVRTC_CASE(NVRTC_ERROR_INVALID_INPUT)
    DLC_NVRTC_CASE(NVRTC_ERROR_INVALID_PROGRAM)
    DLC_NVRTC_CASE(NVRTC_ERROR_INVALID_OPTION)
    DLC_NVRTC_CASE(NVRTC_ERROR_COMPILATION)
    DLC_NVRTC_CASE(NVRTC_ERROR_BUILTIN_OPERATION_FAILURE)
    DLC_NVRTC_CASE(NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION)
    DLC_NVRTC_CASE(NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION)
    DLC_NVRTC_CASE(NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID)
    DLC_NVRTC_CASE(NVRTC_ERROR_INTERNAL_ERROR)
    DLC_NVRTC_CASE(NVRTC_ERROR_TIME_FILE_WRITE_FAILED)
    DLC_NVRTC_CASE(NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED)
    DLC_NVRTC_CASE(NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED)
    DLC_NVRTC_CASE(NVRTC_ERROR_PCH_CREATE)
    DLC_NVRTC_CASE(NVRTC_ERROR_CANCELLED)
    DLC_NVRTC_CASE(NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED)
#undef DLC_NVRTC_CASE
  }
  return "NVRTC_ERROR unknown";
}

nvrtcResult nvrtcVersion(int *major, int *minor) {
  if (!major || !minor)
    return NVRTC_ERROR_INVALID_INPUT;
  *major = 13;
  *minor = 0;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src,
                               const char *name, int numHeaders,
                               const char *const *headers,
                               const char *const *includeNames) {
  if (!prog || !src || numHeaders < 0 ||
      (numHeaders > 0 && (!headers || !includeNames)))
    return NVRTC_ERROR_INVALID_INPUT;
  auto p = std::make_unique<_nvrtcProgram>();
  p->source = src;
  p->name = name && *name ? name : "default_program";
  for (int i = 0; i < numHeaders; ++i) {
    if (!includeNames[i] || !headers[i])
      return NVRTC_ERROR_INVALID_INPUT;
    p->headers.emplace_back(includeNames[i], headers[i]);
  }
  std::lock_guard<std::mutex> lock(gMutex);
  *prog = p.release();
  gPrograms.insert(*prog);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog) {
  if (!prog)
    return NVRTC_ERROR_INVALID_INPUT;
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gPrograms.erase(*prog))
    return NVRTC_ERROR_INVALID_PROGRAM;
  delete *prog;
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions,
                                const char *const *options) {
  if (!live(prog))
    return NVRTC_ERROR_INVALID_PROGRAM;
  if (numOptions < 0 || (numOptions > 0 && !options))
    return NVRTC_ERROR_INVALID_INPUT;
  return compile(*prog, numOptions, options);
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *logSizeRet) {
  if (!live(prog))
    return NVRTC_ERROR_INVALID_PROGRAM;
  if (!logSizeRet)
    return NVRTC_ERROR_INVALID_INPUT;
  *logSizeRet = prog->log.size() + 1; // with the terminating NUL
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log) {
  if (!live(prog))
    return NVRTC_ERROR_INVALID_PROGRAM;
  if (!log)
    return NVRTC_ERROR_INVALID_INPUT;
  std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *cubinSizeRet) {
  if (!live(prog))
    return NVRTC_ERROR_INVALID_PROGRAM;
  if (!cubinSizeRet)
    return NVRTC_ERROR_INVALID_INPUT;
  if (!prog->compiled)
    return NVRTC_ERROR_INVALID_PROGRAM;
  *cubinSizeRet = prog->image.size();
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin) {
  if (!live(prog))
    return NVRTC_ERROR_INVALID_PROGRAM;
  if (!cubin)
    return NVRTC_ERROR_INVALID_INPUT;
  if (!prog->compiled)
    return NVRTC_ERROR_INVALID_PROGRAM;
  std::memcpy(cubin, prog->image.data(), prog->image.size());
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ptxSizeRet) {
  if (!live(prog))
    return NVRTC_ERROR_INVALID_PROGRAM;
  (void)ptxSizeRet;
  static const char kNote[] =
      "error: the dlrt CUDA stand-in produces no PTX: its modules are host "
      "code; use nvrtcGetCUBIN\n";
  if (prog->log.find(kNote) == std::string::npos)
    prog->log += kNote;
  return NVRTC_ERROR_INVALID_INPUT;
}

nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx) {
  (void)ptx;
  return nvrtcGetPTXSize(prog, nullptr);
}

} // extern "C"
