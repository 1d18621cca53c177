/* The C API over the caller's bytes (zf_env, zerofold.h): inputs named
 * "mem:PATH" are read through callbacks (pread on PATH), outputs named
 * "out:NAME" go to an in-memory store through callbacks (create, write,
 * commit, abort, remove). Every command (inspect, shrink, convert, merge,
 * diff, verify, parts) gives through callbacks what its path form gives,
 * byte for byte. A read or write callback failing at any moment gives the
 * caller's code and message and leaves no committed output (every created
 * file aborted or removed); so does a progress callback asking to stop
 * (ZF_CANCELLED), at any moment.
 *
 * Usage: callback_test. Ends with "N passed, F failed". */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "c_check.h"
#include "zerofold/zerofold.h"

#ifndef ZF_SOURCE_ROOT
#error "ZF_SOURCE_ROOT must name the repository root"
#endif

#define FIX ZF_SOURCE_ROOT "/fixtures"
static char tmp[256];

/* ---- Inputs: "mem:PATH" is the file PATH, read with pread --------------- */

typedef struct inputs {
  int reads;          /* read_at calls so far */
  int fail_at;        /* 0, or the read_at call that fails */
  zf_code fail_code;  /* what it returns */
  int opens, closes;
} inputs;

static const char* real_path(const char* name) { return strncmp(name, "mem:", 4) == 0 ? name + 4 : NULL; }

static zf_code in_stat(void* user, const char* name, zf_entry_kind* kind, uint64_t* size, char* why, size_t n) {
  (void)user;
  const char* path = real_path(name);
  struct stat st;
  if (path == NULL) {
    snprintf(why, n, "not a mem: name");
    return ZF_E_INVALID_ARGUMENT;
  }
  if (stat(path, &st) != 0) {
    if (errno != ENOENT) return ZF_E_IO;
    *kind = ZF_ENTRY_NONE;
    return ZF_OK;
  }
  *kind = S_ISDIR(st.st_mode) ? ZF_ENTRY_FOLDER : ZF_ENTRY_FILE;
  *size = (uint64_t)st.st_size;
  return ZF_OK;
}

static zf_code in_list(void* user, const char* name, zf_list_add_fn add, void* list, char* why, size_t n) {
  (void)user;
  const char* path = real_path(name);
  DIR* d = path ? opendir(path) : NULL;
  if (d == NULL) {
    snprintf(why, n, "cannot list %s", name);
    return ZF_E_NOT_FOUND;
  }
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    char full[2048];
    snprintf(full, sizeof full, "%s/%s", path, e->d_name);
    if (stat(full, &st) != 0) continue;
    add(list, e->d_name, S_ISDIR(st.st_mode) ? ZF_ENTRY_FOLDER : ZF_ENTRY_FILE);
  }
  closedir(d);
  return ZF_OK;
}

/* The read log (test_read_plan): each read_at's name, offset and bytes got,
 * while `logging`. */
typedef struct read_rec {
  char name[256];
  uint64_t offset, length;
} read_rec;
static int logging;
static read_rec read_log[1 << 16];
static int read_log_n;
static char fd_names[1024][256]; /* the input name each open descriptor reads */

static zf_code in_open(void* user, const char* name, void** file, uint64_t* size, char* why, size_t n) {
  inputs* in = user;
  const char* path = real_path(name);
  int fd = path ? open(path, O_RDONLY) : -1;
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) close(fd);
    snprintf(why, n, "no object %s", name);
    return ZF_E_NOT_FOUND;
  }
  if (fd < 1024) snprintf(fd_names[fd], sizeof fd_names[fd], "%s", name);
  int* handle = malloc(sizeof *handle);
  *handle = fd;
  *file = handle;
  *size = (uint64_t)st.st_size;
  in->opens++;
  return ZF_OK;
}

static zf_code in_read_at(void* user, void* file, uint64_t offset, void* buf, size_t len, size_t* got, char* why,
                          size_t n) {
  inputs* in = user;
  if (++in->reads == in->fail_at) {
    snprintf(why, n, "HTTP 503 from the test at read %d", in->reads);
    return in->fail_code;
  }
  ssize_t r = pread(*(int*)file, buf, len, (off_t)offset);
  if (r < 0) return ZF_E_IO;
  *got = (size_t)r;
  const int fd = *(int*)file;
  if (logging && read_log_n < (int)(sizeof read_log / sizeof read_log[0]) && fd < 1024) {
    read_rec* rec = &read_log[read_log_n++];
    snprintf(rec->name, sizeof rec->name, "%s", fd_names[fd]);
    rec->offset = offset;
    rec->length = *got;
  }
  return ZF_OK;
}

