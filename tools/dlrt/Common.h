//===- Common.h - shared pieces of the dlrt subcommands ---------*- C++ -*-===//
// RAII over the C API handles, the one-line error convention, device
// selection and the binding of data-file arrays to a function's inputs.
#ifndef DLRT_TOOLS_COMMON_H
#define DLRT_TOOLS_COMMON_H

#include "runtime/data/Array.h"
#include "runtime/data/TokenStream.h"
#include "dlrt/dlrt.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace dlrt::cli {

/// A user-facing failure: main() prints "dlrt: error: <what>" and exits 1.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws Error(|message|).
[[noreturn]] void fail(const std::string &message);

/// Frees |status| and throws Error with its message when it is not OK.
void check(dlrt_status_t status);

struct ContextDeleter {
  void operator()(dlrt_context *c) const { dlrt_context_release(c); }
};
struct ModelDeleter {
  void operator()(dlrt_model *m) const { dlrt_model_release(m); }
};
struct SessionDeleter {
  void operator()(dlrt_session *s) const { dlrt_session_release(s); }
};
using ContextPtr = std::unique_ptr<dlrt_context, ContextDeleter>;
using ModelPtr = std::unique_ptr<dlrt_model, ModelDeleter>;
using SessionPtr = std::unique_ptr<dlrt_session, SessionDeleter>;

/// Opens the device named |device| ("auto", "host" or "cuda"); context
/// notices go to stderr as "dlrt: note: ...". When |announce| is set, prints
/// "device: <name>" on stdout.
ContextPtr openContext(const std::string &device, bool announce);

/// Opens the device as openContext does and joins the distributed job of
/// the environment (dlrt_context_options_t::distributed; world size 1 is
/// one process), with |commTimeout| seconds for the rendezvous and every
/// collective. Notices and the announcement are printed by rank 0 only.
ContextPtr openDistributedContext(const std::string &device, bool announce,
                                  double commTimeout);

/// The rank and world size of |context| (0 and 1 for one process).
void contextRank(dlrt_context_t context, int32_t *rank, int32_t *worldSize);

/// The communication timeout in seconds: |flag| when positive (the
/// --comm-timeout flag), else $DLRT_COMM_TIMEOUT when set (a positive
/// number, else an error naming it), else 300.
double commTimeoutSeconds(double flag);
/// Loads the package at |path| (errors are the C API's messages).
ModelPtr loadModel(dlrt_context_t context, const std::string &path);
SessionPtr createSession(dlrt_model_t model);

/// Inputs / outputs of |function| (empty when it does not exist).
std::vector<dlrt_tensor_info_t> inputInfos(dlrt_model_t model,
                                           const char *function);
std::vector<dlrt_tensor_info_t> outputInfos(dlrt_model_t model,
                                            const char *function);

/// Elements / bytes of a tensor.
int64_t numel(const dlrt_tensor_info_t &info);
size_t byteSize(const dlrt_tensor_info_t &info);
/// "[64, 1, 28, 28] f32"-style description.
std::string describe(const dlrt_tensor_info_t &info);
const char *dtypeName(dlrt_dtype_t dtype);
/// The data-library dtype of a runtime dtype.
data::DType toDataType(dlrt_dtype_t dtype);

/// An input of a function fed from a data array, batch-major: sample i of
/// the batch is src->sample(i).
/// Or, for a language model's token stream (windows set), fed from
/// windows of the token file: the batch's indices are window starts, and
/// sample i is tokens [indices[i] + shift, + T) (shift 0: the inputs, 1: the
/// next-token labels).
struct Binding {
  dlrt_tensor_info_t info;
  const data::Array *src = nullptr;
  const data::TokenWindows *windows = nullptr;
  int64_t shift = 0;
  std::vector<uint8_t> staging; ///< byteSize(info) bytes
};

/// Checks that |src| can feed input |info| in batches of |batch| samples:
/// info's first dimension is |batch| and the per-sample element counts
/// match. Errors name |what| (the file), the input and both shapes.
void checkFeedable(const dlrt_tensor_info_t &info, int64_t batch,
                   const data::Array &src, const std::string &what);

/// Fills every binding's staging buffer with samples |indices[0..batch)|
/// (negative index = zero padding; for a token binding, window starts) and
/// copies it into |session|.
void feedBatch(dlrt_session_t session, const char *function,
               std::vector<Binding> &bindings, const int64_t *indices,
               int64_t batch);

/// Reads output |info| of the last run of |function| in |session|, every
/// element converted to double (exactly: f64 and narrower floats, integers
/// below 2^53).
std::vector<double> readOutput(dlrt_session_t session, const char *function,
                               const dlrt_tensor_info_t &info);

/// Fails when the --memory-report file |path| cannot be written (its
/// directory is missing or not writable), before any work is done.
void checkReportPath(const std::string &path);

/// Writes |session|'s predicted and measured memory (dlrt_session_memory,
/// bytes) to |path| as a JSON object, atomically (a temporary file, then
/// rename): predicted_peak_bytes, measured_peak_bytes, persistent_bytes,
/// input_bytes, arena_bytes, workspace_bytes, used_peak_bytes,
/// plan_from_package and device ("host" or the CUDA device's name). Unless
/// |quiet|, prints "memory: predicted X, measured Y bytes (persistent P,
/// inputs I, arena A, workspace W)".
void reportMemory(dlrt_context_t context, dlrt_session_t session,
                  const std::string &path, bool quiet);

} // namespace dlrt::cli

#endif // DLRT_TOOLS_COMMON_H
