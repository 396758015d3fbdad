//===- Launch.cpp - dlrt launch: starts the local ranks of a job ----------===//
// A static-rendezvous launcher in the manner of torchrun
// (torch.distributed.run with --rdzv-backend=static): it starts
// --nproc-per-node copies of a program with the torchrun environment, relays
// their output line by line with a "[rank R] " prefix, and ends every rank
// when one fails. One thread: the ranks' pipes and a self-pipe for signals
// are multiplexed with poll().
#include "Commands.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace dlrt::cli {

namespace {

using Clock = std::chrono::steady_clock;

/// After the first failure (or a signal to the launcher) the other ranks get
/// SIGTERM, and SIGKILL when they are still running this long after it.
constexpr std::chrono::seconds kGracePeriod{5};
/// When every rank has exited, output still buffered in the pipes is relayed
/// until they close or for this long (a process the rank left behind may
/// hold them open).
constexpr std::chrono::seconds kDrainPeriod{2};
/// A line longer than this is relayed in pieces of this size, each with its
/// own prefix, so that a rank that never writes a newline cannot make the
/// launcher's memory grow without bound.
constexpr size_t kMaxLineBytes = 64 * 1024;

/// The write end of the self-pipe that the signal handler writes the signal
/// number to (the only async-signal-safe way to wake poll() without races).
int gSignalPipeWrite = -1;

void onSignal(int signal) {
  int savedErrno = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  ssize_t ignored = write(gSignalPipeWrite, &byte, 1);
  (void)ignored;
  errno = savedErrno;
}

/// "SIGKILL" for 9 (glibc's abbreviation), or the number.
std::string signalName(int signal) {
  if (const char *abbrev = sigabbrev_np(signal))
    return std::string("SIG") + abbrev;
  return std::to_string(signal);
}

/// Writes all of |data| to |fd|, retrying on EINTR and waiting when the fd is
/// non-blocking and full. Errors (e.g. EPIPE: the reader of the launcher's
/// output went away) drop the rest: the ranks must not be stopped by that.
void writeAll(int fd, const std::string &data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, -1);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

/// Prints "dlrt launch: <message>" on the launcher's stderr. The launcher's
/// own lines say "dlrt launch:" so that they stand apart from the ranks'
/// (which are "[rank R] ..." and, for dlrt, "dlrt: error: ...").
void note(const std::string &message) {
  writeAll(STDERR_FILENO, "dlrt launch: " + message + "\n");
}

/// One of a rank's two output pipes.
struct Stream {
  int fd = -1;         ///< read end, non-blocking; -1 once closed
  int target = -1;     ///< the launcher's fd the lines go to (1 or 2)
  std::string pending; ///< bytes after the last newline
};

struct Rank {
  int globalRank = 0;
  pid_t pid = -1; ///< also the rank's process group id
  bool running = false;
  Stream streams[2];
};

/// Relays the complete lines of |stream| (all of it when |flush|, the last
/// line without its newline included) with the prefix "[rank R] ".
void emitLines(Stream &stream, int globalRank, bool flush) {
  const std::string prefix = "[rank " + std::to_string(globalRank) + "] ";
  std::string out;
  size_t start = 0;
  while (true) {
    size_t newline = stream.pending.find('\n', start);
    size_t available = stream.pending.size() - start;
    if (newline == std::string::npos && available >= kMaxLineBytes)
      newline = start + kMaxLineBytes; // an over-long line: relay a piece
    if (newline == std::string::npos) {
      if (flush && available > 0) {
        out += prefix;
        out.append(stream.pending, start, available);
        out += '\n';
        start = stream.pending.size();
      }
      break;
    }
    out += prefix;
    out.append(stream.pending, start, newline - start);
    out += '\n';
    start = newline < stream.pending.size() && stream.pending[newline] == '\n'
                ? newline + 1
                : newline;
  }
  stream.pending.erase(0, start);
  // One write per batch of whole lines: lines of different ranks never mix
  // within a line (writes to a pipe or file of the launcher are not split
  // by other writers, as only this thread writes).
  if (!out.empty())
    writeAll(stream.target, out);
}

/// Reads what |stream| has now. Returns false at end of file (the stream is
/// then flushed and closed).
bool readStream(Stream &stream, int globalRank) {
  char buffer[65536];
  while (true) {
    ssize_t n = read(stream.fd, buffer, sizeof buffer);
    if (n > 0) {
      stream.pending.append(buffer, static_cast<size_t>(n));
      emitLines(stream, globalRank, /*flush=*/false);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return true;
    // End of file, or an error that ends this stream (EIO and the like).
    emitLines(stream, globalRank, /*flush=*/true);
    close(stream.fd);
    stream.fd = -1;
    return false;
  }
}

/// Resolves |program| as execvp would: a name with a slash is used as is,
/// other names are looked up in PATH (the system default path when PATH is
/// unset). The name "dlrt" is this executable, so the ranks run the
/// launcher's own version whether or not a dlrt is on PATH. Returns the path,
/// or sets |error| to the errno execvp would report (ENOENT, EACCES).
std::optional<std::string> resolveProgram(const std::string &program,
                                          int &error) {
  auto executable = [&](const std::string &path) {
    struct stat info;
    if (stat(path.c_str(), &info) != 0) {
      if (errno != ENOENT && errno != ENOTDIR)
        error = errno;
      return false;
    }
    if (!S_ISREG(info.st_mode) || access(path.c_str(), X_OK) != 0) {
      error = EACCES;
      return false;
    }
    return true;
  };
  error = ENOENT;
  if (program.empty())
    return std::nullopt;
  if (program == "dlrt") {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0)
      return std::string(self, static_cast<size_t>(n));
  }
  if (program.find('/') != std::string::npos) {
    if (executable(program))
      return program;
    return std::nullopt;
  }
  std::string path;
  if (const char *value = std::getenv("PATH")) {
    path = value;
  } else {
    size_t n = confstr(_CS_PATH, nullptr, 0);
    path.resize(n > 0 ? n - 1 : 0);
    if (n > 0)
      confstr(_CS_PATH, path.data(), n);
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos)
      end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (executable(candidate))
      return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

/// The launcher's environment with the torchrun variables of one rank set
/// (replacing inherited values).
std::vector<std::string> rankEnvironment(const LaunchOptions &options,
                                         int64_t localRank) {
  const int64_t nproc = options.nprocPerNode;
  std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(options.nodeRank * nproc + localRank)},
      {"WORLD_SIZE", std::to_string(nproc * options.nnodes)},
      {"LOCAL_RANK", std::to_string(localRank)},
      {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
      {"GROUP_RANK", std::to_string(options.nodeRank)},
      {"MASTER_ADDR", options.masterAddr},
      {"MASTER_PORT", std::to_string(options.masterPort)},
  };
  if (options.commTimeout > 0)
    set.emplace_back("DLRT_COMM_TIMEOUT", std::to_string(options.commTimeout));
  std::vector<std::string> env;
  for (char **entry = environ; *entry; ++entry) {
    std::string variable = *entry;
    std::string name = variable.substr(0, variable.find('='));
    bool replaced = std::any_of(set.begin(), set.end(), [&](const auto &kv) {
      return kv.first == name;
    });
    if (!replaced)
      env.push_back(std::move(variable));
  }
  for (const auto &[name, value] : set)
    env.push_back(name + "=" + value);
  return env;
}

/// Everything a child needs between fork and exec, prepared before fork so
/// that the child only makes async-signal-safe calls.
struct SpawnPlan {
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
};

/// Starts one rank in its own process group with stdin from /dev/null and
/// stdout/stderr into fresh pipes. Returns 0, or the errno of the failure
/// (exec's errno is sent back over a close-on-exec pipe). Sets |what| to the
/// failing step.
int spawnRank(const SpawnPlan &plan, Rank &rank, int devNull,
              const char *&what) {
  int outPipe[2], errPipe[2], execPipe[2];
  what = "cannot create a pipe";
  if (pipe2(outPipe, O_CLOEXEC) != 0)
    return errno;
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    int e = errno;
    close(outPipe[0]), close(outPipe[1]);
    return e;
  }
  if (pipe2(execPipe, O_CLOEXEC) != 0) {
    int e = errno;
    close(outPipe[0]), close(outPipe[1]), close(errPipe[0]), close(errPipe[1]);
    return e;
  }
  std::vector<char *> argv, envp;
  for (const std::string &a : plan.args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string &e : plan.env)
    envp.push_back(const_cast<char *>(e.c_str()));
  envp.push_back(nullptr);

