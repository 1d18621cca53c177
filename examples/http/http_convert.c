/* http_convert: converts a checkpoint served over HTTP into local files,
 * reading it by byte ranges, through zerofold's C API over the caller's
 * bytes (zf_env). Nothing is downloaded whole: zerofold asks for the ranges
 * it needs (the metadata, then each tensor's bytes), and each read_at is
 * one ranged GET.
 *
 *   http_convert [--to torch|safetensors] [--max-shard-size BYTES] URL OUT
 *   http_convert --inspect URL          (prints `zerofold inspect --json`)
 *
 * URL names a file (http://host/model.pt) or a folder (http://host/ckpt/,
 * listed through nginx's `autoindex_format json`); OUT is a local file or
 * folder, written by zerofold as usual (temp file, rename). The inputs go
 * to callbacks, the outputs stay the operating system's files.
 *
 * The callbacks, with libcurl's easy interface:
 *   stat     HEAD URL: 200 a file (Content-Length), 301 or a name ending
 *            in '/' a folder, 404 nothing;
 *   list     GET URL/ (autoindex JSON): the names and types;
 *   open     HEAD for the size; the handle keeps the URL;
 *   read_at  GET with "Range: bytes=OFFSET-(OFFSET+LEN-1)", expecting 206;
 *   close    frees the handle.
 * Errors carry the HTTP status or curl's message into zerofold's error.
 *
 * libcurl is this example's dependency only, never the library's. */
#define _POSIX_C_SOURCE 200809L

#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zerofold/zerofold.h>

typedef struct http {
  CURL* curl;
} http;

typedef struct body {
  char* data;
  size_t len, cap;
  char* dst; /* ranged reads: the caller's buffer */
  size_t dst_len;
} body;

static size_t on_data(char* p, size_t size, size_t n, void* user) {
  body* b = user;
  size_t len = size * n;
  if (b->dst != NULL) {
    if (b->len + len > b->dst_len) return 0; /* more than asked: abort the transfer */
    memcpy(b->dst + b->len, p, len);
    b->len += len;
    return len;
  }
  if (b->len + len + 1 > b->cap) {
    b->cap = (b->len + len + 1) * 2;
    char* grown = realloc(b->data, b->cap);
    if (grown == NULL) return 0;
    b->data = grown;
  }
  memcpy(b->data + b->len, p, len);
  b->len += len;
  b->data[b->len] = '\0';
  return len;
}

/* One request: HEAD (head), GET of a range (range != NULL), or a plain GET.
 * Returns the HTTP status, or -1 with why filled. */
static long request(http* h, const char* url, int head, const char* range, body* b, uint64_t* length, char* why,
                    size_t why_size) {
  CURL* c = h->curl;
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOBODY, head ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
  if (range != NULL) curl_easy_setopt(c, CURLOPT_RANGE, range);
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    snprintf(why, why_size, "GET %s: %s", url, curl_easy_strerror(rc));
    return -1;
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (length != NULL) {
    curl_off_t n = -1;
    curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &n);
    *length = n < 0 ? 0 : (uint64_t)n;
  }
  return status;
}

static zf_code http_stat(void* user, const char* name, zf_entry_kind* kind, uint64_t* size, char* why,
                         size_t why_size) {
  body b = {0};
  long status = request(user, name, 1, NULL, &b, size, why, why_size);
  if (status < 0) return ZF_E_IO;
  size_t len = strlen(name);
  if (status == 404) *kind = ZF_ENTRY_NONE;
  else if (status == 301 || (status == 200 && len > 0 && name[len - 1] == '/')) *kind = ZF_ENTRY_FOLDER;
  else if (status == 200) *kind = ZF_ENTRY_FILE;
  else {
    snprintf(why, why_size, "HEAD %s: HTTP %ld", name, status);
    return ZF_E_IO;
  }
  return ZF_OK;
}

/* The value of "key":"VALUE" at or after p, copied into out; the end of
 * that value, or NULL. (nginx writes its autoindex JSON this plainly.) */
static const char* json_field(const char* p, const char* key, char* out, size_t out_size) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
  const char* at = strstr(p, pattern);
  if (at == NULL) return NULL;
  at += strlen(pattern);
  const char* end = strchr(at, '"');
  if (end == NULL || (size_t)(end - at) >= out_size) return NULL;
  memcpy(out, at, (size_t)(end - at));
  out[end - at] = '\0';
  return end;
}

