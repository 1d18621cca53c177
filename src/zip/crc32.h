// CRC-32 (ISO-HDLC, as zip uses: reflected polynomial 0xEDB88320).
#ifndef ZEROFOLD_ZIP_CRC32_H_
#define ZEROFOLD_ZIP_CRC32_H_

#include <cstdint>
#include <span>

namespace zerofold::zip {

// Continues a CRC: Crc32(Crc32(0, a), b) == Crc32(0, a ++ b).
uint32_t Crc32(uint32_t crc, std::span<const std::byte> data);

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_CRC32_H_
