//===- Train.cpp - `dlrt train`: the training loop -------------------------===//
// Feeds batches to a package's train_step, logs losses (and the step's other
// scalar outputs), evaluates the test split or the user's --eval-data, and
// saves / resumes checkpoints. The data order is a function of
// (seed, epoch) only, so a resumed run recomputes its epoch's permutation,
// skips the consumed samples and continues bit-identically on the host.
// Under a launcher every rank runs this loop on its shard of each global
// batch (DistributedSampler's sharding); rank 0 alone prints and writes.
#include "Commands.h"
#include "Common.h"
#include "Evaluate.h"

#include "runtime/data/FashionMnist.h"
#include "runtime/data/Npy.h"
#include "runtime/data/Shuffle.h"
#include "runtime/schema/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>
#include <set>

namespace dlrt::cli {

namespace {
using Clock = std::chrono::steady_clock;

/// --quiet: say() prints nothing.
bool gQuiet = false;

/// printf to stdout unless --quiet.
__attribute__((format(printf, 1, 2))) void say(const char *format, ...) {
  if (gQuiet)
    return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

/// |path| for |rank| of |worldSize|: itself on one rank, else with
/// ".rank<R>" before its extension (trace.json -> trace.rank1.json).
std::string rankFileName(const std::string &path, int32_t rank,
                         int32_t worldSize) {
  if (worldSize <= 1)
    return path;
  size_t slash = path.find_last_of('/');
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    dot = path.size();
  return path.substr(0, dot) + ".rank" + std::to_string(rank) +
         path.substr(dot);
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The training data: arrays bound to train_step inputs, and for datasets
/// with one, the test split.
struct TrainData {
  std::vector<data::NamedArray> npz;
  data::LabelledSplit train, test;
  bool isFashionMnist = false;
  std::string fashionDir;
  std::string what; ///< file or dataset name for messages
  std::vector<Binding> bindings;
  int64_t samples = 0;
  /// --data-tokens: the mapped file and how windows are taken from it.
  data::TokenFile tokens;
  data::TokenWindows windows;
};

void bindNpz(const TrainOptions &o, dlrt_model_t model, int64_t batch,
             TrainData &d) {
  std::string err;
  d.what = o.dataFile;
  if (!data::readNpz(o.dataFile, d.npz, err))
    fail(err);
  std::string firstName;
  for (const dlrt_tensor_info_t &info : inputInfos(model, "train_step")) {
    const data::NamedArray *a = data::findArray(d.npz, info.name, o.dataFile,
                                                err);
    if (!a)
      fail(err + "; train_step needs '" + info.name + "' " + describe(info));
    checkFeedable(info, batch, a->array, o.dataFile);
    int64_t n = a->array.shape[0];
    if (d.bindings.empty()) {
      d.samples = n;
      firstName = info.name;
    } else if (n != d.samples) {
      fail(o.dataFile + ": array '" + info.name + "' has " +
           std::to_string(n) + " samples but '" + firstName + "' has " +
           std::to_string(d.samples));
    }
    Binding b;
    b.info = info;
    b.src = &a->array;
    d.bindings.push_back(std::move(b));
  }
}

void bindFashionMnist(const TrainOptions &o, dlrt_model_t model,
                      int64_t batch, TrainData &d) {
  std::string spec = o.dataset;
  std::string name = spec.substr(0, spec.find(':'));
  if (name != "fashion-mnist")
    fail("unknown dataset '" + spec +
         "' (supported: fashion-mnist[:DIR]; or pass --data FILE.npz)");
  d.isFashionMnist = true;
  d.fashionDir = spec.find(':') == std::string::npos
                     ? std::string(data::kFashionMnistDefaultDir)
                     : spec.substr(spec.find(':') + 1);
  d.what = "fashion-mnist (" + d.fashionDir + ")";
  std::string err;
  if (!data::loadFashionMnist(d.fashionDir, /*train=*/true, d.train, err))
    fail(err);
  d.samples = d.train.images.shape[0];
  std::vector<dlrt_tensor_info_t> inputs = inputInfos(model, "train_step");
  std::vector<std::string> others;
  for (const dlrt_tensor_info_t &info : inputs)
    if (std::string(info.name) != "labels")
      others.push_back(info.name);
  bool hasLabels = others.size() + 1 == inputs.size();
  if (!hasLabels || others.size() != 1)
    fail("fashion-mnist feeds one image input and 'labels', but train_step "
         "has " + std::to_string(others.size()) + " other input(s)" +
         (hasLabels ? "" : " and no 'labels'"));
  for (const dlrt_tensor_info_t &info : inputs) {
    Binding b;
    b.info = info;
    b.src = std::string(info.name) == "labels" ? &d.train.labels
                                               : &d.train.images;
    checkFeedable(info, batch, *b.src, d.what);
    d.bindings.push_back(std::move(b));
  }
}

/// --data-tokens: train_step's two integer inputs [B, T] — 'labels' and
/// the tokens — fed from windows of T + 1 tokens of the file (the labels
/// are the tokens shifted by one). Checks T against --seq-len, the file's
/// length against one window, and its ids against the vocabulary (the last
/// dimension of forward's logits) when the package has a forward.
void bindTokens(const TrainOptions &o, dlrt_model_t model, int64_t batch,
                TrainData &d) {
  d.what = o.dataTokens;
  std::vector<dlrt_tensor_info_t> inputs = inputInfos(model, "train_step");
  auto isTokens = [&](const dlrt_tensor_info_t &info) {
    return (info.dtype == DLRT_I64 || info.dtype == DLRT_I32) &&
           info.rank == 2 && info.shape[0] == batch;
  };
  std::string have;
  for (const dlrt_tensor_info_t &info : inputs)
    have += std::string(have.empty() ? "" : ", ") + info.name + " " +
            describe(info);
  const dlrt_tensor_info_t *labels = nullptr, *ids = nullptr;
  for (const dlrt_tensor_info_t &info : inputs)
    (std::string(info.name) == "labels" ? labels : ids) = &info;
  if (inputs.size() != 2 || !labels || !ids || !isTokens(*labels) ||
      !isTokens(*ids) || labels->shape[1] != ids->shape[1])
    fail("--data-tokens feeds a language model: train_step needs two "
         "integer inputs [batch, T], the token ids and 'labels' (the next "
         "tokens), but '" + o.package + "' has " + have);
  const int64_t t = ids->shape[1];
  if (o.seqLen != 0 && o.seqLen != t)
    fail("--seq-len " + std::to_string(o.seqLen) + " differs from the " +
         "package's sequence length " + std::to_string(t) +
         " (dlc compiles static shapes: export the model for T = " +
         std::to_string(o.seqLen) + ")");
  data::TokenType raw = data::TokenType::U16;
  if (o.tokenDtype == "uint32")
    raw = data::TokenType::U32;
  else if (o.tokenDtype != "uint16")
    fail("--token-dtype " + o.tokenDtype + " (supported: uint16, uint32)");
  std::string err;
  if (!d.tokens.open(o.dataTokens, raw, err))
    fail(err);
  if (d.tokens.size() < t + 1)
    fail(o.dataTokens + ": " + std::to_string(d.tokens.size()) +
         " tokens, fewer than one window of T + 1 = " + std::to_string(t + 1));
  if (dlrt_model_has_function(model, "forward")) {
    std::vector<dlrt_tensor_info_t> outs = outputInfos(model, "forward");
    if (outs.size() == 1 && outs[0].rank >= 2) {
      const int64_t vocab = outs[0].shape[outs[0].rank - 1];
      const int64_t top = d.tokens.maxId(err);
      if (top < 0)
        fail(err);
      if (top >= vocab)
        fail(o.dataTokens + ": token id " + std::to_string(top) +
             " is not below the model's vocabulary of " +
             std::to_string(vocab) + " (the last dimension of forward's '" +
             outs[0].name + "')");
    }
  }
  d.windows.file = &d.tokens;
  d.windows.seqLen = t;
  d.windows.random = o.windows == "random";
  d.samples = d.windows.count();
  for (const dlrt_tensor_info_t *info : {ids, labels}) {
    Binding b;
    b.info = *info;
    b.windows = &d.windows;
    b.shift = info == labels ? 1 : 0;
    d.bindings.push_back(std::move(b));
  }
}

/// Index of the output named |name| of |function| in |infos|, or -1.
int findInfo(const std::vector<dlrt_tensor_info_t> &infos,
             const std::string &name) {
  for (size_t i = 0; i < infos.size(); ++i)
    if (name == infos[i].name)
      return static_cast<int>(i);
  return -1;
}

/// Runs `forward` over the Fashion-MNIST t10k split and prints the accuracy
/// of argmax over the last axis of output 0. Padding rows of the final
/// batch are zeros and are not counted. On W ranks, rank r evaluates test
/// samples r, r+W, ... and the counts are summed over the ranks, or, when
/// the ranks' states differ, rank 0 evaluates every sample alone (every
/// rank must call this, with the same files).
void testAccuracy(dlrt_context_t context, dlrt_session_t session,
                  dlrt_model_t model, int64_t batch, TrainData &d, int32_t rank,
                  int32_t worldSize) {
  std::string err;
  if (d.test.images.data.empty() &&
      !data::loadFashionMnist(d.fashionDir, /*train=*/false, d.test, err)) {
    if (rank == 0)
      std::fprintf(stderr, "dlrt: note: no test accuracy: %s\n", err.c_str());
    return;
  }
  std::vector<dlrt_tensor_info_t> inputs = inputInfos(model, "forward");
  std::vector<dlrt_tensor_info_t> outputs = outputInfos(model, "forward");
  std::vector<Binding> bindings;
  for (const dlrt_tensor_info_t &info : inputs) {
    if (std::string(info.name) == "labels")
      continue;
    Binding b;
    b.info = info;
    b.src = &d.test.images;
    bindings.push_back(std::move(b));
  }
  if (bindings.size() != 1 || outputs.empty()) {
    if (rank == 0)
      std::fprintf(stderr,
                   "dlrt: note: no test accuracy: forward has %zu "
                   "image inputs and %zu outputs (expected 1 and >= 1)\n",
                   bindings.size(), outputs.size());
    return;
  }
  checkFeedable(bindings[0].info, batch, d.test.images,
                "fashion-mnist t10k");
  const dlrt_tensor_info_t &out = outputs[0];
  int64_t classes = out.rank >= 1 ? out.shape[out.rank - 1] : 0;
  if (classes < 1 || numel(out) != batch * classes) {
    if (rank == 0)
      std::fprintf(stderr,
                   "dlrt: note: no test accuracy: forward output '%s' "
                   "%s is not [batch, classes]\n",
                   out.name, describe(out).c_str());
    return;
  }
  // Ranks whose states differ (BatchNorm's running statistics, which each
  // updates from its own shard) would mix their models: then rank 0
  // evaluates its own (the one --save writes) on every sample, alone.
  const bool alone = worldSize > 1 && !ranksAgree(context, session);
  if (alone && rank != 0) {
    check(dlrt_context_barrier(context));
    return;
  }
  if (alone)
    worldSize = 1;
  // Only forward's own inputs are set: train_step's stay as they were.
  const int64_t total = d.test.images.shape[0];
  // This rank's shard: samples rank, rank + W, ...
  const int64_t n =
      total > rank ? (total - rank + worldSize - 1) / worldSize : 0;
  int64_t correct = 0;
  const int64_t *labels =
      reinterpret_cast<const int64_t *>(d.test.labels.data.data());
  std::vector<int64_t> idx(static_cast<size_t>(batch));
  for (int64_t start = 0; start < n; start += batch) {
    int64_t real = std::min(batch, n - start);
    for (int64_t i = 0; i < batch; ++i)
      idx[i] = i < real ? rank + (start + i) * worldSize : -1;
    feedBatch(session, "forward", bindings, idx.data(), batch);
    check(dlrt_session_run(session, "forward"));
    std::vector<double> logits = readOutput(session, "forward", out);
    for (int64_t i = 0; i < real; ++i) {
      const double *row = logits.data() + i * classes;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (row[c] > row[best])
          best = c;
      correct += best == labels[idx[i]];
    }
  }
  // Counts below 2^53 are exact as doubles, and so are their means times W.
  double counts[2] = {static_cast<double>(correct), static_cast<double>(n)};
  if (worldSize > 1) {
    check(dlrt_context_average(context, counts, 2));
    counts[0] = std::round(counts[0] * worldSize);
    counts[1] = std::round(counts[1] * worldSize);
  }
  say("test accuracy %.2f%% (%lld samples%s)\n", 100.0 * counts[0] / counts[1],
      static_cast<long long>(counts[1]),
      alone ? ", on rank 0 alone: the ranks' states differ" : "");
  std::fflush(stdout);
  if (alone)
    check(dlrt_context_barrier(context));
}

/// Where a run stands: global steps done, the epoch, and the samples of
/// that epoch's order consumed so far (a multiple of the global batch of
/// the run that consumed them).
struct Position {
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t sample = 0;
};

void saveCheckpoint(dlrt_session_t session, const TrainOptions &o,
                    const Position &at, int64_t stepsPerEpoch,
                    int64_t globalBatch, int32_t worldSize, uint64_t seed) {
  nlohmann::json meta = {{"step", std::to_string(at.step)},
                         {"epoch", std::to_string(at.epoch)},
                         {"epoch_position", std::to_string(at.sample)},
                         {"seed", std::to_string(seed)},
                         {"package", o.package},
                         {"steps_per_epoch", std::to_string(stepsPerEpoch)},
                         {"global_batch", std::to_string(globalBatch)},
                         {"world_size", std::to_string(worldSize)},
                         {"shuffle", o.shuffle ? "1" : "0"}};
  check(dlrt_session_save_checkpoint(session, o.save.c_str(),
                                     meta.dump().c_str()));
}

/// A train_step output holding the gradient of a parameter.
struct GradientOutput {
  dlrt_tensor_info_t info;
  std::string parameter;
};

/// The outputs "<p>.grad" of train_step for which <p> is a persistent tensor
/// of |session| (what dlc --train --expose-gradients adds).
std::vector<GradientOutput>
gradientOutputs(dlrt_session_t session,
                const std::vector<dlrt_tensor_info_t> &outputs) {
  std::set<std::string> state;
  for (int32_t i = 0; i < dlrt_session_state_count(session); ++i) {
    dlrt_tensor_info_t info;
    check(dlrt_session_state_info(session, i, &info));
    state.insert(info.name);
  }
  const std::string suffix = ".grad";
  std::vector<GradientOutput> grads;
  for (const dlrt_tensor_info_t &info : outputs) {
    std::string name = info.name;
    if (name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string parameter = name.substr(0, name.size() - suffix.size());
    if (state.count(parameter))
      grads.push_back({info, parameter});
  }
  return grads;
}

/// Writes the gradient outputs |grads| of the last train_step run to
/// |dir|/step-<step>.safetensors, one tensor per parameter named by it.
void saveGradients(dlrt_session_t session, const std::string &dir,
                   int64_t step, const std::vector<GradientOutput> &grads) {
  std::vector<safetensors::Tensor> tensors;
  for (const GradientOutput &g : grads) {
    safetensors::Tensor t;
    t.name = g.parameter;
    for (const char *c = dtypeName(g.info.dtype); *c; ++c) // "f32" -> "F32"
      t.dtype +=
          static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
    t.shape.assign(g.info.shape, g.info.shape + g.info.rank);
    t.data.resize(byteSize(g.info));
    check(dlrt_session_get_output(session, "train_step", g.info.name,
                                  t.data.data(), t.data.size()));
    tensors.push_back(std::move(t));
  }
  std::vector<uint8_t> bytes =
      safetensors::serialize(tensors, {{"step", std::to_string(step)}});
  std::string path = dir + "/step-" + std::to_string(step) + ".safetensors";
  std::string error;
  if (!safetensors::writeFileAtomic(path, bytes.data(), bytes.size(), &error))
    fail("cannot save gradients: " + error);
}

/// The loss-scaling outputs of train_step (dlc --loss-scale, see
/// docs/loss-scaling.md): "loss_scale" (the scale a step used), "skipped"
/// (1 when the step found inf/NaN gradients and changed nothing) and, with
/// dynamic scaling, the persistent f32 scalar "__loss_scale" (the scale the
/// next step uses).
struct LossScaleOutputs {
  int scaleIndex = -1;
  int skippedIndex = -1;
  bool hasState = false;

  bool present() const { return scaleIndex >= 0 && skippedIndex >= 0; }
};

LossScaleOutputs findLossScaleOutputs(
    dlrt_session_t session, const std::vector<dlrt_tensor_info_t> &outputs) {
  LossScaleOutputs ls;
  ls.scaleIndex = findInfo(outputs, "loss_scale");
  ls.skippedIndex = findInfo(outputs, "skipped");
  for (int32_t i = 0; i < dlrt_session_state_count(session); ++i) {
    dlrt_tensor_info_t info;
    check(dlrt_session_state_info(session, i, &info));
    if (std::string(info.name) == "__loss_scale" && info.dtype == DLRT_F32 &&
        info.rank == 0)
      ls.hasState = true;
  }
  return ls;
}

/// A one-element output of train_step that --log-jsonl writes under its own
/// name: every one other than the loss and the loss-scaling outputs (which
/// have their own fields), e.g. "lr" and "grad_norm" of dlc's LR schedules
/// and gradient clipping. Its value is read as a double.
struct ScalarOutput {
  dlrt_tensor_info_t info;
  std::string key; ///< the name as a JSON string, quotes included
};

/// The ScalarOutputs of |outputs| (train_step's), in output order: the
/// outputs of one element, except the loss (|lossIndex|), the loss-scaling
/// outputs when |lossScale| is present, and outputs named like a field the
/// record already has ("step", "loss"), which are left out with a note on
/// stderr when |lead|. Tensors of more elements (gradients of
/// --expose-gradients) are not scalars and are not logged.
std::vector<ScalarOutput>
scalarOutputs(const std::vector<dlrt_tensor_info_t> &outputs, int lossIndex,
              const LossScaleOutputs &lossScale, bool lead) {
  std::vector<ScalarOutput> scalars;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const dlrt_tensor_info_t &info = outputs[i];
    if (static_cast<int>(i) == lossIndex || numel(info) != 1)
      continue;
    std::string name = info.name;
    if (lossScale.present() && (static_cast<int>(i) == lossScale.scaleIndex ||
                                static_cast<int>(i) == lossScale.skippedIndex))
      continue;
    if (name == "step" || name == "loss") {
      if (lead)
        std::fprintf(stderr,
                     "dlrt: note: train_step output '%s' is not logged: "
                     "--log-jsonl records have a field of that name\n",
                     name.c_str());
      continue;
    }
    scalars.push_back({info, nlohmann::json(name).dump()});
  }
  return scalars;
}

/// Writes |value| to |f| as a JSON number with |digits| significant digits;
/// NaN and infinities, which JSON has no numbers for, as NaN, Infinity and
/// -Infinity (what Python's json module writes and reads).
void writeJsonNumber(FILE *f, double value, int digits) {
  if (std::isnan(value))
    std::fputs("NaN", f);
  else if (std::isinf(value))
    std::fputs(value > 0 ? "Infinity" : "-Infinity", f);
  else
    std::fprintf(f, "%.*g", digits, value);
}

/// Significant digits that print a value of |dtype| exactly: 9 for f32 (and
/// the narrower floats), 17 for f64 and for |averaged| values (means over
/// ranks are doubles); integers print exactly either way.
int exactDigits(dlrt_dtype_t dtype, bool averaged) {
  return dtype == DLRT_F64 || averaged ? 17 : 9;
}

/// Parses the unsigned decimal metadata value |key| of checkpoint |path|.
bool metaNumber(const nlohmann::json &meta, const char *key,
                const std::string &path, uint64_t &out) {
  if (!meta.is_object() || !meta.contains(key))
    return false;
  const nlohmann::json &v = meta[key];
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
    fail(path + ": checkpoint metadata '" + key + "' is not a number: " + s);
  out = std::stoull(s);
  return true;
}

/// `dlrt train`'s run: the package and its sharding (setUp), the data and
/// the session (bindData, createStepSession), a resumed position
/// (resumeFromCheckpoint), the epochs of training steps (runEpoch,
/// trainStep), evaluation and the checkpoints and reports at the end
/// (finish). Members are declared in the order the run creates them, so
/// they are destroyed in the reverse order (the log first, the context
/// last).
class Trainer {
public:
  explicit Trainer(const TrainOptions &o) : o(o) {}
  int run();

private:
  /// The checks of the options, the context, the model and its batch size,
  /// and this rank's data shard (DistributedSampler's).
  void setUp();
  /// Binds the data to train_step's inputs; the global batch, the steps of
  /// an epoch and --eval-data.
  void bindData();
  /// The session and what a step reports: the loss, the loss-scaling and
  /// scalar outputs, the gradients of --save-gradients.
  void createStepSession();
  /// --resume: the checkpoint's state, step, seed and place in its epoch.
  void resumeFromCheckpoint();
  /// The epochs the run ends in and the --log-jsonl file.
  void openLog();
  /// At the end already: the evaluation and memory report only.
  void finishWithoutSteps();
  /// One epoch, from the current position to its end or the last step.
  void runEpoch();
  /// Feeds this rank's shard of the next global batch (positions of
  /// |order|, the epoch's permutation; empty: file order) and runs
  /// train_step.
  void trainStep(const std::vector<int64_t> &order);
  /// After the second step: whether it replays a CUDA graph, and the gemm
  /// epilogue fallbacks.
  void reportCudaGraph();
  /// The step's loss and scalar outputs, averaged over the ranks.
  std::vector<double> readStepOutputs();
  /// The loss scale a step used and whether it skipped the update; says
  /// when the scale changes.
  void reportLossScale(double *scaleUsed, bool *skipped);
  /// The step's --log-jsonl line; |stepSeconds| its wall time.
  void logStep(const std::vector<double> &averaged, double scaleUsed,
               bool skipped, double stepSeconds);
  /// Speed at |stepSeconds| a step: tokens/s (token streams), the model
  /// FLOP/s of the package's model FLOPs per step, and on CUDA their share
  /// of the device model's peak (MFU); 0 where not known. |text| is the
  /// progress line's suffix.
  struct Throughput {
    double tokensPerSecond = 0, modelFlopsPerSecond = 0, mfu = 0;
    std::string text;
  };
  Throughput throughput(double stepSeconds) const;
  /// The epoch's summary, the test split, the checkpoint.
  void endEpoch(int64_t epoch, int64_t epochSteps, double epochLoss,
                Clock::time_point epochStart);
  /// --eval-data: evaluates the weights as they are now; prints and logs
  /// the result. Every rank calls it at the same step. Returns the time it
  /// took, which the throughput figures leave out.
  Clock::duration runEvaluation();
  /// The last evaluation and checkpoint, the memory report, the trace.
  void finish();

  /// --steps counts global steps; --epochs counts epochs from the first.
  bool done(const Position &p) const {
    return o.steps > 0 ? p.step >= o.steps : p.epoch >= o.epochs;
  }
  /// An epoch ends when the next global batch does not fit.
  void normalize(Position &p) const {
    if (p.sample + globalBatch > d.samples) {
      ++p.epoch;
      p.sample = 0;
    }
  }

  const TrainOptions &o;
  ContextPtr context;
  int32_t rank = 0, worldSize = 1;
  bool lead = true;
  ModelPtr model;
  int64_t batch = 0;
  int32_t stages = 0;
  int32_t dataRank = 0, dataWorld = 1;
  TrainData d;
  int64_t globalBatch = 0;
  int64_t stepsPerEpoch = 0;
  std::optional<EvalSet> evalSet;
  std::vector<dlrt_tensor_info_t> outputs;
  std::string lossName;
  int lossIndex = -1;
  dlrt_tensor_info_t lossInfo;
  SessionPtr session;
  int64_t sessionRuns = 0; // reports how the step runs after the second
  std::string tracePath;
  LossScaleOutputs lossScale;
  std::vector<ScalarOutput> scalars;
  int lrIndex = -1; // in scalars
  std::vector<GradientOutput> grads;
  Position at;
  uint64_t seed = 0;
  int64_t totalEpochs = 0;
  FILE *log = nullptr;
  struct LogCloser {
    FILE *&f;
    ~LogCloser() {
      if (f)
        std::fclose(f);
    }
  } logCloser{log};
  int64_t evaluatedAt = -1;
  bool testSplit = false;
  std::vector<int64_t> shard;
  bool warnedNonFinite = false;
  bool savedAtEnd = false;
};

void Trainer::setUp() {
  if (int(!o.dataFile.empty()) + int(!o.dataset.empty()) +
          int(!o.dataTokens.empty()) != 1)
    fail("train needs exactly one of --data FILE.npz, --dataset "
         "fashion-mnist[:DIR] or --data-tokens FILE");
  if (o.steps < 0 || o.epochs < 1 || o.logEvery < 1 || o.batchSize < 0)
    fail("--steps, --epochs, --log-every and --batch-size must be positive");

  context = openDistributedContext(o.device, /*announce=*/!o.quiet,
                                   commTimeoutSeconds(o.commTimeout));
  contextRank(context.get(), &rank, &worldSize);
  // Ranks other than 0 print nothing but errors, and only rank 0 writes.
  lead = rank == 0;
  gQuiet = o.quiet || !lead;
  if (!o.memoryReport.empty() && lead)
    checkReportPath(o.memoryReport);
  model = loadModel(context.get(), o.package);
  if (!dlrt_model_has_function(model.get(), "train_step"))
    fail("'" + o.package +
         "' is not a training package (it has no "
         "train_step function; compile it with dlc --train)");
  batch = dlrt_model_batch_size(model.get());
  if (batch < 1)
    fail("'" + o.package + "' does not record its training batch size");
  if (o.batchSize != 0 && o.batchSize != batch)
    fail("--batch-size " + std::to_string(o.batchSize) +
         " differs from the package's compiled batch size " +
         std::to_string(batch) + " (recompile with dlc --batch-size " +
         std::to_string(o.batchSize) + ")");

  // A pipeline package (docs/pipeline.md) on S x D ranks: the D replicas of
  // every stage share the data as D data-parallel ranks would; the S stages
  // of a replica read the same samples.
  stages = dlrt_model_pipeline_stages(model.get());
  dataRank = rank;
  dataWorld = worldSize;
  if (stages > 0 && worldSize > 1) {
    if (worldSize % stages != 0)
      fail("'" + o.package + "' is a pipeline of " + std::to_string(stages) +
           " stages: it runs on one process or on a multiple of " +
           std::to_string(stages) + " ranks (stages x replicas), not " +
           std::to_string(worldSize));
    dataWorld = worldSize / stages;
    dataRank = rank % dataWorld;
  }
}

void Trainer::bindData() {
  if (!o.dataFile.empty())
    bindNpz(o, model.get(), batch, d);
  else if (!o.dataTokens.empty())
    bindTokens(o, model.get(), batch, d);
  else
    bindFashionMnist(o, model.get(), batch, d);
  // Sharding as torch.utils.data.DistributedSampler (without padding): every
  // rank computes the same order; global batch k is positions
  // [k*B*W, (k+1)*B*W) of it, of which rank r takes k*B*W + r, + r + W, ...
  globalBatch = batch * dataWorld;
  if (d.samples < globalBatch)
    fail(d.what + " has " + std::to_string(d.samples) +
         " samples, fewer than one " +
         (dataWorld > 1 ? "global batch of " + std::to_string(batch) + " x " +
                              std::to_string(dataWorld) + " ranks"
                        : "batch of " + std::to_string(batch)));
  stepsPerEpoch = d.samples / globalBatch;
  // --eval-data: every rank reads the file (all take part in evaluating).
  if (!o.evalData.empty()) {
    const dlrt_tensor_info_t *trainLabels = nullptr;
    for (const Binding &b : d.bindings)
      if (std::string(b.info.name) == "labels")
        trainLabels = &b.info;
    evalSet.emplace(
        loadEvalSet(model.get(), o.package, trainLabels, o.evalData));
  }
  if (!o.evalDataTokens.empty()) {
    const dlrt_tensor_info_t *trainLabels = nullptr;
    for (const Binding &b : d.bindings)
      if (std::string(b.info.name) == "labels")
        trainLabels = &b.info;
    evalSet.emplace(loadTokenEvalSet(
        model.get(), o.package, trainLabels, o.evalDataTokens,
        o.tokenDtype == "uint32" ? data::TokenType::U32
                                 : data::TokenType::U16));
  }
}

void Trainer::createStepSession() {
  outputs = outputInfos(model.get(), "train_step");
  lossName = dlrt_model_loss_output(model.get());
  lossIndex = findInfo(outputs, lossName);
  if (lossIndex < 0)
    fail("'" + o.package + "': loss output '" + lossName +
         "' is not an output of train_step");
  lossInfo = outputs[lossIndex];

  // Every rank creates its session (which broadcasts rank 0's state).
  session = createSession(model.get());
  if (o.noCudaGraph)
    check(dlrt_session_set_graphs(session.get(), 0));

  if (!o.trace.empty()) {
    tracePath = rankFileName(o.trace, rank, worldSize);
    check(dlrt_session_set_trace(session.get(), 1));
  }
  lossScale = findLossScaleOutputs(session.get(), outputs);
  scalars = scalarOutputs(outputs, lossIndex, lossScale, lead);
  for (size_t i = 0; i < scalars.size(); ++i)
    if (std::string(scalars[i].info.name) == "lr")
      lrIndex = static_cast<int>(i);
  if (!o.saveGradients.empty()) {
    grads = gradientOutputs(session.get(), outputs);
    if (grads.empty())
      fail("--save-gradients: '" + o.package +
           "' has no gradient outputs "
           "(compile it with dlc --train --expose-gradients)");
    if (!lead)
      grads.clear(); // the gradients are averaged: rank 0 writes them
    std::error_code ec;
    if (lead)
      std::filesystem::create_directories(o.saveGradients, ec);
    if (ec)
      fail("--save-gradients: cannot create '" + o.saveGradients +
           "': " + ec.message());
  }
}

void Trainer::resumeFromCheckpoint() {
  // Every rank reads the checkpoint (across nodes it must be on a shared
  // file system); its state is the same on every rank.
  char *metaText = nullptr;
  check(
      dlrt_session_load_checkpoint(session.get(), o.resume.c_str(), &metaText));
  std::string text = metaText ? metaText : "";
  dlrt_string_free(metaText);
  nlohmann::json meta = nlohmann::json::parse(text, nullptr, false);
  uint64_t value;
  if (!metaNumber(meta, "step", o.resume, value))
    fail(o.resume + ": checkpoint has no 'step' metadata (not written by "
                    "dlrt train?)");
  at.step = static_cast<int64_t>(value);
  if (metaNumber(meta, "seed", o.resume, value)) {
    if (!o.seedGiven)
      seed = value;
    else if (value != o.seed && lead)
      std::fprintf(stderr,
                   "dlrt: note: checkpoint was trained with --seed "
                   "%llu; continuing with --seed %llu\n",
                   static_cast<unsigned long long>(value),
                   static_cast<unsigned long long>(o.seed));
  }
  uint64_t epoch, sample, savedSteps;
  if (metaNumber(meta, "epoch", o.resume, epoch) &&
      metaNumber(meta, "epoch_position", o.resume, sample)) {
    // The position is in samples, so it carries over to another number
    // of ranks (another global batch).
    at.epoch = static_cast<int64_t>(epoch);
    at.sample = static_cast<int64_t>(sample);
    if (metaNumber(meta, "global_batch", o.resume, value) &&
        static_cast<int64_t>(value) != globalBatch && lead)
      std::fprintf(stderr,
                   "dlrt: note: checkpoint was trained with a global batch "
                   "of %llu, this run's is %lld (%d rank(s) x %lld); "
                   "continuing from sample %lld of epoch %lld\n",
                   static_cast<unsigned long long>(value),
                   static_cast<long long>(globalBatch), worldSize,
                   static_cast<long long>(batch),
                   static_cast<long long>(at.sample),
                   static_cast<long long>(at.epoch + 1));
  } else {
    // Checkpoints of one process from before epoch_position existed.
    int64_t spe = stepsPerEpoch;
    if (metaNumber(meta, "steps_per_epoch", o.resume, savedSteps) &&
        savedSteps > 0) {
      if (static_cast<int64_t>(savedSteps) != stepsPerEpoch && lead)
        std::fprintf(stderr,
                     "dlrt: note: checkpoint had %llu steps per epoch, "
                     "this data gives %lld; the data order differs\n",
                     static_cast<unsigned long long>(savedSteps),
                     static_cast<long long>(stepsPerEpoch));
      spe = static_cast<int64_t>(savedSteps);
    }
    at.epoch = at.step / spe;
    at.sample = at.step % spe * batch;
  }
  say("resumed from %s at step %lld\n", o.resume.c_str(),
      static_cast<long long>(at.step));
}

void Trainer::openLog() {
  normalize(at);
  totalEpochs = o.steps > 0
                    ? at.epoch + (o.steps - at.step + at.sample / globalBatch +
                                  stepsPerEpoch - 1) /
                                     stepsPerEpoch
                    : o.epochs;
  if (!o.logJsonl.empty() && lead) {
    // A resumed run continues its log; a fresh run starts a new one.
    log = std::fopen(o.logJsonl.c_str(), o.resume.empty() ? "w" : "a");
    if (!log)
      fail("cannot open --log-jsonl file '" + o.logJsonl + "'");
  }
}

Clock::duration Trainer::runEvaluation() {
  Clock::time_point start = Clock::now();
  // Each pipeline rank updates only its stage's state.
  if (stages > 0)
    check(dlrt_session_sync_pipeline_state(session.get()));
  EvalResult r =
      evaluate(context.get(), session.get(), *evalSet, rank, worldSize);
  evaluatedAt = at.step;
  std::string how;
  if (worldSize > 1 && !r.alone)
    how = " over " + std::to_string(worldSize) + " ranks";
  else if (worldSize > 1)
    how = " on rank 0 alone: the ranks' states differ, e.g. BatchNorm "
          "statistics";
  else if (r.lastRows < evalSet->batch)
    how = ", the last " + std::to_string(r.lastRows) + " + " +
          std::to_string(evalSet->batch - r.lastRows) + " padding rows";
  // A language model's held-out loss is also read as its perplexity.
  const bool tokens = evalSet->windows != nullptr;
  char perplexity[64] = "";
  if (tokens)
    std::snprintf(perplexity, sizeof(perplexity), ", perplexity %.9g",
                  std::exp(r.loss));
  say("eval at step %lld: loss %.9g%s, accuracy %.9g (%lld/%lld correct; "
      "%lld samples in %lld batches of %lld%s)\n",
      static_cast<long long>(at.step), r.loss, perplexity, r.accuracy,
      static_cast<long long>(r.correct), static_cast<long long>(r.predictions),
      static_cast<long long>(r.samples), static_cast<long long>(r.batches),
      static_cast<long long>(evalSet->batch), how.c_str());
  std::fflush(stdout);
  if (log) {
    std::fprintf(log, "{\"step\": %lld, \"eval_loss\": ",
                 static_cast<long long>(at.step));
    writeJsonNumber(log, r.loss, 17);
    if (tokens) {
      std::fprintf(log, ", \"eval_perplexity\": ");
      writeJsonNumber(log, std::exp(r.loss), 17);
    }
    std::fprintf(log, ", \"eval_accuracy\": ");
    writeJsonNumber(log, r.accuracy, 17);
    std::fprintf(log, ", \"eval_samples\": %lld}\n",
                 static_cast<long long>(r.samples));
    std::fflush(log);
  }
  return Clock::now() - start;
}

void Trainer::finishWithoutSteps() {
  say("nothing to do: at step %lld%s\n", static_cast<long long>(at.step),
      o.steps > 0 ? (" of " + std::to_string(o.steps)).c_str()
                  : (", epoch " + std::to_string(at.epoch) + " of " +
                     std::to_string(o.epochs))
                        .c_str());
  if (evalSet)
    runEvaluation();
  if (!o.memoryReport.empty() && lead)
    reportMemory(context.get(), session.get(), o.memoryReport, o.quiet);
  check(dlrt_context_barrier(context.get()));
}

void Trainer::reportCudaGraph() {
  int32_t replayed = 0;
  const char *why = nullptr;
  check(
      dlrt_session_graph_status(session.get(), "train_step", &replayed, &why));
  if (replayed)
    say("cuda graph: each step replays as one CUDA graph\n");
  else if (stages > 0)
    say("cuda graph: not for the whole step (a pipeline runs its "
        "stage functions per micro-batch)\n");
  else
    say("cuda graph: not used (%s)\n",
        o.noCudaGraph ? "--no-cuda-graph"
        : why         ? why
                      : "the step has collectives or is traced");
  // Whether cuBLASLt took every fused gemm epilogue (e.g. an f32 bias
  // of a bf16 gemm) or the device ran its fallbacks.
  int64_t fallbacks = 0;
  check(dlrt_context_gemm_epilogue_fallbacks(context.get(), &fallbacks));
  say("gemm epilogue fallbacks: %lld in the first two steps%s\n",
      (long long)fallbacks,
      fallbacks ? " (cuBLASLt had no algorithm for a fused epilogue)" : "");
}

void Trainer::trainStep(const std::vector<int64_t> &order) {
  for (int64_t j = 0; j < batch; ++j)
    shard[j] = order.empty() ? at.sample + dataRank + j * dataWorld
                             : order[at.sample + dataRank + j * dataWorld];
  if (d.windows.file) { // token windows: sample k -> its first token
    d.windows.seed = seed;
    for (int64_t j = 0; j < batch; ++j)
      shard[j] = d.windows.offset(at.epoch, shard[j]);
  }
  feedBatch(session.get(), "train_step", d.bindings, shard.data(), batch);
  check(dlrt_session_run(session.get(), "train_step"));
  // The second step is the first that may replay a CUDA graph.
  if (++sessionRuns == 2 &&
      dlrt_context_device(context.get()) == DLRT_DEVICE_CUDA)
    reportCudaGraph();
}

std::vector<double> Trainer::readStepOutputs() {
  std::vector<double> lossValues =
      readOutput(session.get(), "train_step", lossInfo);
  double loss = 0;
  for (double v : lossValues)
    loss += v;
  if (!lossValues.empty())
    loss /= static_cast<double>(lossValues.size());
  // The mean over the ranks: the loss of the global batch when the
  // loss is a mean over samples (every shard has B of them).
  // (A pipeline's step gives every rank that mean already.)
  // The scalar outputs too (one collective for all): a value every
  // rank has alike (the lr, the norm of all-reduced gradients) comes
  // back unchanged.
  std::vector<double> averaged = {loss};
  for (const ScalarOutput &s : scalars)
    averaged.push_back(readOutput(session.get(), "train_step", s.info)[0]);
  if (worldSize > 1 && stages == 0)
    check(
        dlrt_context_average(context.get(), averaged.data(), averaged.size()));
  return averaged;
}

void Trainer::reportLossScale(double *scaleUsed, bool *skipped) {
  *scaleUsed =
      readOutput(session.get(), "train_step", outputs[lossScale.scaleIndex])[0];
  *skipped = readOutput(session.get(), "train_step",
                        outputs[lossScale.skippedIndex])[0] != 0;
  float next = static_cast<float>(*scaleUsed);
  if (lossScale.hasState)
    check(dlrt_session_read_state(session.get(), "__loss_scale", &next,
                                  sizeof(next)));
  if (next != *scaleUsed)
    say("step %lld: loss scale %.9g -> %.9g (%s)\n",
        static_cast<long long>(at.step), *scaleUsed, static_cast<double>(next),
        *skipped ? "inf/NaN gradients, step skipped"
                 : "growth interval of finite steps reached");
  else if (*skipped)
    say("step %lld: inf/NaN gradients, step skipped (loss "
        "scale %.9g)\n",
        static_cast<long long>(at.step), *scaleUsed);
}

Trainer::Throughput Trainer::throughput(double stepSeconds) const {
  Throughput t;
  if (!(stepSeconds > 0))
    return t;
  char text[128];
  if (d.windows.file) {
    t.tokensPerSecond = static_cast<double>(globalBatch * d.windows.seqLen) /
                        stepSeconds;
    std::snprintf(text, sizeof(text), "  %.0f tokens/s", t.tokensPerSecond);
    t.text += text;
  }
  // Every rank runs the same step: the model FLOP/s of one rank.
  const double flops = dlrt_model_flops_per_step(model.get());
  if (flops > 0) {
    t.modelFlopsPerSecond = flops / stepSeconds;
    std::snprintf(text, sizeof(text), "  %.3g TFLOP/s",
                  t.modelFlopsPerSecond * 1e-12);
    t.text += text;
    const double peak = dlrt_model_peak_flops(model.get());
    if (peak > 0 && dlrt_context_device(context.get()) == DLRT_DEVICE_CUDA) {
      t.mfu = t.modelFlopsPerSecond / peak;
      std::snprintf(text, sizeof(text), "  MFU %.1f%%", 100 * t.mfu);
      t.text += text;
    }
  }
  return t;
}

void Trainer::logStep(const std::vector<double> &averaged, double scaleUsed,
                      bool skipped, double stepSeconds) {
  const double loss = averaged[0];
  // f32 losses print exactly with 9 significant digits, f64 with 17;
  // a mean over ranks is a double and keeps 17.
  std::fprintf(log,
               "{\"step\": %lld, \"loss\": ", static_cast<long long>(at.step));
  writeJsonNumber(log, loss, exactDigits(lossInfo.dtype, worldSize > 1));
  if (lossScale.present())
    std::fprintf(log, ", \"loss_scale\": %.9g, \"skipped\": %s", scaleUsed,
                 skipped ? "true" : "false");
  for (size_t i = 0; i < scalars.size(); ++i) {
    std::fprintf(log, ", %s: ", scalars[i].key.c_str());
    const dlrt_dtype_t t = scalars[i].info.dtype;
    if (t == DLRT_BOOL) // true when any rank's is
      std::fputs(averaged[i + 1] != 0 ? "true" : "false", log);
    else
      writeJsonNumber(log, averaged[i + 1],
                      exactDigits(t, worldSize > 1 && stages == 0));
  }
  // A language model's run (--data-tokens) logs its speed with each step;
  // other runs keep records that are equal across runs (resume tests diff
  // them).
  if (d.windows.file) {
    Throughput t = throughput(stepSeconds);
    std::fprintf(log, ", \"step_ms\": %.6g, \"tokens_per_s\": %.6g",
                 stepSeconds * 1e3, t.tokensPerSecond);
    if (t.modelFlopsPerSecond > 0)
      std::fprintf(log, ", \"model_tflops\": %.6g",
                   t.modelFlopsPerSecond * 1e-12);
    if (t.mfu > 0)
      std::fprintf(log, ", \"mfu\": %.6g", t.mfu);
  }
  std::fprintf(log, "}\n");
}

void Trainer::runEpoch() {
  const int64_t epoch = at.epoch;
  std::vector<int64_t> shuffled;
  // Random token windows are drawn per (epoch, k) already: they need no
  // permutation (which would take 8 bytes a window).
  const bool permute = o.shuffle && !d.windows.random;
  if (permute)
    shuffled = data::epochPermutation(d.samples, seed, epoch);
  const std::vector<int64_t> &order = shuffled; // empty: file order

  double epochLoss = 0, windowLoss = 0;
  int64_t epochSteps = 0, windowSteps = 0;
  Clock::time_point epochStart = Clock::now(), windowStart = epochStart;
  while (at.epoch == epoch && !done(at)) {
    const Clock::time_point stepStart = Clock::now();
    trainStep(order);
    std::vector<double> averaged = readStepOutputs(); // waits for the step
    const double stepSeconds = secondsSince(stepStart);
    const double loss = averaged[0];
    ++at.step;
    at.sample += globalBatch;
    const int64_t k = at.sample / globalBatch; // global batches this epoch
    normalize(at);
    if (!grads.empty())
      saveGradients(session.get(), o.saveGradients, at.step, grads);
    if (!std::isfinite(loss) && !warnedNonFinite && lead) {
      std::fprintf(stderr, "dlrt: note: loss is %g at step %lld\n", loss,
                   static_cast<long long>(at.step));
      warnedNonFinite = true;
    }
    double scaleUsed = 0;
    bool skipped = false;
    if (lossScale.present())
      reportLossScale(&scaleUsed, &skipped);
    if (log)
      logStep(averaged, scaleUsed, skipped, stepSeconds);
    epochLoss += loss;
    windowLoss += loss;
    ++epochSteps;
    ++windowSteps;
    if (at.step % o.logEvery == 0) {
      double secs = secondsSince(windowStart);
      // The lr of the last step, when the step reports one.
      std::string lr;
      if (lrIndex >= 0) {
        char text[32];
        std::snprintf(text, sizeof(text), "  lr %.4g", averaged[lrIndex + 1]);
        lr = text;
      }
      say("epoch %lld/%lld  step %lld/%lld  loss %.4f%s  %.0f "
          "samples/s%s\n",
          static_cast<long long>(epoch + 1),
          static_cast<long long>(totalEpochs), static_cast<long long>(k),
          static_cast<long long>(stepsPerEpoch),
          windowLoss / static_cast<double>(windowSteps), lr.c_str(),
          secs > 0 ? static_cast<double>(windowSteps * globalBatch) / secs
                   : 0.0,
          throughput(secs / static_cast<double>(windowSteps)).text.c_str());
      std::fflush(stdout);
      windowLoss = 0;
      windowSteps = 0;
      windowStart = Clock::now();
    }
    if (evalSet && o.evalEvery > 0 && at.step % o.evalEvery == 0) {
      Clock::duration spent = runEvaluation();
      windowStart += spent;
      epochStart += spent;
    }
  }
  endEpoch(epoch, epochSteps, epochLoss, epochStart);
}

void Trainer::endEpoch(int64_t epoch, int64_t epochSteps, double epochLoss,
                       Clock::time_point epochStart) {
  if (log)
    std::fflush(log);
  double secs = secondsSince(epochStart);
  double rate =
      secs > 0 ? static_cast<double>(epochSteps * globalBatch) / secs : 0.0;
  bool finished = at.epoch != epoch;
  if (epochSteps == 0) {
    // A resumed position at the very end of an epoch: nothing ran.
  } else if (finished) {
    say("epoch %lld: mean loss %.4f, %.0f samples/s, %.1f s\n",
        static_cast<long long>(epoch + 1),
        epochLoss / static_cast<double>(epochSteps), rate, secs);
  } else {
    say("epoch %lld (stopped at step %lld, %lld/%lld of the epoch): "
        "mean loss %.4f, %.0f samples/s, %.1f s\n",
        static_cast<long long>(epoch + 1), static_cast<long long>(at.step),
        static_cast<long long>(at.sample / globalBatch),
        static_cast<long long>(stepsPerEpoch),
        epochLoss / static_cast<double>(epochSteps), rate, secs);
  }
  std::fflush(stdout);
  // Each pipeline rank updates only its stage's state: every rank gets
  // the whole model before evaluating or saving it.
  if (stages > 0 && epochSteps > 0 && (testSplit || (!o.save.empty())))
    check(dlrt_session_sync_pipeline_state(session.get()));
  if (testSplit && epochSteps > 0)
    testAccuracy(context.get(), session.get(), model.get(), batch, d, rank,
                 worldSize);
  if (!o.save.empty() && lead && epochSteps > 0) {
    saveCheckpoint(session.get(), o, at, stepsPerEpoch, globalBatch, worldSize,
                   seed);
    savedAtEnd = done(at);
  }
}

void Trainer::finish() {
  if (evalSet && evaluatedAt != at.step)
    runEvaluation();
  if (!o.save.empty() && lead) {
    if (!savedAtEnd)
      saveCheckpoint(session.get(), o, at, stepsPerEpoch, globalBatch,
                     worldSize, seed);
    say("saved checkpoint %s (step %lld)\n", o.save.c_str(),
        static_cast<long long>(at.step));
  }
  // A pipeline's ranks hold different stages: each reports its own memory
  // (FILE.rankR.json, as traces).
  if (!o.memoryReport.empty() && (lead || stages > 0))
    reportMemory(context.get(), session.get(),
                 stages > 0 ? rankFileName(o.memoryReport, rank, worldSize)
                            : o.memoryReport,
                 o.quiet || !lead);
  if (!tracePath.empty()) {
    check(dlrt_session_write_trace(session.get(), tracePath.c_str(), rank,
                                   ("rank " + std::to_string(rank)).c_str()));
    say("trace: %s\n", tracePath.c_str());
  }
  // No rank closes its connections while another may still read from them.
  check(dlrt_context_barrier(context.get()));
}

int Trainer::run() {
  setUp();
  bindData();
  createStepSession();
  seed = o.seed;
  if (!o.resume.empty())
    resumeFromCheckpoint();
  openLog();
  if (done(at)) {
    finishWithoutSteps();
    return 0;
  }

  testSplit =
      d.isFashionMnist && dlrt_model_has_function(model.get(), "forward");
  shard.resize(static_cast<size_t>(batch));
  while (!done(at))
    runEpoch();
  finish();
  return 0;
}
} // namespace

int runTrain(const TrainOptions &o) {
  Trainer trainer(o);
  return trainer.run();
}

} // namespace dlrt::cli
