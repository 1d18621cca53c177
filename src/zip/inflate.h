// Inflate: decoding a raw deflate stream (RFC 1951: stored, fixed-Huffman
// and dynamic-Huffman blocks), as zip method 8 holds it.
//
// Pull-based on both sides: the Inflater asks its InflateInput for
// compressed bytes and hands out decompressed bytes through Read. Memory is
// fixed: a 32 KiB history window plus a 64 KiB output area and two decoding
// tables, whatever the stream's size. The output is bounded by the size the
// caller declares: a stream that would produce more is refused before the
// bytes are handed out (a deflate bomb is corrupt input, not an
// allocation), and one that ends with fewer is refused at its end.
//
// Every read of the input is bounds-checked: a truncated stream is kCorrupt
// ("truncated"), never a read past what the input gave. Errors carry the
// absolute offset of the compressed byte being decoded; the caller adds the
// record. Not thread-safe.
#ifndef ZEROFOLD_ZIP_INFLATE_H_
#define ZEROFOLD_ZIP_INFLATE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "zerofold/result.h"

namespace zerofold::zip {

// Where an Inflater's compressed bytes come from.
class InflateInput {
 public:
  virtual ~InflateInput() = default;
  // The next compressed bytes: a non-empty span that stays valid until the
  // next call, or an empty span at the end of the input (and on every call
  // after that).
  virtual Result<std::span<const std::byte>> Next() = 0;
};

// RFC 1951 3.2.5/3.2.6 sizes.
constexpr size_t kInflateWindowBytes = 32768;  // the largest distance
constexpr size_t kInflateMaxMatch = 258;       // the longest length

// How the caller bounds the output.
struct InflateBound {
  uint64_t bytes = 0;
  // true: `bytes` is the entry's declared size: more or fewer output is
  // kCorrupt. false: `bytes` is a limit on an entry of unknown size: more
  // is kLimit, fewer is fine.
  bool declared = true;
};

// A decoding table: a 10-bit primary lookup and a canonical-code walk
// (RFC 1951 3.2.2) for the longer codes. Public for the tests.
struct HuffmanTable {
  static constexpr int kPrimaryBits = 10;
  static constexpr int kMaxBits = 15;
  // (symbol << 4) | code length, indexed by the next kPrimaryBits input
  // bits; length 0: the code is longer (or unused), walk it.
  std::array<uint16_t, 1u << kPrimaryBits> primary{};
  std::array<uint16_t, kMaxBits + 1> count{};  // codes of each length
  std::array<uint16_t, 288> symbols{};         // in canonical code order
};

enum class HuffmanKind { kCodeLengths, kLiteralLength, kDistance };

// Builds `table` from code lengths (0: symbol unused). kCorrupt (message
// only; the caller adds where) for an over-subscribed set of lengths, or an
// incomplete one other than what RFC 1951 allows and zlib accepts: a
// literal/length or distance code with a single code of length 1, or a
// distance code with no codes at all.
Status BuildHuffmanTable(std::span<const uint8_t> lengths, HuffmanKind kind, HuffmanTable* table);

class Inflater {
 public:
  // `input` outlives the Inflater. `input_offset`: the absolute offset of
  // the stream's first byte, for messages.
  Inflater(InflateInput* input, uint64_t input_offset, InflateBound bound);
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Reads up to dst.size() decompressed bytes; 0 only at the end of the
  // final block, once the output's size has been checked against the bound.
  // kCorrupt: an invalid block type or code, a stored block whose LEN and
  // NLEN disagree, a distance before the first output byte, an
  // over-subscribed or incomplete code table, a truncated stream, output
  // beyond a declared bound or short of it. kLimit: output beyond a
  // non-declared bound. After an error every call returns it again.
  Result<size_t> Read(std::span<std::byte> dst);

  // The final block's end was decoded (Read may still hold bytes to hand out).
  bool finished() const { return state_ == State::kDone; }
  // Decompressed bytes produced so far.
  uint64_t output_bytes() const { return slid_ + pos_; }
  // Compressed bytes the stream spans. REQUIRES: finished().
  uint64_t input_bytes() const;
  // The bytes the Inflater took from its input beyond the stream's end, in
  // order: whoever reads on after the stream starts with them.
  // REQUIRES: finished().
  std::vector<std::byte> Leftover() const;

 private:
  enum class State { kBlockHeader, kStored, kHuffman, kDone };

  Status Produce();
  Status ReadBlockHeader();
  Status ReadDynamicTables();
  Status CopyStored(size_t stop);
  Status DecodeHuffman(size_t stop);
  Status Refill();
  Status NeedBits(unsigned n);
  int DecodeSymbol(const HuffmanTable& t);
  bool Truncated() const { return bitcount_ < padded_bits_; }
  uint64_t Position() const;
  Status Corrupt(std::string message) const;
  Status TruncatedError() const;

  uint64_t Bits(unsigned n) const { return bitbuf_ & ((uint64_t{1} << n) - 1); }
  void Drop(unsigned n) {
    bitbuf_ >>= n;
    bitcount_ -= n;
  }

  InflateInput* input_;
  uint64_t input_offset_;
  InflateBound bound_;
  Status failed_;
  State state_ = State::kBlockHeader;
  bool final_block_ = false;
  uint32_t stored_left_ = 0;

  // Input: the current span, and bits taken from it but not yet decoded.
  const std::byte* cur_ = nullptr;
  const std::byte* end_ = nullptr;
  bool input_ended_ = false;
  uint64_t loaded_ = 0;       // input bytes moved into bitbuf_ or copied out
  uint64_t bitbuf_ = 0;
  unsigned bitcount_ = 0;
  unsigned padded_bits_ = 0;  // zero bits added past the input's end

  // Output: out_[0, pos_) holds history and new bytes; [read_, pos_) is
  // not yet handed out; slid_ counts bytes dropped from the front.
  std::vector<std::byte> out_;
  size_t pos_ = 0;
  size_t read_ = 0;
  uint64_t slid_ = 0;

  const HuffmanTable* lit_ = nullptr;
  const HuffmanTable* dist_ = nullptr;
  HuffmanTable dynamic_lit_;
  HuffmanTable dynamic_dist_;
};

}  // namespace zerofold::zip

#endif  // ZEROFOLD_ZIP_INFLATE_H_