static void in_close(void* user, void* file) {
  inputs* in = user;
  close(*(int*)file);
  free(file);
  in->closes++;
}

/* ---- Outputs: an in-memory store of named objects ------------------------ */

typedef struct object {
  char name[512];
  unsigned char* data;
  size_t len, cap;
  int committed;
} object;

typedef struct outputs {
  object* objects[512]; /* committed ones; pending ones live in their handles */
  int count;
  int creates, writes, commits, aborts, removes;
  int fail_write_at; /* 0, or the write call that fails */
} outputs;

static object* find(outputs* o, const char* name) {
  for (int i = 0; i < o->count; ++i)
    if (strcmp(o->objects[i]->name, name) == 0) return o->objects[i];
  return NULL;
}

static void drop(outputs* o, object* obj) {
  for (int i = 0; i < o->count; ++i)
    if (o->objects[i] == obj) o->objects[i] = o->objects[--o->count];
  free(obj->data);
  free(obj);
}

static void store_clear(outputs* o) {
  while (o->count > 0) drop(o, o->objects[0]);
  memset(o, 0, sizeof *o);
}

static zf_code out_stat(void* user, const char* name, zf_entry_kind* kind, uint64_t* size, char* why, size_t n) {
  outputs* o = user;
  (void)why, (void)n;
  object* obj = find(o, name);
  *kind = ZF_ENTRY_NONE;
  if (obj != NULL) {
    *kind = ZF_ENTRY_FILE;
    *size = obj->len;
    return ZF_OK;
  }
  size_t len = strlen(name);
  for (int i = 0; i < o->count; ++i)
    if (strncmp(o->objects[i]->name, name, len) == 0 && o->objects[i]->name[len] == '/') *kind = ZF_ENTRY_FOLDER;
  return ZF_OK;
}

static zf_code out_list(void* user, const char* folder, zf_list_add_fn add, void* list, char* why, size_t n) {
  outputs* o = user;
  (void)why, (void)n;
  size_t len = strlen(folder);
  while (len > 0 && folder[len - 1] == '/') --len;
  for (int i = 0; i < o->count; ++i) {
    const char* name = o->objects[i]->name;
    if (strncmp(name, folder, len) == 0 && name[len] == '/' && strchr(name + len + 1, '/') == NULL)
      add(list, name + len + 1, ZF_ENTRY_FILE);
  }
  return ZF_OK;
}

static zf_code out_create(void* user, const char* name, void** file, char* why, size_t n) {
  outputs* o = user;
  (void)why, (void)n;
  object* obj = calloc(1, sizeof *obj);
  snprintf(obj->name, sizeof obj->name, "%s", name);
  *file = obj;
  o->creates++;
  return ZF_OK;
}

static zf_code out_write(void* user, void* file, const void* data, size_t len, char* why, size_t n) {
  outputs* o = user;
  object* obj = file;
  if (++o->writes == o->fail_write_at) {
    snprintf(why, n, "quota exceeded (the test, write %d)", o->writes);
    return ZF_E_IO;
  }
  if (obj->len + len > obj->cap) {
    obj->cap = (obj->len + len) * 2;
    obj->data = realloc(obj->data, obj->cap);
  }
  memcpy(obj->data + obj->len, data, len);
  obj->len += len;
  return ZF_OK;
}

static zf_code out_commit(void* user, void* file, char* why, size_t n) {
  outputs* o = user;
  object* obj = file;
  (void)why, (void)n;
  object* old = find(o, obj->name);
  if (old != NULL) drop(o, old);
  obj->committed = 1;
  o->objects[o->count++] = obj;
  o->commits++;
  return ZF_OK;
}

static void out_abort(void* user, void* file) {
  outputs* o = user;
  object* obj = file;
  free(obj->data);
  free(obj);
  o->aborts++;
}

static zf_code out_remove(void* user, const char* name, char* why, size_t n) {
  outputs* o = user;
  object* obj = find(o, name);
  if (obj == NULL) {
    snprintf(why, n, "no object %s", name);
    return ZF_E_NOT_FOUND;
  }
  drop(o, obj);
  o->removes++;
  return ZF_OK;
}

