/* zerofold C API: shrink, convert, merge, inspect, verify and diff PyTorch
 * checkpoints, over files or the caller's own bytes (zf_env), from
 * C (or any language with a C FFI), without Python or libtorch.
 *
 * Conventions (as in LevelDB's include/leveldb/c.h):
 *   - Every name starts with zf_ (ZF_ for constants). The header is C99 and
 *     C++ clean, and includes only <stddef.h> and <stdint.h>.
 *   - Options are opaque handles made by *_create and released by
 *     *_destroy, set through setters, so new options never change the ABI.
 *   - Paths are NUL-terminated strings, passed to the operating system as
 *     they are. Bytes handed back are a pointer plus a length.
 *   - Every call that can fail returns a zf_code and takes a zf_error* last,
 *     which may be NULL; the return value alone tells success (ZF_OK).
 *   - Memory the library hands out (zf_inspect_json, zf_diff) is released with
 *     zf_free. Nothing else handed back needs releasing.
 *   - No call throws, prints, exits, installs signal handlers, or keeps
 *     state between calls. Inputs are never modified unless asked
 *     (in_place); every output file is written to a temp file in its folder
 *     and renamed over the target only when complete, so a failed call
 *     leaves no partial output.
 *   - Threading: distinct calls may run concurrently on distinct files. An
 *     options handle may be shared by concurrent calls once set up; it must
 *     not be changed or destroyed while a call uses it.
 *
 * Linking: `cc p.c $(pkg-config --cflags --libs zerofold)` against the
 * installed libzerofold.so, which exports these zf_ names only. The static
 * libzerofold.a is C++ inside: add the C++ runtime and the libraries it
 * uses (pkg-config --static: -lzstd -lxxhash -lstdc++ -lpthread; meson
 * does this for a target that depends on zerofold_dep).
 */
#ifndef ZEROFOLD_ZEROFOLD_H_
#define ZEROFOLD_ZEROFOLD_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ZF_EXPORT __attribute__((visibility("default")))
#else
#define ZF_EXPORT
#endif

/* C++ callers see that no call throws. */
#ifdef __cplusplus
#define ZF_NOEXCEPT noexcept
#else
#define ZF_NOEXCEPT
#endif

/* ---- Errors ------------------------------------------------------------ */

/* What went wrong, chosen by what the caller does next. The values are part
 * of the interface: they never change, and new codes are only appended.
 * ZF_E_CORRUPT .. ZF_E_INTERNAL, ZF_CANCELLED and ZF_E_AMBIGUOUS equal the library's
 * Status codes (zerofold/status.h); the comment gives the CLI's exit code
 * for each. */
typedef enum zf_code {
  ZF_OK = 0,                 /* success                                  exit 0 */
  ZF_E_CORRUPT = 1,          /* bytes contradict the format              exit 1 */
  ZF_E_UNSUPPORTED = 2,      /* valid but not handled (bzip2 entry,
                                TorchScript, big-endian data)            exit 1 */
  ZF_E_UNSAFE = 3,           /* a pickle global that would run code;
                                zf_shrink_options_set_keep_unsafe        exit 1 */
  ZF_E_LIMIT = 4,            /* a configured limit was hit               exit 1 */
  ZF_E_INVALID_ARGUMENT = 5, /* the call asked for something
                                meaningless or refused (existing OUT)    exit 2 */
  ZF_E_NOT_FOUND = 6,        /* a named file or record does not exist    exit 3 */
  ZF_E_IO = 7,               /* the operating system failed a read or
                                write                                    exit 3 */
  ZF_E_INTERNAL = 8,         /* a zerofold bug                           exit 4 */
  ZF_E_NOMEM = 9,            /* out of memory                            exit 4 */
  ZF_CANCELLED = 10,         /* the call was asked to stop (a progress
                                callback or an I/O callback returned it;
                                the CLI: SIGINT, SIGTERM, SIGHUP)   exit 128+N */
  ZF_E_AMBIGUOUS = 11        /* torch and zerofold could read different
                                bytes from the file (two records of one
                                name, several end records, ...)          exit 1 */
} zf_code;

/* zf_error.offset when no offset is known. */
#define ZF_NO_OFFSET UINT64_MAX

/* Where and why a call failed, filled by every call that takes one.
 *
 * The caller owns the struct and its buffers, and points message, path and
 * record at buffers of its own (or sets them to NULL with size 0: a
 * zero-initialized zf_error is valid and receives only code and offset).
 * Each text is copied truncated to its buffer's size minus one and always
 * NUL-terminated; *_length is the full length, so a text was truncated
 * exactly when its length >= its buffer's size.
 *
 * On success: code ZF_OK, offset ZF_NO_OFFSET, empty texts, lengths 0.
 * On failure:
 *   code     the zf_code the call returned;
 *   offset   an absolute byte offset in `path` (in .zst input: of the
 *            decompressed bytes), or ZF_NO_OFFSET;
 *   path     the file concerned ("" when the arguments themselves were
 *            refused);
 *   record   the zip entry, "header" for safetensors, or a tensor name, or
 *            "": bytes from the file, copied as they are (they may hold
 *            any byte, NUL included; record_length counts them all);
 *   message  why, with the numbers observed and allowed.
 * The CLI prints the same fields as "PATH: RECORD @ OFFSET: code: message".
 * The fields never change or move. */
typedef struct zf_error {
  char* message;       /* in: buffer for the message, or NULL */
  size_t message_size; /* in: its size in bytes, or 0 */
  char* path;          /* in: buffer for the path, or NULL */
  size_t path_size;
  char* record;        /* in: buffer for the record, or NULL */
  size_t record_size;
  zf_code code;          /* out */
  uint64_t offset;       /* out */
  size_t message_length; /* out: full length, without the NUL */
  size_t path_length;    /* out */
  size_t record_length;  /* out */
} zf_error;

