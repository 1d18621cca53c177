// CRC-32 by carry-less multiplication (PCLMULQDQ), after Intel's "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (2009).
//
// Bit order: in the reflected CRC, bit i of a 16-byte block (bit i % 8 of
// byte i / 8) is the coefficient of x^(127 - i), counted from the block's
// end. Folding a block A = H·x^64 + L forward over D bits replaces it with
// H·(x^(64+D) mod P) + L·(x^D mod P), which has fewer than 128 bits and the
// same remainder. PCLMULQDQ on reflected operands yields the product shifted
// by one bit, and a constant c = reflect32(x^(E-32) mod P) << 1 then places
// H·x^E correctly in the block layout; hence the E-32 exponents below.
// The last 128-bit remainder is reduced with the byte table (starting from a
// zero register), which avoids a separate Barrett step.
#include "zip/crc32_internal.h"

#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define ZF_CRC32_FOLDING 1
#endif

namespace zerofold::zip::internal {

#if ZF_CRC32_FOLDING
namespace {

constexpr uint32_t kPolynomial = 0x04C11DB7;  // x^32 term implied

constexpr uint32_t Reflect32(uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
  return r;
}

// reflect32(x^e mod P) << 1.
constexpr uint64_t FoldConstant(int e) {
  uint32_t r = 1;  // x^0
  for (int i = 0; i < e; ++i) {
    bool carry = (r & 0x80000000u) != 0;
    r <<= 1;
    if (carry) r ^= kPolynomial;
  }
  return static_cast<uint64_t>(Reflect32(r)) << 1;
}

constexpr int kBlockBits = 128;
// Fold over four blocks (D = 512 bits) and over one block (D = 128 bits).
constexpr uint64_t kFold4High = FoldConstant(64 + 4 * kBlockBits - 32);
constexpr uint64_t kFold4Low = FoldConstant(4 * kBlockBits - 32);
constexpr uint64_t kFold1High = FoldConstant(64 + kBlockBits - 32);
constexpr uint64_t kFold1Low = FoldConstant(kBlockBits - 32);

__attribute__((target("pclmul,sse2"))) inline __m128i Fold(__m128i x, __m128i k) {
  // Low qword (the high-degree half H) times k's low constant, high qword
  // (L) times k's high constant.
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse2"))) inline __m128i Load(const std::byte* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

}  // namespace

bool Crc32FoldingAvailable() { return __builtin_cpu_supports("pclmul"); }

__attribute__((target("pclmul,sse2"))) uint32_t Crc32RegisterFolding(uint32_t reg,
                                                                     const std::byte* p,
                                                                     size_t n) {
  constexpr size_t kBlock = kBlockBits / 8;
  if (n < 4 * kBlock) return Crc32RegisterTable(reg, p, n);
  // The register enters as the first 32 bits of the message (APPNOTE's
  // pre-conditioning is the caller's ~crc).
  __m128i x0 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  __m128i x1 = Load(p + kBlock);
  __m128i x2 = Load(p + 2 * kBlock);
  __m128i x3 = Load(p + 3 * kBlock);
  p += 4 * kBlock;
  n -= 4 * kBlock;
  const __m128i k4 = _mm_set_epi64x(static_cast<long long>(kFold4Low), static_cast<long long>(kFold4High));
  while (n >= 4 * kBlock) {
    x0 = _mm_xor_si128(Fold(x0, k4), Load(p));
    x1 = _mm_xor_si128(Fold(x1, k4), Load(p + kBlock));
    x2 = _mm_xor_si128(Fold(x2, k4), Load(p + 2 * kBlock));
    x3 = _mm_xor_si128(Fold(x3, k4), Load(p + 3 * kBlock));
    p += 4 * kBlock;
    n -= 4 * kBlock;
  }
  const __m128i k1 = _mm_set_epi64x(static_cast<long long>(kFold1Low), static_cast<long long>(kFold1High));
  __m128i x = _mm_xor_si128(Fold(x0, k1), x1);
  x = _mm_xor_si128(Fold(x, k1), x2);
  x = _mm_xor_si128(Fold(x, k1), x3);
  while (n >= kBlock) {
    x = _mm_xor_si128(Fold(x, k1), Load(p));
    p += kBlock;
    n -= kBlock;
  }
  alignas(16) std::byte rest[kBlock];
  _mm_store_si128(reinterpret_cast<__m128i*>(rest), x);
  reg = Crc32RegisterTable(0, rest, kBlock);
  return Crc32RegisterTable(reg, p, n);
}

#else  // no folding kernel on this target

bool Crc32FoldingAvailable() { return false; }

uint32_t Crc32RegisterFolding(uint32_t reg, const std::byte* p, size_t n) {
  return Crc32RegisterTable(reg, p, n);
}

#endif

}  // namespace zerofold::zip::internal