  const pid_t parent = getpid();
  what = "cannot start a process";
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1], execPipe[0],
                   execPipe[1]})
      close(fd);
    return e;
  }
  if (pid == 0) {
    // The child: own process group (so that signals reach the whole rank,
    // the processes it starts included), killed when the launcher dies.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP})
      signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(devNull, STDIN_FILENO);
    dup2(outPipe[1], STDOUT_FILENO);
    dup2(errPipe[1], STDERR_FILENO);
    execve(plan.path.c_str(), argv.data(), envp.data());
    int e = errno;
    ssize_t ignored = write(execPipe[1], &e, sizeof e);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid); // also in the parent: no race with killpg below
  close(outPipe[1]);
  close(errPipe[1]);
  close(execPipe[1]);
  int execError = 0;
  ssize_t n;
  do
    n = read(execPipe[0], &execError, sizeof execError);
  while (n < 0 && errno == EINTR);
  close(execPipe[0]);
  if (n == static_cast<ssize_t>(sizeof execError)) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    close(outPipe[0]);
    close(errPipe[0]);
    what = "cannot run";
    return execError;
  }
  rank.pid = pid;
  rank.running = true;
  rank.streams[0] = {outPipe[0], STDOUT_FILENO, {}};
  rank.streams[1] = {errPipe[0], STDERR_FILENO, {}};
  for (Stream &stream : rank.streams)
    fcntl(stream.fd, F_SETFL, fcntl(stream.fd, F_GETFL) | O_NONBLOCK);
  return 0;
}