/* "ok", "corrupt", "unsupported", "unsafe", "limit", "invalid argument",
 * "not found", "io", "internal", "out of memory", "cancelled" (the CLI's
 * wording);
 * "unknown" for any other value. A static string; never NULL. */
ZF_EXPORT const char* zf_code_name(zf_code code) ZF_NOEXCEPT;

/* The library's version, "MAJOR.MINOR.PATCH" (as `zerofold --version`
 * prints it). A static string; never NULL. */
ZF_EXPORT const char* zf_version(void) ZF_NOEXCEPT;

/* Releases memory the library handed out. NULL is ignored. */
ZF_EXPORT void zf_free(void* p) ZF_NOEXCEPT;

/* Progress: called with the bytes done so far and the total, at most once
 * per buffer, on the thread that made the call. `phase` is "shrink",
 * "convert", "merge" or "verify"; `done` starts again from 0 when the phase
 * changes and, for a folder shrunk file by file, with each file. Return 0
 * to go on; any other value stops the call: its next read or write fails,
 * it removes what it wrote (as a failed call does) and returns
 * ZF_CANCELLED. It must return normally (no exception, no longjmp) and must
 * not change or destroy the options handle in use. */
typedef int (*zf_progress_fn)(void* user, const char* phase, uint64_t done, uint64_t total);

/* A read plan: the byte ranges of its inputs a shrink, convert or merge
 * reads for tensor data, in the order it reads them, adjacent and
 * overlapping ranges of one file merged, so that a caller whose bytes are
 * remote can fetch them ahead in a few large ranged requests. `path` is the
 * input's name as the call opens it (through a zf_env's inputs, or the
 * operating system's), valid during the call. A stored zip record gives
 * the bytes its tensors span, a deflated one all its compressed bytes; a
 * file copied unchanged is read whole. Metadata (zip end records, central
 * directory and local headers, pickles, safetensors headers, DCP
 * .metadata, index files) is read before the plan exists and is not in it.
 * Called once per range after the call has planned (also on a dry run,
 * which reads no tensor data), before it returns; a nonzero return stops
 * the call with ZF_CANCELLED. */
typedef int (*zf_read_fn)(void* user, const char* path, uint64_t offset, uint64_t length);

/* ---- The caller's bytes: inputs and outputs through callbacks ---------- */

/* By default every call reads and writes the operating system's files. A
 * zf_env hands either side, or both, to the caller: the inputs (a file read
 * at random offsets, folders listed) and the outputs (files written front
 * to back, each committed or aborted). Every command runs unchanged over
 * them: zf_inspect_json_env, zf_shrink, zf_convert, zf_merge (with
 * zf_*_options_set_env), zf_verify_env, zf_diff_env, zf_scan_json (with
 * zf_scan_options_set_env), and parts.
 *
 * Names. The callbacks receive the names the call was given and names made
 * from them by joining with '/' (IN "s3://b/ckpt" -> "s3://b/ckpt/config.json";
 * a folder is whatever stat calls one). A name equal to the call's OUT, or
 * below it (OUT "/" NAME), is an output name: the output side stats, lists,
 * creates and removes it; every other name is an input name. A side without
 * callbacks is the operating system's files, so a caller may read over HTTP
 * and write local files, or the reverse.
 *
 * Each callback returning zf_code returns ZF_OK, or an error code (ZF_E_IO,
 * ZF_E_NOT_FOUND, ZF_CANCELLED, ...) and may write why into `why` (a buffer
 * of why_size bytes, NUL-terminated; left empty, the library says which
 * callback failed): the call then fails with that code, the name as path,
 * the offset of a read, and the caller's message, unchanged.
 *
 * Threading: callbacks are called only on the thread that made the zf_
 * call, one at a time; `user` is passed back as given.
 *
 * Writes are sequential: each output file is created, written in one pass
 * from its first byte to its last (never a seek back, never a rewrite: what
 * an object store's multipart upload takes), then committed, or aborted
 * when the call fails or stops. A file appears under its name only by
 * commit. A folder output commits its files once every one is complete,
 * its index last; when the call fails after some commits, it removes them
 * again (the remove callback), so a failed call leaves no output (a part,
 * zf_*_options_set_part, keeps its complete files). Options that read an
 * output back before committing it (verify) are refused with output
 * callbacks: ZF_E_INVALID_ARGUMENT; so is in_place, and "-" (standard
 * output) as OUT. */

/* What is at a name. */
typedef enum zf_entry_kind { ZF_ENTRY_NONE = 0, ZF_ENTRY_FILE = 1, ZF_ENTRY_FOLDER = 2 } zf_entry_kind;

/* Adds one entry of a folder listing: its name inside the folder (no '/'). */
typedef void (*zf_list_add_fn)(void* list, const char* name, zf_entry_kind kind);

/* The callbacks of one side. Set the ones the side needs, others NULL:
 *   inputs:  stat, open, read_at, close; list for folder inputs (Hugging
 *            Face, DeepSpeed, Distributed Checkpoint folders).
 *   outputs: stat, create, write, commit, abort, remove; list for a folder
 *            OUT holding an earlier save; open, read_at, close to read
 *            committed files back (a part's complete files with verify,
 *            finish with verify).
 * The struct may grow at its end: pass sizeof(zf_file_ops) as ops_size. */