/* Reading committed objects back (finish with verify). */
typedef struct reader {
  const unsigned char* data;
  size_t len;
} reader;

static zf_code out_open(void* user, const char* name, void** file, uint64_t* size, char* why, size_t n) {
  object* obj = find(user, name);
  if (obj == NULL) {
    snprintf(why, n, "no object %s", name);
    return ZF_E_NOT_FOUND;
  }
  reader* r = malloc(sizeof *r);
  r->data = obj->data;
  r->len = obj->len;
  *file = r;
  *size = obj->len;
  return ZF_OK;
}

static zf_code out_read_at(void* user, void* file, uint64_t offset, void* buf, size_t len, size_t* got, char* why,
                           size_t n) {
  reader* r = file;
  (void)user, (void)why, (void)n;
  size_t k = offset >= r->len ? 0 : (r->len - offset < len ? r->len - offset : len);
  if (k) memcpy(buf, r->data + offset, k);
  *got = k;
  return ZF_OK;
}

static void out_close(void* user, void* file) {
  (void)user;
  free(file);
}

/* ---- The environment and the comparisons --------------------------------- */

static inputs in_state;
static outputs out_state;
static zf_env* env;

static void make_env(void) {
  zf_file_ops in = {0}, out = {0};
  in.stat = in_stat;
  in.list = in_list;
  in.open = in_open;
  in.read_at = in_read_at;
  in.close = in_close;
  out.stat = out_stat;
  out.list = out_list;
  out.create = out_create;
  out.write = out_write;
  out.commit = out_commit;
  out.abort = out_abort;
  out.remove = out_remove;
  out.open = out_open;
  out.read_at = out_read_at;
  out.close = out_close;
  env = zf_env_create();
  CHECK_CODE(zf_env_set_inputs(env, &in, sizeof in, &in_state, NULL), ZF_OK);
  CHECK_CODE(zf_env_set_outputs(env, &out, sizeof out, &out_state, NULL), ZF_OK);
}

/* Fresh state: no objects, no counts, no faults. */
static void reset(void) {
  store_clear(&out_state);
  memset(&in_state, 0, sizeof in_state);
}

/* The committed objects under "out:REL" equal the files under tmp/REL (a
 * file, or a folder's files), name for name and byte for byte. */
#define CHECK_SAME_OUTPUT(rel) check_same_output(__FILE__, __LINE__, rel)
static void check_same_output(const char* file, int line, const char* rel) {
  ++checks;
  char path[1024], name[1024];
  snprintf(path, sizeof path, "%s/%s", tmp, rel);
  snprintf(name, sizeof name, "out:%s", rel);
  size_t name_len = strlen(name);
  while (name_len > 0 && name[name_len - 1] == '/') name[--name_len] = '\0';
  struct stat st;
  if (stat(path, &st) != 0) {
    fail(file, line, "path form wrote no %s", path);
    return;
  }
  int want = 0;
  if (S_ISDIR(st.st_mode)) {
    DIR* d = opendir(path);
    for (struct dirent* e; (e = readdir(d)) != NULL;) {
      if (e->d_name[0] == '.') continue;
      ++want;
      object* obj = find(&out_state, fmt("%s/%s", name, e->d_name));
      size_t len = 0;
      char* bytes = read_all(fmt("%s/%s", path, e->d_name), &len);
      if (obj == NULL) fail(file, line, "no object %s/%s", name, e->d_name);
      else if (obj->len != len || memcmp(obj->data, bytes, len) != 0)
        fail(file, line, "object %s/%s differs from the path form's file", name, e->d_name);
      free(bytes);
    }
    closedir(d);
  } else {
    want = 1;
    object* obj = find(&out_state, name);
    size_t len = 0;
    char* bytes = read_all(path, &len);
    if (obj == NULL) fail(file, line, "no object %s", name);
    else if (obj->len != len || memcmp(obj->data, bytes, len) != 0)
      fail(file, line, "object %s differs from the path form's file", name);
    free(bytes);
  }
  if (out_state.count != want) fail(file, line, "%d objects committed, the path form wrote %d files", out_state.count, want);
}

