#include "io/temp_name.h"

#include <cstdio>

namespace zerofold::io {

namespace {

constexpr std::string_view kMarker = ".zerofold-tmp.";
constexpr size_t kRandomDigits = 12;

// Unsigned number of 1..max_digits digits in `base` (10 or 16, lowercase),
// the whole of `s`.
std::optional<uint64_t> Number(std::string_view s, int base, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  if (base == 10 && s.size() > 1 && s[0] == '0') return std::nullopt;  // one spelling per value
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

std::string TempFileName(std::string_view base, const WriterId& w, uint64_t random) {
  char id[96];
  std::snprintf(id, sizeof id, "%08x-%08x-%llu-%llu.%012llx", w.machine, w.boot,
                static_cast<unsigned long long>(w.pid), static_cast<unsigned long long>(w.start),
                static_cast<unsigned long long>(random & 0xffffffffffffULL));
  std::string name = ".";
  name += base;
  name += kMarker;
  name += id;
  return name;
}

std::optional<WriterId> ParseTempFileName(std::string_view name) {
  const size_t at = name.rfind(kMarker);
  if (name.empty() || name[0] != '.' || at == std::string_view::npos || at < 2) return std::nullopt;
  std::string_view rest = name.substr(at + kMarker.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || rest.size() - dot - 1 != kRandomDigits ||
      !Number(rest.substr(dot + 1), 16, kRandomDigits))
    return std::nullopt;
  std::string_view id = rest.substr(0, dot);
  std::string_view fields[4];
  for (int i = 0; i < 4; ++i) {
    const size_t dash = i < 3 ? id.find('-') : id.size();
    if (dash == std::string_view::npos) return std::nullopt;
    fields[i] = id.substr(0, dash);
    id = id.substr(std::min(dash + 1, id.size()));
  }
  auto machine = Number(fields[0], 16, 8), boot = Number(fields[1], 16, 8);
  auto pid = Number(fields[2], 10, 19), start = Number(fields[3], 10, 19);
  if (!machine || !boot || !pid || !start || fields[0].size() != 8 || fields[1].size() != 8) return std::nullopt;
  return WriterId{static_cast<uint32_t>(*machine), static_cast<uint32_t>(*boot), *pid, *start};
}

bool WriterGone(const WriterId& writer, const WriterId& self, const std::function<ProcessState(uint64_t)>& probe) {
  if (writer.machine != self.machine) return false;  // another host: its processes are not ours to see
  if (writer.boot != self.boot) return true;         // an earlier boot of this machine
  if (writer == self) return false;
  const ProcessState p = probe(writer.pid);
  if (p.kind == ProcessState::kAbsent) return true;
  if (p.kind == ProcessState::kRunning) return p.start != writer.start;  // the pid was reused
  return false;
}

}  // namespace zerofold::io