typedef struct zf_file_ops {
  /* *kind: what is at `name`; ZF_ENTRY_NONE (and ZF_OK) when nothing is.
   * *size: a file's size in bytes. */
  zf_code (*stat)(void* user, const char* name, zf_entry_kind* kind, uint64_t* size, char* why, size_t why_size);
  /* Calls add(list, ...) once per entry of `folder`, in any order. */
  zf_code (*list)(void* user, const char* folder, zf_list_add_fn add, void* list, char* why, size_t why_size);
  /* Opens `name` for reading: *file is the caller's handle, passed to
   * read_at and close; *size its size, fixed while open. ZF_E_NOT_FOUND
   * when there is no such file. */
  zf_code (*open)(void* user, const char* name, void** file, uint64_t* size, char* why, size_t why_size);
  /* Reads up to len bytes at offset into buf; *got is the count, short only
   * at the end of the file. */
  zf_code (*read_at)(void* user, void* file, uint64_t offset, void* buf, size_t len, size_t* got, char* why,
                     size_t why_size);
  /* Releases a handle of open. Called once per successful open. */
  void (*close)(void* user, void* file);
  /* Begins output file `name`: *file is the caller's handle. Nothing may
   * appear under `name` before commit. */
  zf_code (*create)(void* user, const char* name, void** file, char* why, size_t why_size);
  /* Appends len bytes: the bytes that follow those written before. */
  zf_code (*write)(void* user, void* file, const void* data, size_t len, char* why, size_t why_size);
  /* The file is complete: make it appear under its name, replacing what
   * was there. */
  zf_code (*commit)(void* user, void* file, char* why, size_t why_size);
  /* Releases a handle of create that was not committed (the call failed,
   * stopped, or the commit failed): discard what was written. */
  void (*abort)(void* user, void* file);
  /* Removes the committed file `name` (a folder output's file on failure,
   * an earlier save's shard under force). */
  zf_code (*remove)(void* user, const char* name, char* why, size_t why_size);
} zf_file_ops;

/* An environment: which side goes to callbacks. Made by zf_env_create
 * (both sides the operating system's), released by zf_env_destroy (NULL
 * ignored). It may be shared by concurrent calls once set up, if the
 * callbacks allow it; it must not be changed or destroyed while a call
 * uses it. NULL when out of memory. */
typedef struct zf_env zf_env;
ZF_EXPORT zf_env* zf_env_create(void) ZF_NOEXCEPT;
ZF_EXPORT void zf_env_destroy(zf_env* env) ZF_NOEXCEPT;
/* Hands the inputs (outputs) to `ops`, copied (ops_size bytes of it), with
 * `user` passed to each callback; ops NULL gives the side back to the
 * operating system. ZF_E_INVALID_ARGUMENT, the env unchanged, when a
 * callback the side needs is NULL (the message names it) or ops_size is
 * not a size some version of zf_file_ops had. */
ZF_EXPORT zf_code zf_env_set_inputs(zf_env* env, const zf_file_ops* ops, size_t ops_size, void* user,
                                    zf_error* err) ZF_NOEXCEPT;
ZF_EXPORT zf_code zf_env_set_outputs(zf_env* env, const zf_file_ops* ops, size_t ops_size, void* user,
                                     zf_error* err) ZF_NOEXCEPT;

/* ---- shrink ------------------------------------------------------------ */

/* Options of zf_shrink. Why a handle and not a struct: options grow, and a
 * handle lets them grow without a size field in every caller's struct or a
 * rebuild of every caller. Defaults are the CLI's without flags. */
typedef struct zf_shrink_options zf_shrink_options;

/* A handle with every option at its default; NULL when out of memory. */
ZF_EXPORT zf_shrink_options* zf_shrink_options_create(void) ZF_NOEXCEPT;
/* NULL is ignored. */
ZF_EXPORT void zf_shrink_options_destroy(zf_shrink_options* options) ZF_NOEXCEPT;

/* Each boolean setter takes 0 (the default) or nonzero. A NULL handle is
 * ignored by the setters returning void and refused with
 * ZF_E_INVALID_ARGUMENT by the others. */
/* Plan and report sizes; write nothing (--dry-run). */
ZF_EXPORT void zf_shrink_options_set_dry_run(zf_shrink_options* options, int on) ZF_NOEXCEPT;
/* Read each output file back before it replaces its target and compare
 * every tensor's xxh3-128 with the input's (--verify), for torch files,
 * torch shards and safetensors alike; refused with dry_run, a dtype, or a
 * stream name ("-", .zst). */
ZF_EXPORT void zf_shrink_options_set_verify(zf_shrink_options* options, int on) ZF_NOEXCEPT;
/* Replace IN itself, each file atomically (--in-place); OUT is then NULL
 * or IN. */
ZF_EXPORT void zf_shrink_options_set_in_place(zf_shrink_options* options, int on) ZF_NOEXCEPT;
/* Replace existing output files (--force): an OUT file, or in a folder OUT
 * the weights, index, copies and an earlier save; without it zf_shrink
 * refuses any of them that exists with ZF_E_INVALID_ARGUMENT (path: the
 * file) before reading any tensor byte (README: "OUT: one policy"). */
ZF_EXPORT void zf_shrink_options_set_force(zf_shrink_options* options, int on) ZF_NOEXCEPT;
/* An input whose pickle names a global on no allowlist (README: "Unsafe
 * globals") fails with ZF_E_UNSAFE, for zf_shrink and zf_convert to either
 * format; with this set (--keep-unsafe) a torch output carries the globals
 * through unchanged, never run, and a safetensors output is written with
 * the tensors and plain values only. */
ZF_EXPORT void zf_shrink_options_set_keep_unsafe(zf_shrink_options* options, int on) ZF_NOEXCEPT;
/* The output format (--to): nonzero safetensors, 0 torch. Unset (the
 * default): torch for zf_shrink; for zf_convert, OUT's name says
 * (.safetensors; .bin, .pt, .pth, .ckpt; a trailing .zst ignored). */
ZF_EXPORT void zf_shrink_options_set_to_safetensors(zf_shrink_options* options, int on) ZF_NOEXCEPT;
/* Cast floating tensors as torch's .to() does (--dtype): "bfloat16"
 * ("bf16"), "float16" ("fp16", "half") or "float32" ("fp32", "float");
 * NULL or "" keeps every dtype (the default).
 * ZF_E_INVALID_ARGUMENT for any other name, and the option is unchanged. */
