/* dlrt.h - the C API of libdlrt, the dlc runtime.
 *
 * Loads a package (.dlcp) made by `dlc`, binds input tensors, runs its step
 * functions ("train_step" in training packages, "forward" in every package)
 * on a device, and reads outputs and persistent state (parameters, optimizer
 * state, running statistics).
 *
 * Conventions: every fallible call returns a dlrt_status_t (NULL means OK;
 * otherwise the caller owns it and frees it with dlrt_status_free). Outputs
 * are `out_*` and are set to NULL/0 first. Create/load = caller owns and
 * releases; get = borrowed, valid while its owner lives. No C++ type or
 * exception crosses this API. Thread safety: one session per thread.
 */
#ifndef DLRT_DLRT_H
#define DLRT_DLRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this API (major * 10000 + minor * 100 + patch). */
#define DLRT_API_VERSION 700

/* ---------------------------------------------------------------- status */

typedef enum dlrt_status_code_t {
  DLRT_OK = 0,
  DLRT_INVALID_ARGUMENT = 1, /* a bad argument: unknown name, wrong shape */
  DLRT_NOT_FOUND = 2,        /* a file, function or tensor does not exist */
  DLRT_INCOMPATIBLE = 3,     /* package format version differs */
  DLRT_CORRUPT = 4,          /* a package, checkpoint or data file is malformed */
  DLRT_UNAVAILABLE = 5,      /* the device cannot be used (e.g. no CUDA driver) */
  DLRT_IO_ERROR = 6,         /* reading or writing a file failed */
  DLRT_INTERNAL = 7,         /* a kernel, library or driver call failed */
  DLRT_OUT_OF_MEMORY = 8,
} dlrt_status_code_t;

typedef struct dlrt_status *dlrt_status_t;

/* The code of |status| (DLRT_OK for NULL). */
dlrt_status_code_t dlrt_status_code(dlrt_status_t status);
/* One-line message of |status| ("" for NULL); borrowed from |status|. */
const char *dlrt_status_message(dlrt_status_t status);
/* Frees |status| (NULL is fine). */
void dlrt_status_free(dlrt_status_t status);

/* ---------------------------------------------------------------- types */

/* Element types. Values are stable (new ones are appended). DLRT_F16 is IEEE
 * binary16 and DLRT_BF16 bfloat16 (the upper 16 bits of an f32), both 2
 * little-endian bytes per element; the runtime copies them as they are (no
 * conversion on set_input / get_output). Since API 0.2 (DLRT_API_VERSION
 * 200). */
typedef enum dlrt_dtype_t {
  DLRT_F32 = 0,
  DLRT_F64 = 1,
  DLRT_I64 = 2,
  DLRT_I32 = 3,
  DLRT_BOOL = 4,
  DLRT_F16 = 5,
  DLRT_BF16 = 6,
} dlrt_dtype_t;

/* Bytes per element of |dtype| (8, 4, 2 or 1); 0 for a value that is not a
 * dlrt_dtype_t. */
size_t dlrt_dtype_size(dlrt_dtype_t dtype);

typedef enum dlrt_device_kind_t {
  DLRT_DEVICE_AUTO = 0, /* CUDA if a driver and a GPU are present, else host */
  DLRT_DEVICE_HOST = 1,
  DLRT_DEVICE_CUDA = 2,
} dlrt_device_kind_t;

/* Describes a tensor: a name, a dtype and a shape (rank <= 8). */
typedef struct dlrt_tensor_info_t {
  const char *name; /* borrowed from the model */
  dlrt_dtype_t dtype;
  int32_t rank;
  int64_t shape[8];
} dlrt_tensor_info_t;

typedef struct dlrt_context *dlrt_context_t;
typedef struct dlrt_model *dlrt_model_t;
typedef struct dlrt_session *dlrt_session_t;

/* -------------------------------------------------------------- context */