/* Nothing committed is left, and every file created was aborted or removed. */
#define CHECK_NOTHING_LEFT() check_nothing_left(__FILE__, __LINE__)
static void check_nothing_left(const char* file, int line) {
  ++checks;
  if (out_state.count != 0) fail(file, line, "%d objects left, first %s", out_state.count, out_state.objects[0]->name);
  if (out_state.creates != out_state.aborts + out_state.commits)
    fail(file, line, "%d created, %d aborted, %d committed", out_state.creates, out_state.aborts, out_state.commits);
  if (out_state.commits != out_state.removes)
    fail(file, line, "%d committed, %d removed", out_state.commits, out_state.removes);
  if (in_state.opens != in_state.closes) fail(file, line, "%d opened, %d closed", in_state.opens, in_state.closes);
}

/* A document with every "mem:" taken out (the callback form names its inputs so). */
static char* strip_mem(char* doc) {
  char* w = doc;
  for (const char* r = doc; *r;) {
    if (strncmp(r, "mem:", 4) == 0) r += 4;
    else *w++ = *r++;
  }
  *w = '\0';
  return doc;
}

/* ---- The commands --------------------------------------------------------- */

static void test_inspect(void) {
  const char* paths[] = {FIX "/hf/bloated", FIX "/dcp/dim0_ws2/ckpt", FIX "/torch/views.pt",
                         FIX "/dcp/v2x_hf_dim0_ws2/ckpt/shard-00001-model-00001-of-00001.safetensors",
                         FIX "/megatron/gpt_tp2pp2_mlm/ckpt", FIX "/deepspeed/zero2_ws3_bf16/ckpt"};
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; ++i) {
    reset();
    char *want = NULL, *got = NULL;
    CHECK_CODE(zf_inspect_json(paths[i], &want, NULL, NULL), ZF_OK);
    CHECK_CODE(zf_inspect_json_env(env, fmt("mem:%s", paths[i]), &got, NULL, NULL), ZF_OK);
    CHECK(want != NULL && got != NULL && strstr(got, "mem:") != NULL);
    if (want && got) CHECK_STR(strip_mem(got), want);
    zf_free(want);
    zf_free(got);
    CHECK(in_state.opens == in_state.closes);
  }
}

/* zf_shrink or zf_convert of IN into tmp/REL and into out:REL. */
static void check_rewrite(int convert, const char* in, const char* rel, zf_shrink_options* o) {
  reset();
  zf_shrink_report want, got;
  zf_code (*call)(const char*, const char*, const zf_shrink_options*, zf_shrink_report*, zf_error*) =
      convert ? zf_convert : zf_shrink;
  zf_shrink_options_set_env(o, NULL);
  CHECK_CODE(call(in, fmt("%s/%s", tmp, rel), o, &want, NULL), ZF_OK);
  zf_shrink_options_set_env(o, env);
  char message[512] = "";
  zf_error err = {.message = message, .message_size = sizeof message};
  CHECK_CODE(call(fmt("mem:%s", in), fmt("out:%s", rel), o, &got, &err), ZF_OK);
  if (err.code != ZF_OK) printf("  %s: %s\n", rel, message);
  CHECK(memcmp(&want, &got, sizeof want) == 0);
  CHECK_SAME_OUTPUT(rel);
}

static void test_shrink_and_convert(void) {
  zf_shrink_options* o = zf_shrink_options_create();
  check_rewrite(0, FIX "/hf/bloated", "small/", o);
  check_rewrite(0, FIX "/deepspeed/bloat_zero2_ws2_bf16/pytorch_model-00001-of-00003.bin", "one.bin", o);
  check_rewrite(1, FIX "/torch/views.pt", "v.safetensors", o);
  check_rewrite(1, FIX "/torch/tied_weights.pt", "t.safetensors.zst", o);
  zf_shrink_options_set_to_safetensors(o, 1);
  zf_shrink_options_set_max_shard_size(o, 6000, NULL);
  zf_shrink_options_set_dedupe_tied(o, 1);
  CHECK_CODE(zf_shrink_options_set_number(o, "max-pickle-depth", 500, NULL), ZF_OK);
  check_rewrite(1, FIX "/hf/bloated", "st/", o);
  zf_shrink_options_set_to_safetensors(o, 0);
  zf_shrink_options_set_dedupe_tied(o, 0);
  check_rewrite(1, FIX "/deepspeed/bloat_zero2_ws2_bf16/pytorch_model.bin", "shards/", o);
  zf_shrink_options_destroy(o);
}