ZF_EXPORT zf_code zf_shrink_options_set_dtype(zf_shrink_options* options, const char* name, zf_error* err) ZF_NOEXCEPT;
/* zf_convert only (--dequantize): decode a quantized checkpoint's weights
 * (DeepSeek FP8 block, MXFP4, NVFP4, compressed-tensors INT1-8 and FP8,
 * DeepSeek-V4 FP4; README "convert --dequantize") into "bfloat16" ("bf16")
 * or "float32" ("fp32"), dropping their scales; NULL or "" turns it off
 * (the default). ZF_E_INVALID_ARGUMENT for any other name, and the option
 * is unchanged; zf_shrink refuses the option. */
ZF_EXPORT zf_code zf_shrink_options_set_dequantize(zf_shrink_options* options, const char* dtype, zf_error* err) ZF_NOEXCEPT;
/* Write only the subtree at this key path, keys joined by '/' (--select,
 * e.g. "module"); NULL or "" writes everything (the default). A file IN
 * only. ZF_E_NOMEM when the copy fails. */
ZF_EXPORT zf_code zf_shrink_options_set_select(zf_shrink_options* options, const char* keypath, zf_error* err) ZF_NOEXCEPT;
/* Adds a glob pattern (*, ?, [..]) on tensor names (--only); when any is
 * set, only the matching tensors and their ties are written, as a flat
 * dict {name: tensor} for torch output (a folder's shards: those holding
 * none are written empty, the index lists the kept names).
 * ZF_E_INVALID_ARGUMENT for NULL or "", or (at the call) for a pattern that
 * matches no tensor. */
ZF_EXPORT zf_code zf_shrink_options_add_only(zf_shrink_options* options, const char* pattern, zf_error* err) ZF_NOEXCEPT;
/* Split a folder OUT into Hugging Face shards holding at most this many
 * tensor bytes each (--max-shard-size; default 5000000000, transformers'
 * "5GB"). Setting it asks for shards, so OUT must be a folder (an existing
 * one, or a name ending in '/'). ZF_E_INVALID_ARGUMENT for 0. */
ZF_EXPORT zf_code zf_shrink_options_set_max_shard_size(zf_shrink_options* options, uint64_t bytes, zf_error* err) ZF_NOEXCEPT;
/* Bytes copied per read (--buffer-size; default 4 MiB): memory stays
 * O(buffer + metadata). ZF_E_INVALID_ARGUMENT outside 4 KiB .. 4 GiB. */
ZF_EXPORT zf_code zf_shrink_options_set_buffer_bytes(zf_shrink_options* options, uint64_t bytes, zf_error* err) ZF_NOEXCEPT;
/* Write each group of tied names once, the others recorded in
 * __metadata__["zerofold.tied"] (--dedupe-tied); safetensors output only. */
ZF_EXPORT void zf_shrink_options_set_dedupe_tied(zf_shrink_options* options, int on) ZF_NOEXCEPT;
/* A numeric option, named as the CLI flag without "--": the limits on
 * hostile input "max-pickle-depth" (default 1000), "max-pickle-memo"
 * (2^26), "max-pickle-stack" (2^26), "max-pickle-nodes" (2^28),
 * "max-pickle-bytes" (4 GiB), "max-graph-visits" (2^22), "max-path-depth"
 * (10000); and for .zst names "zstd-level" (1..19, default 3),
 * "zstd-threads" (0..256, default 0), "zstd-window-log-max" (10..31,
 * default 27). ZF_E_INVALID_ARGUMENT, the option unchanged, for another
 * name or a value out of range. */
ZF_EXPORT zf_code zf_shrink_options_set_number(zf_shrink_options* options, const char* name, uint64_t value,
                                               zf_error* err) ZF_NOEXCEPT;
/* Read and write through `env` (the callbacks section above); NULL (the
 * default) is the operating system's files. env must outlive the calls. */
ZF_EXPORT void zf_shrink_options_set_env(zf_shrink_options* options, const zf_env* env) ZF_NOEXCEPT;
/* Progress reports (phase "shrink" or "convert", then "verify" with verify); fn NULL turns them off
 * (the default). A nonzero return stops the call (ZF_CANCELLED). */
ZF_EXPORT void zf_shrink_options_set_progress(zf_shrink_options* options, zf_progress_fn fn, void* user) ZF_NOEXCEPT;
/* The read plan (zf_read_fn) of zf_shrink and zf_convert; fn NULL (the
 * default) turns it off. With a part: the reads of the files it writes. */
ZF_EXPORT void zf_shrink_options_set_read_plan(zf_shrink_options* options, zf_read_fn fn, void* user) ZF_NOEXCEPT;
/* One part of a folder OUT, or its finish (--part; the contract is the
 * "Parts" comment below): `part` is "I/N" (I from 0 to N-1) or "finish",
 * the text the CLI takes; NULL or "" (the default) writes the whole output
 * in one call. For every output into a folder OUT (a folder IN's shards,
 * a file IN's shards, safetensors); refused by zf_shrink with in_place or
 * a file OUT. ZF_E_INVALID_ARGUMENT for other
 * text (the option is unchanged). */
ZF_EXPORT zf_code zf_shrink_options_set_part(zf_shrink_options* options, const char* part, zf_error* err) ZF_NOEXCEPT;