typedef struct dlrt_context_options_t {
  dlrt_device_kind_t device; /* default DLRT_DEVICE_AUTO */
  int32_t device_ordinal;    /* CUDA device index; default 0 (+ the local
                              * rank when distributed) */
  /* Called with a one-line notice (e.g. "no CUDA driver found; using the
   * host device"); NULL prints nothing. */
  void (*notice)(void *user_data, const char *message);
  void *notice_user_data;
  /* Since API 0.4 (DLRT_API_VERSION 400). 0 (default): one process, no
   * communication. 1: join the distributed job the environment describes
   * (torchrun's or `dlrt launch`'s RANK, WORLD_SIZE, MASTER_ADDR,
   * MASTER_PORT; Open MPI's OMPI_COMM_WORLD_*; Slurm's SLURM_PROCID,
   * SLURM_NTASKS; docs/distributed.md). With world size 1 this is the same
   * as 0; with more, dlrt_context_create meets the other ranks: rank 0
   * hosts the rendezvous store on MASTER_PORT (MASTER_PORT + 1 under
   * torchrun, whose agent already listens on MASTER_PORT), and every rank
   * connects a communicator: Gloo (TCP) on the host device, NCCL on CUDA.
   * One distributed context per process at a time (rank 0's store holds
   * the port). With 1 the CUDA device is device_ordinal + the local rank
   * (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID), one GPU per
   * rank of a node.
   * Joining sets SIGPIPE to be ignored when it has its default action, so
   * that a peer that dies fails a collective instead of killing this
   * process (Gloo writes to its sockets without MSG_NOSIGNAL). */
  int32_t distributed;
  /* Seconds that joining the job and every collective may take before they
   * fail (a peer gone, hung or unreachable); 0 (default) means 300. */
  double comm_timeout_seconds;
} dlrt_context_options_t;

/* Sets |options| to the defaults. */
void dlrt_context_options_init(dlrt_context_options_t *options);

/* Opens a device, and with |options->distributed| joins the job. On success
 * the caller owns |*out_context| and releases it with dlrt_context_release.
 * Errors: DLRT_UNAVAILABLE (DLRT_DEVICE_CUDA asked for and no driver or GPU;
 * AUTO falls back to host with a notice; distributed: the rendezvous or a
 * peer could not be reached within the timeout, the port is taken, NCCL is
 * missing), DLRT_INVALID_ARGUMENT (a bad rendezvous environment, e.g.
 * RANK >= WORLD_SIZE, or a negative timeout). Every message is one line
 * naming the variable, address or rank at fault. */
dlrt_status_t dlrt_context_create(const dlrt_context_options_t *options,
                                  dlrt_context_t *out_context);
void dlrt_context_release(dlrt_context_t context);
/* The device actually in use: DLRT_DEVICE_HOST or DLRT_DEVICE_CUDA. */
dlrt_device_kind_t dlrt_context_device(dlrt_context_t context);
/* A one-line description of the device, e.g. "host (2 threads)" or
 * "cuda:0 NVIDIA H100 (sm_90)"; borrowed from |context|. */
const char *dlrt_context_device_name(dlrt_context_t context);
/* How many times the device's gemm calls ran their own fallback because
 * cuBLASLt had no algorithm for the fused epilogue (bias, ReLU, bias
 * gradient, ReLU mask, an f32 bias of a bf16/f16 gemm), since the context
 * was created; steps replayed from a CUDA graph add nothing. Always 0 on
 * the host device. Since API 0.6. Errors: DLRT_INVALID_ARGUMENT (NULL
 * argument). */
dlrt_status_t dlrt_context_gemm_epilogue_fallbacks(dlrt_context_t context,
                                                   int64_t *out_count);

/* This process's rank (0 .. world size - 1) and the number of ranks of
 * |context|'s job: 0 and 1 unless the context was created distributed with
 * a world size above 1. Since API 0.4. Errors: DLRT_INVALID_ARGUMENT (NULL
 * argument). */
dlrt_status_t dlrt_context_rank(dlrt_context_t context, int32_t *out_rank,
                                int32_t *out_world_size);

/* Replaces each of the |count| host doubles at |values| by its mean over the
 * ranks (every rank must call it with the same count; for a few scalars such
 * as a logged loss). The ranks' values are gathered bit-exactly and summed in
 * rank order in double precision, so every rank gets the same bits. With one
 * rank the values are unchanged. Since API 0.4. Errors:
 * DLRT_INVALID_ARGUMENT (NULL argument), DLRT_UNAVAILABLE (a peer failed or
 * the collective timed out; one line naming the operation and the rank). */
dlrt_status_t dlrt_context_average(dlrt_context_t context, double *values,
                                   size_t count);