static void check_merge(const char* ckpt, const char* rel, zf_merge_options* o) {
  reset();
  zf_merge_report want, got;
  zf_merge_options_set_env(o, NULL);
  CHECK_CODE(zf_merge(ckpt, fmt("%s/%s", tmp, rel), o, &want, NULL), ZF_OK);
  zf_merge_options_set_env(o, env);
  CHECK_CODE(zf_merge(fmt("mem:%s", ckpt), fmt("out:%s", rel), o, &got, NULL), ZF_OK);
  CHECK(memcmp(&want, &got, sizeof want) == 0);
  CHECK_SAME_OUTPUT(rel);
}

static void test_merge(void) {
  zf_merge_options* o = zf_merge_options_create();
  check_merge(FIX "/dcp/dim0_ws2/ckpt", "dcp.safetensors", o);
  zf_merge_options_set_max_shard_size(o, 20000, NULL);
  check_merge(FIX "/deepspeed/zero2_ws3_bf16/ckpt", "zero/", o);
  zf_merge_options_destroy(o);
}

/* ---- Read plans: what a job reads for tensor data ------------------------ */

static read_rec planned[1 << 14];
static int planned_n;

static int on_read(void* user, const char* path, uint64_t offset, uint64_t length) {
  (void)user;
  if (planned_n < (int)(sizeof planned / sizeof planned[0])) {
    read_rec* rec = &planned[planned_n++];
    snprintf(rec->name, sizeof rec->name, "%s", path);
    rec->offset = offset;
    rec->length = length;
  }
  return 0;
}

/* Per input file, one byte per file byte: bit 1 read by the dry run
 * (metadata), bit 2 planned, bit 4 read by the real run. */
typedef struct bitmap {
  char name[256];
  unsigned char* bits;
  uint64_t size;
} bitmap;
static bitmap maps[64];
static int maps_n;

static bitmap* map_of(const char* name) {
  for (int i = 0; i < maps_n; ++i)
    if (strcmp(maps[i].name, name) == 0) return &maps[i];
  struct stat st;
  const char* path = real_path(name);
  if (maps_n == 64 || path == NULL || stat(path, &st) != 0) return NULL;
  bitmap* m = &maps[maps_n++];
  snprintf(m->name, sizeof m->name, "%s", name);
  m->size = (uint64_t)st.st_size;
  m->bits = calloc(m->size + 1, 1);
  return m;
}

/* Marks the ranges with `bit`; 0 when a range leaves its file. */
static int mark(const read_rec* recs, int n, unsigned char bit) {
  for (int i = 0; i < n; ++i) {
    bitmap* m = map_of(recs[i].name);
    if (m == NULL || recs[i].offset + recs[i].length > m->size) return 0;
    for (uint64_t b = recs[i].offset; b < recs[i].offset + recs[i].length; ++b) m->bits[b] |= bit;
  }
  return 1;
}

typedef zf_code (*plan_job_fn)(const char* in, const char* out, zf_read_fn fn, int dry_run);

typedef zf_code (*shrink_call)(const char*, const char*, const zf_shrink_options*, zf_shrink_report*, zf_error*);

static zf_code run_rewrite(shrink_call call, const char* in, const char* out, zf_read_fn fn, int dry_run) {
  zf_shrink_options* o = zf_shrink_options_create();
  zf_shrink_options_set_env(o, env);
  zf_shrink_options_set_dry_run(o, dry_run);
  zf_shrink_options_set_read_plan(o, fn, NULL);
  zf_code c = call(in, out, o, NULL, NULL);
  zf_shrink_options_destroy(o);
  return c;
}

static zf_code run_convert(const char* in, const char* out, zf_read_fn fn, int dry_run) {
  return run_rewrite(zf_convert, in, out, fn, dry_run);
}

static zf_code run_shrink(const char* in, const char* out, zf_read_fn fn, int dry_run) {
  return run_rewrite(zf_shrink, in, out, fn, dry_run);
}

static zf_code run_merge(const char* in, const char* out, zf_read_fn fn, int dry_run) {
  zf_merge_options* o = zf_merge_options_create();
  zf_merge_options_set_env(o, env);
  zf_merge_options_set_dry_run(o, dry_run);
  zf_merge_options_set_read_plan(o, fn, NULL);
  zf_code c = zf_merge(in, out, o, NULL, NULL);
  zf_merge_options_destroy(o);
  return c;
}

/* The plan of a dry run against the reads of the real run: every planned
 * byte is read, and every byte read that the dry run (metadata) did not
 * read is planned, but for a coalescing block (64 KiB) at most per planned
 * range. The plan is the same with and without dry run. */