/* Parts (zf_shrink_options_set_part, zf_merge_options_set_part), for batch
 * engines such as Slurm job arrays:
 *   - Every part and the finish take the same IN, OUT and options but the
 *     part: each plans the whole output from the inputs alike, so the
 *     output files (whole files, largest first onto the least-loaded part)
 *     divide without coordination.
 *   - Part I/N writes only its files, each atomically, and no index, copies
 *     or removals. Its files already present with their planned size are
 *     complete (a file appears only whole) and are skipped, so a failed part
 *     is simply called again; with verify they are read back and checked as
 *     written ones are. A file present with another size is refused with
 *     ZF_E_INVALID_ARGUMENT (path: the file) unless force, which rewrites
 *     every file of the part.
 *   - "finish", after every part: ZF_E_CORRUPT with the path of the first
 *     file missing (nothing written, OUT not created), ZF_E_INVALID_ARGUMENT
 *     for one of another size (or missing while OUT holds another plan's
 *     weights: finish given other options than the parts); else what one
 *     call writes last: the copies of IN's other files, the index (each left
 *     as is when it already holds those bytes, another one refused without
 *     force), and an earlier save's other files removed (only with force,
 *     else ZF_E_INVALID_ARGUMENT naming the first, as for the parts).
 *   - The report's output_files and output_bytes count the part's files
 *     (written or found complete), for finish every file; its other fields
 *     are those of one call.
 * The output of all parts and the finish is byte for byte that of one call. */

/* What zf_shrink did (or, for a dry run, would do). The fields never change
 * or move. */
typedef struct zf_shrink_report {
  uint64_t input_bytes;      /* bytes of the input checkpoint file(s) */
  uint64_t output_bytes;     /* bytes of the output checkpoint file(s), exact also for dry runs */
  uint64_t output_files;     /* checkpoint files written; an index and copied files not counted */
  uint64_t tensors;          /* tensors written, each name counted */
  uint64_t verified_tensors; /* verify: tensors found equal; else 0 */
  uint64_t verified_bytes;   /* verify: their logical bytes; else 0 */
  uint64_t unchanged_files;  /* files already compact: the input's bytes written unchanged
                                (in place: left untouched); shrink never grows a file */
} zf_shrink_report;

/* Shrinks `in` into `out` as `zerofold shrink [FLAGS] IN OUT` does: every
 * tensor rewritten into exactly sized storage, streaming.
 *   - `in` a torch file (zip or legacy format) and `out` a file; or `in` a
 *     Hugging Face folder (pytorch_model.bin.index.json and its shards, or
 *     pytorch_model.bin) and `out` a folder (created), which receives every
 *     shard shrunk, the index, and the folder's other files copied.
 *   - `out` is a folder in transformers' layout also when it exists as a
 *     folder or ends in '/' (pytorch_model.bin, or shards past
 *     max_shard_size; with to_safetensors, model.safetensors and so on);
 *     a file named X.safetensors is written as safetensors.
 *   - "-" is standard input or output and a name ending in ".zst" is zstd
 *     compressed; such names are read or written in one forward pass.
 * options NULL means every default. report may be NULL; on failure its
 * contents are unspecified.
 * Errors: ZF_E_INVALID_ARGUMENT, with an empty path, for a NULL `in`, a
 * NULL `out` without in_place, `out` equal to `in` without in_place, an
 * and option combinations the CLI refuses (verify with dry_run; select with
 * a folder or in_place; to_safetensors with in_place; shards or safetensors
 * on a stream name); ZF_E_INVALID_ARGUMENT with the path for what the
 * output policy refuses (an existing output without force, an output that
 * is an input, a name contradicting the format); ZF_E_IO for too little
 * free disk for the planned output; otherwise the readers' and writers'
 * errors, with path, record and offset. */
ZF_EXPORT zf_code zf_shrink(const char* in, const char* out, const zf_shrink_options* options,
                            zf_shrink_report* report, zf_error* err) ZF_NOEXCEPT;

/* Converts `in` into `out` as `zerofold convert [FLAGS] IN OUT` does, with
 * the options of zf_shrink (both commands are one request, README
 * "convert"): torch (zip or legacy) and safetensors files or Hugging Face
 * folders to torch or safetensors, re-sharded (max_shard_size), cast
 * (dtype) or selected (select). The format is to_safetensors when set,
 * else OUT's name's; ZF_E_INVALID_ARGUMENT when neither says. Reports and
 * errors as zf_shrink's. */
ZF_EXPORT zf_code zf_convert(const char* in, const char* out, const zf_shrink_options* options,
                             zf_shrink_report* report, zf_error* err) ZF_NOEXCEPT;

/* ---- merge ------------------------------------------------------------- */

/* Options of zf_merge; a handle for the reason given for zf_shrink_options. */
typedef struct zf_merge_options zf_merge_options;

/* A handle with every option at its default; NULL when out of memory. */
ZF_EXPORT zf_merge_options* zf_merge_options_create(void) ZF_NOEXCEPT;
/* NULL is ignored. */
ZF_EXPORT void zf_merge_options_destroy(zf_merge_options* options) ZF_NOEXCEPT;

/* Plan only; write nothing (--dry-run). */
ZF_EXPORT void zf_merge_options_set_dry_run(zf_merge_options* options, int on) ZF_NOEXCEPT;
/* Read every output file back and check each tensor against the rank
 * files (--verify). Refused with dry_run. */
ZF_EXPORT void zf_merge_options_set_verify(zf_merge_options* options, int on) ZF_NOEXCEPT;
/* Replace existing output files, and a folder OUT's earlier save whole
 * (--force); without it they are refused with ZF_E_INVALID_ARGUMENT. */
ZF_EXPORT void zf_merge_options_set_force(zf_merge_options* options, int on) ZF_NOEXCEPT;
/* Leave frozen params out (--exclude-frozen). */
ZF_EXPORT void zf_merge_options_set_exclude_frozen(zf_merge_options* options, int on) ZF_NOEXCEPT;
/* Merge a DeepSpeed checkpoint whose rank files' pickles name unsafe
 * globals (--keep-unsafe): never run, and not carried (merge writes only
 * tensors); without it such a checkpoint fails with ZF_E_UNSAFE. */
ZF_EXPORT void zf_merge_options_set_keep_unsafe(zf_merge_options* options, int on) ZF_NOEXCEPT;
/* Output format (--to): nonzero safetensors, 0 torch. Unset (the
 * default): OUT's name says (".safetensors" safetensors), else torch;
 * set against OUT's name it is refused. */
