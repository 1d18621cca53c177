#include "scan/result.h"

#include "pickle/safety.h"

namespace zerofold::scan {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kSafe: return "safe";
    case Verdict::kUnsafe: return "unsafe";
    case Verdict::kCorrupt: return "corrupt";
    case Verdict::kAmbiguous: return "ambiguous";
    case Verdict::kUnreadable: return "unreadable";
    case Verdict::kNotCheckpoint: return "not a checkpoint";
  }
  return "?";
}

Status ResultStatus(const FileResult& r) {
  if (!r.error.ok()) return r.error;
  if (r.verdict == Verdict::kUnsafe) {
    Status s = Status::Unsafe("names globals torch.load would run (never run here): " +
                              pickle::DescribeUnsafe(r.unsafe_globals));
    s.WithPath(r.path);
    return s;
  }
  return Status::OK();
}

}  // namespace zerofold::scan
