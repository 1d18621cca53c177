/* zf_scan_json (include/zerofold/zerofold.h), driven from C11: its lines are
 * the CLI's `scan --json` stdout byte for byte (files and folders, --hash),
 * its code is the first failing file's with the CLI's error line, options
 * and their errors, progress and both ways of stopping, and the zf_env seam
 * (a tree served by the caller's callbacks under names the operating
 * system does not have).
 *
 *   build/tests/capi/scan_capi_test build/zerofold
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "c_check.h"
#include "zerofold/zerofold.h"

static const char* cli = ZF_CLI;
static const char* fixtures = ZF_SOURCE_ROOT "/fixtures";
static char tmp[256];

static int run_cli(const char* args) { return run_cli_in(cli, tmp, args); }

#define sh(command) SH(command)

/* The lines zf_scan_json delivered, concatenated. */
typedef struct {
  char* text;
  size_t len;
  size_t lines;
  size_t stop_after; /* nonzero: return 1 after this many lines */
  int bad_line;      /* a line that was not one NUL-terminated line ending in '\n' */
} collected;

static int collect(void* user, const char* line, size_t length) {
  collected* c = (collected*)user;
  if (length == 0 || line[length - 1] != '\n' || line[length] != '\0' || memchr(line, '\n', length - 1) != NULL)
    c->bad_line = 1;
  char* grown = (char*)realloc(c->text, c->len + length + 1);
  if (grown == NULL) return 1;
  c->text = grown;
  memcpy(c->text + c->len, line, length);
  c->len += length;
  c->text[c->len] = '\0';
  ++c->lines;
  return c->stop_after != 0 && c->lines >= c->stop_after;
}

/* zf_scan_json over `paths` (with `options`) returns `code` and the lines the
 * CLI prints for `scan --json --no-progress FLAGS PATHS`. */
static void check_same_as_cli(const char* const* paths, size_t n, const zf_scan_options* options, const char* flags,
                              zf_code code, const char* err_path) {
  collected c = {0};
  char message[1024], path[1024], record[1024];
  zf_error e = {0};
  e.message = message;
  e.message_size = sizeof message;
  e.path = path;
  e.path_size = sizeof path;
  e.record = record;
  e.record_size = sizeof record;
  CHECK_CODE(zf_scan_json(paths, n, options, collect, &c, &e), code);
  char args[4096] = "";
  snprintf(args, sizeof args, "scan --json --no-progress %s", flags);
  for (size_t i = 0; i < n; ++i) snprintf(args + strlen(args), sizeof args - strlen(args), " '%s'", paths[i]);
  run_cli(args);
  size_t want_len = 0;
  char* want = read_all(fmt("%s/cli.out", tmp), &want_len);
  CHECK(want != NULL && want_len > 0);
  CHECK(!c.bad_line);
  CHECK_EQ_U64(c.len, want_len);
  if (want != NULL && c.text != NULL) {
    CHECK(c.len == want_len && memcmp(c.text, want, want_len) == 0);
    if (c.len != want_len || memcmp(c.text, want, want_len) != 0)
      printf("  zf_scan_json:\n%s  CLI:\n%s", c.text, want);
  }
  if (code != ZF_OK) CHECK_STR(path, err_path);
  free(want);
  free(c.text);
}

typedef struct {
  int calls;
  int bad;           /* a phase other than "scan", or done past total */
  uint64_t last_done, last_total;
  int stop_at;       /* nonzero: return 1 at this call */
} progress_seen;

static int on_progress(void* user, const char* phase, uint64_t done, uint64_t total) {
  progress_seen* p = (progress_seen*)user;
  ++p->calls;
  if (strcmp(phase, "scan") != 0 || done > total) p->bad = 1;
  p->last_done = done;
  p->last_total = total;
  return p->stop_at != 0 && p->calls >= p->stop_at;
}

/* ---- the caller's bytes: names "mem:NAME" served from tmp/NAME ---------- */

static const char* real_name(const char* name) {
  if (strncmp(name, "mem:", 4) != 0) return NULL;
  return fmt("%s/%s", tmp, name + 4);
}

static int served; /* files the callbacks opened */