/// The launcher's run: owns the ranks, the signal handlers and the loop.
class Launcher {
public:
  explicit Launcher(const LaunchOptions &options) : options(options) {}
  ~Launcher();
  int run();

private:
  bool installSignalHandlers();
  void signalRanks(int signal);
  void reap();
  void onRankExit(Rank &rank, int status);
  void onLauncherSignal(int signal);
  void startShutdown();

  const LaunchOptions &options;
  std::vector<Rank> ranks;
  int signalPipe[2] = {-1, -1};
  std::vector<std::pair<int, struct sigaction>> savedActions;
  /// The exit status of the launcher once decided: the first failing rank's
  /// (128+N for signal N) or 128+N for a signal N to the launcher.
  std::optional<int> exitStatus;
  std::optional<Clock::time_point> killDeadline;
  int launcherSignals = 0;
};

Launcher::~Launcher() {
  for (auto &[signal, action] : savedActions)
    sigaction(signal, &action, nullptr);
  gSignalPipeWrite = -1;
  for (int fd : signalPipe)
    if (fd >= 0)
      close(fd);
  for (Rank &rank : ranks)
    for (Stream &stream : rank.streams)
      if (stream.fd >= 0)
        close(stream.fd);
}

bool Launcher::installSignalHandlers() {
  if (pipe2(signalPipe, O_CLOEXEC | O_NONBLOCK) != 0)
    return false;
  gSignalPipeWrite = signalPipe[1];
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    struct sigaction action = {};
    struct sigaction old = {};
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART | (s == SIGCHLD ? SA_NOCLDSTOP : 0);
    // SIGPIPE: a closed reader of the launcher's output must not kill it
    // (the ranks would die with it); the write fails with EPIPE instead.
    action.sa_handler = s == SIGPIPE ? SIG_IGN : onSignal;
    if (sigaction(s, &action, &old) != 0)
      return false;
    savedActions.emplace_back(s, old);
  }
  return true;
}

