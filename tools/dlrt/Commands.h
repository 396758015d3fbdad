//===- Commands.h - the dlrt subcommands ------------------------*- C++ -*-===//
// Each subcommand takes its parsed options, prints its results, and throws
// cli::Error for a one-line "dlrt: error: ..." message.
#ifndef DLRT_TOOLS_COMMANDS_H
#define DLRT_TOOLS_COMMANDS_H

#include <cstdint>
#include <string>
#include <vector>

namespace dlrt::cli {

struct TrainOptions {
  std::string package;
  std::string dataFile; ///< --data FILE.npz
  std::string dataset;  ///< --dataset fashion-mnist[:DIR]
  std::string dataTokens;          ///< --data-tokens FILE
  std::string tokenDtype = "uint16"; ///< --token-dtype of a raw token file
  int64_t seqLen = 0;              ///< --seq-len T; 0: the package's
  std::string windows = "random";  ///< --windows random|aligned
  int64_t steps = 0;    ///< 0: run --epochs epochs
  int64_t epochs = 1;
  int64_t batchSize = 0; ///< 0: the package's
  bool shuffle = true;
  uint64_t seed = 0;
  bool seedGiven = false;
  std::string logJsonl;
  std::string save;
  std::string resume;
  std::string saveGradients; ///< --save-gradients DIR
  std::string evalData;      ///< --eval-data FILE.npz
  std::string evalDataTokens; ///< --eval-data-tokens FILE
  int64_t evalEvery = 0;     ///< --eval-every K; 0: at the end only
  std::string device = "auto";
  int64_t logEvery = 100;
  std::string memoryReport; ///< --memory-report FILE.json
  std::string trace;        ///< --trace FILE.json
  bool quiet = false;       ///< --quiet: nothing on stdout
  bool noCudaGraph = false; ///< --no-cuda-graph: every step issued one by one
  /// --comm-timeout seconds; 0: $DLRT_COMM_TIMEOUT, else 300.
  double commTimeout = 0;
};

struct RunOptions {
  std::string package;
  std::string inputs;
  std::string outputs;
  std::string device = "auto";
  std::string memoryReport; ///< --memory-report FILE.json
  int64_t repeat = 0;       ///< --repeat N: time N more runs
};

struct InfoOptions {
  std::string package;
};

/// dlrt launch: the local ranks of a job started with torchrun's environment
/// (static rendezvous).
struct LaunchOptions {
  int64_t nprocPerNode = 0;             ///< ranks on this node (>= 1)
  int64_t nnodes = 1;                   ///< nodes in the job
  int64_t nodeRank = 0;                 ///< this node, 0 <= nodeRank < nnodes
  std::string masterAddr = "127.0.0.1"; ///< host of rank 0's store
  int64_t masterPort = 29500;           ///< its TCP port, 1..65535
  int64_t commTimeout = 0; ///< seconds, as DLRT_COMM_TIMEOUT; 0: not set
  std::vector<std::string> command; ///< PROGRAM ARGS... (after --)
};

/// The usage error of |options| as parsed, or "" when there is none:
/// arguments CLI11 left |unparsed| (other than the "--" separator), no
/// program, --node-rank not below --nnodes, an empty --master-addr.
std::string launchUsageError(const LaunchOptions &options,
                             const std::vector<std::string> &unparsed);

int runTrain(const TrainOptions &options);
int runRun(const RunOptions &options);
int runInfo(const InfoOptions &options);
/// Starts the ranks and relays their output until every rank has exited.
/// Returns 0 when all exit with 0, else the first failing rank's exit status
/// (128+N when killed by signal N), 128+N when the launcher got signal N,
/// and 1 when the program cannot be started. Prints its own messages as
/// "dlrt launch: ..." on stderr instead of throwing Error.
int runLaunch(const LaunchOptions &options);

} // namespace dlrt::cli

#endif // DLRT_TOOLS_COMMANDS_H
