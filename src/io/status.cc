#include "zerofold/status.h"

#include <string>

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
  }
  return "unknown";
}

Status::Status(Code code, std::string message) : state_(new State{code, kNoOffset, std::move(message), {}, {}}) {}

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

std::string Status::ToString() const {
  if (!state_) return "ok";
  std::string out;
  if (!state_->path.empty()) out += state_->path + ": ";
  if (!state_->record.empty() || state_->offset != kNoOffset) {
    out += state_->record;
    if (state_->offset != kNoOffset) {
      if (!state_->record.empty()) out += ' ';
      out += "@ " + std::to_string(state_->offset);
    }
    out += ": ";
  }
  out += CodeName(state_->code);
  out += ": ";
  out += state_->message;
  return out;
}

}  // namespace zerofold
