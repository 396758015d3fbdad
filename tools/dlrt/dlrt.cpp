//===- dlrt.cpp - the dlrt command-line tool: train, run, info
//-------------===//
// Thin main(): parses the command line with CLI11 and dispatches to the
// subcommands. Every failure is one line "dlrt: error: ..." and a non-zero
// exit (2 for command-line errors, 1 for everything else).
#include "Commands.h"
#include "Common.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <unistd.h>

using namespace dlrt::cli;

/// The host device's threads (oneDNN's and the generated kernels') come from
/// the OpenMP runtime, whose default wait policy spins between parallel
/// regions. When other work takes a core, spinning threads stall each other:
/// an epoch of the main job took 5-38 s instead of 1.2-3.4 s with the
/// passive policy on a loaded 2-core machine. libgomp reads the policy once,
/// when it is loaded (before main), so dlrt sets it and re-executes itself,
/// unless the user chose a policy.
static void usePassiveOpenMPWaitPolicy(char **argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT"))
    return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  // exec failed (no /proc): go on with the default policy.
}

namespace {

/// The --device help of train and run.
const std::string kDeviceHelp =
    "Device: auto (CUDA if a driver and a GPU are present, else host), "
    "host or cuda";

/// The --device values of train and run.
CLI::IsMember makeDeviceCheck() {
  return CLI::IsMember({"auto", "host", "cuda"});
}

/// A positive integer. CLI::PositiveNumber's message prints the range as a
/// 300-digit double.
CLI::Validator positiveCheck() {
  return CLI::Validator(
      [](std::string &value) -> std::string {
        if (value.empty() ||
            value.find_first_not_of("0123456789") != std::string::npos ||
            value.find_first_not_of('0') == std::string::npos)
          return "'" + value + "' is not a positive integer";
        return "";
      },
      "POSITIVE");
}

/// `dlrt train` and its options into |train|; |*seedOpt| is --seed (whether
/// it was given decides between it and a checkpoint's seed).
CLI::App *addTrainCommand(CLI::App &app, TrainOptions &train,
                          CLI::Option **seedOpt) {
  const std::string &deviceHelp = kDeviceHelp;
  const auto deviceCheck = makeDeviceCheck();
  const CLI::Validator positive = positiveCheck();
  CLI::App *trainCmd = app.add_subcommand(
      "train", "Train a package compiled with dlc --train: feed batches to "
               "its train_step, log the loss, save checkpoints");
  trainCmd->add_option("package", train.package, "Training package (.dlcp)")
      ->required();
  CLI::Option *dataOpt = trainCmd->add_option(
      "--data", train.dataFile,
      "NumPy .npz with one array per train_step input (named by the input) "
      "plus 'labels', batch-major, all with the same number of samples; "
      "per-sample shapes must match the inputs, dtypes are converted "
      "(to f16/bf16 inputs with round-to-nearest-even)");
  CLI::Option *datasetOpt = trainCmd->add_option(
      "--dataset", train.dataset,
      "fashion-mnist[:DIR]: the train split (images u8/255 -> f32, labels "
      "i64) from DIR (default /usr/share/datasets/fashion-mnist, Debian's "
      "dataset-fashion-mnist); after each epoch the test accuracy of "
      "forward on the t10k split is printed");
  CLI::Option *tokensOpt = trainCmd->add_option(
      "--data-tokens", train.dataTokens,
      "A language model's training text as one stream of token ids, "
      "memory-mapped (never read whole): a raw file of uint16 ids "
      "(nanoGPT's train.bin; --token-dtype uint32 for larger vocabularies), "
      "an llm.c .bin (its 1024-byte header, uint16 ids) or a 1-D .npy of "
      "uint16/uint32/int32/int64 ids. train_step's two integer inputs [B, T] "
      "take a window of T + 1 tokens each: the first T as the tokens, the "
      "last T as 'labels'. Windows per epoch: (tokens - 1) / T; see "
      "--windows");
  trainCmd
      ->add_option("--token-dtype", train.tokenDtype,
                   "Id type of a raw --data-tokens file: uint16 (default) or "
                   "uint32 (.npy and llm.c files state theirs); also for "
                   "--eval-data-tokens")
      ->check(CLI::IsMember({"uint16", "uint32"}));
  trainCmd
      ->add_option("--seq-len", train.seqLen,
                   "T, checked against the package's sequence length (the "
                   "second dimension of train_step's token inputs; dlc "
                   "compiles static shapes)")
      ->check(positive)
      ->needs(tokensOpt);
  trainCmd
      ->add_option(
          "--windows", train.windows,
          "Where --data-tokens windows start: random (default; nanoGPT's "
          "get_batch: sample k of epoch e at a uniform draw from (--seed, e, "
          "k), the same on every rank and after --resume; no permutation, so "
          "--no-shuffle changes nothing) or aligned "
          "(window k at k * T, every token once an epoch, in the epoch's "
          "permutation — 8 bytes a window — or, with --no-shuffle, in file "
          "order)")
      ->check(CLI::IsMember({"random", "aligned"}))
      ->needs(tokensOpt);
  dataOpt->excludes(datasetOpt);
  datasetOpt->excludes(dataOpt);
  tokensOpt->excludes(dataOpt);
  tokensOpt->excludes(datasetOpt);
  dataOpt->excludes(tokensOpt);
  datasetOpt->excludes(tokensOpt);
  CLI::Option *stepsOpt = trainCmd->add_option(
      "--steps", train.steps,
      "Stop when the global step count (resumed steps included) reaches N");
  stepsOpt->check(positive);
  CLI::Option *epochsOpt = trainCmd->add_option(
      "--epochs", train.epochs,
      "Epochs to train, counted from the first (default 1); each epoch "
      "drops its final partial global batch");
  epochsOpt->check(positive);
  stepsOpt->excludes(epochsOpt);
  epochsOpt->excludes(stepsOpt);
  trainCmd
      ->add_option("--batch-size", train.batchSize,
                   "Samples per rank and step; must equal the package's "
                   "compiled batch size (recompile with dlc --batch-size to "
                   "change it)")
      ->check(positive);
  trainCmd->add_flag(
      "--no-shuffle", [&](int64_t) { train.shuffle = false; },
      "Batches are consecutive samples in file order (default: a seeded "
      "permutation per epoch)");
  *seedOpt = trainCmd->add_option(
      "--seed", train.seed,
      "Seed of the per-epoch permutation (default 0, or the checkpoint's "
      "when resuming)");
  trainCmd->add_option("--log-jsonl", train.logJsonl,
                       "Write {\"step\": i, \"loss\": x, ...} per step to "
                       "FILE (appended to when resuming), with every other "
                       "one-element output of train_step (e.g. lr, "
                       "grad_norm) under its name");
  trainCmd->add_option("--save", train.save,
                       "Write a checkpoint (safetensors, atomically) after "
                       "each epoch and at the end");
  trainCmd->add_option("--resume", train.resume,
                       "Restore a checkpoint written by --save and continue "
                       "from its step and data position with the same data "
                       "order (also with another number of ranks)");
  trainCmd->add_option(
      "--save-gradients", train.saveGradients,
      "Write each step's gradients to DIR/step-<N>.safetensors (N: the "
      "global step, from 1), one tensor per parameter named by it; needs a "
      "package compiled with dlc --train --expose-gradients");
  CLI::Option *evalDataOpt = trainCmd->add_option(
      "--eval-data", train.evalData,
      "Evaluate on FILE.npz at the end of training (and with --eval-every; "
      "also when a resumed run has nothing left to train): one array per "
      "forward input (named by the input) plus 'labels' (integer class "
      "indices), batch-major; runs forward in batches of its compiled batch "
      "size (the last padded, its padding not counted) and prints and logs "
      "the mean softmax cross-entropy and top-1 accuracy over all samples "
      "(eval_loss, eval_accuracy); needs a package trained with dlc's "
      "softmax-cross-entropy loss. On several ranks each evaluates a shard "
      "when their states agree, else rank 0 alone");
  CLI::Option *evalTokensOpt = trainCmd->add_option(
      "--eval-data-tokens", train.evalDataTokens,
      "Evaluate a language model on a held-out token file (the formats of "
      "--data-tokens; --token-dtype for a raw one) when --eval-data would: "
      "every window of T + 1 tokens at multiples of T, through forward; "
      "prints and logs the mean next-token cross-entropy, its perplexity "
      "(exp of it) and the top-1 accuracy (eval_loss, eval_perplexity, "
      "eval_accuracy)");
  evalTokensOpt->excludes(evalDataOpt);
  evalDataOpt->excludes(evalTokensOpt);
  CLI::Option *evalEveryOpt =
      trainCmd
          ->add_option("--eval-every", train.evalEvery,
                       "With --eval-data or --eval-data-tokens, also "
                       "evaluate after every K-th global step")
          ->check(positive);
  trainCmd->parse_complete_callback([=] {
    if (evalEveryOpt->count() && !evalDataOpt->count() &&
        !evalTokensOpt->count())
      throw CLI::RequiresError("--eval-every",
                               "--eval-data or --eval-data-tokens");
  });
  trainCmd->add_option("--device", train.device, deviceHelp)
      ->check(deviceCheck);
  trainCmd
      ->add_option("--log-every", train.logEvery,
                   "Print a progress line every K steps (default 100)")
      ->check(positive);
  const std::string memoryReportHelp =
      "After the last step, write the session's memory in bytes as JSON to "
      "FILE (atomically): predicted_peak_bytes (the package's memory plan: "
      "persistent_bytes + input_bytes + arena_bytes + workspace_bytes), "
      "measured_peak_bytes (the device allocator's reserved high-water "
      "mark), used_peak_bytes, plan_from_package, device and "
      "host_peak_resident_bytes (the process's peak resident memory, "
      "VmHWM; Linux); and print "
      "'memory: predicted X, measured Y bytes (...)'";
  trainCmd->add_option("--memory-report", train.memoryReport, memoryReportHelp);
  trainCmd->add_option(
      "--trace", train.trace,
      "Record every step (kernels, library calls, collectives and the waits "
      "for them, on one clock) and write it after the last step as a Chrome "
      "trace event file (opens in Perfetto or chrome://tracing), "
      "atomically; on W > 1 ranks each rank writes FILE with .rankR before "
      "its extension (trace.json -> trace.rank0.json)");
  trainCmd->add_flag(
      "--no-cuda-graph", train.noCudaGraph,
      "On CUDA, issue the step's kernels and library calls one by one in "
      "every step instead of recording them into a CUDA graph on the second "
      "step and replaying it (the default; steps with collectives and "
      "traced runs always go one by one)");
  trainCmd->add_flag("--quiet", train.quiet,
                     "Print nothing on stdout (errors and notes still go to "
                     "stderr)");
  trainCmd
      ->add_option("--comm-timeout", train.commTimeout,
                   "With several ranks: seconds the rendezvous and each "
                   "collective may take before the run fails naming the "
                   "rank at fault (default $DLRT_COMM_TIMEOUT, else 300)")
      ->check(CLI::Validator(
          [](std::string &value) -> std::string {
            char *end = nullptr;
            double v = std::strtod(value.c_str(), &end);
            if (value.empty() || *end != '\0' || !(v > 0) || v > 1e9)
              return "'" + value + "' is not a positive number of seconds";
            return "";
          },
          "SECONDS"));
  trainCmd->footer(
      "Exactly one of --data, --dataset or --data-tokens. The batch size is "
      "the package's. "
      "Progress lines, per-epoch mean loss and throughput go to stdout "
      "(none with --quiet). Under a launcher (dlrt launch, torchrun "
      "--no-python, mpirun, srun) the run is data-parallel over its ranks: "
      "--batch-size is per rank, rank r of W takes samples r, r+W, ... of "
      "each global batch of B*W (as torch's DistributedSampler), the logged "
      "loss is the mean over the ranks, and only rank 0 prints, logs and "
      "saves.");
  return trainCmd;
}

/// `dlrt run` and its options into |run|.
CLI::App *addRunCommand(CLI::App &app, RunOptions &run) {
  const std::string &deviceHelp = kDeviceHelp;
  const auto deviceCheck = makeDeviceCheck();
  CLI::App *runCmd = app.add_subcommand(
      "run", "Run a package's forward function once on inputs from an .npz");
  runCmd->add_option("package", run.package, "Package (.dlcp)")->required();
  runCmd
      ->add_option("--inputs", run.inputs,
                   ".npz with one array per forward input, named by the "
                   "input, shaped exactly as the compiled input (the batch "
                   "included); dtypes are converted (to f16/bf16 inputs "
                   "with round-to-nearest-even)")
      ->required();
  runCmd
      ->add_option("--outputs", run.outputs,
                   ".npz to write, one array per forward output in its "
                   "dtype; bf16 outputs (NumPy has no bfloat16) are "
                   "written as float32, exactly widened")
      ->required();
  runCmd->add_option("--device", run.device, deviceHelp)->check(deviceCheck);
  runCmd->add_option("--memory-report", run.memoryReport,
                     "As for train, after the forward run");
  runCmd
      ->add_option("--repeat", run.repeat,
                   "After the first run, run the forward N more times on the "
                   "same inputs (already on the device) and print the "
                   "median and fastest wall time of one run in ms (each run "
                   "waits for the device; on CUDA from the second run on a "
                   "replayed CUDA graph); the outputs are the first run's "
                   "(default 0)")
      ->check(CLI::NonNegativeNumber);
  return runCmd;
}

/// `dlrt info` and its options into |info|.
CLI::App *addInfoCommand(CLI::App &app, InfoOptions &info) {
  CLI::App *infoCmd = app.add_subcommand(
      "info", "Describe a package: model, training settings, functions with "
              "their inputs/outputs, kernel launches and library calls, "
              "arena and persistent memory, kernels, cubin architectures, and "
              "the memory a session holds (predicted peak and its parts)");
  infoCmd->add_option("package", info.package, "Package (.dlcp)")->required();
  return infoCmd;
}

/// `dlrt launch` and its options into |launch|.
CLI::App *addLaunchCommand(CLI::App &app, LaunchOptions &launch) {
  const CLI::Validator positive = positiveCheck();
  CLI::App *launchCmd = app.add_subcommand(
      "launch", "Start this node's ranks of a distributed job with "
                "torchrun's environment (static rendezvous), print their "
                "output prefixed with the rank, and stop every rank when "
                "one fails");
  launchCmd
      ->add_option("--nproc-per-node,--nproc_per_node", launch.nprocPerNode,
                   "Ranks to start on this node")
      ->required()
      ->check(positive);
  launchCmd
      ->add_option("--nnodes", launch.nnodes,
                   "Nodes in the job, each running its own dlrt launch "
                   "(default 1); WORLD_SIZE is nnodes * nproc-per-node")
      ->check(positive);
  launchCmd
      ->add_option("--node-rank,--node_rank", launch.nodeRank,
                   "This node's index, 0 .. nnodes-1 (default 0); RANK is "
                   "node-rank * nproc-per-node + LOCAL_RANK")
      ->check(CLI::Validator(
          [](std::string &value) -> std::string {
            if (value.empty() ||
                value.find_first_not_of("0123456789") != std::string::npos)
              return "'" + value + "' is not a non-negative integer";
            return "";
          },
          "NON-NEGATIVE"));
  launchCmd->add_option("--master-addr,--master_addr", launch.masterAddr,
                        "MASTER_ADDR: host of rank 0, which serves the "
                        "rendezvous store (default 127.0.0.1)");
  launchCmd
      ->add_option("--master-port,--master_port", launch.masterPort,
                   "MASTER_PORT: TCP port of the store on the master "
                   "(default 29500)")
      ->check(CLI::Range(1, 65535));
  launchCmd
      ->add_option("--comm-timeout", launch.commTimeout,
                   "Set DLRT_COMM_TIMEOUT for the ranks: seconds a "
                   "collective or the rendezvous may take before it fails "
                   "(whole seconds; unset by default)")
      ->check(positive);
  launchCmd->add_option("command", launch.command,
                        "PROGRAM ARGS..., after --: the rank's command "
                        "(PROGRAM looked up on PATH; 'dlrt' is this dlrt)");
  launchCmd->allow_extras();
  launchCmd->parse_complete_callback([&launch, launchCmd] {
    std::string error = launchUsageError(launch, launchCmd->remaining());
    if (!error.empty())
      throw CLI::ValidationError(error);
  });
  launchCmd->footer(
      "Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, "
      "GROUP_RANK (the node rank), MASTER_ADDR and MASTER_PORT, stdin from "
      "/dev/null, and its own process group. Every line a rank writes is "
      "printed as '[rank R] line' on the launcher's stdout or stderr. When a "
      "rank exits non-zero or is killed, the launcher prints 'dlrt launch: "
      "rank R exited with status S' (or 'was killed by signal SIG...'), "
      "sends SIGTERM to the other ranks, SIGKILL after 5 s, and exits with "
      "that rank's status (128+N for signal N). SIGINT, SIGTERM and SIGHUP "
      "to the launcher go to every rank, with the same shutdown (a second "
      "one kills at once). Exit 0 when every rank exits 0.");
  return launchCmd;
}

} // namespace

int main(int argc, char **argv) {
  usePassiveOpenMPWaitPolicy(argv);
  CLI::App app{"dlrt: trains and runs packages (.dlcp) compiled by dlc"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every subcommand");

  TrainOptions train;
  CLI::Option *seedOpt = nullptr;
  CLI::App *trainCmd = addTrainCommand(app, train, &seedOpt);
  RunOptions run;
  CLI::App *runCmd = addRunCommand(app, run);
  InfoOptions info;
  CLI::App *infoCmd = addInfoCommand(app, info);
  LaunchOptions launch;
  CLI::App *launchCmd = addLaunchCommand(app, launch);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0)
      return app.exit(e); // --help
    std::fprintf(stderr, "dlrt: error: %s\n", e.what());
    return 2;
  }
  train.seedGiven = seedOpt->count() > 0;

  try {
    if (trainCmd->parsed())
      return runTrain(train);
    if (runCmd->parsed())
      return runRun(run);
    if (infoCmd->parsed())
      return runInfo(info);
    if (launchCmd->parsed())
      return runLaunch(launch);
  } catch (const Error &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "dlrt: error: %s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "dlrt: error: internal error: %s\n", e.what());
    return 1;
  }
  return 1;
}
