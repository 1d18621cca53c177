/* The C tests' checks and helpers (capi_test.c, callback_test.c): each
 * CHECK counts one check and prints "FAIL: FILE:LINE: what" when it fails;
 * a test ends with printf("%d passed, %d failed\n", checks - failures,
 * failures). Header-only, static: each test program has its own counts. */
#ifndef ZEROFOLD_TESTS_CAPI_C_CHECK_H_
#define ZEROFOLD_TESTS_CAPI_C_CHECK_H_

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerofold/zerofold.h"

static int checks;
static int failures;

static inline void fail(const char* file, int line, const char* fmt, ...) {
  va_list ap;
  ++failures;
  printf("FAIL: %s:%d: ", file, line);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}

#define CHECK(cond)                                                \
  do {                                                             \
    ++checks;                                                      \
    if (!(cond)) fail(__FILE__, __LINE__, "%s", #cond);            \
  } while (0)
#define CHECK_EQ_U64(got, want)                                                                      \
  do {                                                                                               \
    unsigned long long g_ = (unsigned long long)(got), w_ = (unsigned long long)(want);              \
    ++checks;                                                                                        \
    if (g_ != w_) fail(__FILE__, __LINE__, "%s is %llu, want %llu (%s)", #got, g_, w_, #want);       \
  } while (0)
#define CHECK_STR(got, want)                                                                         \
  do {                                                                                               \
    const char *g_ = (got), *w_ = (want);                                                            \
    ++checks;                                                                                        \
    if (g_ == NULL || strcmp(g_, w_) != 0)                                                           \
      fail(__FILE__, __LINE__, "%s is \"%s\", want \"%s\"", #got, g_ ? g_ : "(null)", w_);          \
  } while (0)
#define CHECK_CODE(got, want)                                                                        \
  do {                                                                                               \
    zf_code g_ = (got), w_ = (want);                                                                 \
    ++checks;                                                                                        \
    if (g_ != w_) fail(__FILE__, __LINE__, "%s returned %s, want %s", #got, zf_code_name(g_),        \
                       zf_code_name(w_));                                                            \
  } while (0)

/* ---- helpers ---------------------------------------------------------- */

/* A path (or any text) in a local buffer: PATH(name, format, ...). */
#define PATH(name, ...)   \
  char name[1024];        \
  snprintf(name, sizeof name, __VA_ARGS__)

/* snprintf into a static ring of buffers: for arguments used at once, never
 * kept (the 16th call after reuses the buffer). */
static inline const char* fmt(const char* f, ...) {
  static char ring[16][2048];
  static int next;
  char* out = ring[next++ % 16];
  va_list ap;
  va_start(ap, f);
  vsnprintf(out, sizeof ring[0], f, ap);
  va_end(ap);
  return out;
}

/* The whole file, NUL-terminated, or NULL; *len its size. Free with free(). */
static inline char* read_all(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  char* data = NULL;
  size_t n = 0, cap = 0;
  if (f == NULL) return NULL;
  for (;;) {
    if (n + 4096 + 1 > cap) {
      cap = (cap + 4096 + 1) * 2;
      char* grown = realloc(data, cap);
      if (grown == NULL) break;
      data = grown;
    }
    size_t got = fread(data + n, 1, 4096, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  if (data != NULL) data[n] = '\0';
  if (len != NULL) *len = n;
  return data;
}

/* Runs `CLI ARGS` (a shell command line) with stdout and stderr in
 * DIR/cli.out and DIR/cli.err; its exit code, -1 when it could not run. */
static inline int run_cli_in(const char* cli, const char* dir, const char* args) {
  int rc = system(fmt("'%s' %s >'%s/cli.out' 2>'%s/cli.err'", cli, args, dir, dir));
  return rc == -1 ? -1 : (rc >> 8) & 0xff;
}

/* Runs a shell command that must succeed. */
#define SH(command)                                                                            \
  do {                                                                                         \
    const char* sh_command_ = (command);                                                       \
    if (system(sh_command_) != 0) fail(__FILE__, __LINE__, "command failed: %s", sh_command_); \
  } while (0)

#endif /* ZEROFOLD_TESTS_CAPI_C_CHECK_H_ */
