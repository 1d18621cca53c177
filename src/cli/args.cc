#include "cli/args.h"

#include <cctype>
#include <cstdint>

namespace zerofold::cli {

Result<ParsedArgs> ParseArgs(const std::vector<std::string>& args, const std::vector<FlagSpec>& specs) {
  ParsedArgs out;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_done || a == "-" || a.size() < 2 || a[0] != '-') {
      out.positionals.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    std::string body = a.substr(a[1] == '-' ? 2 : 1);
    std::optional<std::string> inline_value;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      inline_value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs)
      if (s.name == body) spec = &s;
    if (spec == nullptr) return Status::InvalidArgument("unknown flag " + a + " (see --help)");
    if (!spec->takes_value) {
      if (inline_value) return Status::InvalidArgument("flag --" + body + " takes no value");
      out.switches[body]++;
      continue;
    }
    if (inline_value) {
      out.values[body] = *inline_value;
    } else if (i + 1 < args.size()) {
      out.values[body] = args[++i];
    } else {
      return Status::InvalidArgument("flag --" + body + " needs a value (" + spec->value_name + ")");
    }
  }
  return out;
}

std::string FlagHelp(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const FlagSpec& s : specs) {
    if (s.help.empty()) continue;
    std::string left = "  --" + s.name + (s.takes_value ? " " + s.value_name : "");
    if (left.size() < 26) left.resize(26, ' ');
    else left += "\n" + std::string(26, ' ');
    out += left + s.help + "\n";
  }
  return out;
}

Result<uint64_t> ParseSize(const std::string& text) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return Status::InvalidArgument("size too large: " + text);
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return Status::InvalidArgument("not a size: '" + text + "' (e.g. 5GB, 500MB, 2GiB)");
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  uint64_t mult;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KB") mult = 1000ull;
  else if (unit == "MB") mult = 1000ull * 1000;
  else if (unit == "GB") mult = 1000ull * 1000 * 1000;
  else if (unit == "TB") mult = 1000ull * 1000 * 1000 * 1000;
  else if (unit == "KIB") mult = 1ull << 10;
  else if (unit == "MIB") mult = 1ull << 20;
  else if (unit == "GIB") mult = 1ull << 30;
  else if (unit == "TIB") mult = 1ull << 40;
  else return Status::InvalidArgument("unknown size unit in '" + text + "' (B, KB, MB, GB, KiB, MiB, GiB)");
  if (value > UINT64_MAX / mult) return Status::InvalidArgument("size too large: " + text);
  return value * mult;
}

Status ApplyBufferSize(const ParsedArgs& args, size_t* bytes) {
  auto v = args.Value("buffer-size");
  if (!v) return Status::OK();
  Result<uint64_t> n = ParseSize(*v);
  if (!n.ok() || *n < 4096 || *n > (1ull << 32)) return Status::InvalidArgument("--buffer-size needs 4KiB to 4GiB");
  *bytes = static_cast<size_t>(*n);
  return Status::OK();
}

}  // namespace zerofold::cli
