//===- Evaluate.cpp - `dlrt train --eval-data`: loss and accuracy ---------===//
#include "Evaluate.h"

#include "runtime/data/Npy.h"

#include <algorithm>
#include <cmath>

namespace dlrt::cli {

namespace {
/// "'input' (samples of (1, 28, 28)) and 'labels' (...)": what the file
/// must hold, for messages.
std::string expectedArrays(const std::vector<dlrt_tensor_info_t> &inputs,
                           const dlrt_tensor_info_t *trainLabels) {
  std::string s = "arrays ";
  for (const dlrt_tensor_info_t &info : inputs) {
    std::vector<int64_t> sample(info.shape + 1, info.shape + info.rank);
    s += "'" + std::string(info.name) + "' (samples of " +
         data::shapeString(sample) + ", converted to " +
         dtypeName(info.dtype) + "), ";
  }
  if (inputs.size() == 1)
    s.replace(s.size() - 2, 2, " ");
  std::vector<int64_t> labelSample(trainLabels->shape + 1,
                                   trainLabels->shape + trainLabels->rank);
  return s + "and 'labels' (samples of " + data::shapeString(labelSample) +
         ", integer class indices)";
}

} // namespace

bool ranksAgree(dlrt_context_t context, dlrt_session_t session) {
  uint64_t hash = 14695981039346656037ull;
  std::vector<uint8_t> bytes;
  for (int32_t i = 0; i < dlrt_session_state_count(session); ++i) {
    dlrt_tensor_info_t info;
    check(dlrt_session_state_info(session, i, &info));
    bytes.resize(byteSize(info));
    check(dlrt_session_read_state(session, info.name, bytes.data(),
                                  bytes.size()));
    for (uint8_t b : bytes)
      hash = (hash ^ b) * 1099511628211ull;
  }
  // The hash in 16-bit pieces (exact in double). All ranks' values equal
  // their mean only when they are all equal.
  double pieces[4], mean[4];
  for (int i = 0; i < 4; ++i)
    pieces[i] = mean[i] = static_cast<double>((hash >> (16 * i)) & 0xffff);
  check(dlrt_context_average(context, mean, 4));
  double same = std::equal(pieces, pieces + 4, mean) ? 1.0 : 0.0;
  check(dlrt_context_average(context, &same, 1));
  return same == 1.0;
}

namespace {

bool isIntegerType(data::DType t) {
  return t == data::DType::I64 || t == data::DType::I32 ||
         t == data::DType::U8;
}
} // namespace

/// The checks both kinds of evaluation data share: forward exists, the
/// package trains with dlc's softmax cross-entropy (train_step's 'labels'),
/// forward's output 0 is logits of batch x positions x classes. |flag|
/// starts the errors.
static EvalSet evalSetFor(dlrt_model_t model, const std::string &package,
                          const dlrt_tensor_info_t *trainLabels,
                          const std::string &flag) {
  if (!dlrt_model_has_function(model, "forward"))
    fail(flag + ": '" + package + "' has no forward function to evaluate");
  std::vector<dlrt_tensor_info_t> inputs = inputInfos(model, "forward");
  std::vector<dlrt_tensor_info_t> outputs = outputInfos(model, "forward");
  bool forwardHasLabels = false;
  for (const dlrt_tensor_info_t &info : inputs)
    forwardHasLabels |= std::string(info.name) == "labels";
  if (!trainLabels || forwardHasLabels || outputs.empty())
    fail(flag + ": '" + package +
         "' computes its own loss (its train_step has no 'labels' input "
         "that forward lacks); evaluation needs a package trained with dlc's "
         "softmax-cross-entropy loss, whose forward's first output is logits "
         "with the classes on the last axis");
  if (inputs.empty() || inputs[0].rank < 1)
    fail(flag + ": forward of '" + package + "' has no batched input");

  EvalSet set;
  set.batch = inputs[0].shape[0];
  set.logits = outputs[0];
  const dlrt_tensor_info_t &out = set.logits;
  if (trainLabels->rank < 1 || trainLabels->shape[0] < 1)
    fail(flag + ": train_step's 'labels' " + describe(*trainLabels) +
         " has no batch axis");
  set.positions = numel(*trainLabels) / trainLabels->shape[0];
  set.classes = out.rank >= 1 ? out.shape[out.rank - 1] : 0;
  const dlrt_dtype_t t = out.dtype;
  if (t != DLRT_F32 && t != DLRT_F64 && t != DLRT_F16 && t != DLRT_BF16)
    fail(flag + ": forward's output '" + out.name + "' " + describe(out) +
         " is not floating-point logits");
  if (set.classes < 1 || out.rank < 2 || out.shape[0] != set.batch ||
      numel(out) != set.batch * set.positions * set.classes)
    fail(flag + ": forward's output '" + out.name + "' " + describe(out) +
         " is not logits of " + std::to_string(set.batch) + " samples x " +
         std::to_string(set.positions) +
         " predictions x classes (train_step's 'labels' is " +
         describe(*trainLabels) + ")");
  return set;
}

EvalSet loadTokenEvalSet(dlrt_model_t model, const std::string &package,
                         const dlrt_tensor_info_t *trainLabels,
                         const std::string &path, data::TokenType rawType) {
  const std::string flag = "--eval-data-tokens " + path;
  EvalSet set = evalSetFor(model, package, trainLabels, flag);
  set.path = path;
  std::vector<dlrt_tensor_info_t> inputs = inputInfos(model, "forward");
  const dlrt_tensor_info_t &in = inputs[0];
  if (inputs.size() != 1 || (in.dtype != DLRT_I64 && in.dtype != DLRT_I32) ||
      in.rank != 2 || in.shape[1] != set.positions)
    fail(flag + ": forward of '" + package +
         "' is not a language model of one integer input [batch, T] and "
         "logits [batch, T, vocabulary] (its first input is '" + in.name +
         "' " + describe(in) + ", its output '" + set.logits.name + "' " +
         describe(set.logits) + ")");
  const int64_t t = in.shape[1];
  set.tokens = std::make_unique<data::TokenFile>();
  std::string err;
  if (!set.tokens->open(path, rawType, err))
    fail("--eval-data-tokens " + err);
  if (set.tokens->size() < t + 1)
    fail(flag + ": " + std::to_string(set.tokens->size()) +
         " tokens, fewer than one window of T + 1 = " + std::to_string(t + 1));
  const int64_t top = set.tokens->maxId(err);
  if (top < 0)
    fail("--eval-data-tokens " + err);
  if (top >= set.classes)
    fail(flag + ": token id " + std::to_string(top) +
         " is not below the model's vocabulary of " +
         std::to_string(set.classes));
  set.windows = std::make_unique<data::TokenWindows>();
  set.windows->file = set.tokens.get();
  set.windows->seqLen = t;
  set.samples = set.windows->count();
  Binding b;
  b.info = in;
  b.windows = set.windows.get();
  set.bindings.push_back(std::move(b));
  return set;
}

EvalSet loadEvalSet(dlrt_model_t model, const std::string &package,
                    const dlrt_tensor_info_t *trainLabels,
                    const std::string &path) {
  const std::string flag = "--eval-data " + path;
  EvalSet set = evalSetFor(model, package, trainLabels, flag);
  set.path = path;
  std::vector<dlrt_tensor_info_t> inputs = inputInfos(model, "forward");
  const dlrt_tensor_info_t &out = set.logits;

  std::string err;
  if (!data::readNpz(path, set.arrays, err))
    fail("--eval-data " + err);
  const std::string expected =
      expectedArrays(inputs, trainLabels);
  auto find = [&](const std::string &name) {
    const data::NamedArray *a = data::findArray(set.arrays, name, path, err);
    if (!a)
      fail("--eval-data " + err + "; expected " + expected);
    if (a->array.shape.empty())
      fail(flag + ": array '" + name + "' is a scalar " +
           a->array.describe() + "; expected samples along axis 0: " +
           expected);
    return a;
  };
  // Find every array first: a misnamed file gets one message for all.
  std::vector<const data::NamedArray *> found;
  for (const dlrt_tensor_info_t &info : inputs)
    found.push_back(find(info.name));
  const data::NamedArray *labels = find("labels");

  set.samples = labels->array.shape[0];
  for (size_t i = 0; i < inputs.size(); ++i) {
    const data::Array &a = found[i]->array;
    if (a.shape[0] != set.samples)
      fail(flag + ": array '" + inputs[i].name + "' " + a.describe() +
           " has " + std::to_string(a.shape[0]) +
           " samples but 'labels' " + labels->array.describe() + " has " +
           std::to_string(set.samples));
    checkFeedable(inputs[i], set.batch, a, "--eval-data " + path);
    Binding b;
    b.info = inputs[i];
    b.src = &a;
    set.bindings.push_back(std::move(b));
  }
  if (set.samples < 1)
    fail(flag + ": the arrays have no samples");

  const data::Array &l = labels->array;
  if (!isIntegerType(l.dtype))
    fail(flag + ": array 'labels' " + l.describe() +
         " is not integers; expected int64, int32 or uint8 class indices");
  if (l.sampleNumel() != set.positions) {
    std::vector<int64_t> want(trainLabels->shape + 1,
                              trainLabels->shape + trainLabels->rank);
    std::vector<int64_t> have(l.shape.begin() + 1, l.shape.end());
    fail(flag + ": array 'labels' has samples of shape " +
         data::shapeString(have) + " (" + std::to_string(l.sampleNumel()) +
         " elements); forward's output '" + out.name + "' " + describe(out) +
         " needs " + data::shapeString(want) + " (" +
         std::to_string(set.positions) + " elements) per sample");
  }
  set.labels.resize(static_cast<size_t>(l.numel()));
  data::convertElements(l.data.data(), l.dtype, set.labels.data(),
                        data::DType::I64, set.labels.size());
  for (size_t i = 0; i < set.labels.size(); ++i)
    if (set.labels[i] < 0 || set.labels[i] >= set.classes)
      fail(flag + ": label " + std::to_string(set.labels[i]) +
           " of sample " + std::to_string(i / set.positions) +
           " is not a class index in [0, " + std::to_string(set.classes) +
           ") (forward's output '" + out.name + "' " + describe(out) +
           " has " + std::to_string(set.classes) + " classes)");
  return set;
}

EvalResult evaluate(dlrt_context_t context, dlrt_session_t session,
                    EvalSet &set, int32_t rank, int32_t worldSize) {
  EvalResult r;
  if (worldSize > 1 && !ranksAgree(context, session)) {
    // The ranks hold different models: rank 0's (the one --save writes)
    // is evaluated, by rank 0 alone, while the others wait.
    r.alone = true;
    if (rank == 0)
      r = evaluate(context, session, set, 0, 1);
    r.alone = true;
    check(dlrt_context_barrier(context));
    return r;
  }
  const int64_t batch = set.batch, positions = set.positions,
                classes = set.classes;
  // This rank's shard: samples rank, rank + W, ...
  const int64_t n =
      set.samples > rank ? (set.samples - rank + worldSize - 1) / worldSize
                         : 0;
  double lossSum = 0;
  int64_t correct = 0, batches = 0, lastRows = 0;
  std::vector<int64_t> idx(static_cast<size_t>(batch));
  // A token set's window starts and labels, read from the file per batch.
  std::vector<int64_t> starts, tokenLabels;
  if (set.windows) {
    starts.resize(static_cast<size_t>(batch));
    tokenLabels.resize(static_cast<size_t>(batch * positions));
  }
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t real = std::min(batch, n - start);
    for (int64_t i = 0; i < batch; ++i)
      idx[i] = i < real ? rank + (start + i) * worldSize : -1;
    if (set.windows)
      for (int64_t i = 0; i < batch; ++i) {
        starts[i] = i < real ? set.windows->offset(0, idx[i]) : -1;
        if (i < real)
          set.tokens->copy(starts[i] + 1, positions,
                           tokenLabels.data() + i * positions);
      }
    feedBatch(session, "forward", set.bindings,
              set.windows ? starts.data() : idx.data(), batch);
    check(dlrt_session_run(session, "forward"));
    std::vector<double> logits = readOutput(session, "forward", set.logits);
    for (int64_t i = 0; i < real; ++i) {
      for (int64_t p = 0; p < positions; ++p) {
        const double *z = logits.data() + (i * positions + p) * classes;
        const int64_t label = set.windows
                                  ? tokenLabels[i * positions + p]
                                  : set.labels[idx[i] * positions + p];
        int64_t best = 0;
        for (int64_t c = 1; c < classes; ++c)
          if (z[c] > z[best])
            best = c;
        double sum = 0;
        for (int64_t c = 0; c < classes; ++c)
          sum += std::exp(z[c] - z[best]);
        lossSum += z[best] + std::log(sum) - z[label];
        correct += best == label;
      }
    }
    ++batches;
    lastRows = real;
  }
  // Sums over the ranks: means times W (counts below 2^53 are exact).
  double sums[4] = {lossSum, static_cast<double>(correct),
                    static_cast<double>(n), static_cast<double>(batches)};
  if (worldSize > 1) {
    check(dlrt_context_average(context, sums, 4));
    for (double &s : sums)
      s *= worldSize;
    for (int i = 1; i < 4; ++i)
      sums[i] = std::round(sums[i]);
  }
  r.samples = static_cast<int64_t>(sums[2]);
  r.predictions = r.samples * positions;
  r.correct = static_cast<int64_t>(sums[1]);
  r.batches = static_cast<int64_t>(sums[3]);
  r.lastRows = lastRows;
  r.loss = sums[0] / static_cast<double>(r.predictions);
  r.accuracy =
      static_cast<double>(r.correct) / static_cast<double>(r.predictions);
  return r;
}

} // namespace dlrt::cli
