#include "cli/report.h"

#include <cstdio>

#include "cli/exit_codes.h"
#include "model/listing_json.h"

namespace zerofold::cli {

int CommandFailed(const Status& status, bool as_json) {
  PrintError(status);
  if (as_json) {
    json::Writer w = model::NewJsonWriter();
    w.BeginObject();
    w.Key("error");
    model::WriteJsonError(w, status);
    w.EndObject();
    Result<std::string> text = w.Finish();
    if (text.ok()) std::printf("%s\n", text->c_str());
  }
  return ExitCodeFor(status);
}

void PrintError(const Status& status) {
  std::fprintf(stderr, "zerofold: %s\n", status.ToString().c_str());
  std::string_view m = status.message();
  if (status.code() == Code::kLimit) {
    size_t open = m.rfind("(--");
    if (open != std::string_view::npos)
      std::fprintf(stderr, "zerofold: hint: raise the limit with %.*s if you trust the file\n",
                   static_cast<int>(m.size() - open - 2), m.data() + open + 1);
  }
}

void PrintWarning(const std::string& path, const std::string& message) {
  // Escaped as Status::ToString escapes its fields: both may hold names from the file.
  std::fprintf(stderr, "zerofold: %s%swarning: %s\n", EscapeForDisplay(path, Backslash::kEscape).c_str(),
               path.empty() ? "" : ": ", EscapeForDisplay(message, Backslash::kKeep).c_str());
}

std::vector<std::string> NoteRemovedTempFiles(Env* env) {
  std::vector<std::string> removed = env->TakeRemovedTempFiles();
  for (const std::string& path : removed)
    std::fprintf(stderr, "zerofold: note: removed %s, a temp file left by a zerofold run that is gone\n",
                 EscapeForDisplay(path, Backslash::kEscape).c_str());
  return removed;
}

void PrintHint(const std::string& hint) { std::fprintf(stderr, "zerofold: hint: %s\n", hint.c_str()); }

int UsageError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "zerofold: %s%s%s\n", command.c_str(), command.empty() ? "" : ": ", message.c_str());
  std::fprintf(stderr, "zerofold: hint: run 'zerofold %s%s--help'\n", command.c_str(), command.empty() ? "" : " ");
  return kExitUsage;
}

}  // namespace zerofold::cli
