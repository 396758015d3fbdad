/* embed.c - embedding libdlrt through its C API: load a package, describe
 * its forward function, run it once on zero inputs, print the outputs.
 *
 *   dlrt-embed-example PACKAGE.dlcp [host|cuda|auto]
 *
 * Every call's status is checked; a failure prints its message and exits 1.
 */
#include <dlrt/dlrt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints |status|'s message for |what| and returns 1 if it is an error. */
static int failed(dlrt_status_t status, const char *what) {
  if (status == NULL)
    return 0;
  fprintf(stderr, "embed: %s failed: %s\n", what, dlrt_status_message(status));
  dlrt_status_free(status);
  return 1;
}

static void print_notice(void *user_data, const char *message) {
  (void)user_data;
  fprintf(stderr, "embed: note: %s\n", message);
}

static const char *dtype_name(dlrt_dtype_t dtype) {
  switch (dtype) {
  case DLRT_F32: return "f32";
  case DLRT_F64: return "f64";
  case DLRT_I64: return "i64";
  case DLRT_I32: return "i32";
  case DLRT_BOOL: return "bool";
  }
  return "?";
}

static size_t element_count(const dlrt_tensor_info_t *info) {
  size_t n = 1;
  for (int32_t i = 0; i < info->rank; ++i)
    n *= (size_t)info->shape[i];
  return n;
}

static void print_info(const char *role, const dlrt_tensor_info_t *info) {
  printf("  %s %s: [", role, info->name);
  for (int32_t i = 0; i < info->rank; ++i)
    printf(i ? ", %lld" : "%lld", (long long)info->shape[i]);
  printf("] %s\n", dtype_name(info->dtype));
}

/* Prints up to |limit| elements of |data| (|count| elements of |dtype|). */
static void print_values(const void *data, dlrt_dtype_t dtype, size_t count,
                         size_t limit) {
  for (size_t i = 0; i < count && i < limit; ++i) {
    switch (dtype) {
    case DLRT_F32: printf(" %g", ((const float *)data)[i]); break;
    case DLRT_F64: printf(" %g", ((const double *)data)[i]); break;
    case DLRT_I64: printf(" %lld", (long long)((const int64_t *)data)[i]); break;
    case DLRT_I32: printf(" %d", ((const int32_t *)data)[i]); break;
    case DLRT_BOOL: printf(" %d", ((const unsigned char *)data)[i]); break;
    }
  }
  printf(count > limit ? " ...\n" : "\n");
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s PACKAGE.dlcp [host|cuda|auto]\n", argv[0]);
    return 2;
  }
  const char *fn = "forward";
  dlrt_context_options_t options;
  dlrt_context_options_init(&options);
  options.notice = print_notice;
  if (argc == 3) {
    if (strcmp(argv[2], "host") == 0)
      options.device = DLRT_DEVICE_HOST;
    else if (strcmp(argv[2], "cuda") == 0)
      options.device = DLRT_DEVICE_CUDA;
    else if (strcmp(argv[2], "auto") != 0) {
      fprintf(stderr, "embed: unknown device '%s'\n", argv[2]);
      return 2;
    }
  }

  int rc = 1;
  dlrt_context_t context = NULL;
  dlrt_model_t model = NULL;
  dlrt_session_t session = NULL;
  void *buffer = NULL;

  if (failed(dlrt_context_create(&options, &context), "dlrt_context_create"))
    goto done;
  printf("device: %s\n", dlrt_context_device_name(context));
  if (failed(dlrt_model_load(context, argv[1], &model), "dlrt_model_load"))
    goto done;
  if (!dlrt_model_has_function(model, fn)) {
    fprintf(stderr, "embed: %s has no forward function\n", argv[1]);
    goto done;
  }
  int32_t inputs = dlrt_model_input_count(model, fn);
  int32_t outputs = dlrt_model_output_count(model, fn);
  printf("forward: %d input(s), %d output(s)\n", inputs, outputs);
  if (failed(dlrt_session_create(model, &session), "dlrt_session_create"))
    goto done;

  for (int32_t i = 0; i < inputs; ++i) {
    dlrt_tensor_info_t info;
    if (failed(dlrt_model_input_info(model, fn, i, &info),
               "dlrt_model_input_info"))
      goto done;
    print_info("input ", &info);
    size_t bytes = element_count(&info) * dlrt_dtype_size(info.dtype);
    free(buffer);
    buffer = calloc(bytes ? bytes : 1, 1); /* zeros */
    if (!buffer) {
      fprintf(stderr, "embed: out of memory\n");
      goto done;
    }
    if (failed(dlrt_session_set_input(session, fn, info.name, buffer, bytes),
               "dlrt_session_set_input"))
      goto done;
  }
  if (failed(dlrt_session_run(session, fn), "dlrt_session_run"))
    goto done;

  for (int32_t i = 0; i < outputs; ++i) {
    dlrt_tensor_info_t info;
    if (failed(dlrt_model_output_info(model, fn, i, &info),
               "dlrt_model_output_info"))
      goto done;
    print_info("output", &info);
    size_t count = element_count(&info);
    size_t bytes = count * dlrt_dtype_size(info.dtype);
    free(buffer);
    buffer = malloc(bytes ? bytes : 1);
    if (!buffer) {
      fprintf(stderr, "embed: out of memory\n");
      goto done;
    }
    if (failed(dlrt_session_get_output(session, fn, info.name, buffer, bytes),
               "dlrt_session_get_output"))
      goto done;
    printf("   ");
    print_values(buffer, info.dtype, count, 8);
  }
  rc = 0;

done:
  free(buffer);
  dlrt_session_release(session);
  dlrt_model_release(model);
  dlrt_context_release(context);
  return rc;
}
