// CRC-32 kernels behind zip::Crc32. Each updates the raw register: the
// caller inverts before and after (Crc32 does).
#ifndef ZEROFOLD_ZIP_CRC32_INTERNAL_H_
#define ZEROFOLD_ZIP_CRC32_INTERNAL_H_

#include <cstddef>
#include <cstdint>

namespace zerofold::zip::internal {

// Portable slicing-by-8 over the reflected polynomial 0xEDB88320.
uint32_t Crc32RegisterTable(uint32_t reg, const std::byte* data, size_t size);

// True when this CPU can run Crc32RegisterFolding.
bool Crc32FoldingAvailable();

// Carry-less multiplication folding (x86-64 PCLMULQDQ).
// REQUIRES: Crc32FoldingAvailable().
uint32_t Crc32RegisterFolding(uint32_t reg, const std::byte* data, size_t size);

}  // namespace zerofold::zip::internal

#endif  // ZEROFOLD_ZIP_CRC32_INTERNAL_H_
