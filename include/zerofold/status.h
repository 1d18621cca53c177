// Status: the error value every fallible zerofold function returns.
//
// A Status is one pointer: null means OK, so an OK status costs nothing.
// A non-OK status carries
//   code    what the caller does next (a closed set, see Code),
//   path    the file the user named, when known,
//   record  the zip entry, "header" for safetensors, or a tensor name,
//   offset  an absolute byte offset in that file, when known,
//   message why: observed against allowed, with numbers.
// Layers add what they know as the error rises: the cursor sets the offset,
// the container the record, the command the path. The With* setters fill a
// field only when it is still empty, so the innermost (most precise) value wins.
//
// Thread safety: a Status is a value; distinct objects may be used from
// distinct threads without synchronization.
#ifndef ZEROFOLD_STATUS_H_
#define ZEROFOLD_STATUS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace zerofold {

// Values are part of the C API and the CLI's exit codes: append only.
enum class Code : int {
  kOk = 0,
  kCorrupt = 1,          // bytes contradict the format
  kUnsupported = 2,      // valid but not handled (bzip2 entry, TorchScript)
  kUnsafe = 3,           // a pickle global that would run code
  kLimit = 4,            // a configured limit was hit; a flag raises it
  kInvalidArgument = 5,  // the caller asked for something meaningless
  kNotFound = 6,         // a named file or record does not exist
  kIO = 7,               // the operating system failed a read or write
  kInternal = 8,         // a zerofold bug
  // 9 is the C API's ZF_E_NOMEM, which no Status carries.
  kCancelled = 10,       // the run was asked to stop (a signal, the caller)
  kAmbiguous = 11,       // torch and zerofold could read different bytes from the file
};

// "corrupt", "unsupported", ... as printed in error lines.
std::string_view CodeName(Code code);

constexpr uint64_t kNoOffset = UINT64_MAX;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&& other) noexcept = default;
  Status& operator=(Status&& other) noexcept = default;
  ~Status() = default;

  static Status OK() { return Status(); }
  static Status Corrupt(std::string message) { return Status(Code::kCorrupt, std::move(message)); }
  static Status Unsupported(std::string message) { return Status(Code::kUnsupported, std::move(message)); }
  static Status Unsafe(std::string message) { return Status(Code::kUnsafe, std::move(message)); }
  static Status Limit(std::string message) { return Status(Code::kLimit, std::move(message)); }
  static Status InvalidArgument(std::string message) {
    return Status(Code::kInvalidArgument, std::move(message));
  }
  static Status NotFound(std::string message) { return Status(Code::kNotFound, std::move(message)); }
  static Status IOError(std::string message) { return Status(Code::kIO, std::move(message)); }
  static Status Internal(std::string message) { return Status(Code::kInternal, std::move(message)); }
  static Status Cancelled(std::string message) { return Status(Code::kCancelled, std::move(message)); }
  static Status Ambiguous(std::string message) { return Status(Code::kAmbiguous, std::move(message)); }
  // A status of an error `code` known only at run time (a code carried
  // across a layer that rewrites the message). kOk, which carries no
  // message, and values outside Code give kInternal.
  static Status Of(Code code, std::string message);

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  // Empty strings / kNoOffset when OK or unset.
  const std::string& message() const;
  const std::string& path() const;
  const std::string& record() const;
  uint64_t offset() const { return state_ ? state_->offset : kNoOffset; }

  // Fill a field if it is still unset; no effect on an OK status.
  Status& WithPath(std::string_view path);
  Status& WithRecord(std::string_view record);
  Status& WithOffset(uint64_t offset);
  // Replace the record unconditionally (used when an inner layer's record is
  // less useful than the outer one's).
  Status& SetRecord(std::string_view record);
  // Replace the offset unconditionally (an inner reader counted from the
  // start of a slice of the file; the outer one knows where it starts).
  Status& SetOffset(uint64_t offset);

  // "PATH: RECORD @ OFFSET: code: message", leaving out unset parts, with
  // path and record escaped by EscapeForDisplay(..., kEscape) and the
  // message by EscapeForDisplay(..., kKeep): one printable line of valid
  // UTF-8 whatever bytes the fields hold.
  std::string ToString() const;

  // Drop a status on purpose.
  void IgnoreError() const {}

 private:
  struct State {
    Code code;
    uint64_t offset = kNoOffset;
    std::string message;
    std::string path;
    std::string record;
  };
  Status(Code code, std::string message);
  std::unique_ptr<State> state_;
};

// How error lines show text that may come from an untrusted file (zip entry
// names, pickle strings and globals, safetensors JSON keys), so that an error
// stays one line that a terminal shows as is:
//   backslash                          \\          (kEscape; kKeep: as is)
//   newline, carriage return, tab      \n \r \t
//   other bytes 0x00..0x1F, and 0x7F   \xNN        (two lowercase hex digits)
//   C1 controls U+0080..U+009F         \xc2\xNN    (each byte of the UTF-8)
//   each byte that does not begin a well-formed UTF-8 sequence (RFC 3629 §4)
//                                      \xNN
//   everything else (printable ASCII, other valid UTF-8) as is.
// With kEscape the escaped text names its bytes unambiguously. kKeep leaves
// backslashes alone, for messages: they are prose that may quote untrusted
// text already escaped (json::QuoteForDisplay), whose escapes must not be
// doubled.
enum class Backslash { kEscape, kKeep };
std::string EscapeForDisplay(std::string_view text, Backslash backslash);

// Propagate a non-OK Status.
#define ZF_TRY(expr)                                   \
  do {                                                 \
    ::zerofold::Status zf_try_status_ = (expr);        \
    if (!zf_try_status_.ok()) return zf_try_status_;   \
  } while (0)

}  // namespace zerofold

#endif  // ZEROFOLD_STATUS_H_
