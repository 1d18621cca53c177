// Names of the temp files AtomicFileSink writes next to its target, and the
// test of whether the process that wrote one is gone.
//
//   .<target name>.zerofold-tmp.<machine>-<boot>-<pid>-<start>.<random>
//
// machine: 8 hex digits of /etc/machine-id; boot: 8 hex digits of the
// kernel's boot id; pid: the writer's process id; start: its start time in
// clock ticks after boot (/proc/<pid>/stat field 22); random: 12 hex digits.
// A pid alone is reused; the start time tells a reused pid apart, the boot
// id a pid of an earlier boot, the machine id a writer on another host
// sharing the folder (NFS), whose processes cannot be seen: those files are
// never judged. The name carries all of it from the moment the file exists
// (a lock would be taken only after creating the file, leaving a window in
// which another run sees an unlocked temp file of a live writer).
#ifndef ZEROFOLD_IO_TEMP_NAME_H_
#define ZEROFOLD_IO_TEMP_NAME_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace zerofold::io {

struct WriterId {
  uint32_t machine = 0;
  uint32_t boot = 0;
  uint64_t pid = 0;
  uint64_t start = 0;
  friend bool operator==(const WriterId&, const WriterId&) = default;
};

// The temp file name (no folder) for target file name `base`.
std::string TempFileName(std::string_view base, const WriterId& writer, uint64_t random);

// The writer of a temp file name, or nullopt for any name TempFileName does
// not produce (other files are never ours to remove).
std::optional<WriterId> ParseTempFileName(std::string_view name);

// What the process table says of a pid.
struct ProcessState {
  enum Kind { kAbsent, kRunning, kUnknown } kind = kUnknown;
  uint64_t start = 0;  // kRunning: its start time
};

// True only when `writer` is certainly gone, seen from process `self`:
// same machine and an earlier boot, or same boot and its pid absent or
// running with another start time. Another machine's writer, ourselves, and
// a pid whose state cannot be read are never gone.
bool WriterGone(const WriterId& writer, const WriterId& self, const std::function<ProcessState(uint64_t)>& probe);

}  // namespace zerofold::io

#endif  // ZEROFOLD_IO_TEMP_NAME_H_
