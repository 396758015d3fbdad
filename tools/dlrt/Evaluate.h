//===- Evaluate.h - `dlrt train --eval-data`: loss and accuracy -*- C++ -*-===//
// Evaluation of a training package's forward function on the user's data:
// the mean softmax cross-entropy and the top-1 accuracy of forward's first
// output against integer class labels.
#ifndef DLRT_TOOLS_EVALUATE_H
#define DLRT_TOOLS_EVALUATE_H

#include "Common.h"

#include <memory>
#include <string>
#include <vector>

namespace dlrt::cli {

/// An --eval-data file checked against a package: one array per input of
/// forward (named by the input) plus "labels", all with the same number of
/// samples along axis 0 (other arrays are ignored).
struct EvalSet {
  EvalSet() = default;
  EvalSet(const EvalSet &) = delete; // |bindings| point into |arrays|
  EvalSet &operator=(const EvalSet &) = delete;
  EvalSet(EvalSet &&) = default; // keeps the arrays where they are
  EvalSet &operator=(EvalSet &&) = default;

  std::string path;                ///< the file, for messages
  std::vector<data::NamedArray> arrays; ///< what the file holds
  std::vector<Binding> bindings;   ///< forward's inputs, fed from |arrays|
  /// The labels, |samples| x |positions| class indices in [0, classes).
  std::vector<int64_t> labels;
  dlrt_tensor_info_t logits{};     ///< forward's output 0
  int64_t batch = 0;     ///< samples per forward run (its inputs' axis 0)
  int64_t positions = 0; ///< predictions per sample (1 for [batch, classes])
  int64_t classes = 0;   ///< the last axis of the logits
  int64_t samples = 0;   ///< samples in the file
  /// --eval-data-tokens: the mapped file and its aligned windows (sample k:
  /// tokens [kT, kT + T), labels one further, read per batch; |labels| and
  /// |arrays| stay empty). Held by pointer: the bindings point at them.
  std::unique_ptr<data::TokenFile> tokens;
  std::unique_ptr<data::TokenWindows> windows;
};

/// Reads the .npz |path| and checks it against forward of |model|, whose
/// train_step is fed |trainLabels| (its "labels" input: the package trains
/// with dlc's softmax-cross-entropy, classes on the last axis of forward's
/// output 0). Labels must be int64, int32 or uint8 class indices; inputs
/// are converted to the input's dtype as for --data. Fails (cli::Error)
/// with one line naming the file and, as fits, the arrays found and
/// expected, the shapes, the dtype or the first label out of range; also
/// for an unreadable or corrupt file and a package that cannot be
/// evaluated this way.
EvalSet loadEvalSet(dlrt_model_t model, const std::string &package,
                    const dlrt_tensor_info_t *trainLabels,
                    const std::string &path);

/// A held-out token file (the formats of --data-tokens, raw ids of
/// |rawType|) checked against |model|: forward has one integer input
/// [batch, T] and its logits [batch, T, vocabulary]; every window of T + 1
/// tokens at multiples of T is a sample. Fails (cli::Error) naming the file
/// for what --data-tokens refuses (format, too short, an id outside the
/// vocabulary) and for a package whose forward is not such a model.
EvalSet loadTokenEvalSet(dlrt_model_t model, const std::string &package,
                         const dlrt_tensor_info_t *trainLabels,
                         const std::string &path, data::TokenType rawType);

/// Whether every rank of |context| holds the same persistent state in
/// |session|: an FNV-1a hash of every state tensor's bytes (read to the host)
/// compared over the ranks, exactly (all ranks' values equal their mean only
/// when they are all equal). Every rank must call it; all get the same
/// answer. Ranks of a data-parallel package agree, except where each updates
/// state from its own shard (BatchNorm's running statistics).
bool ranksAgree(dlrt_context_t context, dlrt_session_t session);

/// What one evaluation found, over every rank.
struct EvalResult {
  double loss = 0;     ///< mean cross-entropy over all predictions (nats)
  double accuracy = 0; ///< correct / predictions, in [0, 1]
  int64_t correct = 0;
  int64_t predictions = 0; ///< samples x positions
  int64_t samples = 0;
  int64_t batches = 0; ///< forward runs, summed over ranks
  int64_t lastRows = 0; ///< real samples of the final batch (of rank 0)
  /// Rank 0 evaluated alone: the ranks' states differed.
  bool alone = false;
};

/// Runs forward of |session| over |set| in batches of set.batch samples.
/// The final partial batch is padded with zero samples whose outputs are
/// not counted (each row of forward depends on its own sample only, as in
/// inference mode). Per prediction, with the logits z widened to double:
/// loss = logsumexp(z) - z[label], correct when the first largest z is the
/// label's (torch.argmax). Sets forward's inputs only: train_step's stay as
/// they were. On W ranks every rank must call this at the same point: when
/// all ranks hold the same persistent state (compared by a hash of every
/// state tensor), rank r takes samples r, r+W, ... and the sums are combined
/// over the ranks, so that every rank gets the result; else (BatchNorm's
/// running statistics, which each rank updates from its own shard) rank 0
/// evaluates its own model on every sample while the others wait, and only
/// rank 0's result is meaningful.
EvalResult evaluate(dlrt_context_t context, dlrt_session_t session,
                    EvalSet &set, int32_t rank, int32_t worldSize);

} // namespace dlrt::cli

#endif // DLRT_TOOLS_EVALUATE_H
