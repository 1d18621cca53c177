#include <sys/resource.h>

#include "io/process_limits.h"

namespace zerofold::io {

void RaiseOpenFileLimit() {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);  // best effort: a failure leaves the soft limit
}

}  // namespace zerofold::io