/* Blocks until every rank of |context|'s job has called it (immediate with
 * one rank). A job calls it before releasing its contexts, so that no rank
 * tears down its connections while another still reads from them. Since API
 * 0.4. Errors: DLRT_INVALID_ARGUMENT (NULL context), DLRT_UNAVAILABLE (a
 * peer failed or the timeout passed). */
dlrt_status_t dlrt_context_barrier(dlrt_context_t context);

/* ---------------------------------------------------------------- model */

/* Loads the package at |path|. On success the caller owns |*out_model| and
 * releases it with dlrt_model_release. A package with a weights section
 * (format version 8, docs/package-format.md) stays memory-mapped until the
 * model is released: sessions copy its weights from the mapping. Replacing
 * the file meanwhile by a rename (as dlc writes packages) is safe; writing
 * into it or truncating it in place is not. Errors: DLRT_NOT_FOUND,
 * DLRT_IO_ERROR, DLRT_CORRUPT (not a package, truncated, fails
 * verification, a weights section or weight outside the file),
 * DLRT_INCOMPATIBLE (package format version). */
dlrt_status_t dlrt_model_load(dlrt_context_t context, const char *path,
                              dlrt_model_t *out_model);
void dlrt_model_release(dlrt_model_t model);

/* Whether the model has a function named |function| ("train_step",
 * "forward"). */
int dlrt_model_has_function(dlrt_model_t model, const char *function);
/* Number of inputs / outputs of |function| (0 if it does not exist). */
int32_t dlrt_model_input_count(dlrt_model_t model, const char *function);
int32_t dlrt_model_output_count(dlrt_model_t model, const char *function);
/* Describes input / output |index| of |function|. Errors:
 * DLRT_NOT_FOUND, DLRT_INVALID_ARGUMENT (index out of range). */
dlrt_status_t dlrt_model_input_info(dlrt_model_t model, const char *function,
                                    int32_t index,
                                    dlrt_tensor_info_t *out_info);
dlrt_status_t dlrt_model_output_info(dlrt_model_t model, const char *function,
                                     int32_t index,
                                     dlrt_tensor_info_t *out_info);
/* Training metadata; "" / 0 for inference packages. Borrowed strings. */
const char *dlrt_model_loss_output(dlrt_model_t model);
const char *dlrt_model_optimizer(dlrt_model_t model);
int64_t dlrt_model_batch_size(dlrt_model_t model);
/* Model FLOPs of one train_step run on this process (2 x the multiply-adds
 * of its matmuls, convolutions and attentions, before rematerialization:
 * PaLM's model FLOPs) and the peak FLOP/s of the device model the package
 * was compiled for (dlc --device-model), for the step's precision; their
 * ratio to a measured step time is the model FLOPs utilization. 0 when the
 * package does not record them (inference packages, pipeline packages,
 * packages written before API 0.7). Since API 0.7 (DLRT_API_VERSION 700). */
double dlrt_model_flops_per_step(dlrt_model_t model);
double dlrt_model_peak_flops(dlrt_model_t model);
/* Pipeline packages (dlc --pipeline-stages S; since API 0.6, DLRT_API_VERSION
 * 600): the number of stages S, and the micro-batches of one step; 0 for
 * other packages. A pipeline package runs on one process (every stage in
 * turn) or on S x D ranks: rank r runs stage r / D of data-parallel replica
 * r % D, and train_step's inputs on every rank are replica r % D's batch of
 * dlrt_model_batch_size samples (M micro-batches). */
int32_t dlrt_model_pipeline_stages(dlrt_model_t model);
int32_t dlrt_model_pipeline_micro_batches(dlrt_model_t model);

/* -------------------------------------------------------------- session */

/* Creates a session: device memory for persistent buffers (initialized from
 * the package's weights), the activation arena and inputs. On a context of
 * several ranks every rank must create its sessions in the same order: each
 * ends by broadcasting every persistent tensor (parameters, optimizer state,
 * running statistics, step counters) from rank 0, so all ranks start equal,
 * as PyTorch's DistributedDataParallel does at construction; a failed
 * broadcast is DLRT_UNAVAILABLE. The caller owns
 * |*out_session| and releases it with dlrt_session_release. The session
 * keeps its model (and the model its context) alive, so the handles may be
 * released in any order. Errors: DLRT_OUT_OF_MEMORY, DLRT_INTERNAL (kernel
 * compilation or loading failed). */
