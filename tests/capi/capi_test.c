/* The C API (include/zerofold/zerofold.h), driven from C11: every call on
 * real fixtures, compared with what the zerofold CLI does with the same
 * arguments (output bytes, JSON documents, error lines), and the error
 * contract (codes, path, record, offset, truncation, NULL err).
 *
 * Usage: capi_test [ZEROFOLD_BINARY]  (default: $ZEROFOLD, else the build's)
 * Prints "FAIL: ..." per failed check and ends with "N passed, F failed". */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "c_check.h"
#include "zerofold/zerofold.h"

#ifndef ZF_SOURCE_ROOT
#error "ZF_SOURCE_ROOT must name the repository root"
#endif
#ifndef ZF_CLI
#error "ZF_CLI must name the zerofold binary"
#endif

/* The values are part of the interface: pinned at compile time. */
_Static_assert(ZF_OK == 0, "ZF_OK");
_Static_assert(ZF_E_CORRUPT == 1, "ZF_E_CORRUPT");
_Static_assert(ZF_E_UNSUPPORTED == 2, "ZF_E_UNSUPPORTED");
_Static_assert(ZF_E_UNSAFE == 3, "ZF_E_UNSAFE");
_Static_assert(ZF_E_LIMIT == 4, "ZF_E_LIMIT");
_Static_assert(ZF_E_INVALID_ARGUMENT == 5, "ZF_E_INVALID_ARGUMENT");
_Static_assert(ZF_E_NOT_FOUND == 6, "ZF_E_NOT_FOUND");
_Static_assert(ZF_E_IO == 7, "ZF_E_IO");
_Static_assert(ZF_E_INTERNAL == 8, "ZF_E_INTERNAL");
_Static_assert(ZF_E_NOMEM == 9, "ZF_E_NOMEM");
_Static_assert(ZF_CANCELLED == 10, "ZF_CANCELLED");
_Static_assert(ZF_E_AMBIGUOUS == 11, "ZF_E_AMBIGUOUS");
_Static_assert(ZF_NO_OFFSET == UINT64_MAX, "ZF_NO_OFFSET");

static const char* cli = ZF_CLI;
static const char* fixtures = ZF_SOURCE_ROOT "/fixtures";
static char tmp[256];


static int exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static long long file_size(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* 1 when both files exist and hold the same bytes. */
static int same_bytes(const char* a, const char* b) {
  size_t na = 0, nb = 0;
  char* da = read_all(a, &na);
  char* db = read_all(b, &nb);
  int same = da != NULL && db != NULL && na == nb && memcmp(da, db, na) == 0;
  free(da);
  free(db);
  return same;
}

/* The names in `dir`, sorted, joined by ' '. */
static const char* listing(const char* dir) {
  static char out[4096];
  char names[64][256];
  int n = 0;
  DIR* d = opendir(dir);
  out[0] = '\0';
  if (d == NULL) return "(no folder)";
  struct dirent* e;
  while ((e = readdir(d)) != NULL && n < 64) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  }
  closedir(d);
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; --j) {
      char t[256];
      memcpy(t, names[j], sizeof t);
      memcpy(names[j], names[j - 1], sizeof t);
      memcpy(names[j - 1], t, sizeof t);
    }
  for (int i = 0; i < n; ++i) {
    strncat(out, names[i], sizeof out - strlen(out) - 1);
    if (i + 1 < n) strncat(out, " ", sizeof out - strlen(out) - 1);
  }
  return out;
}

/* Checks that folders `a` and `b` hold the same names with the same bytes. */
#define CHECK_SAME_FOLDER(a, b) check_same_folder(__FILE__, __LINE__, a, b)
static void check_same_folder(const char* file, int line, const char* a, const char* b) {
  char names[4096];
  snprintf(names, sizeof names, "%s", listing(a));
  ++checks;
  if (strcmp(names, listing(b)) != 0) {
    fail(file, line, "%s holds [%s], %s holds [%s]", a, names, b, listing(b));
    return;
  }
  if (names[0] == '\0') {
    fail(file, line, "%s is empty", a);
    return;
  }
  for (char* name = strtok(names, " "); name != NULL; name = strtok(NULL, " ")) {
    ++checks;
    if (!same_bytes(fmt("%s/%s", a, name), fmt("%s/%s", b, name)))
      fail(file, line, "%s/%s differs from %s/%s", a, name, b, name);
  }
}

/* Runs the CLI with `args` (already quoted); its stdout and stderr go to
 * TMP/cli.out and TMP/cli.err. Returns its exit status. */
static int run_cli(const char* args) { return run_cli_in(cli, tmp, args); }

#define sh(command) SH(command)

/* An error with buffers of `size` bytes (at most 1024) for every text. */
typedef struct {
  zf_error e;
  char message[1024];
  char path[1024];
  char record[1024];
} error_buffers;

static zf_error* error_init(error_buffers* b, size_t size) {
  memset(b, 0x5a, sizeof *b); /* junk: every field must be written */
  b->e.message = b->message;
  b->e.message_size = size;
  b->e.path = b->path;
  b->e.path_size = size;
  b->e.record = b->record;
  b->e.record_size = size;
  return &b->e;
}

/* The CLI's error line for `e`: "zerofold: PATH: RECORD @ OFFSET: code: why". */
static const char* error_line(const zf_error* e) {
  static char out[4096];
  char where[1200] = "";
  if (e->record[0] != '\0' || e->offset != ZF_NO_OFFSET) {
    snprintf(where, sizeof where, "%s", e->record);
    if (e->offset != ZF_NO_OFFSET)
      snprintf(where + strlen(where), sizeof where - strlen(where), "%s@ %llu", e->record[0] ? " " : "",
               (unsigned long long)e->offset);
    strncat(where, ": ", sizeof where - strlen(where) - 1);
  }
  snprintf(out, sizeof out, "zerofold: %s%s%s%s: %s\n", e->path, e->path[0] ? ": " : "", where, zf_code_name(e->code),
           e->message);
  return out;
}

/* The CLI's stderr after the last run_cli, first line only. */
static const char* cli_first_error_line(void) {
  static char out[4096];
  char* err = read_all(fmt("%s/cli.err", tmp), NULL);
  out[0] = '\0';
  if (err != NULL) {
    char* nl = strchr(err, '\n');
    if (nl != NULL) nl[1] = '\0';
    snprintf(out, sizeof out, "%s", err);
  }
  free(err);
  return out;
}

/* ---- tests ------------------------------------------------------------ */

static void test_version_and_names(void) {
  CHECK_EQ_U64(run_cli("--version"), 0);
  char* out = read_all(fmt("%s/cli.out", tmp), NULL);
  CHECK_STR(out, fmt("zerofold %s\n", zf_version()));
  free(out);

  const char* names[] = {"ok", "corrupt", "unsupported", "unsafe", "limit", "invalid argument",
                         "not found", "io", "internal", "out of memory", "cancelled", "ambiguous"};
  for (int c = 0; c <= 11; ++c) CHECK_STR(zf_code_name((zf_code)c), names[c]);
  CHECK_STR(zf_code_name((zf_code)12), "unknown");
  zf_free(NULL);
}

