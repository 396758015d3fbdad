//===- Commands.h - the dlrt subcommands ------------------------*- C++ -*-===//
// Each subcommand takes its parsed options, prints its results, and throws
// cli::Error for a one-line "dlrt: error: ..." message.
#ifndef DLRT_TOOLS_COMMANDS_H
#define DLRT_TOOLS_COMMANDS_H

#include <cstdint>
#include <string>

namespace dlrt::cli {

struct TrainOptions {
  std::string package;
  std::string dataFile;  ///< --data FILE.npz
  std::string dataset;   ///< --dataset fashion-mnist[:DIR]
  int64_t steps = 0;     ///< 0: run --epochs epochs
  int64_t epochs = 1;
  int64_t batchSize = 0; ///< 0: the package's
  bool shuffle = true;
  uint64_t seed = 0;
  bool seedGiven = false;
  std::string logJsonl;
  std::string save;
  std::string resume;
  std::string saveGradients; ///< --save-gradients DIR
  std::string device = "auto";
  int64_t logEvery = 100;
  std::string memoryReport; ///< --memory-report FILE.json
  bool quiet = false;       ///< --quiet: nothing on stdout
};

struct RunOptions {
  std::string package;
  std::string inputs;
  std::string outputs;
  std::string device = "auto";
  std::string memoryReport; ///< --memory-report FILE.json
};

struct InfoOptions {
  std::string package;
};

int runTrain(const TrainOptions &options);
int runRun(const RunOptions &options);
int runInfo(const InfoOptions &options);

} // namespace dlrt::cli

#endif // DLRT_TOOLS_COMMANDS_H