dlrt_status_t dlrt_session_create(dlrt_model_t model,
                                  dlrt_session_t *out_session);
void dlrt_session_release(dlrt_session_t session);

/* Copies |bytes| bytes of host data into input |name| of |function|. The
 * size must equal the input's size exactly. Errors: DLRT_NOT_FOUND,
 * DLRT_INVALID_ARGUMENT (size mismatch). */
dlrt_status_t dlrt_session_set_input(dlrt_session_t session,
                                     const char *function, const char *name,
                                     const void *data, size_t bytes);
/* Runs |function| once with the inputs set so far (a training step for
 * "train_step": parameters and optimizer state are updated in place).
 * Blocks until done. Errors: DLRT_NOT_FOUND, DLRT_INTERNAL. */
dlrt_status_t dlrt_session_run(dlrt_session_t session, const char *function);
/* Copies output |name| of the last run of |function| into |data| (|bytes|
 * must equal its size). Errors: DLRT_NOT_FOUND, DLRT_INVALID_ARGUMENT. */
dlrt_status_t dlrt_session_get_output(dlrt_session_t session,
                                      const char *function, const char *name,
                                      void *data, size_t bytes);

/* Persistent state: parameters, optimizer state and running statistics,
 * the tensors a checkpoint holds. */
int32_t dlrt_session_state_count(dlrt_session_t session);
dlrt_status_t dlrt_session_state_info(dlrt_session_t session, int32_t index,
                                      dlrt_tensor_info_t *out_info);
/* Copies persistent tensor |name| to / from host memory (|bytes| must equal
 * its size). Errors: DLRT_NOT_FOUND, DLRT_INVALID_ARGUMENT. */
dlrt_status_t dlrt_session_read_state(dlrt_session_t session, const char *name,
                                      void *data, size_t bytes);
dlrt_status_t dlrt_session_write_state(dlrt_session_t session,
                                       const char *name, const void *data,
                                       size_t bytes);

/* Writes every persistent tensor of |session| to the safetensors file
 * |path| atomically (temporary file, fsync, rename: an existing file is
 * never left half-written). |metadata_json| is NULL or a JSON object of
 * string values stored as the file's "__metadata__". Errors:
 * DLRT_IO_ERROR. */
dlrt_status_t dlrt_session_save_checkpoint(dlrt_session_t session,
                                           const char *path,
                                           const char *metadata_json);
/* Restores every persistent tensor from a checkpoint written by
 * dlrt_session_save_checkpoint for the same model. On success, if
 * |out_metadata_json| is not NULL, the caller owns the returned string
 * (free with dlrt_string_free). Errors: DLRT_NOT_FOUND, DLRT_CORRUPT,
 * DLRT_INVALID_ARGUMENT (a tensor is missing or its shape differs). */
dlrt_status_t dlrt_session_load_checkpoint(dlrt_session_t session,
                                           const char *path,
                                           char **out_metadata_json);
void dlrt_string_free(char *s);

/* --------------------------------------------------------------- memory */

/* A session's device memory, in bytes. Since API 0.3 (DLRT_API_VERSION
 * 300). See docs/memory.md and docs/dlrt.md ("Memory").
 *
 * Predicted: what the compiler planned for one session of the package
 * (`dlc --stats`; the package's MemoryPlan table, or, for packages written
 * before it existed, the same figures computed from the plan). A session
 * allocates exactly these four regions on its device.
 *
 * Measured: the device allocator's high-water marks since the context was
 * created, so they cover every session (and model) of the context; with one
 * session they compare with the prediction. Host: reserved counts each
 * allocation rounded up to its 256-byte alignment, used the sizes asked
 * for (so used_peak_bytes equals predicted_peak_bytes for one session, and
 * measured_peak_bytes exceeds it by less than 256 bytes per buffer). CUDA:
 * the stream-ordered memory pool's CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH and
 * CU_MEMPOOL_ATTR_USED_MEM_HIGH; a GPU's pool reserves in chunks (typically
 * 2 MiB), so reserved may exceed used. Neither counts the memory the CUDA
 * context, loaded kernels, cuBLASLt or cuDNN hold outside the pool. */