static void check_read_plan(const char* what, plan_job_fn job, const char* in, const char* out) {
  reset();
  maps_n = 0;
  planned_n = 0;
  read_log_n = 0;
  logging = 1;
  CHECK_CODE(job(in, out, on_read, 1), ZF_OK);
  logging = 0;
  const int metadata_reads = read_log_n;
  CHECK(mark(read_log, read_log_n, 1));
  CHECK(planned_n > 0);
  CHECK(mark(planned, planned_n, 2));
  const int plan_n = planned_n;
  read_log_n = 0;
  planned_n = 0;
  logging = 1;
  CHECK_CODE(job(in, out, NULL, 0), ZF_OK);
  logging = 0;
  CHECK(mark(read_log, read_log_n, 4));
  uint64_t plan_bytes = 0, planned_read = 0, data_read = 0, unplanned = 0;
  for (int i = 0; i < maps_n; ++i) {
    for (uint64_t b = 0; b < maps[i].size; ++b) {
      const unsigned char v = maps[i].bits[b];
      plan_bytes += (v & 2) != 0;
      planned_read += (v & 6) == 6;
      data_read += (v & 4) && !(v & 1);
      unplanned += (v & 4) && !(v & 3);
    }
    free(maps[i].bits);
  }
  printf("  read plan %-34s %3d ranges, %9llu B planned; real run read %9llu B beyond metadata (%d metadata "
         "reads), %llu B unplanned\n",
         what, plan_n, (unsigned long long)plan_bytes, (unsigned long long)data_read, metadata_reads,
         (unsigned long long)unplanned);
  CHECK_EQ_U64(planned_read, plan_bytes);
  CHECK(unplanned <= (uint64_t)plan_n * 65536);
  CHECK(data_read <= plan_bytes + (uint64_t)plan_n * 65536);
}

static void test_read_plan(void) {
  check_read_plan("bloated torch zip -> safetensors", run_convert, "mem:" FIX "/deepspeed/bloat_zero2_ws2_bf16/pytorch_model.bin",
                  "out:bloated.safetensors");
  check_read_plan("bloated torch zip shrink", run_shrink, "mem:" FIX "/deepspeed/bloat_zero2_ws2_bf16/pytorch_model.bin",
                  "out:small.bin");
  check_read_plan("safetensors -> torch", run_convert, "mem:" FIX "/dcp/v2x_hf_dim0_ws2/ckpt/shard-00001-model-00001-of-00001.safetensors",
                  "out:st.bin");
  check_read_plan("HF folder shrink", run_shrink, "mem:" FIX "/hf/bloated", "out:hf/");
  check_read_plan("DCP merge", run_merge, "mem:" FIX "/dcp/dim0_ws2/ckpt", "out:dcp.safetensors");
  check_read_plan("DeepSpeed merge", run_merge, "mem:" FIX "/deepspeed/zero2_ws3_bf16/ckpt", "out:zero.bin");
}

static void test_diff_and_verify(void) {
  const char* a = FIX "/deepspeed/zero2_ws3_bf16/ground_truth.pt";
  const char* b = FIX "/deepspeed/zero2_ws3_bf16/reference_zero_to_fp32.bin";
  reset();
  zf_diff_report want, got;
  char *want_json = NULL, *got_json = NULL;
  CHECK_CODE(zf_diff(a, b, 1e-3, -1, 0, &want, &want_json, NULL, NULL), ZF_OK);
  CHECK_CODE(zf_diff_env(env, fmt("mem:%s", a), fmt("mem:%s", b), 1e-3, -1, 0, &got, &got_json, NULL, NULL), ZF_OK);
  CHECK(memcmp(&want, &got, sizeof want) == 0);
  if (want_json && got_json) CHECK_STR(strip_mem(got_json), want_json);
  zf_free(want_json);
  zf_free(got_json);

  const char* in = FIX "/hf/bloated/pytorch_model-00001-of-00003.bin";
  CHECK_CODE(zf_shrink(in, fmt("%s/verify_me.bin", tmp), NULL, NULL, NULL), ZF_OK);
  zf_verify_report vw, vg;
  CHECK_CODE(zf_verify(in, fmt("%s/verify_me.bin", tmp), &vw, NULL), ZF_OK);
  CHECK_CODE(zf_verify_env(env, fmt("mem:%s", in), fmt("mem:%s/verify_me.bin", tmp), &vg, NULL), ZF_OK);
  CHECK(vw.tensors > 0 && memcmp(&vw, &vg, sizeof vw) == 0);
  CHECK(in_state.opens == in_state.closes);
}