void Launcher::signalRanks(int signal) {
  for (Rank &rank : ranks)
    if (rank.running)
      kill(-rank.pid, signal); // the rank's whole process group
}

void Launcher::startShutdown() {
  signalRanks(SIGTERM);
  killDeadline = Clock::now() + kGracePeriod;
}

void Launcher::onRankExit(Rank &rank, int status) {
  rank.running = false;
  // Relay what the rank wrote before it exited ahead of the status line.
  for (Stream &stream : rank.streams)
    if (stream.fd >= 0)
      readStream(stream, rank.globalRank);
  bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!failed || exitStatus)
    return; // success, or an exit during the shutdown (first failure wins)
  std::string name = "rank " + std::to_string(rank.globalRank);
  if (WIFSIGNALED(status)) {
    note(name + " was killed by signal " + signalName(WTERMSIG(status)));
    exitStatus = 128 + WTERMSIG(status);
  } else {
    note(name + " exited with status " + std::to_string(WEXITSTATUS(status)));
    exitStatus = WEXITSTATUS(status);
  }
  startShutdown();
}

void Launcher::onLauncherSignal(int signal) {
  ++launcherSignals;
  if (launcherSignals > 1) {
    // A second SIGINT/SIGTERM: do not wait for the grace period.
    signalRanks(SIGKILL);
    return;
  }
  note("received " + signalName(signal) + ", stopping the ranks");
  if (!exitStatus)
    exitStatus = 128 + signal;
  signalRanks(signal);
  killDeadline = Clock::now() + kGracePeriod;
}

void Launcher::reap() {
  while (true) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR)
      continue;
    if (pid <= 0)
      return;
    for (Rank &rank : ranks)
      if (rank.pid == pid && rank.running)
        onRankExit(rank, status);
  }
}

