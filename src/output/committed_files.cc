#include "output/committed_files.h"

namespace zerofold::output {

CommittedFiles::~CommittedFiles() {
  if (!roll_back_) return;
  for (const std::string& path : paths_) env_->RemoveFile(path).IgnoreError();
}

}  // namespace zerofold::output