static void test_shrink_file(void) {
  PATH(views, "%s/torch/views.pt", fixtures);
  PATH(out, "%s/views_small.pt", tmp);
  PATH(want, "%s/views_cli.pt", tmp);
  CHECK_EQ_U64(run_cli(fmt("shrink '%s' '%s'", views, want)), 0);

  zf_shrink_report r;
  error_buffers b;
  memset(&r, 0xff, sizeof r);
  CHECK_CODE(zf_shrink(views, out, NULL, &r, error_init(&b, sizeof b.message)), ZF_OK);
  CHECK(same_bytes(out, want));
  CHECK_EQ_U64(r.input_bytes, 1823);
  CHECK_EQ_U64(r.output_bytes, 1439);
  CHECK_EQ_U64(file_size(out), 1439);
  CHECK_EQ_U64(r.output_files, 1);
  CHECK_EQ_U64(r.tensors, 6);
  CHECK_EQ_U64(r.unchanged_files, 0);

  /* A legacy file with nothing to reclaim is written unchanged. */
  PATH(legacy, "%s/torch/legacy_state_dict.pt", fixtures);
  PATH(legacy_out, "%s/legacy_copy.pt", tmp);
  CHECK_CODE(zf_shrink(legacy, legacy_out, NULL, &r, NULL), ZF_OK);
  CHECK(same_bytes(legacy, legacy_out));
  CHECK_EQ_U64(r.unchanged_files, 1);
  CHECK_EQ_U64(r.output_bytes, 1778);
  CHECK_EQ_U64(r.verified_tensors, 0);
  /* Success clears the error. */
  CHECK_CODE(b.e.code, ZF_OK);
  CHECK_EQ_U64(b.e.offset, ZF_NO_OFFSET);
  CHECK_STR(b.message, "");
  CHECK_STR(b.path, "");
  CHECK_STR(b.record, "");
  CHECK_EQ_U64(b.e.message_length + b.e.path_length + b.e.record_length, 0);

  /* An existing OUT is refused without force, and left as it was. */
  CHECK_CODE(zf_shrink(views, out, NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "exists; use --force to replace it");
  CHECK_STR(b.path, out);
  CHECK_EQ_U64(b.e.offset, ZF_NO_OFFSET);
  CHECK(same_bytes(out, want));

  /* force, verify and a progress callback; NULL report and err. */
  zf_shrink_options* o = zf_shrink_options_create();
  CHECK(o != NULL);
  zf_shrink_options_set_force(o, 1);
  zf_shrink_options_set_verify(o, 1);
  CHECK_CODE(zf_shrink(views, out, o, &r, NULL), ZF_OK);
  CHECK_EQ_U64(r.verified_tensors, 6);
  CHECK_EQ_U64(r.verified_bytes, 264);
  CHECK(same_bytes(out, want));
  CHECK_CODE(zf_shrink(views, out, o, NULL, NULL), ZF_OK);

  /* dry_run writes nothing and reports the exact size. */
  PATH(dry, "%s/dry.pt", tmp);
  zf_shrink_options_set_verify(o, 0);
  zf_shrink_options_set_dry_run(o, 1);
  CHECK_CODE(zf_shrink(views, dry, o, &r, NULL), ZF_OK);
  CHECK(!exists(dry));
  CHECK_EQ_U64(r.output_bytes, 1439);
  CHECK_EQ_U64(r.input_bytes, 1823);

  /* verify with dry_run is refused, as the CLI refuses it. */
  zf_shrink_options_set_verify(o, 1);
  CHECK_CODE(zf_shrink(views, dry, o, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "verify reads the output back; dry_run writes none");

  /* An OUT naming no format: the message names the option to set. */
  PATH(noformat, "%s/out.weights", tmp);
  CHECK_CODE(zf_convert(views, noformat, NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK(strstr(b.message, "cannot tell the output format") != NULL);
  CHECK(strstr(b.message, "set to_safetensors (0: torch, 1: safetensors)") != NULL);
  CHECK(!exists(noformat));

  /* verify of a file into torch shards and into safetensors: every tensor. */
  PATH(sharded, "%s/sharded/", tmp);
  PATH(st, "%s/st/", tmp);
  zf_shrink_options_set_dry_run(o, 0);
  CHECK_CODE(zf_shrink_options_set_max_shard_size(o, 100, NULL), ZF_OK);
  zf_shrink_options_set_to_safetensors(o, 0);
  CHECK_CODE(zf_convert(views, sharded, o, &r, NULL), ZF_OK);
  CHECK_EQ_U64(r.verified_tensors, 6);
  CHECK_EQ_U64(r.verified_bytes, 264);
  CHECK(exists(sharded));
  zf_shrink_options_set_to_safetensors(o, 1);
  CHECK_CODE(zf_convert(views, st, o, &r, NULL), ZF_OK);
  CHECK_EQ_U64(r.verified_tensors, 6);
  zf_shrink_options_destroy(o);
}

/* What a progress callback saw. `phases` lists the phases allowed, in order. */
typedef struct {
  const char* phases[2];
  int calls;
  int bad;       /* calls out of order: a phase not allowed or gone back, done falling or past total */
  int phase;     /* index of the current phase */
  uint64_t last_done;
  uint64_t last_total;
} progress_seen;

static int on_progress(void* user, const char* phase, uint64_t done, uint64_t total) {
  progress_seen* p = user;
  if (p->phases[p->phase] == NULL || strcmp(phase, p->phases[p->phase]) != 0) {
    if (p->phase == 0 && p->phases[1] != NULL && strcmp(phase, p->phases[1]) == 0) {
      p->phase = 1;
      p->last_done = 0;
    } else {
      ++p->bad;
    }
  }
  if (done < p->last_done || done > total) ++p->bad;
  ++p->calls;
  p->last_done = done;
  p->last_total = total;
  return 0;
}

/* A progress callback that asks to stop at once, counting its calls. */
static int stop_at_first(void* user, const char* phase, uint64_t done, uint64_t total) {
  (void)phase, (void)done, (void)total;
  ++*(int*)user;
  return 1;
}

static void test_shrink_in_place_and_progress(void) {
  PATH(views, "%s/torch/views.pt", fixtures);
  PATH(copy, "%s/in_place.pt", tmp);
  sh(fmt("cp '%s' '%s'", views, copy));
  zf_shrink_options* o = zf_shrink_options_create();
  progress_seen p = {{"shrink", NULL}, 0, 0, 0, 0, 0};
  zf_shrink_options_set_in_place(o, 1);
  zf_shrink_options_set_progress(o, on_progress, &p);
  /* in_place takes OUT NULL or IN itself. */
  error_buffers b;
  CHECK_CODE(zf_shrink(copy, fmt("%s/other.pt", tmp), o, NULL, error_init(&b, sizeof b.message)),
             ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "in_place replaces IN; OUT must be NULL or IN");
  CHECK(same_bytes(copy, views));
  CHECK_CODE(zf_shrink(copy, NULL, o, NULL, NULL), ZF_OK);
  CHECK(same_bytes(copy, fmt("%s/views_cli.pt", tmp)));
  CHECK(p.calls > 0);
  CHECK_EQ_U64(p.bad, 0);
  CHECK(p.last_total > 0);
  CHECK_EQ_U64(p.last_done, p.last_total);
  zf_shrink_options_destroy(o);

  /* Without in_place, OUT = IN is refused as IN itself, with force or
   * without; the file is untouched. */
  sh(fmt("cp '%s' '%s'", views, copy));
  CHECK_CODE(zf_shrink(copy, copy, NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "OUT is IN; set in_place to replace the input");
  o = zf_shrink_options_create();
  zf_shrink_options_set_force(o, 1);
  CHECK_CODE(zf_shrink(copy, copy, o, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "OUT is IN; set in_place to replace the input");
  /* ... also by another path, a symlink or a hard link to it. */
  sh(fmt("cd '%s' && ln -sf '%s' views_sym.pt && ln -f '%s' views_hard.pt", tmp, copy, copy));
  {
    const char* others[3];
    int i;
    others[0] = fmt("%s/./%s", tmp, strrchr(copy, '/') + 1);
    others[1] = fmt("%s/views_sym.pt", tmp);
    others[2] = fmt("%s/views_hard.pt", tmp);
    for (i = 0; i < 3; ++i) {
      CHECK_CODE(zf_shrink(copy, others[i], o, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
      CHECK_STR(b.message, "OUT is IN; set in_place to replace the input");
    }
  }
  zf_shrink_options_destroy(o);
  CHECK(same_bytes(copy, views));
  CHECK_CODE(zf_shrink(copy, NULL, NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "OUT is NULL; set in_place to replace IN");
  CHECK_CODE(zf_shrink(NULL, copy, NULL, NULL, NULL), ZF_E_INVALID_ARGUMENT);
}

static void test_shrink_folder(void) {
  PATH(hf, "%s/hf/bloated", fixtures);
  PATH(want, "%s/hf_cli", tmp);
  PATH(got, "%s/hf_capi", tmp);
  CHECK_EQ_U64(run_cli(fmt("shrink --quiet '%s' '%s'", hf, want)), 0);
  zf_shrink_report r;
  CHECK_CODE(zf_shrink(hf, got, NULL, &r, NULL), ZF_OK);
  CHECK_SAME_FOLDER(got, want);
  CHECK_STR(listing(got), "config.json pytorch_model-00001-of-00003.bin pytorch_model-00002-of-00003.bin "
                          "pytorch_model-00003-of-00003.bin pytorch_model.bin.index.json");
  CHECK_EQ_U64(r.output_files, 3);
  long long sum = 0, in_sum = 0;
  for (int k = 1; k <= 3; ++k) {
    sum += file_size(fmt("%s/pytorch_model-0000%d-of-00003.bin", got, k));
    in_sum += file_size(fmt("%s/pytorch_model-0000%d-of-00003.bin", hf, k));
  }
  CHECK_EQ_U64(r.output_bytes, sum);
  CHECK_EQ_U64(r.input_bytes, in_sum);
  CHECK(r.output_bytes < r.input_bytes);

  /* The folder as safetensors shards: --to safetensors --max-shard-size 8000. */
  PATH(st_want, "%s/st_cli", tmp);
  PATH(st_got, "%s/st_capi", tmp);
  CHECK_EQ_U64(run_cli(fmt("shrink --quiet --to safetensors --max-shard-size 8000 '%s' '%s'", hf, st_want)), 0);
  zf_shrink_options* o = zf_shrink_options_create();
  zf_shrink_options_set_to_safetensors(o, 1);
  CHECK_CODE(zf_shrink_options_set_max_shard_size(o, 8000, NULL), ZF_OK);
  CHECK_CODE(zf_shrink(hf, st_got, o, &r, NULL), ZF_OK);
  CHECK_SAME_FOLDER(st_got, st_want);
  CHECK(r.output_files > 1);
  /* Shards need a folder OUT. */
  error_buffers b;
  CHECK_CODE(zf_shrink(fmt("%s/torch/views.pt", fixtures), fmt("%s/st.safetensors", tmp), o, NULL,
                       error_init(&b, sizeof b.message)),
             ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "max_shard_size writes shards into a folder; make OUT a folder (end it with '/')");
  zf_shrink_options_destroy(o);
}

static void test_shrink_select_dtype(void) {
  PATH(model, "%s/deepspeed/zero2_ws3_bf16/ckpt/global_step2/mp_rank_00_model_states.pt", fixtures);
  PATH(want, "%s/select_cli.bin", tmp);
  PATH(got, "%s/select_capi.bin", tmp);
  CHECK_EQ_U64(run_cli(fmt("shrink --quiet --select module --dtype float32 '%s' '%s'", model, want)), 0);
  zf_shrink_options* o = zf_shrink_options_create();
  CHECK_CODE(zf_shrink_options_set_select(o, "module", NULL), ZF_OK);
  CHECK_CODE(zf_shrink_options_set_dtype(o, "float32", NULL), ZF_OK);
  CHECK_CODE(zf_shrink(model, got, o, NULL, NULL), ZF_OK);
  CHECK(same_bytes(got, want));
  CHECK(file_size(got) > 0);

  /* --only: the same bytes as the CLI's; a pattern matching nothing refused. */
  PATH(only_want, "%s/only_cli.bin", tmp);
  PATH(only_got, "%s/only_capi.bin", tmp);
  CHECK_EQ_U64(run_cli(fmt("shrink --quiet --select module --only '*.bias,*.h.0.*' '%s' '%s'", model, only_want)), 0);
  zf_shrink_options* only = zf_shrink_options_create();
  CHECK_CODE(zf_shrink_options_set_select(only, "module", NULL), ZF_OK);
  CHECK_CODE(zf_shrink_options_add_only(only, "*.bias", NULL), ZF_OK);
  CHECK_CODE(zf_shrink_options_add_only(only, "*.h.0.*", NULL), ZF_OK);
  CHECK_CODE(zf_shrink(model, only_got, only, NULL, NULL), ZF_OK);
  CHECK(same_bytes(only_got, only_want));
  CHECK(file_size(only_got) < file_size(got));
  CHECK_CODE(zf_shrink_options_add_only(only, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  zf_shrink_options_destroy(only);
  only = zf_shrink_options_create();
  CHECK_CODE(zf_shrink_options_add_only(only, "no such name", NULL), ZF_OK);
  CHECK_CODE(zf_shrink(model, fmt("%s/only_none.bin", tmp), only, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK(!exists(fmt("%s/only_none.bin", tmp)));
  zf_shrink_options_destroy(only);

  error_buffers b;
  CHECK_CODE(zf_shrink_options_set_dtype(o, "int8", error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "dtype takes bfloat16 (bf16), float16 (fp16, half) or float32 (fp32, float), not 'int8'");
  CHECK_CODE(zf_shrink_options_set_buffer_bytes(o, 12, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "buffer_bytes 12 is outside 4096 .. 4294967296");
  CHECK_CODE(zf_shrink_options_set_buffer_bytes(o, 4096, NULL), ZF_OK);
  CHECK_CODE(zf_shrink_options_set_max_shard_size(o, 0, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_shrink_options_set_dtype(NULL, "float32", NULL), ZF_E_INVALID_ARGUMENT);
  zf_shrink_options_set_dry_run(NULL, 1); /* ignored */
  /* The failed setter left the dtype as it was: the output is the same. */
  zf_shrink_options_set_force(o, 1);
  CHECK_CODE(zf_shrink(model, got, o, NULL, NULL), ZF_OK);
  CHECK(same_bytes(got, want));
  /* select with a folder is refused. */
  CHECK_CODE(zf_shrink(fmt("%s/hf/bloated", fixtures), fmt("%s/sel_dir", tmp), o, NULL,
                       error_init(&b, sizeof b.message)),
             ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "select takes one checkpoint file, not a folder");
  zf_shrink_options_destroy(o);
}

/* One bad input: zf_shrink fails with `code`, `record` and `offset`, and
 * the error line built from zf_error is the CLI's, byte for byte; the CLI
 * exits with cli_rc. */
static void check_bad_input(const char* in, zf_code code, const char* record, uint64_t offset, const char* message,
                            int cli_rc) {
  error_buffers b;
  PATH(out, "%s/bad_out.pt", tmp);
  CHECK_CODE(zf_shrink(in, out, NULL, NULL, error_init(&b, sizeof b.message)), code);
  CHECK_CODE(b.e.code, code);
  CHECK_STR(b.path, in);
  CHECK_EQ_U64(b.e.path_length, strlen(in));
  CHECK_STR(b.record, record);
  CHECK_EQ_U64(b.e.offset, offset);
  CHECK_STR(b.message, message);
  CHECK_EQ_U64(b.e.message_length, strlen(message));
  CHECK(!exists(out));
  CHECK_EQ_U64(run_cli(fmt("shrink '%s' '%s'", in, out)), cli_rc);
  CHECK_STR(error_line(&b.e), cli_first_error_line());
  /* NULL err: the same code. */
  CHECK_CODE(zf_shrink(in, out, NULL, NULL, NULL), code);
}

static void test_errors(void) {
  PATH(cut, "%s/cut.pt", tmp);
  sh(fmt("head -c 2000 '%s/torch/state_dict.pt' >'%s'", fixtures, cut));
  check_bad_input(cut, ZF_E_CORRUPT, "", 0,
                  "no end of central directory record in the last 2000 bytes: not a zip archive, or truncated", 1);
  PATH(legacy_cut, "%s/legacy_cut.pt", tmp);
  sh(fmt("head -c 300 '%s/torch/legacy_state_dict.pt' >'%s'", fixtures, legacy_cut));
  check_bad_input(legacy_cut, ZF_E_CORRUPT, "object pickle", 299, "truncated: BININT1 needs 1 bytes, 0 left", 1);
  PATH(torchscript, "%s/bad/torchscript.pt", fixtures);
  check_bad_input(torchscript, ZF_E_UNSUPPORTED, "torchscript/code/__torch__/zerofold_fixture_tiny.py", 713,
                  "a TorchScript archive (torch.jit.save), not a torch.save checkpoint", 1);
  PATH(unsafe, "%s/bad/unsafe_eval.pt", fixtures);
  check_bad_input(unsafe, ZF_E_UNSAFE, "", ZF_NO_OFFSET,
                  "pickle references unsafe globals: builtins.eval (runs code: running or compiling code) "
                  "(--keep-unsafe carries them through unexecuted)", 1);
  PATH(missing, "%s/no_such.pt", tmp);
  check_bad_input(missing, ZF_E_NOT_FOUND, "", ZF_NO_OFFSET, "open: No such file or directory", 3);

  /* keep_unsafe carries the global through. */
  zf_shrink_options* o = zf_shrink_options_create();
  zf_shrink_options_set_keep_unsafe(o, 1);
  CHECK_CODE(zf_shrink(unsafe, fmt("%s/unsafe_kept.pt", tmp), o, NULL, NULL), ZF_OK);
  /* zf_convert to safetensors refuses too, and writes the tensors under
   * keep_unsafe (issue 27). */
  CHECK_CODE(zf_convert(unsafe, fmt("%s/unsafe.safetensors", tmp), NULL, NULL, NULL), ZF_E_UNSAFE);
  CHECK(!exists(fmt("%s/unsafe.safetensors", tmp)));
  CHECK_CODE(zf_convert(unsafe, fmt("%s/unsafe.safetensors", tmp), o, NULL, NULL), ZF_OK);
  CHECK(exists(fmt("%s/unsafe.safetensors", tmp)));
  zf_shrink_options_destroy(o);

  /* Small buffers: truncated, NUL-terminated, full lengths reported. */
  error_buffers b;
  zf_error* e = error_init(&b, 8);
  CHECK_CODE(zf_shrink(legacy_cut, fmt("%s/bad_out.pt", tmp), NULL, NULL, e), ZF_E_CORRUPT);
  CHECK_STR(b.message, "truncat");
  CHECK_EQ_U64(e->message_length, strlen("truncated: BININT1 needs 1 bytes, 0 left"));
  CHECK_STR(b.record, "object ");
  CHECK_EQ_U64(e->record_length, strlen("object pickle"));
  CHECK_EQ_U64(strlen(b.path), 7);
  CHECK(strncmp(b.path, legacy_cut, 7) == 0);
  CHECK_EQ_U64(e->path_length, strlen(legacy_cut));
  CHECK_EQ_U64(e->offset, 299);
  CHECK(b.message[8] == 0x5a); /* nothing written past the buffer */
  e = error_init(&b, 1);
  CHECK_CODE(zf_shrink(legacy_cut, fmt("%s/bad_out.pt", tmp), NULL, NULL, e), ZF_E_CORRUPT);
  CHECK_STR(b.message, "");
  CHECK_STR(b.record, "");
  CHECK(b.message[1] == 0x5a);
  CHECK_EQ_U64(e->message_length, strlen("truncated: BININT1 needs 1 bytes, 0 left"));
  /* No buffers at all: code, offset and lengths only. */
  zf_error bare;
  memset(&bare, 0, sizeof bare);
  CHECK_CODE(zf_shrink(legacy_cut, fmt("%s/bad_out.pt", tmp), NULL, NULL, &bare), ZF_E_CORRUPT);
  CHECK_CODE(bare.code, ZF_E_CORRUPT);
  CHECK_EQ_U64(bare.offset, 299);
  CHECK_EQ_U64(bare.record_length, strlen("object pickle"));
  CHECK(bare.message == NULL);
}

static void test_merge(void) {
  PATH(ckpt, "%s/deepspeed/zero3_ws3_fp16/ckpt", fixtures);
  PATH(want, "%s/merge_cli", tmp);
  PATH(got, "%s/merge_capi", tmp);
  CHECK_EQ_U64(run_cli(fmt("merge --quiet '%s' '%s'", ckpt, want)), 0);
  zf_merge_report r;
  memset(&r, 0xff, sizeof r);
  CHECK_CODE(zf_merge(ckpt, got, NULL, &r, NULL), ZF_OK);
  CHECK_SAME_FOLDER(got, want);
  CHECK_STR(listing(got), "pytorch_model.bin");
  CHECK_EQ_U64(r.zero_stage, 3);
  CHECK_EQ_U64(r.world_size, 3);
  CHECK_EQ_U64(r.params, 27);
  CHECK_EQ_U64(r.frozen_params, 1);
  CHECK_EQ_U64(r.buffers, 2);
  CHECK_EQ_U64(r.ties, 1);
  CHECK_EQ_U64(r.output_files, 1);
  CHECK_EQ_U64(r.output_bytes, file_size(fmt("%s/pytorch_model.bin", got)));
  CHECK_EQ_U64(r.verified_tensors, 0);

  /* An existing output is refused without force; then force and verify. */
  error_buffers b;
  CHECK_CODE(zf_merge(ckpt, got, NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.path, fmt("%s/pytorch_model.bin", got));
  CHECK_STR(b.message, "exists; use --force to replace it");
  zf_merge_options* o = zf_merge_options_create();
  progress_seen p = {{"merge", "verify"}, 0, 0, 0, 0, 0};
  zf_merge_options_set_force(o, 1);
  zf_merge_options_set_verify(o, 1);
  zf_merge_options_set_progress(o, on_progress, &p);
  CHECK_CODE(zf_merge(ckpt, got, o, &r, NULL), ZF_OK);
  CHECK_EQ_U64(r.verified_tensors, 31);
  CHECK_EQ_U64(r.verified_bytes, 162160);
  CHECK_EQ_U64(r.tensor_bytes, 162160);
  CHECK(p.calls > 0);
  CHECK_EQ_U64(p.bad, 0);
  CHECK_EQ_U64(p.phase, 1);
  CHECK_EQ_U64(p.last_done, p.last_total);
  CHECK_SAME_FOLDER(got, want);
  zf_merge_options_destroy(o);

  /* One safetensors file, float16, only some names. */
  PATH(st_want, "%s/merge_cli.safetensors", tmp);
  PATH(st_got, "%s/merge_capi.safetensors", tmp);
  CHECK_EQ_U64(run_cli(fmt("merge --quiet --dtype float16 --only 'transformer.h.0.*,lm_head.*' '%s' '%s'", ckpt,
                           st_want)),
               0);
  o = zf_merge_options_create();
  CHECK_CODE(zf_merge_options_set_dtype(o, "float16", NULL), ZF_OK);
  CHECK_CODE(zf_merge_options_add_only(o, "transformer.h.0.*", NULL), ZF_OK);
  CHECK_CODE(zf_merge_options_add_only(o, "lm_head.*", NULL), ZF_OK);
  CHECK_CODE(zf_merge(ckpt, st_got, o, &r, NULL), ZF_OK);
  CHECK(same_bytes(st_got, st_want));
  CHECK_EQ_U64(r.output_bytes, file_size(st_got));
  CHECK(r.params < 27);
  /* Refusals. */
  CHECK_CODE(zf_merge_options_add_only(o, "", error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "only needs a pattern");
  CHECK_CODE(zf_merge_options_set_dtype(o, "int8", NULL), ZF_E_INVALID_ARGUMENT);
  zf_merge_options_set_dry_run(o, 1);
  zf_merge_options_set_verify(o, 1);
  CHECK_CODE(zf_merge(ckpt, fmt("%s/x.bin", tmp), o, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "verify checks written files; drop dry_run");
  zf_merge_options_set_verify(o, 0);
  CHECK_CODE(zf_merge(ckpt, fmt("%s/x.bin", tmp), o, &r, NULL), ZF_OK);
  CHECK(!exists(fmt("%s/x.bin", tmp)));
  CHECK(r.output_bytes > 0);
  /* keep_unsafe changes nothing for a safe checkpoint (merge_test and
   * test_unsafe_corpus.py cover the refusal). */
  zf_merge_options_set_keep_unsafe(o, 1);
  CHECK_CODE(zf_merge(ckpt, fmt("%s/x.bin", tmp), o, &r, NULL), ZF_OK);
  CHECK_CODE(zf_merge(ckpt, "-", NULL, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_merge(NULL, got, NULL, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  zf_merge_options_destroy(o);

  /* Not a checkpoint folder: the library's error, as the CLI prints it. */
  PATH(empty, "%s/empty_ckpt", tmp);
  sh(fmt("mkdir -p '%s'", empty));
  CHECK_CODE(zf_merge(empty, fmt("%s/y.bin", tmp), NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_NOT_FOUND);
  CHECK_EQ_U64(run_cli(fmt("merge '%s' '%s/y.bin'", empty, tmp)), 3);
  CHECK_STR(error_line(&b.e), cli_first_error_line());
}

/* merge --hf: a TorchTitan-named DCP folder into the Hugging Face folder of
 * a BASE built by tests/cli/hfexport_base.py: the CLI's bytes; a refusal. */
static void test_merge_hf(void) {
  PATH(ckpt, "%s/dcp/titan_ws2/ckpt", fixtures);
  PATH(base, "%s/hfx_base", tmp);
  PATH(want, "%s/hfx_cli", tmp);
  PATH(got, "%s/hfx_capi", tmp);
  sh(fmt("/usr/bin/python3 '%s/tests/cli/hfexport_base.py' titan '%s/dcp/titan_ws2' '%s'", ZF_SOURCE_ROOT, fixtures, base));
  CHECK_EQ_U64(run_cli(fmt("merge --quiet '%s' '%s' --hf '%s'", ckpt, want, base)), 0);
  zf_merge_options* o = zf_merge_options_create();
  CHECK_CODE(zf_merge_options_set_hf_base(o, base, NULL), ZF_OK);
  CHECK_CODE(zf_merge_options_add_hf_table(o, "", NULL), ZF_E_INVALID_ARGUMENT);
  zf_merge_options_set_drop_unmapped(o, 0);
  zf_merge_report r;
  CHECK_CODE(zf_merge(ckpt, got, o, &r, NULL), ZF_OK);
  CHECK_SAME_FOLDER(got, want);
  CHECK_EQ_U64(r.params, 6);
  /* A BASE whose model_type no table knows: the CLI's error line. */
  sh(fmt("sed -i 's/\"model_type\": \"llama\"/\"model_type\": \"gpt_neox\"/; s/LlamaForCausalLM/X/' '%s/config.json'", base));
  error_buffers b;
  CHECK_CODE(zf_merge(ckpt, fmt("%s/hfx_refused", tmp), o, NULL, error_init(&b, sizeof b.message)), ZF_E_UNSUPPORTED);
  CHECK_EQ_U64(run_cli(fmt("merge '%s' '%s/hfx_refused' --hf '%s'", ckpt, tmp, base)), 1);
  CHECK_STR(error_line(&b.e), cli_first_error_line());
  CHECK(!exists(fmt("%s/hfx_refused", tmp)));
  zf_merge_options_destroy(o);
}

/* zf_convert with dequantize: the CLI's folder (--dequantize), byte for byte;
 * the option's refusals. */
static void test_convert_dequantize(void) {
  PATH(in, "%s/quant/deepseek_fp8_block/in", fixtures);
  PATH(want, "%s/dq_cli", tmp);
  PATH(got, "%s/dq_capi", tmp);
  CHECK_EQ_U64(run_cli(fmt("convert --quiet --dequantize fp32 '%s' '%s'", in, want)), 0);
  zf_shrink_options* o = zf_shrink_options_create();
  CHECK_CODE(zf_shrink_options_set_dequantize(o, "float16", NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_shrink_options_set_dequantize(o, "fp32", NULL), ZF_OK);
  zf_shrink_report r;
  CHECK_CODE(zf_convert(in, got, o, &r, NULL), ZF_OK);
  CHECK_SAME_FOLDER(got, want);
  CHECK(r.tensors > 0);
  /* zf_shrink keeps every dtype: the option is refused, nothing written. */
  CHECK_CODE(zf_shrink(in, fmt("%s/dq_shrink", tmp), o, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK(!exists(fmt("%s/dq_shrink", tmp)));
  /* Off again: a quantized folder converts as it is (F8_E4M3 kept). */
  CHECK_CODE(zf_shrink_options_set_dequantize(o, NULL, NULL), ZF_OK);
  zf_shrink_options_set_to_safetensors(o, 1);
  CHECK_CODE(zf_convert(in, fmt("%s/dq_off", tmp), o, NULL, NULL), ZF_OK);
  CHECK_EQ_U64(run_cli(fmt("diff --quiet '%s' '%s/dq_off'", in, tmp)), 0);
  zf_shrink_options_destroy(o);
}

/* A Distributed Checkpoint folder: the same bytes as the CLI's, --select. */
static void test_merge_dcp(void) {
  PATH(ckpt, "%s/dcp/accelerate_ws4/ckpt", fixtures);
  PATH(want, "%s/dcp_cli.safetensors", tmp);
  PATH(got, "%s/dcp_capi.safetensors", tmp);
  CHECK_EQ_U64(run_cli(fmt("merge --quiet --select optimizer.state '%s' '%s'", ckpt, want)), 0);
  zf_merge_options* o = zf_merge_options_create();
  CHECK_CODE(zf_merge_options_set_select(o, "optimizer.state", NULL), ZF_OK);
  zf_merge_report r;
  memset(&r, 0xff, sizeof r);
  CHECK_CODE(zf_merge(ckpt, got, o, &r, NULL), ZF_OK);
  CHECK(same_bytes(got, want));
  CHECK_EQ_U64(r.zero_stage, 0);
  CHECK_EQ_U64(r.world_size, 4);
  CHECK_EQ_U64(r.params, 12);
  CHECK_EQ_U64(r.output_bytes, file_size(got));
  /* Default selection: the model weights, 'model.' stripped. */
  CHECK_CODE(zf_merge_options_set_select(o, NULL, NULL), ZF_OK);
  zf_merge_options_set_force(o, 1);
  CHECK_CODE(zf_merge(ckpt, got, o, &r, NULL), ZF_OK);
  CHECK_EQ_U64(r.params, 5);
  zf_merge_options_destroy(o);
  /* A hostile folder: the CLI's error line. */
  error_buffers b;
  PATH(overlap, "%s/dcp/bad/overlap", fixtures);
  CHECK_CODE(zf_merge(overlap, fmt("%s/z.bin", tmp), NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_CORRUPT);
  CHECK_EQ_U64(run_cli(fmt("merge '%s' '%s/z.bin'", overlap, tmp)), 1);
  CHECK_STR(error_line(&b.e), cli_first_error_line());
  CHECK(!exists(fmt("%s/z.bin", tmp)));
}

/* zf_inspect_json(path) returns `code` and the CLI's stdout for
 * `inspect --json path`, byte for byte. */
static void check_inspect(const char* path, zf_code code) {
  char* json = (char*)1;
  size_t len = 12345;
  error_buffers b;
  CHECK_CODE(zf_inspect_json(path, &json, &len, error_init(&b, sizeof b.message)), code);
  run_cli(fmt("inspect --json '%s'", path));
  size_t want_len = 0;
  char* want = read_all(fmt("%s/cli.out", tmp), &want_len);
  CHECK(want != NULL && want_len > 0);
  CHECK(json != NULL);
  CHECK_EQ_U64(len, want_len);
  if (json != NULL && want != NULL) {
    CHECK(memcmp(json, want, want_len) == 0 && json[len] == '\0');
    if (strcmp(json, want) != 0) printf("  zf_inspect_json: %s\n  CLI:             %s\n", json, want);
  }
  if (code != ZF_OK) CHECK_STR(error_line(&b.e), cli_first_error_line());
  free(want);
  zf_free(json);
}

static void test_inspect(void) {
  static const struct {
    const char* under; /* "f" fixtures, "t" the temp folder */
    const char* path;
    zf_code code;
  } cases[] = {
      {"f", "torch/views.pt", ZF_OK},
      {"f", "torch/legacy_views_tied.pt", ZF_OK},
      {"f", "hf/bloated", ZF_OK},
      {"f", "dcp/accelerate_ws4/ckpt", ZF_OK},
      {"f", "dcp/v2x_hf_titan_ws2/ckpt", ZF_OK},
      {"f", "dcp/bad/unsafe_eval", ZF_E_UNSAFE},
      {"t", "st_capi", ZF_OK}, /* safetensors shards written above */
      {"f", "bad/deflated.pt", ZF_OK}, /* inflated */
      {"f", "bad/torchscript.pt", ZF_E_UNSUPPORTED},
      {"t", "no_such.pt", ZF_E_NOT_FOUND},
      {"t", "legacy_cut.pt", ZF_E_CORRUPT},
      /* Megatron-Core and DeepSpeed folders, described as the CLI does */
      {"f", "megatron/gpt_tp2pp2_mlm/ckpt", ZF_OK},
      {"f", "megatron/sharded_ws4/ckpt", ZF_OK},
      {"f", "megatron/bad/dp_reshardable", ZF_OK},
      {"f", "megatron/bad/plans_eval", ZF_E_UNSAFE},
      {"f", "deepspeed/zero2_ws3_bf16/ckpt", ZF_OK},
      {"f", "deepspeed/derived_refuse_tp2/ckpt", ZF_OK}, /* merge would refuse: described */
      {"t", "ds_bad_tag", ZF_E_NOT_FOUND},               /* `latest` names no folder */
  };
  sh(fmt("mkdir -p '%s/ds_bad_tag' && echo nope > '%s/ds_bad_tag/latest'", tmp, tmp));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    PATH(path, "%s/%s", cases[i].under[0] == 'f' ? fixtures : tmp, cases[i].path);
    check_inspect(path, cases[i].code);
  }

  char* json = NULL;
  CHECK_CODE(zf_inspect_json(fmt("%s/torch/views.pt", fixtures), &json, NULL, NULL), ZF_OK);
  CHECK(json != NULL && strncmp(json, "{\"files\":[{\"path\":", 18) == 0);
  zf_free(json);
  CHECK_CODE(zf_inspect_json(NULL, &json, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK(json == NULL);
  CHECK_CODE(zf_inspect_json(fmt("%s/torch/views.pt", fixtures), NULL, NULL, NULL), ZF_E_INVALID_ARGUMENT);
}

static void test_verify(void) {
  PATH(views, "%s/torch/views.pt", fixtures);
  zf_verify_report r;
  memset(&r, 0xff, sizeof r);
  CHECK_CODE(zf_verify(views, fmt("%s/views_small.pt", tmp), &r, NULL), ZF_OK);
  CHECK_EQ_U64(r.tensors, 6);
  CHECK_EQ_U64(r.bytes, 264);
  CHECK_CODE(zf_verify(views, views, NULL, NULL), ZF_OK);

  /* Another tensor count: b's path, no tensor. */
  error_buffers b;
  PATH(tied, "%s/torch/tied_weights.pt", fixtures);
  CHECK_CODE(zf_verify(views, tied, &r, error_init(&b, sizeof b.message)), ZF_E_CORRUPT);
  CHECK_STR(b.path, tied);
  CHECK_STR(b.record, "");
  CHECK_STR(b.message, "holds 5 tensors, the input 6");
  /* A tensor that differs in dtype: b's path and the tensor's name. */
  PATH(state_dict, "%s/torch/state_dict.pt", fixtures);
  PATH(cast, "%s/state_dict_bf16.pt", tmp);
  zf_shrink_options* o = zf_shrink_options_create();
  CHECK_CODE(zf_shrink_options_set_dtype(o, "bfloat16", NULL), ZF_OK);
  CHECK_CODE(zf_shrink(state_dict, cast, o, NULL, NULL), ZF_OK);
  zf_shrink_options_destroy(o);
  CHECK_CODE(zf_verify(state_dict, cast, &r, error_init(&b, sizeof b.message)), ZF_E_CORRUPT);
  CHECK_STR(b.path, cast);
  CHECK_STR(b.record, "0.weight");
  CHECK_STR(b.message, "tensor differs from the input: dtype bfloat16, input float32");
  CHECK_EQ_U64(b.e.offset, ZF_NO_OFFSET);
  /* safetensors is refused by name; a missing file is not found. */
  PATH(st, "%s/st_capi/model-00001-of-00003.safetensors", tmp);
  CHECK(exists(st));
  CHECK_CODE(zf_verify(views, st, NULL, error_init(&b, sizeof b.message)), ZF_E_UNSUPPORTED);
  CHECK_STR(b.path, st);
  CHECK_STR(b.message, "zf_verify compares torch files; this is a safetensors file");
  CHECK_CODE(zf_verify(fmt("%s/no_such.pt", tmp), views, NULL, error_init(&b, sizeof b.message)), ZF_E_NOT_FOUND);
  CHECK_STR(b.path, fmt("%s/no_such.pt", tmp));
  CHECK_CODE(zf_verify(views, NULL, NULL, NULL), ZF_E_INVALID_ARGUMENT);
}

/* zf_diff(a, b) with tolerances, as the CLI's `diff --json [flags] a b`: the report, and
 * the document byte for byte. */
static void check_diff(const char* a, const char* b, double atol, double rtol, const char* flags,
                       int same, uint64_t tensors, uint64_t different) {
  zf_diff_report r;
  memset(&r, 0xff, sizeof r);
  char* json = NULL;
  size_t len = 0;
  CHECK_CODE(zf_diff(a, b, atol, rtol, 0, &r, &json, &len, NULL), ZF_OK);
  CHECK_EQ_U64(r.same, same);
  CHECK_EQ_U64(r.tensors, tensors);
  CHECK_EQ_U64(r.different, different);
  CHECK_EQ_U64(r.only_in_a, 0);
  CHECK_EQ_U64(r.only_in_b, 0);
  CHECK_EQ_U64(run_cli(fmt("diff --json %s '%s' '%s'", flags, a, b)), same ? 0 : 1);
  size_t want_len = 0;
  char* want = read_all(fmt("%s/cli.out", tmp), &want_len);
  CHECK(json != NULL && want != NULL);
  CHECK_EQ_U64(len, want_len);
  if (json != NULL && want != NULL) {
    CHECK(memcmp(json, want, want_len) == 0 && json[len] == '\0');
    if (strcmp(json, want) != 0) printf("  zf_diff: %s\n  CLI:     %s\n", json, want);
  }
  free(want);
  zf_free(json);
}

static void test_diff(void) {
  PATH(views, "%s/torch/views.pt", fixtures);
  PATH(state_dict, "%s/torch/state_dict.pt", fixtures);
  PATH(cast, "%s/state_dict_bf16.pt", tmp); /* written by test_verify */
  check_diff(views, views, -1, -1, "", 1, 6, 0);
  check_diff(views, fmt("%s/views_small.pt", tmp), -1, -1, "", 1, 6, 0);
  check_diff(state_dict, cast, -1, -1, "", 0, 9, 8);  /* 8 float32 tensors cast, the int64 one kept */
  check_diff(state_dict, cast, -1, 0.01, "--rtol 0.01", 1, 9, 0);
  zf_diff_report r;
  CHECK_CODE(zf_diff(views, views, -1, -1, 0, &r, NULL, NULL, NULL), ZF_OK);
  CHECK_EQ_U64(r.same, 1);

  error_buffers b;
  CHECK_CODE(zf_diff(views, NULL, -1, -1, 0, NULL, NULL, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_diff(views, views, -1, -1, 1, NULL, NULL, NULL, error_init(&b, sizeof b.message)),
             ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "equal_nan needs a tolerance (atol or rtol >= 0)");
  CHECK_CODE(zf_diff(views, "-", -1, -1, 0, NULL, NULL, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  char* json = (char*)1;
  CHECK_CODE(zf_diff(fmt("%s/no_such.pt", tmp), views, -1, -1, 0, NULL, &json, NULL, error_init(&b, sizeof b.message)),
             ZF_E_NOT_FOUND);
  CHECK(json == NULL);
  CHECK_STR(b.path, fmt("%s/no_such.pt", tmp));

  /* zf_diff_with: NULL options is zf_diff's defaults; tolerance, only,
   * progress, cancellation. */
  CHECK_CODE(zf_diff_with(state_dict, cast, NULL, &r, NULL, NULL, NULL), ZF_OK);
  CHECK_EQ_U64(r.different, 8);
  zf_diff_options* o = zf_diff_options_create();
  CHECK(o != NULL);
  CHECK_CODE(zf_diff_options_set_tolerance(o, -1, 0.01, 0, NULL), ZF_OK);
  CHECK_CODE(zf_diff_with(state_dict, cast, o, &r, NULL, NULL, NULL), ZF_OK);
  CHECK_EQ_U64(r.same, 1);
  CHECK_CODE(zf_diff_options_set_tolerance(o, -1, -1, 1, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "equal_nan needs a tolerance (atol or rtol >= 0)");
  CHECK_CODE(zf_diff_options_set_tolerance(o, -1, -1, 0, NULL), ZF_OK);  /* bit for bit again */
  CHECK_CODE(zf_diff_options_add_only(o, "0.*", NULL), ZF_OK);
  CHECK_CODE(zf_diff_options_add_only(o, "", NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_diff_with(state_dict, cast, o, &r, &json, NULL, NULL), ZF_OK);
  CHECK_EQ_U64(r.tensors, 2);
  CHECK_EQ_U64(r.different, 2);
  CHECK(json != NULL && strstr(json, "\"0.weight\"") != NULL && strstr(json, "\"3.bias\"") == NULL);
  zf_free(json);
  zf_diff_options_destroy(o);
  o = zf_diff_options_create();
  CHECK_CODE(zf_diff_options_add_only(o, "nothing*", NULL), ZF_OK);
  CHECK_CODE(zf_diff_with(views, views, o, &r, NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK(strstr(b.message, "--only matches no tensor") != NULL || strstr(b.message, "only matches no tensor") != NULL);
  zf_diff_options_destroy(o);

  o = zf_diff_options_create();
  progress_seen p = {{"diff", NULL}, 0, 0, 0, 0, 0};
  zf_diff_options_set_progress(o, on_progress, &p);
  CHECK_CODE(zf_diff_with(state_dict, state_dict, o, &r, NULL, NULL, NULL), ZF_OK);
  CHECK(p.calls > 1);
  CHECK_EQ_U64(p.bad, 0);
  CHECK_EQ_U64(p.last_done, 2 * 404);
  CHECK_EQ_U64(p.last_total, 2 * 404);
  int stops = 0;
  zf_diff_options_set_progress(o, stop_at_first, &stops);
  CHECK_CODE(zf_diff_with(state_dict, state_dict, o, &r, NULL, NULL, error_init(&b, sizeof b.message)), ZF_CANCELLED);
  CHECK_EQ_U64(stops, 1);
  zf_diff_options_destroy(o);
}

/* Parts (zf_*_options_set_part): parts in any order, then finish, give the
 * bytes of one call; each part's report counts its files; refusals. */
static void test_parts(void) {
  error_buffers b;
  /* merge: ZeRO-3 into 20 files. */
  PATH(ckpt, "%s/deepspeed/zero3_ws4_fp32/ckpt", fixtures);
  PATH(one, "%s/parts_merge_one", tmp);
  PATH(p, "%s/parts_merge", tmp);
  zf_merge_options* m = zf_merge_options_create();
  CHECK_CODE(zf_merge_options_set_max_shard_size(m, 1000, NULL), ZF_OK);
  zf_merge_report r;
  CHECK_CODE(zf_merge(ckpt, one, m, &r, NULL), ZF_OK);
  const uint64_t files = r.output_files, bytes = r.output_bytes;
  CHECK(files >= 4);
  /* Finish before any part: the first file is missing; OUT is not made. */
  CHECK_CODE(zf_merge_options_set_part(m, "finish", NULL), ZF_OK);
  CHECK_CODE(zf_merge(ckpt, p, m, NULL, error_init(&b, sizeof b.message)), ZF_E_CORRUPT);
  CHECK_STR(b.path, fmt("%s/pytorch_model-00001-of-000%02llu.bin", p, (unsigned long long)files));
  CHECK_STR(b.message, "is missing: the part that writes it has not finished; rerun that part");
  CHECK(!exists(p));
  uint64_t part_files = 0, part_bytes = 0;
  const char* order[] = {"2/3", "0/3", "1/3"};
  for (int i = 0; i < 3; ++i) {
    CHECK_CODE(zf_merge_options_set_part(m, order[i], NULL), ZF_OK);
    CHECK_CODE(zf_merge(ckpt, p, m, &r, NULL), ZF_OK);
    CHECK(r.output_files >= 1);
    part_files += r.output_files;
    part_bytes += r.output_bytes;
  }
  CHECK_EQ_U64(part_files, files);
  CHECK_EQ_U64(part_bytes, bytes);
  CHECK(!exists(fmt("%s/pytorch_model.bin.index.json", p)));
  CHECK_CODE(zf_merge_options_set_part(m, "finish", NULL), ZF_OK);
  CHECK_CODE(zf_merge(ckpt, p, m, &r, NULL), ZF_OK);
  CHECK_EQ_U64(r.output_files, files);
  CHECK_SAME_FOLDER(p, one);
  /* Text the CLI refuses is refused, and the option is unchanged. */
  CHECK_CODE(zf_merge_options_set_part(m, "3/3", error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(b.message, "--part I/N counts I from 0 to N-1 (as SLURM_ARRAY_TASK_ID with --array=0-2), not '3/3'");
  CHECK_CODE(zf_merge_options_set_part(NULL, "0/2", NULL), ZF_E_INVALID_ARGUMENT);
  /* A file OUT is one file. */
  CHECK_CODE(zf_merge_options_set_part(m, "0/2", NULL), ZF_OK);
  CHECK_CODE(zf_merge(ckpt, fmt("%s/m.bin", tmp), m, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
  CHECK(!exists(fmt("%s/m.bin", tmp)));
  /* NULL: one call again. */
  PATH(again, "%s/parts_merge_again", tmp);
  CHECK_CODE(zf_merge_options_set_part(m, NULL, NULL), ZF_OK);
  CHECK_CODE(zf_merge(ckpt, again, m, NULL, NULL), ZF_OK);
  CHECK_SAME_FOLDER(again, one);
  zf_merge_options_destroy(m);

  /* shrink: a torch folder into safetensors shards, and into torch shards. */
  PATH(hf, "%s/hf/bloated", fixtures);
  for (int to_st = 1; to_st >= 0; --to_st) {
    PATH(s_one, "%s/parts_shrink_one_%d", tmp, to_st);
    PATH(s_p, "%s/parts_shrink_%d", tmp, to_st);
    zf_shrink_options* o = zf_shrink_options_create();
    zf_shrink_options_set_to_safetensors(o, to_st);
    if (to_st) CHECK_CODE(zf_shrink_options_set_max_shard_size(o, 4000, NULL), ZF_OK);
    zf_shrink_report sr;
    CHECK_CODE(zf_shrink(hf, s_one, o, &sr, NULL), ZF_OK);
    const uint64_t s_files = sr.output_files, s_bytes = sr.output_bytes;
    CHECK(s_files >= 3);
    uint64_t got_files = 0, got_bytes = 0;
    for (int i = 1; i >= 0; --i) {
      CHECK_CODE(zf_shrink_options_set_part(o, i ? "1/2" : "0/2", NULL), ZF_OK);
      CHECK_CODE(zf_shrink(hf, s_p, o, &sr, NULL), ZF_OK);
      got_files += sr.output_files;
      got_bytes += sr.output_bytes;
    }
    CHECK_EQ_U64(got_files, s_files);
    CHECK_EQ_U64(got_bytes, s_bytes);
    /* A part called again finds its files complete: the same report. */
    CHECK_CODE(zf_shrink(hf, s_p, o, &sr, NULL), ZF_OK);
    CHECK_CODE(zf_shrink_options_set_part(o, "finish", NULL), ZF_OK);
    CHECK_CODE(zf_shrink(hf, s_p, o, &sr, NULL), ZF_OK);
    CHECK_EQ_U64(sr.output_files, s_files);
    CHECK_SAME_FOLDER(s_p, s_one);
    /* A file OUT, and in place, are refused. */
    CHECK_CODE(zf_shrink_options_set_part(o, "0/2", NULL), ZF_OK);
    PATH(file_out, "%s/parts.%s", tmp, to_st ? "safetensors" : "bin");
    CHECK_CODE(zf_shrink(hf, file_out, o, NULL, error_init(&b, sizeof b.message)), ZF_E_INVALID_ARGUMENT);
    CHECK(!exists(file_out));
    zf_shrink_options_destroy(o);
  }
}

/* A Hugging Face index naming a tensor its shard does not hold
 * (src/model/hf_folder.h): every call that reads the folder is
 * ZF_E_CORRUPT with the index's path and the CLI's message, and writes
 * nothing (tests/cli/index_test.sh runs every case through the CLI). */
static void test_index_mismatch(void) {
  PATH(hf, "%s/ghost_index", tmp);
  PATH(index, "%s/ghost_index/pytorch_model.bin.index.json", tmp);
  sh(fmt("cp -r '%s/hf/bloated' '%s' && sed -i 's|\"weight_map\": {|&\\n    \"ghost.weight\": "
         "\"pytorch_model-00002-of-00003.bin\",|' '%s'",
         fixtures, hf, index));
  const char* why = "weight_map names \"ghost.weight\", which shard pytorch_model-00002-of-00003.bin does not hold";
  CHECK_EQ_U64(run_cli(fmt("inspect '%s'", hf)), 1);
  error_buffers b;
  char* json = NULL;
  CHECK_CODE(zf_inspect_json(hf, &json, NULL, error_init(&b, sizeof b.message)), ZF_E_CORRUPT);
  CHECK_STR(b.message, why);
  CHECK_STR(b.path, index);
  CHECK(json != NULL && strstr(json, "\"error\":{\"code\":\"corrupt\"") != NULL);
  zf_free(json);
  PATH(out, "%s/ghost_out/", tmp);
  CHECK_CODE(zf_shrink(hf, out, NULL, NULL, error_init(&b, sizeof b.message)), ZF_E_CORRUPT);
  CHECK_STR(b.message, why);
  CHECK_STR(b.path, index);
  zf_shrink_options* o = zf_shrink_options_create();
  zf_shrink_options_set_to_safetensors(o, 1);
  CHECK_CODE(zf_convert(hf, out, o, NULL, error_init(&b, sizeof b.message)), ZF_E_CORRUPT);
  CHECK_STR(b.message, why);
  zf_shrink_options_destroy(o);
  CHECK(!exists(out));
  CHECK_CODE(zf_diff(hf, fmt("%s/hf/bloated", fixtures), -1, -1, 0, NULL, NULL, NULL, error_init(&b, sizeof b.message)),
             ZF_E_CORRUPT);
  CHECK_STR(b.message, why);
  CHECK_STR(b.path, index);
}

int main(int argc, char** argv) {
  if (argc > 1) cli = argv[1];
  else if (getenv("ZEROFOLD") != NULL) cli = getenv("ZEROFOLD");
  snprintf(tmp, sizeof tmp, "/tmp/zf_capi_test_XXXXXX");
  if (mkdtemp(tmp) == NULL) {
    printf("cannot make a temp folder\n0 passed, 1 failed\n");
    return 1;
  }
  test_version_and_names();
  test_shrink_file();
  test_shrink_in_place_and_progress();
  test_shrink_folder();
  test_shrink_select_dtype();
  test_errors();
  test_merge();
  test_merge_dcp();
  test_merge_hf();
  test_convert_dequantize();
  test_parts();
  test_inspect();
  test_verify();
  test_diff();
  test_index_mismatch();
  sh(fmt("rm -rf '%s'", tmp));
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
