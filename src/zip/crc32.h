// CRC-32 (ISO-HDLC, as zip uses: reflected polynomial 0xEDB88320).
#ifndef ZEROFOLD_ZIP_CRC32_H_
#define ZEROFOLD_ZIP_CRC32_H_

#include <cstdint>
#include <span>

namespace zerofold::zip {

// Continues a CRC: Crc32(Crc32(0, a), b) == Crc32(0, a ++ b).
uint32_t Crc32(uint32_t crc, std::span<const std::byte> data);

// False for a CRC-32 field of 0, which torch >= 2.6 writes for every
// record after set_crc32_options(False): the CRC was not recorded and is
// not checked. (The one other way to get 0, data whose CRC-32 is 0, loses
// the check too: a 2^-32 chance.)
inline bool CrcRecorded(uint32_t crc32) { return crc32 != 0; }

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_CRC32_H_