ZF_EXPORT void zf_merge_options_set_to_safetensors(zf_merge_options* options, int on) ZF_NOEXCEPT;
/* The dtype of every floating tensor (--dtype): "float32" (the default),
 * "float16" or "bfloat16", or a short name as zf_shrink_options_set_dtype
 * takes; NULL or "" restores the default.
 * ZF_E_INVALID_ARGUMENT for any other name, and the option is unchanged. */
ZF_EXPORT zf_code zf_merge_options_set_dtype(zf_merge_options* options, const char* name, zf_error* err) ZF_NOEXCEPT;
/* The tag folder to merge (--tag); NULL or "" (the default): the one the
 * checkpoint's `latest` file names. ZF_E_NOMEM when the copy fails. */
ZF_EXPORT zf_code zf_merge_options_set_tag(zf_merge_options* options, const char* tag, zf_error* err) ZF_NOEXCEPT;
/* Distributed Checkpoint folders only: merge the keys under `prefix`
 * (--select, e.g. "optimizer.state"), named relative to it; "" every key;
 * NULL (the default) the model weights. ZF_E_NOMEM when the copy fails. */
ZF_EXPORT zf_code zf_merge_options_set_select(zf_merge_options* options, const char* prefix, zf_error* err) ZF_NOEXCEPT;
/* Megatron-Core and Distributed Checkpoint folders: write the Hugging Face
 * model of folder `base` (--hf BASE): a family table chosen by base's
 * config.json model_type maps the trainer's tensors to base's names; every
 * name, shape and dtype is checked against base's weights before a byte is
 * written (a mismatch or a tensor no rule maps fails with ZF_E_CORRUPT or
 * ZF_E_UNSUPPORTED naming them); OUT (a folder) gets safetensors shards and
 * an index, each tensor in base's dtype unless dtype is set, and base's
 * config, generation config and tokenizer files. NULL or "" (the default):
 * no mapping. ZF_E_NOMEM when the copy fails. */
ZF_EXPORT zf_code zf_merge_options_set_hf_base(zf_merge_options* options, const char* base, zf_error* err) ZF_NOEXCEPT;
/* Adds a family table file tried before the built-in ones (--hf-table).
 * ZF_E_INVALID_ARGUMENT for NULL or "". */
ZF_EXPORT zf_code zf_merge_options_add_hf_table(zf_merge_options* options, const char* path, zf_error* err) ZF_NOEXCEPT;
/* With hf_base: leave out the trainer tensors no table rule maps instead of
 * failing (--drop-unmapped). */
ZF_EXPORT void zf_merge_options_set_drop_unmapped(zf_merge_options* options, int on) ZF_NOEXCEPT;
/* Adds a glob pattern (*, ?, [..]) on tensor names (--only); when any is
 * set, only matching names are merged (ties follow). ZF_E_INVALID_ARGUMENT
 * for NULL or "". */
ZF_EXPORT zf_code zf_merge_options_add_only(zf_merge_options* options, const char* pattern, zf_error* err) ZF_NOEXCEPT;
/* Split a folder OUT into shards past this many tensor bytes
 * (--max-shard-size; default 5000000000). ZF_E_INVALID_ARGUMENT for 0. */
ZF_EXPORT zf_code zf_merge_options_set_max_shard_size(zf_merge_options* options, uint64_t bytes, zf_error* err) ZF_NOEXCEPT;
/* Bytes per read (--buffer-size; default 4 MiB). ZF_E_INVALID_ARGUMENT
 * outside 4 KiB .. 4 GiB. */
ZF_EXPORT zf_code zf_merge_options_set_buffer_bytes(zf_merge_options* options, uint64_t bytes, zf_error* err) ZF_NOEXCEPT;
/* The limits on hostile input by name, as zf_shrink_options_set_number
 * (no zstd options). */
ZF_EXPORT zf_code zf_merge_options_set_number(zf_merge_options* options, const char* name, uint64_t value,
                                              zf_error* err) ZF_NOEXCEPT;
/* Read and write through `env`; NULL (the default) is the operating
 * system's files. */
ZF_EXPORT void zf_merge_options_set_env(zf_merge_options* options, const zf_env* env) ZF_NOEXCEPT;
/* Progress reports (phases "merge", then "verify"); fn NULL turns them off.
 * A nonzero return stops the call (ZF_CANCELLED). */
ZF_EXPORT void zf_merge_options_set_progress(zf_merge_options* options, zf_progress_fn fn, void* user) ZF_NOEXCEPT;
/* The read plan (zf_read_fn) of zf_merge; fn NULL (the default) turns it
 * off. With a part: the reads of the files it writes. */
ZF_EXPORT void zf_merge_options_set_read_plan(zf_merge_options* options, zf_read_fn fn, void* user) ZF_NOEXCEPT;
/* One part of a folder OUT, or its finish (--part; the contract is the
 * "Parts" comment above zf_shrink_report): "I/N" (I from 0 to N-1) or "finish"; NULL or "" (the
 * default) merges in one call. zf_merge refuses it for a file OUT.
 * ZF_E_INVALID_ARGUMENT for other text (the option is unchanged). */
ZF_EXPORT zf_code zf_merge_options_set_part(zf_merge_options* options, const char* part, zf_error* err) ZF_NOEXCEPT;

/* What zf_merge did (or, for a dry run, would do). The fields never change
 * or move. */
typedef struct zf_merge_report {
  int32_t zero_stage;        /* 1, 2 or 3; 0 for a Distributed Checkpoint */
  uint32_t world_size;       /* data-parallel ranks; DCP, Megatron: the data files read */
  uint64_t output_files;     /* checkpoint files written; the index not counted */
  uint64_t output_bytes;     /* their bytes, exact also for dry runs */
  uint64_t tensor_bytes;     /* tensor data bytes written */
  uint64_t bytes_read;       /* rank-file bytes read to write them */
  uint64_t params;           /* trainable params; DCP: tensors written */
  uint64_t frozen_params;
  uint64_t buffers;
  uint64_t ties;             /* names tied to another name */
  uint64_t verified_tensors; /* verify: tensors found equal; else 0 */
  uint64_t verified_bytes;   /* verify: their bytes; else 0 */
} zf_merge_report;

