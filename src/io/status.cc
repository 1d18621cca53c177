#include "zerofold/status.h"

#include <algorithm>
#include <cstdint>
#include <string>

// A leaf with no project includes: UTF-8 validity is needed here to keep
// error lines printable.
#include "io/utf8.h"

namespace zerofold {

namespace {
const std::string& EmptyString() {
  static const std::string* empty = new std::string();
  return *empty;
}
}  // namespace

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kCorrupt: return "corrupt";
    case Code::kUnsupported: return "unsupported";
    case Code::kUnsafe: return "unsafe";
    case Code::kLimit: return "limit";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kNotFound: return "not found";
    case Code::kIO: return "io";
    case Code::kInternal: return "internal";
    case Code::kCancelled: return "cancelled";
    case Code::kAmbiguous: return "ambiguous";
  }
  return "unknown";
}

Status::Status(Code code, std::string message) : state_(new State{code, kNoOffset, std::move(message), {}, {}}) {}

Status Status::Of(Code code, std::string message) {
  switch (code) {
    case Code::kCorrupt:
    case Code::kUnsupported:
    case Code::kUnsafe:
    case Code::kLimit:
    case Code::kInvalidArgument:
    case Code::kNotFound:
    case Code::kIO:
    case Code::kInternal:
    case Code::kCancelled:
    case Code::kAmbiguous: return Status(code, std::move(message));
    case Code::kOk: break;
  }
  return Status(Code::kInternal, std::move(message));
}

Status::Status(const Status& other) : state_(other.state_ ? new State(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) state_.reset(other.state_ ? new State(*other.state_) : nullptr);
  return *this;
}

const std::string& Status::message() const { return state_ ? state_->message : EmptyString(); }
const std::string& Status::path() const { return state_ ? state_->path : EmptyString(); }
const std::string& Status::record() const { return state_ ? state_->record : EmptyString(); }

Status& Status::WithPath(std::string_view path) {
  if (state_ && state_->path.empty()) state_->path = path;
  return *this;
}
Status& Status::WithRecord(std::string_view record) {
  if (state_ && state_->record.empty()) state_->record = record;
  return *this;
}
Status& Status::WithOffset(uint64_t offset) {
  if (state_ && state_->offset == kNoOffset) state_->offset = offset;
  return *this;
}
Status& Status::SetRecord(std::string_view record) {
  if (state_) state_->record = record;
  return *this;
}

Status& Status::SetOffset(uint64_t offset) {
  if (state_) state_->offset = offset;
  return *this;
}

std::string EscapeForDisplay(std::string_view text, Backslash backslash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto append_hex = [&out](uint8_t b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 0xF];
  };
  size_t i = 0;
  while (i < text.size()) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    if (c >= 0x80) {
      const size_t len = io::Utf8SequenceLength(std::string_view(text.data() + i, text.size() - i));
      // U+0080..U+009F are C2 80..C2 9F.
      const bool c1 = len == 2 && c == 0xC2 && static_cast<uint8_t>(text[i + 1]) <= 0x9F;
      if (len == 0 || c1) {
        for (size_t k = 0; k < std::max<size_t>(len, 1); ++k) append_hex(static_cast<uint8_t>(text[i + k]));
      } else {
        out.append(text.data() + i, len);
      }
      i += std::max<size_t>(len, 1);
      continue;
    }
    switch (c) {
      case '\\': out += backslash == Backslash::kEscape ? "\\\\" : "\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) append_hex(c);
        else out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string Status::ToString() const {
  if (!state_) return "ok";
  std::string out;
  if (!state_->path.empty()) out += EscapeForDisplay(state_->path, Backslash::kEscape) + ": ";
  if (!state_->record.empty() || state_->offset != kNoOffset) {
    out += EscapeForDisplay(state_->record, Backslash::kEscape);
    if (state_->offset != kNoOffset) {
      if (!state_->record.empty()) out += ' ';
      out += "@ " + std::to_string(state_->offset);
    }
    out += ": ";
  }
  out += CodeName(state_->code);
  out += ": ";
  out += EscapeForDisplay(state_->message, Backslash::kKeep);
  return out;
}

}  // namespace zerofold