static zf_code mem_stat(void* user, const char* name, zf_entry_kind* kind, uint64_t* size, char* why, size_t why_size) {
  (void)user, (void)why, (void)why_size;
  const char* real = real_name(name);
  struct stat st;
  *kind = ZF_ENTRY_NONE;
  if (real == NULL || stat(real, &st) != 0) return ZF_OK;
  *kind = S_ISDIR(st.st_mode) ? ZF_ENTRY_FOLDER : ZF_ENTRY_FILE;
  *size = (uint64_t)st.st_size;
  return ZF_OK;
}

static zf_code mem_list(void* user, const char* folder, zf_list_add_fn add, void* list, char* why, size_t why_size) {
  (void)user, (void)why, (void)why_size;
  const char* real = real_name(folder);
  DIR* d = real == NULL ? NULL : opendir(real);
  if (d == NULL) return ZF_E_NOT_FOUND;
  char base[1024];
  snprintf(base, sizeof base, "%s", real);
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    if (stat(fmt("%s/%s", base, e->d_name), &st) != 0) continue;
    add(list, e->d_name, S_ISDIR(st.st_mode) ? ZF_ENTRY_FOLDER : ZF_ENTRY_FILE);
  }
  closedir(d);
  return ZF_OK;
}

static zf_code mem_open(void* user, const char* name, void** file, uint64_t* size, char* why, size_t why_size) {
  (void)user, (void)why, (void)why_size;
  const char* real = real_name(name);
  FILE* f = real == NULL ? NULL : fopen(real, "rb");
  if (f == NULL) return ZF_E_NOT_FOUND;
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    fclose(f);
    return ZF_E_IO;
  }
  *file = f;
  *size = (uint64_t)st.st_size;
  ++served;
  return ZF_OK;
}

static zf_code mem_read_at(void* user, void* file, uint64_t offset, void* buf, size_t len, size_t* got, char* why,
                           size_t why_size) {
  (void)user, (void)why, (void)why_size;
  FILE* f = (FILE*)file;
  if (fseek(f, (long)offset, SEEK_SET) != 0) return ZF_E_IO;
  *got = fread(buf, 1, len, f);
  return ferror(f) ? ZF_E_IO : ZF_OK;
}

static void mem_close(void* user, void* file) {
  (void)user;
  fclose((FILE*)file);
}

/* ---- tests ------------------------------------------------------------ */

static void test_scan_like_cli(void) {
  sh(fmt("mkdir -p '%s/tree/sub' && cp '%s/torch/views.pt' '%s/tree/' && cp '%s/bad/unsafe_os_system.pt' "
         "'%s/tree/sub/' && echo text > '%s/tree/notes.txt' && cp -r '%s/hf/bloated' '%s/tree/hf'",
         tmp, fixtures, tmp, fixtures, tmp, tmp, fixtures, tmp));
  PATH(tree, "%s/tree", tmp);
  PATH(hf, "%s/tree/hf", tmp);
  PATH(views, "%s/tree/views.pt", tmp);
  PATH(unsafe, "%s/tree/sub/unsafe_os_system.pt", tmp);
  PATH(missing, "%s/no_such.pt", tmp);
  const char* all[] = {tree};
  check_same_as_cli(all, 1, NULL, "", ZF_E_UNSAFE, unsafe);
  const char* safe[] = {hf, views};
  check_same_as_cli(safe, 2, NULL, "", ZF_OK, "");
  const char* with_missing[] = {views, missing};
  check_same_as_cli(with_missing, 2, NULL, "", ZF_E_NOT_FOUND, missing);

  zf_scan_options* o = zf_scan_options_create();
  CHECK(o != NULL);
  zf_scan_options_set_hash(o, 1);
  CHECK_CODE(zf_scan_options_set_number(o, "buffer_bytes", 4096, NULL), ZF_OK);
  sh(fmt("cp '%s/tree/views.pt' '%s/tree/hf/copy.pt'", tmp, tmp));
  check_same_as_cli(all, 1, o, "--hash --buffer-size 4096", ZF_E_UNSAFE, unsafe);
  zf_scan_options_destroy(o);
}