/* Rebuilds full tensors of the PyTorch Distributed Checkpoint folder in
 * `ckpt_dir` (.metadata and *.distcp, the safetensors form, or a folder
 * holding pytorch_model_fsdp_0/), or the full model of the DeepSpeed ZeRO
 * stage 1/2/3 checkpoint in `ckpt_dir` (holding `latest` and global_stepN/
 * folders, or a tag folder itself), into `out`, as
 * `zerofold merge [FLAGS] CKPT_DIR OUT` does: a file when `out`'s name
 * says a format (.bin, .pt, .pth, .ckpt, .safetensors), else a folder
 * (created) receiving pytorch_model.bin / model.safetensors, or shards and
 * an index, and CKPT_DIR's model files (config, tokenizer: a Trainer's
 * checkpoint-N/).
 * Output files appear only when all of them are complete. options NULL
 * means every default; report may be NULL (unspecified on failure).
 * Errors: ZF_E_INVALID_ARGUMENT for a NULL argument, a stream name ("-",
 * X.zst), a name with an unknown extension, verify with dry_run, existing
 * outputs without force, a format contradicting OUT's name, max_shard_size
 * with a file OUT; ZF_E_IO for too little free disk; the checkpoint's
 * errors with path, record and offset. */
ZF_EXPORT zf_code zf_merge(const char* ckpt_dir, const char* out, const zf_merge_options* options,
                           zf_merge_report* report, zf_error* err) ZF_NOEXCEPT;

/* ---- inspect and verify ------------------------------------------------ */

/* Lists `path` (a torch file, a safetensors file, a Hugging Face model
 * folder, a Distributed Checkpoint folder, a Megatron-Core torch_dist
 * checkpoint, or a DeepSpeed checkpoint folder) as `zerofold inspect --json
 * PATH` does, through the same library call, reading no tensor bytes: the
 * same JSON document, byte for byte, trailing newline included (schema in
 * README.md). A file that cannot be listed appears in the document with an
 * "error" object, as in the CLI; a Megatron or DeepSpeed checkpoint that
 * merge would refuse is described (its "refusal"), not an error. The CLI's
 * warnings (stderr) have no counterpart here.
 * On return *json is the document, NUL-terminated, and *json_length its
 * length (json_length may be NULL), or *json is NULL when no document could
 * be made (invalid arguments, out of memory, ZF_E_INTERNAL from the JSON
 * writer). Release *json with zf_free whatever the code.
 * Returns ZF_OK when every file was listed; otherwise the code of the first
 * failure, whose path, record and offset fill err. */
ZF_EXPORT zf_code zf_inspect_json(const char* path, char** json, size_t* json_length, zf_error* err) ZF_NOEXCEPT;
/* zf_inspect_json over `env` (NULL: the operating system's files). */
ZF_EXPORT zf_code zf_inspect_json_env(const zf_env* env, const char* path, char** json, size_t* json_length,
                                      zf_error* err) ZF_NOEXCEPT;

/* What zf_verify compared. The fields never change or move. */
typedef struct zf_verify_report {
  uint64_t tensors; /* tensors compared (a tied tensor once per name) */
  uint64_t bytes;   /* their logical bytes */
} zf_verify_report;

/* Compares every tensor of the torch file `a` with the tensor at the same
 * position in the torch file `b`: the same name, dtype, shape, stride,
 * requires_grad, Parameter-ness and xxh3-128 of the logical bytes (storages
 * and offsets may differ, so a file and its zf_shrink output are equal).
 * ZF_E_CORRUPT with b's path and the tensor's name as record at the first
 * difference, saying what differs; ZF_E_UNSUPPORTED for a safetensors file;
 * the readers' errors with the path of the file that failed. report may be
 * NULL (unspecified on failure). */
ZF_EXPORT zf_code zf_verify(const char* a, const char* b, zf_verify_report* report, zf_error* err) ZF_NOEXCEPT;
/* zf_verify over `env` (NULL: the operating system's files). */
ZF_EXPORT zf_code zf_verify_env(const zf_env* env, const char* a, const char* b, zf_verify_report* report,
                                zf_error* err) ZF_NOEXCEPT;

/* ---- diff -------------------------------------------------------------- */

/* What zf_diff found. The fields never change or move. */
typedef struct zf_diff_report {
  uint64_t tensors;   /* names in both */
  uint64_t different; /* of those, tensors that differ (or are not close) */
  uint64_t only_in_a; /* names only in a */
  uint64_t only_in_b; /* names only in b */
  int32_t same;       /* 1 when no name is on one side only and no tensor differs, else 0 */
} zf_diff_report;

/* Compares `a` and `b` (each a torch file, a safetensors file, or a Hugging
 * Face model folder) tensor by tensor as `zerofold diff` does (README.md):
 * by name, dtype, shape and values, streaming in bounded memory. atol and
 * rtol are tolerances >= 0, or negative for "not given": with neither,
 * values are compared bit for bit; with either, as torch.allclose (the
 * other takes its default), and equal_nan nonzero makes NaN close to NaN
 * (it needs a tolerance). json may be NULL; else *json receives the
 * `diff --json` document, byte for byte, NUL-terminated, and *json_length
 * (may be NULL) its length, or *json is NULL on failure; release it with
 * zf_free. report may be NULL (unspecified on failure).
 * Returns ZF_OK when the comparison ran, whether or not a and b differ
 * (report->same says); ZF_E_INVALID_ARGUMENT for a NULL path, a stream name
 * ("-", .zst), equal_nan without a tolerance, or a NaN tolerance; the
 * readers' errors with the path of the file that failed. */