typedef struct dlrt_memory_info_t {
  int64_t persistent_bytes;     /* every persistent buffer */
  int64_t input_bytes;          /* every function's inputs */
  int64_t arena_bytes;          /* the activation arena (the largest) */
  int64_t workspace_bytes;      /* the library calls' workspace */
  int64_t predicted_peak_bytes; /* the sum of the four above */
  int32_t plan_from_package;    /* 1: the package's MemoryPlan; 0: computed */
  int64_t measured_peak_bytes;  /* the allocator's reserved high-water mark */
  int64_t used_peak_bytes;      /* its high-water mark of bytes in use */
} dlrt_memory_info_t;

/* Fills the predicted fields of |out_info| for a session of |model| (no
 * memory is allocated; the measured fields are 0). Errors:
 * DLRT_INVALID_ARGUMENT (NULL argument). */
dlrt_status_t dlrt_model_memory(dlrt_model_t model,
                                dlrt_memory_info_t *out_info);

/* Fills |out_info| with |session|'s predicted and measured memory (zeros
 * first). Errors: DLRT_INVALID_ARGUMENT (NULL argument), DLRT_UNAVAILABLE
 * (the device does not measure its memory), DLRT_INTERNAL (the driver's
 * query failed). */
dlrt_status_t dlrt_session_memory(dlrt_session_t session,
                                  dlrt_memory_info_t *out_info);

/* ---------------------------------------------------------------- trace */

/* Starts (|enabled| != 0) or stops recording |session|'s timeline: every
 * step of every run (kernels, library calls, the issue of each collective
 * and the wait for it) on the compute lane, and each collective's transfer
 * on the communication lane, in nanoseconds of the steady clock (one clock
 * for all processes of a machine). Starting clears what was recorded. On
 * the host device the steps run synchronously, so their spans are their
 * run times; on CUDA they are the host's issue times. Since API 0.4.
 * Errors: DLRT_INVALID_ARGUMENT (NULL session). */
dlrt_status_t dlrt_session_set_trace(dlrt_session_t session, int32_t enabled);

/* ---------------------------------------------------------- step graphs */

/* On the CUDA device a session records each function's steps (kernels and
 * library calls) into a CUDA graph on its second run and replays the graph
 * from then on: one submission per run instead of one launch per step, with
 * the same pointers, parameters and results. Functions with collectives
 * (data-parallel training), runs while the trace is recording, devices
 * without graphs (the host) and steps the device cannot record (one needing
 * memory outside the session's plan) run step by step instead; that is
 * never an error. |enabled| = 0 turns graphs off for |session| (the
 * default is on); turning them off drops the graphs already captured.
 * Since API 0.5. Errors: DLRT_INVALID_ARGUMENT (NULL session). */
/* Pipeline packages on several ranks: every rank's copy of every stage's
 * state (parameters, optimizer state, running statistics) becomes the
 * values of that stage's first rank, so that any rank can evaluate
 * `forward` or save a checkpoint of the whole model. Every rank must call
 * it. Does nothing for other packages or on one rank. Since API 0.6. */
dlrt_status_t dlrt_session_sync_pipeline_state(dlrt_session_t session);

dlrt_status_t dlrt_session_set_graphs(dlrt_session_t session, int32_t enabled);

/* How |session| ran |function| last: 1 as a replayed graph, 0 step by step.
 * When it ran step by step after a capture was tried, |out_reason| (may be
 * NULL) names why the capture did not succeed; it is borrowed until the
 * next call on |session|. Since API 0.5. Errors: DLRT_INVALID_ARGUMENT
 * (NULL argument), DLRT_NOT_FOUND (no such function). */
dlrt_status_t dlrt_session_graph_status(dlrt_session_t session,
                                        const char *function,
                                        int32_t *out_replayed,
                                        const char **out_reason);

/* Writes what |session| recorded as a Chrome trace event file (JSON, opened
 * by Perfetto and chrome://tracing) at |path|, atomically, as process |pid|
 * named |process_name| (e.g. the rank and "rank 0"). Since API 0.4. Errors:
 * DLRT_INVALID_ARGUMENT (NULL argument), DLRT_IO_ERROR (naming |path|). */
dlrt_status_t dlrt_session_write_trace(dlrt_session_t session,
                                       const char *path, int32_t pid,
                                       const char *process_name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLRT_DLRT_H */