static void test_parts(void) {
  const char* in = FIX "/hf/bloated";
  zf_shrink_options* o = zf_shrink_options_create();
  zf_shrink_options_set_to_safetensors(o, 1);
  zf_shrink_options_set_max_shard_size(o, 6000, NULL);
  CHECK_CODE(zf_convert(in, fmt("%s/parts/", tmp), o, NULL, NULL), ZF_OK);
  reset();
  zf_shrink_options_set_env(o, env);
  const char* parts[] = {"1/2", "0/2", "finish"};
  for (int i = 0; i < 3; ++i) {
    CHECK_CODE(zf_shrink_options_set_part(o, parts[i], NULL), ZF_OK);
    zf_shrink_options_set_verify(o, i == 2);  /* finish reads every file back through out_open */
    CHECK_CODE(zf_convert(fmt("mem:%s", in), "out:parts/", o, NULL, NULL), ZF_OK);
  }
  CHECK_SAME_OUTPUT("parts/");
  /* verify of a part writing files reads them back before their commit: refused. */
  CHECK_CODE(zf_shrink_options_set_part(o, "0/2", NULL), ZF_OK);
  zf_shrink_options_set_verify(o, 1);
  CHECK_CODE(zf_convert(fmt("mem:%s", in), "out:parts2/", o, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  zf_shrink_options_destroy(o);
}

/* ---- Failures and stops at any moment ------------------------------------- */

/* One call through the env, from fresh state; its progress callback stops
 * at call `stop_at` (0: never). */
typedef zf_code (*job_fn)(zf_error* err);
static int progress_calls, stop_at;

static int on_progress(void* user, const char* phase, uint64_t done, uint64_t total) {
  (void)user, (void)phase, (void)done, (void)total;
  return ++progress_calls == stop_at;
}

static zf_code job_convert_shards(zf_error* err) {
  zf_shrink_options* o = zf_shrink_options_create();
  zf_shrink_options_set_env(o, env);
  zf_shrink_options_set_to_safetensors(o, 1);
  zf_shrink_options_set_max_shard_size(o, 6000, NULL);
  zf_shrink_options_set_buffer_bytes(o, 4096, NULL);
  zf_shrink_options_set_progress(o, on_progress, NULL);
  zf_code c = zf_convert("mem:" FIX "/hf/bloated", "out:st/", o, NULL, err);
  zf_shrink_options_destroy(o);
  return c;
}

static zf_code job_shrink_folder(zf_error* err) {
  zf_shrink_options* o = zf_shrink_options_create();
  zf_shrink_options_set_env(o, env);
  zf_shrink_options_set_buffer_bytes(o, 4096, NULL);
  zf_shrink_options_set_progress(o, on_progress, NULL);
  zf_code c = zf_shrink("mem:" FIX "/hf/bloated", "out:small/", o, NULL, err);
  zf_shrink_options_destroy(o);
  return c;
}

static zf_code job_merge(zf_error* err) {
  zf_merge_options* o = zf_merge_options_create();
  zf_merge_options_set_env(o, env);
  zf_merge_options_set_max_shard_size(o, 20000, NULL);
  zf_merge_options_set_buffer_bytes(o, 4096, NULL);
  zf_merge_options_set_progress(o, on_progress, NULL);
  zf_code c = zf_merge("mem:" FIX "/deepspeed/zero2_ws3_bf16/ckpt", "out:zero/", o, NULL, err);
  zf_merge_options_destroy(o);
  return c;
}

static void test_failures(const char* name, job_fn job) {
  char message[512], path[1024];
  zf_error err = {.message = message, .message_size = sizeof message, .path = path, .path_size = sizeof path};
  reset();
  progress_calls = 0;
  stop_at = 0;
  CHECK_CODE(job(&err), ZF_OK);
  const int reads = in_state.reads, writes = out_state.writes, reports = progress_calls;
  CHECK(reads > 0 && writes > 0 && reports > 0 && out_state.count > 0);
  printf("%s: %d reads, %d writes, %d progress reports, %d files; each failed or stopped at ~25 points\n", name,
         reads, writes, reports, out_state.count);
  /* About 25 moments of each kind, both ends included. */
  for (int kind = 0; kind < 4; ++kind) {
    const int n = kind == 0 || kind == 3 ? reads : kind == 1 ? writes : reports;
    for (int k = 1; k <= n; k += n / 25 > 0 ? n / 25 : 1) {
      reset();
      progress_calls = 0;
      stop_at = 0;
      if (kind == 0 || kind == 3) {
        in_state.fail_at = k;
        in_state.fail_code = kind == 0 ? ZF_E_IO : ZF_CANCELLED;
      }
      if (kind == 1) out_state.fail_write_at = k;
      if (kind == 2) stop_at = k;
      zf_code c = job(&err);
      const char* what = fmt("%s: %s at %d", name, kind == 0 ? "read fails" : kind == 1 ? "write fails" : kind == 2 ? "progress stops" : "read cancels", k);
      CHECK(c != ZF_OK);
      if (kind == 0) {
        CHECK(c == ZF_E_IO && strcmp(message, fmt("HTTP 503 from the test at read %d", k)) == 0 &&
              strncmp(path, "mem:", 4) == 0);
      } else if (kind == 1) {
        CHECK(c == ZF_E_IO && strcmp(message, fmt("quota exceeded (the test, write %d)", k)) == 0 &&
              strncmp(path, "out:", 4) == 0);
      } else {
        CHECK_CODE(c, ZF_CANCELLED);
      }
      if (c == ZF_OK || failures > 0) printf("  %s: %s: %s: %s\n", what, zf_code_name(c), path, message);
      CHECK_NOTHING_LEFT();
      if (failures > 20) return;
    }
  }
}

static void test_env_setup(void) {
  zf_env* e = zf_env_create();
  zf_file_ops ops = {0};
  ops.stat = in_stat;
  ops.open = in_open;
  ops.close = in_close;
  char message[256];
  zf_error err = {.message = message, .message_size = sizeof message};
  CHECK_CODE(zf_env_set_inputs(e, &ops, sizeof ops, NULL, &err), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(message, "inputs need the read_at callback");
  ops.read_at = in_read_at;
  CHECK_CODE(zf_env_set_inputs(e, &ops, sizeof ops - 1, NULL, &err), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_env_set_inputs(e, &ops, sizeof ops, NULL, &err), ZF_OK);
  CHECK_CODE(zf_env_set_outputs(e, &ops, sizeof ops, NULL, &err), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(message, "outputs need the create callback");
  /* Output callbacks write once: verify, in place and standard output are refused. */
  zf_shrink_options* o = zf_shrink_options_create();
  zf_shrink_options_set_env(o, env);
  zf_shrink_options_set_verify(o, 1);
  CHECK_CODE(zf_shrink("mem:" FIX "/torch/views.pt", "out:v.pt", o, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  zf_shrink_options_set_verify(o, 0);
  zf_shrink_options_set_in_place(o, 1);
  CHECK_CODE(zf_shrink("mem:" FIX "/torch/views.pt", NULL, o, NULL, NULL), ZF_E_INVALID_ARGUMENT);
  zf_shrink_options_set_in_place(o, 0);
  CHECK_CODE(zf_convert("mem:" FIX "/torch/views.pt", "-", o, NULL, &err), ZF_E_INVALID_ARGUMENT);
  CHECK_CODE(zf_shrink_options_set_number(o, "zstd-level", 20, &err), ZF_E_INVALID_ARGUMENT);
  CHECK_STR(message, "zstd-level needs a number from 1 to 19");
  CHECK_CODE(zf_shrink_options_set_number(o, "no-such-option", 1, &err), ZF_E_INVALID_ARGUMENT);
  zf_shrink_options_destroy(o);
  zf_env_destroy(e);
  zf_env_destroy(NULL);
}

int main(void) {
  snprintf(tmp, sizeof tmp, "/tmp/zf_callback_XXXXXX");
  if (mkdtemp(tmp) == NULL) return 1;
  make_env();
  test_env_setup();
  test_inspect();
  test_shrink_and_convert();
  test_merge();
  test_read_plan();
  test_diff_and_verify();
  test_parts();
  test_failures("convert to safetensors shards", job_convert_shards);
  test_failures("shrink a folder", job_shrink_folder);
  test_failures("merge into shards", job_merge);
  reset();
  zf_env_destroy(env);
  char rm[512];
  snprintf(rm, sizeof rm, "rm -rf '%s'", tmp);
  if (system(rm) != 0) printf("could not remove %s\n", tmp);
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures == 0 ? 0 : 1;
}