static zf_code http_list(void* user, const char* folder, zf_list_add_fn add, void* list, char* why,
                         size_t why_size) {
  char url[4096];
  size_t len = strlen(folder);
  snprintf(url, sizeof url, "%s%s", folder, len > 0 && folder[len - 1] == '/' ? "" : "/");
  body b = {0};
  long status = request(user, url, 0, NULL, &b, NULL, why, why_size);
  if (status != 200) {
    if (status > 0) snprintf(why, why_size, "GET %s: HTTP %ld", url, status);
    free(b.data);
    return status == 404 ? ZF_E_NOT_FOUND : ZF_E_IO;
  }
  char name[1024], type[32];
  for (const char* p = b.data ? b.data : ""; (p = json_field(p, "name", name, sizeof name)) != NULL;) {
    if ((p = json_field(p, "type", type, sizeof type)) == NULL) break;
    add(list, name, strcmp(type, "directory") == 0 ? ZF_ENTRY_FOLDER : ZF_ENTRY_FILE);
  }
  free(b.data);
  return ZF_OK;
}

static zf_code http_open(void* user, const char* name, void** file, uint64_t* size, char* why, size_t why_size) {
  zf_entry_kind kind = ZF_ENTRY_NONE;
  zf_code code = http_stat(user, name, &kind, size, why, why_size);
  if (code != ZF_OK) return code;
  if (kind != ZF_ENTRY_FILE) {
    snprintf(why, why_size, "%s is no file", name);
    return ZF_E_NOT_FOUND;
  }
  *file = strdup(name);
  return *file != NULL ? ZF_OK : ZF_E_NOMEM;
}

static zf_code http_read_at(void* user, void* file, uint64_t offset, void* buf, size_t len, size_t* got, char* why,
                            size_t why_size) {
  char range[64];
  snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)offset, (unsigned long long)(offset + len - 1));
  body b = {0};
  b.dst = buf;
  b.dst_len = len;
  long status = request(user, file, 0, range, &b, NULL, why, why_size);
  if (status == 416) { /* at or past the end */
    *got = 0;
    return ZF_OK;
  }
  if (status != 206) {
    if (status > 0) snprintf(why, why_size, "GET %s bytes %s: HTTP %ld", (const char*)file, range, status);
    return ZF_E_IO;
  }
  *got = b.len;
  return ZF_OK;
}

static void http_close(void* user, void* file) {
  (void)user;
  free(file);
}

static int usage(void) {
  fprintf(stderr,
          "usage: http_convert [--to torch|safetensors] [--max-shard-size BYTES] URL OUT\n"
          "       http_convert --inspect URL\n");
  return 2;
}

int main(int argc, char** argv) {
  const char* to = NULL;
  unsigned long long shard = 0;
  int inspect = 0, i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; ++i) {
    if (strcmp(argv[i], "--inspect") == 0) inspect = 1;
    else if (strcmp(argv[i], "--to") == 0 && i + 1 < argc) to = argv[++i];
    else if (strcmp(argv[i], "--max-shard-size") == 0 && i + 1 < argc) shard = strtoull(argv[++i], NULL, 10);
    else return usage();
  }
  if (argc - i != (inspect ? 1 : 2)) return usage();
  const char* url = argv[i];

  curl_global_init(CURL_GLOBAL_DEFAULT);
  http h = {curl_easy_init()};
  zf_file_ops ops = {0};
  ops.stat = http_stat;
  ops.list = http_list;
  ops.open = http_open;
  ops.read_at = http_read_at;
  ops.close = http_close;
  char message[1024] = "", path[4096] = "";
  zf_error err = {0};
  err.message = message;
  err.message_size = sizeof message;
  err.path = path;
  err.path_size = sizeof path;
  zf_env* env = zf_env_create();
  zf_code code = zf_env_set_inputs(env, &ops, sizeof ops, &h, &err);
  if (code == ZF_OK && inspect) {
    char* json = NULL;
    code = zf_inspect_json_env(env, url, &json, NULL, &err);
    if (json != NULL) fputs(json, stdout);
    zf_free(json);
  } else if (code == ZF_OK) {
    zf_shrink_options* o = zf_shrink_options_create();
    zf_shrink_options_set_env(o, env);
    if (to != NULL) zf_shrink_options_set_to_safetensors(o, strcmp(to, "safetensors") == 0);
    if (shard != 0) zf_shrink_options_set_max_shard_size(o, shard, NULL);
    zf_shrink_report report;
    code = zf_convert(url, argv[i + 1], o, &report, &err);
    if (code == ZF_OK)
      printf("%s -> %s: %llu tensors, %llu bytes written in %llu files\n", url, argv[i + 1],
             (unsigned long long)report.tensors, (unsigned long long)report.output_bytes,
             (unsigned long long)report.output_files);
    zf_shrink_options_destroy(o);
  }
  if (code != ZF_OK) fprintf(stderr, "http_convert: %s: %s: %s\n", path, zf_code_name(code), message);
  zf_env_destroy(env);
  curl_easy_cleanup(h.curl);
  curl_global_cleanup();
  return code == ZF_OK ? 0 : 1;
}