static void test_options_and_stops(void) {
  PATH(tree, "%s/tree", tmp);
  const char* paths[] = {tree};
  zf_scan_options* o = zf_scan_options_create();
  CHECK_CODE(zf_scan_options_set_number(o, "max-pickle-depth", 50, NULL), ZF_OK);
  CHECK_CODE(zf_scan_options_set_number(o, "buffer_bytes", 100, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_scan_options_set_number(o, "no-such-option", 1, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_scan_options_set_number(NULL, "max-pickle-depth", 1, NULL), ZF_E_INVALID_ARGUMENT);

  /* Progress: phase "scan", done never past total, and it reaches the total. */
  progress_seen p = {0};
  zf_scan_options_set_progress(o, on_progress, &p);
  collected c = {0};
  CHECK_CODE(zf_scan_json(paths, 1, o, collect, &c, NULL), ZF_E_UNSAFE);
  CHECK(p.calls > 0 && !p.bad);
  CHECK(p.last_total > 0 && p.last_done == p.last_total);
  free(c.text);

  /* A nonzero progress return stops the call. */
  progress_seen stop = {0};
  stop.stop_at = 2;
  zf_scan_options_set_progress(o, on_progress, &stop);
  collected c2 = {0};
  CHECK_CODE(zf_scan_json(paths, 1, o, collect, &c2, NULL), ZF_CANCELLED);
  free(c2.text);
  zf_scan_options_set_progress(o, NULL, NULL);

  /* A nonzero line return stops the call after that line. */
  collected one = {0};
  one.stop_after = 1;
  CHECK_CODE(zf_scan_json(paths, 1, o, collect, &one, NULL), ZF_CANCELLED);
  CHECK_EQ_U64(one.lines, 1);
  free(one.text);

  CHECK_CODE(zf_scan_json(paths, 1, o, NULL, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_scan_json(NULL, 1, o, collect, &one, NULL), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_scan_json(paths, 0, o, collect, &one, NULL), ZF_E_INVALID_ARGUMENT);
  const char* null_path[] = {NULL};
  CHECK_CODE(zf_scan_json(null_path, 1, o, collect, &one, NULL), ZF_E_INVALID_ARGUMENT);
  zf_scan_options_destroy(o);
}

static void test_env(void) {
  zf_file_ops ops;
  memset(&ops, 0, sizeof ops);
  ops.stat = mem_stat;
  ops.list = mem_list;
  ops.open = mem_open;
  ops.read_at = mem_read_at;
  ops.close = mem_close;
  zf_env* env = zf_env_create();
  CHECK(env != NULL);
  CHECK_CODE(zf_env_set_inputs(env, &ops, sizeof ops, NULL, NULL), ZF_OK);
  zf_scan_options* o = zf_scan_options_create();
  zf_scan_options_set_env(o, env);
  const char* paths[] = {"mem:tree"};
  collected c = {0};
  served = 0;
  CHECK_CODE(zf_scan_json(paths, 1, o, collect, &c, NULL), ZF_E_UNSAFE);
  CHECK(served > 0);
  /* The same lines as the files' own scan, with the caller's names. */
  PATH(tree, "%s/tree", tmp);
  const char* real[] = {tree};
  collected d = {0};
  CHECK_CODE(zf_scan_json(real, 1, NULL, collect, &d, NULL), ZF_E_UNSAFE);
  CHECK_EQ_U64(c.lines, d.lines);
  CHECK(c.text != NULL && strstr(c.text, "\"path\":\"mem:tree/sub/unsafe_os_system.pt\",\"verdict\":\"unsafe\"") != NULL);
  CHECK(c.text != NULL && strstr(c.text, "\"path\":\"mem:tree/notes.txt\",\"verdict\":\"not a checkpoint\"") != NULL);
  free(c.text);
  free(d.text);
  zf_scan_options_destroy(o);
  zf_env_destroy(env);
}

int main(int argc, char** argv) {
  if (argc > 1) cli = argv[1];
  else if (getenv("ZEROFOLD") != NULL) cli = getenv("ZEROFOLD");
  snprintf(tmp, sizeof tmp, "/tmp/zf_capi_scan_XXXXXX");
  if (mkdtemp(tmp) == NULL) {
    printf("cannot make a temp folder\n0 passed, 1 failed\n");
    return 1;
  }
  test_scan_like_cli();
  test_options_and_stops();
  test_env();
  sh(fmt("rm -rf '%s'", tmp));
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
