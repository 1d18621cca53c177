#include "cli/args.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace zerofold::cli {

namespace {

// The one-letter forms: -h is --help, -q is --quiet (for commands that
// have it; elsewhere -q is an unknown flag like any other).
struct ShortForm {
  char letter;
  const char* name;
};
constexpr ShortForm kShortForms[] = {{'h', "help"}, {'q', "quiet"}};

// The flag "-X" names, or nullptr.
const char* LongName(char letter) {
  for (const ShortForm& f : kShortForms)
    if (f.letter == letter) return f.name;
  return nullptr;
}

// The letter that also names the flag `name`, or 0.
char ShortLetter(const std::string& name) {
  for (const ShortForm& f : kShortForms)
    if (name == f.name) return f.letter;
  return 0;
}

}  // namespace

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
    const char* short_form = a.size() == 2 ? LongName(a[1]) : nullptr;
    std::string body = short_form != nullptr ? short_form : a.substr(a[1] == '-' ? 2 : 1);
    std::optional<std::string> inline_value;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      inline_value = body.substr(eq + 1);
      body = body.substr(0, eq);
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs)
      if (s.name == body) spec = &s;
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const FlagSpec& s : specs)
        if (!s.help.empty()) names.push_back(s.name);
      std::optional<std::string> near = ClosestWord(body, names);
      return Status::InvalidArgument("unknown flag " + a + (near ? "; did you mean --" + *near + "?" : "") +
                                     " (see --help)");
    }
    if (!spec->takes_value) {
      if (inline_value && spec->optional_value) {
        out.values[body] = *inline_value;
        continue;
      }
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

std::optional<std::string> ClosestWord(const std::string& word, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance, three rows of the table.
  auto distance = [&](const std::string& b) {
    const std::string& a = word;
    std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
      }
      before.swap(prev);
      prev.swap(cur);
    }
    return prev[b.size()];
  };
  const size_t allowed = word.size() <= 4 ? 1 : 2;
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    const size_t d = distance(c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string FlagHelp(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const FlagSpec& s : specs) {
    if (s.help.empty()) continue;
    const char letter = ShortLetter(s.name);
    std::string left = (letter ? std::string("  -") + letter + ", --" : std::string("  --")) + s.name +
                       (s.takes_value ? " " + s.value_name : "") + (s.optional_value ? "[=" + s.value_name + "]" : "");
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

Status ApplyOnly(const ParsedArgs& args, std::vector<std::string>* patterns) {
  auto v = args.Value("only");
  if (!v) return Status::OK();
  patterns->clear();
  for (size_t i = 0; i <= v->size();) {
    size_t j = std::min(v->find(',', i), v->size());
    if (j > i) patterns->push_back(v->substr(i, j - i));
    i = j + 1;
  }
  if (patterns->empty()) return Status::InvalidArgument("--only needs a pattern");
  return Status::OK();
}

}  // namespace zerofold::cli