ZF_EXPORT zf_code zf_diff(const char* a, const char* b, double atol, double rtol, int equal_nan,
                          zf_diff_report* report, char** json, size_t* json_length, zf_error* err) ZF_NOEXCEPT;
/* zf_diff over `env` (NULL: the operating system's files). */
ZF_EXPORT zf_code zf_diff_env(const zf_env* env, const char* a, const char* b, double atol, double rtol,
                              int equal_nan, zf_diff_report* report, char** json, size_t* json_length,
                              zf_error* err) ZF_NOEXCEPT;

/* Every option of `zerofold diff`, for zf_diff_with: tolerances, --only,
 * the limits, progress (and with it cancellation) and an env. Created with
 * the defaults (bit for bit, every name, the operating system's files). */
typedef struct zf_diff_options zf_diff_options;
ZF_EXPORT zf_diff_options* zf_diff_options_create(void) ZF_NOEXCEPT;
ZF_EXPORT void zf_diff_options_destroy(zf_diff_options* options) ZF_NOEXCEPT;
/* Tolerances as zf_diff takes them: >= 0, or negative for "not given";
 * equal_nan needs one. ZF_E_INVALID_ARGUMENT for a NaN. */
ZF_EXPORT zf_code zf_diff_options_set_tolerance(zf_diff_options* options, double atol, double rtol,
                                                int equal_nan, zf_error* err) ZF_NOEXCEPT;
/* Adds a glob pattern (*, ?, [..]) on tensor names (--only); when any is
 * set, only names matching one are compared, on both sides; zf_diff_with
 * refuses patterns that match no name of a or b (ZF_E_INVALID_ARGUMENT). */
ZF_EXPORT zf_code zf_diff_options_add_only(zf_diff_options* options, const char* pattern, zf_error* err) ZF_NOEXCEPT;
/* The limits on hostile input by name, as zf_shrink_options_set_number
 * (no zstd options). */
ZF_EXPORT zf_code zf_diff_options_set_number(zf_diff_options* options, const char* name, uint64_t value,
                                             zf_error* err) ZF_NOEXCEPT;
/* Progress as the values are read (phase "diff"; done and total: bytes of
 * both sides of the names in both); a nonzero return stops the call with
 * ZF_CANCELLED. */
ZF_EXPORT void zf_diff_options_set_progress(zf_diff_options* options, zf_progress_fn fn, void* user) ZF_NOEXCEPT;
ZF_EXPORT void zf_diff_options_set_env(zf_diff_options* options, const zf_env* env) ZF_NOEXCEPT;
/* zf_diff with options (NULL: the defaults); the rest as zf_diff. */
ZF_EXPORT zf_code zf_diff_with(const char* a, const char* b, const zf_diff_options* options, zf_diff_report* report,
                               char** json, size_t* json_length, zf_error* err) ZF_NOEXCEPT;

/* ---- scan ------------------------------------------------------------- */

/* Every option of `zerofold scan`: --hash, the limits, progress (and with
 * it cancellation) and an env. Created with the defaults (metadata only,
 * the operating system's files). */
typedef struct zf_scan_options zf_scan_options;
ZF_EXPORT zf_scan_options* zf_scan_options_create(void) ZF_NOEXCEPT;
ZF_EXPORT void zf_scan_options_destroy(zf_scan_options* options) ZF_NOEXCEPT;
/* Nonzero: read every tensor's bytes and report copies of identical data
 * in the totals' "duplicates" (--hash). */
ZF_EXPORT void zf_scan_options_set_hash(zf_scan_options* options, int on) ZF_NOEXCEPT;
/* The limits on hostile input by name, as zf_shrink_options_set_number
 * (no zstd options), and "buffer_bytes" (bytes per hashing read, 4096 ..
 * 4294967296). */
ZF_EXPORT zf_code zf_scan_options_set_number(zf_scan_options* options, const char* name, uint64_t value,
                                             zf_error* err) ZF_NOEXCEPT;
/* Progress as files are judged (phase "scan"; done and total: bytes of
 * the files under the paths, counted by a walk made first when a progress
 * function is set); a nonzero return stops the call with ZF_CANCELLED. */
ZF_EXPORT void zf_scan_options_set_progress(zf_scan_options* options, zf_progress_fn fn, void* user) ZF_NOEXCEPT;
ZF_EXPORT void zf_scan_options_set_env(zf_scan_options* options, const zf_env* env) ZF_NOEXCEPT;

/* Receives one line of zf_scan_json's output: `line` is `length` bytes,
 * one JSON object ending in "\n", NUL-terminated, valid during the call.
 * A nonzero return stops the scan with ZF_CANCELLED. */
typedef int (*zf_line_fn)(void* user, const char* line, size_t length);

/* Scans the `count` paths (files or folders, walked whole) as `zerofold
 * scan --json PATH...` does, through the same library call: `on_line`
 * receives each file's line as the file is judged, then the totals line,
 * byte for byte the CLI's stdout (schema in README.md). Memory stays
 * bounded by one file's metadata (and, with hash, one hash per distinct
 * tensor), whatever the tree's size. options may be NULL (the defaults).
 * Returns ZF_OK when every file is safe or not a checkpoint; otherwise the
 * code of the first file that is not (ZF_E_UNSAFE, ZF_E_CORRUPT,
 * ZF_E_AMBIGUOUS, ZF_E_IO, ZF_E_NOT_FOUND for a missing path, ...), whose
 * path, record and offset fill err, after every line was delivered;
 * ZF_CANCELLED when on_line or the progress function stopped it;
 * ZF_E_INVALID_ARGUMENT for NULL paths or on_line. */
ZF_EXPORT zf_code zf_scan_json(const char* const* paths, size_t count, const zf_scan_options* options,
                               zf_line_fn on_line, void* user, zf_error* err) ZF_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ZEROFOLD_ZEROFOLD_H_ */
