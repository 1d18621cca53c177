#include "torch/checkpoint.h"

namespace zerofold::torch {

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kTorchZip: return "torch-zip";
    case Format::kTorchLegacy: return "torch-legacy";
  }
  return "unknown";
}

}  // namespace zerofold::torch