int Launcher::run() {
  int error = 0;
  std::optional<std::string> path = resolveProgram(options.command[0], error);
  if (!path) {
    note("error: cannot run '" + options.command[0] +
         "': " + std::strerror(error));
    return 1;
  }
  if (!installSignalHandlers()) {
    note(std::string("error: cannot install signal handlers: ") +
         std::strerror(errno));
    return 1;
  }
  int devNull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devNull < 0) {
    note(std::string("error: cannot open /dev/null: ") + std::strerror(errno));
    return 1;
  }

  // Start the ranks. A failure part-way stops the ranks already started.
  SpawnPlan plan;
  plan.path = *path;
  plan.args = options.command;
  ranks.resize(static_cast<size_t>(options.nprocPerNode));
  for (int64_t local = 0; local < options.nprocPerNode; ++local) {
    Rank &rank = ranks[static_cast<size_t>(local)];
    rank.globalRank =
        static_cast<int>(options.nodeRank * options.nprocPerNode + local);
    plan.env = rankEnvironment(options, local);
    const char *what = "";
    if (int e = spawnRank(plan, rank, devNull, what)) {
      if (std::strcmp(what, "cannot run") == 0)
        note("error: cannot run '" + options.command[0] +
             "': " + std::strerror(e));
      else
        note(std::string("error: ") + what + " for rank " +
             std::to_string(rank.globalRank) + ": " + std::strerror(e));
      exitStatus = 1;
      startShutdown();
      break;
    }
  }
  close(devNull);

  std::optional<Clock::time_point> drainDeadline;
  while (true) {
    bool anyRunning = std::any_of(ranks.begin(), ranks.end(),
                                  [](const Rank &r) { return r.running; });
    std::vector<pollfd> fds;
    std::vector<std::pair<Rank *, Stream *>> owners;
    fds.push_back({signalPipe[0], POLLIN, 0});
    owners.push_back({nullptr, nullptr});
    for (Rank &rank : ranks)
      for (Stream &stream : rank.streams)
        if (stream.fd >= 0) {
          fds.push_back({stream.fd, POLLIN, 0});
          owners.push_back({&rank, &stream});
        }
    if (!anyRunning) {
      if (fds.size() == 1)
        break; // every rank exited and every pipe is closed
      if (!drainDeadline)
        drainDeadline = Clock::now() + kDrainPeriod;
    }

    int timeoutMs = -1;
    auto now = Clock::now();
    for (const auto &deadline : {killDeadline, drainDeadline})
      if (deadline) {
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(*deadline - now)
                      .count();
        ms = std::max<decltype(ms)>(ms, 0);
        if (timeoutMs < 0 || ms < timeoutMs)
          timeoutMs = static_cast<int>(ms);
      }
    int ready = poll(fds.data(), fds.size(), timeoutMs);
    if (ready < 0 && errno != EINTR) {
      note(std::string("error: poll failed: ") + std::strerror(errno));
      signalRanks(SIGKILL);
      for (Rank &rank : ranks)
        if (rank.running) {
          int status;
          while (waitpid(rank.pid, &status, 0) < 0 && errno == EINTR) {
          }
          rank.running = false;
        }
      return exitStatus.value_or(1);
    }
    if (ready > 0) {
      if (fds[0].revents & POLLIN) {
        unsigned char signals[64];
        ssize_t n;
        bool child = false;
        std::vector<int> received;
        while ((n = read(signalPipe[0], signals, sizeof signals)) > 0)
          for (ssize_t i = 0; i < n; ++i) {
            if (signals[i] == SIGCHLD)
              child = true;
            else
              received.push_back(signals[i]);
          }
        for (int s : received)
          onLauncherSignal(s);
        if (child)
          reap();
      }
      for (size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents && owners[i].second->fd >= 0)
          readStream(*owners[i].second, owners[i].first->globalRank);
    }
    now = Clock::now();
    if (killDeadline && now >= *killDeadline) {
      signalRanks(SIGKILL);
      killDeadline.reset();
    }
    if (drainDeadline && now >= *drainDeadline) {
      // Processes left behind by the ranks still hold the pipes open: stop
      // relaying (the lines read so far are printed).
      for (Rank &rank : ranks)
        for (Stream &stream : rank.streams)
          if (stream.fd >= 0) {
            emitLines(stream, rank.globalRank, /*flush=*/true);
            close(stream.fd);
            stream.fd = -1;
          }
    }
  }
  return exitStatus.value_or(0);
}

} // namespace

std::string launchUsageError(const LaunchOptions &options,
                             const std::vector<std::string> &unparsed) {
  for (const std::string &arg : unparsed)
    if (arg != "--")
      return "unexpected argument '" + arg +
             "' (the program and its arguments go after --)";
  if (options.command.empty())
    return "no program to launch: give it after --, as in 'dlrt launch "
           "--nproc-per-node 2 -- dlrt train PKG ...'";
  if (options.nprocPerNode >
      std::numeric_limits<int32_t>::max() / options.nnodes)
    return "the world size --nproc-per-node * --nnodes exceeds 2^31-1";
  if (options.nodeRank >= options.nnodes)
    return "--node-rank " + std::to_string(options.nodeRank) +
           " must be less than --nnodes " + std::to_string(options.nnodes);
  if (options.masterAddr.empty())
    return "--master-addr must not be empty";
  return "";
}

int runLaunch(const LaunchOptions &options) {
  std::fflush(stdout);
  std::fflush(stderr);
  Launcher launcher(options);
  return launcher.run();
}

} // namespace dlrt::cli
