// The caller's bytes as an Env: zf_env (zerofold.h) holds the callbacks of
// each side, and CallbackEnv runs a call's reads and writes through them,
// routing every name to its side (the call's OUT and names below it are
// outputs) and giving a side without callbacks to the base Env.
//
// Sources over callbacks are RandomSources (open, read_at, close; small
// reads coalesced by io/coalescing_source.h, as each read_at may be a
// request) and StreamSources reading front to back through them; sinks are
// AtomicFileSinks (create, write, commit; abort when destroyed
// uncommitted) that cannot be read back. Errors carry the caller's code,
// the name as path, the offset of a read and the caller's message.
//
// Thread safety: one call at a time uses a CallbackEnv (the C API's
// threading contract: callbacks run on the calling thread).
#ifndef ZEROFOLD_CAPI_CALLBACK_ENV_H_
#define ZEROFOLD_CAPI_CALLBACK_ENV_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zerofold/env.h"
#include "zerofold/zerofold.h"

struct zf_env {
  struct Side {
    zf_file_ops ops{};
    void* user = nullptr;
  };
  std::optional<Side> inputs;
  std::optional<Side> outputs;
};

namespace zerofold::capi {

class CallbackEnv final : public Env {
 public:
  // `out`: the call's OUT ("" for calls writing nothing). `env` and `base`
  // must outlive this object.
  CallbackEnv(const zf_env& env, Env* base, std::string out);
  CallbackEnv(const CallbackEnv&) = delete;
  CallbackEnv& operator=(const CallbackEnv&) = delete;

  Result<std::unique_ptr<RandomSource>> OpenRandom(const std::string& path) override;
  Result<std::unique_ptr<StreamSource>> OpenStream(const std::string& path) override;
  Result<std::unique_ptr<AtomicFileSink>> NewAtomicFile(const std::string& path) override;
  std::vector<std::string> TakeRemovedTempFiles() override { return base_->TakeRemovedTempFiles(); }
  Result<std::unique_ptr<Sink>> StdoutSink() override;
  bool FileExists(const std::string& path) override;
  bool IsDirectory(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  Status CreateDirs(const std::string& path) override;
  Result<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& path) override;
  Result<uint64_t> FreeBytes(const std::string& path) override;
  Result<FileId> GetFileId(const std::string& path) override;

 private:
  // The callbacks that serve `path`'s side, or null for the base Env.
  const zf_env::Side* SideOf(const std::string& path) const;
  const zf_env::Side* Outputs() const { return env_.outputs ? &*env_.outputs : nullptr; }
  // What stat says of path on `side`.
  Result<zf_entry_kind> Kind(const zf_env::Side& side, const std::string& path, uint64_t* size) const;

  const zf_env& env_;
  Env* base_;
  std::string out_;  // without a trailing '/'
};

// The message and code of a callback's failure as a Status: `code` (a
// zf_code other than ZF_OK; unknown values are kIO), the caller's `why`
// (else "CALLBACK failed"), with path `name`.
Status CallbackFailure(int code, const char* why, const char* callback, const std::string& name);

}  // namespace zerofold::capi

#endif  // ZEROFOLD_CAPI_CALLBACK_ENV_H_
