#include "zip/inflate.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "io/cursor.h"
#include "zip/describe.h"

namespace zerofold::zip {
namespace {

// The output area decoded between two slides of the window.
constexpr size_t kOutputArea = 65536;

// RFC 1951 3.2.5: lengths of symbols 257..285, distances of codes 0..29.
constexpr uint16_t kLengthBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr uint8_t kLengthExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr uint16_t kDistanceBase[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                        193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr uint8_t kDistanceExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                        6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
constexpr int kEndOfBlock = 256;
constexpr int kFirstLengthSymbol = 257;
constexpr int kLengthSymbols = 29;
constexpr int kDistanceSymbols = 30;

// RFC 1951 3.2.6: the fixed code's lengths.
constexpr size_t kFixedLiteralCodes = 288;
constexpr size_t kFixedDistanceCodes = 32;

// RFC 1951 3.2.7: dynamic block header fields and limits.
constexpr unsigned kHlitBits = 5, kHdistBits = 5, kHclenBits = 4, kCodeLengthBits = 3;
constexpr unsigned kMaxLiteralCodes = 286, kMaxDistanceCodes = 30;
constexpr uint8_t kCodeLengthOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
constexpr int kRepeatPrevious = 16, kRepeatZero3 = 17, kRepeatZero11 = 18;

// Bits one length/distance pair can take: code, extra, code, extra.
constexpr unsigned kMaxPairBits = 15 + 5 + 15 + 13;

uint32_t ReverseBits(uint32_t code, int length) {
  uint32_t r = 0;
  for (int i = 0; i < length; ++i) {
    r = (r << 1) | (code & 1);
    code >>= 1;
  }
  return r;
}

const HuffmanTable& FixedLiteralTable() {
  static const HuffmanTable table = [] {
    uint8_t lengths[kFixedLiteralCodes];
    for (size_t i = 0; i < kFixedLiteralCodes; ++i) lengths[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
    HuffmanTable t;
    BuildHuffmanTable(lengths, HuffmanKind::kLiteralLength, &t).IgnoreError();  // complete by construction
    return t;
  }();
  return table;
}

const HuffmanTable& FixedDistanceTable() {
  static const HuffmanTable table = [] {
    uint8_t lengths[kFixedDistanceCodes];
    std::fill(std::begin(lengths), std::end(lengths), uint8_t{5});
    HuffmanTable t;
    BuildHuffmanTable(lengths, HuffmanKind::kDistance, &t).IgnoreError();  // complete by construction
    return t;
  }();
  return table;
}

}  // namespace

Status BuildHuffmanTable(std::span<const uint8_t> lengths, HuffmanKind kind, HuffmanTable* table) {
  if (lengths.size() > table->symbols.size()) return Status::Internal("more Huffman symbols than a table holds");
  table->count.fill(0);
  for (uint8_t l : lengths) {
    if (l > HuffmanTable::kMaxBits) return Status::Internal("Huffman code length above 15");
    ++table->count[l];
  }
  table->count[0] = 0;
  int left = 1;  // codes of the current length not yet assigned
  int codes = 0, max_length = 0;
  for (int len = 1; len <= HuffmanTable::kMaxBits; ++len) {
    left = (left << 1) - table->count[len];
    if (left < 0) return Status::Corrupt("over-subscribed Huffman code lengths (" + std::to_string(table->count[len]) +
                                         " codes of length " + std::to_string(len) + " do not fit)");
    codes += table->count[len];
    if (table->count[len] != 0) max_length = len;
  }
  if (left > 0 && codes > 0) {
    // zlib's rule: an incomplete code is a single code of length 1, and
    // never for the code-length code.
    if (kind == HuffmanKind::kCodeLengths || max_length != 1) {
      const char* what = kind == HuffmanKind::kCodeLengths   ? "code-length"
                         : kind == HuffmanKind::kDistance ? "distance"
                                                          : "literal/length";
      return Status::Corrupt(std::string("incomplete ") + what + " Huffman code (" + std::to_string(codes) +
                             " codes leave part of the code space unused)");
    }
  }
  // Symbols in canonical order: by length, then by symbol value.
  std::array<uint16_t, HuffmanTable::kMaxBits + 2> offset{};
  for (int len = 1; len <= HuffmanTable::kMaxBits; ++len) offset[len + 1] = offset[len] + table->count[len];
  for (size_t sym = 0; sym < lengths.size(); ++sym) {
    if (lengths[sym] != 0) table->symbols[offset[lengths[sym]]++] = static_cast<uint16_t>(sym);
  }
  // RFC 1951 3.2.2: the first code of each length; codes are sent most
  // significant bit first, so the lookup index is the reversed code.
  std::array<uint32_t, HuffmanTable::kMaxBits + 1> next{};
  uint32_t code = 0;
  for (int len = 1; len <= HuffmanTable::kMaxBits; ++len) {
    code = (code + table->count[len - 1]) << 1;
    next[len] = code;
  }
  table->primary.fill(0);
  for (size_t sym = 0; sym < lengths.size(); ++sym) {
    const int len = lengths[sym];
    if (len == 0) continue;
    const uint32_t c = next[len]++;
    if (len > HuffmanTable::kPrimaryBits) continue;
    const uint16_t entry = static_cast<uint16_t>((sym << 4) | static_cast<unsigned>(len));
    for (uint32_t i = ReverseBits(c, len); i < table->primary.size(); i += 1u << len) table->primary[i] = entry;
  }
  return Status::OK();
}

Inflater::Inflater(InflateInput* input, uint64_t input_offset, InflateBound bound)
    : input_(input), input_offset_(input_offset), bound_(bound),
      out_(kInflateWindowBytes + kOutputArea + kInflateMaxMatch) {}

uint64_t Inflater::Position() const {
  const unsigned real = bitcount_ > padded_bits_ ? bitcount_ - padded_bits_ : 0;
  return input_offset_ + loaded_ - real / 8;
}

Status Inflater::Corrupt(std::string message) const {
  return Status::Corrupt(std::move(message)).WithOffset(Position());
}

Status Inflater::TruncatedError() const {
  return Status::Corrupt("truncated: the deflate stream's " + std::to_string(loaded_) +
                         " bytes end inside a block (" + std::to_string(output_bytes()) + " bytes decoded)")
      .WithOffset(input_offset_ + loaded_);
}

uint64_t Inflater::input_bytes() const { return loaded_ - (bitcount_ - padded_bits_) / 8; }

std::vector<std::byte> Inflater::Leftover() const {
  std::vector<std::byte> out;
  const unsigned real = bitcount_ - padded_bits_;
  uint64_t bits = bitbuf_ >> (real % 8);
  for (unsigned i = 0; i < real / 8; ++i) {
    out.push_back(static_cast<std::byte>(bits & 0xff));
    bits >>= 8;
  }
  out.insert(out.end(), cur_, end_);
  return out;
}

// Brings bitcount_ to at least 56: eight bytes at once where the span has
// them, else byte by byte across spans, else zero bits past the input's end
// (padded_bits_ counts them; consuming one is a truncation).
Status Inflater::Refill() {
  if (end_ - cur_ >= 8) {
    // Bits above bitcount_ hold the start of the next bytes, which the next
    // load ORs in again unchanged.
    bitbuf_ |= io::DecodeU64le(cur_) << bitcount_;
    const unsigned n = (63 - bitcount_) >> 3;
    cur_ += n;
    loaded_ += n;
    bitcount_ |= 56;
    return Status::OK();
  }
  bitbuf_ = bitcount_ == 0 ? 0 : bitbuf_ & (~uint64_t{0} >> (64 - bitcount_));
  while (bitcount_ < 56) {
    if (cur_ == end_ && !input_ended_) {
      ZF_ASSIGN_OR_RETURN(std::span<const std::byte> next, input_->Next());
      input_ended_ = next.empty();
      cur_ = next.data();
      end_ = next.data() + next.size();
    }
    if (cur_ == end_) {
      bitcount_ += 8;
      padded_bits_ += 8;
      continue;
    }
    bitbuf_ |= static_cast<uint64_t>(*cur_++) << bitcount_;
    bitcount_ += 8;
    ++loaded_;
  }
  return Status::OK();
}

Status Inflater::NeedBits(unsigned n) {
  if (bitcount_ < n) ZF_TRY(Refill());
  return Status::OK();
}

// REQUIRES: bitcount_ >= 15. Returns -1 when the bits match no code.
int Inflater::DecodeSymbol(const HuffmanTable& t) {
  const uint16_t e = t.primary[bitbuf_ & ((1u << HuffmanTable::kPrimaryBits) - 1)];
  if ((e & 15) != 0) {
    Drop(e & 15);
    return e >> 4;
  }
  // RFC 1951 3.2.2: canonical codes of each length are consecutive.
  int code = 0, first = 0, index = 0;
  for (int len = 1; len <= HuffmanTable::kMaxBits; ++len) {
    code |= static_cast<int>((bitbuf_ >> (len - 1)) & 1);
    const int count = t.count[len];
    if (code - count < first) {
      Drop(static_cast<unsigned>(len));
      return t.symbols[static_cast<size_t>(index + (code - first))];
    }
    index += count;
    first = (first + count) << 1;
    code <<= 1;
  }
  return -1;
}

Status Inflater::ReadBlockHeader() {
  ZF_TRY(NeedBits(3));
  final_block_ = Bits(1) != 0;
  const unsigned type = static_cast<unsigned>((bitbuf_ >> 1) & 3);
  Drop(3);
  if (Truncated()) return TruncatedError();
  switch (type) {
    case 0: {  // RFC 1951 3.2.4: stored
      Drop(bitcount_ % 8);
      ZF_TRY(NeedBits(32));
      const uint32_t len = static_cast<uint32_t>(Bits(16));
      const uint32_t nlen = static_cast<uint32_t>((bitbuf_ >> 16) & 0xffff);
      if (bitcount_ - 32 < padded_bits_) return TruncatedError();
      if (nlen != (~len & 0xffff))
        return Corrupt("stored block LEN " + Hex(len, 4) + " and NLEN " + Hex(nlen, 4) + " are not complements");
      Drop(32);
      stored_left_ = len;
      state_ = State::kStored;
      return Status::OK();
    }
    case 1:  // RFC 1951 3.2.6: fixed Huffman codes
      lit_ = &FixedLiteralTable();
      dist_ = &FixedDistanceTable();
      state_ = State::kHuffman;
      return Status::OK();
    case 2:
      ZF_TRY(ReadDynamicTables());
      state_ = State::kHuffman;
      return Status::OK();
    default:
      return Corrupt("deflate block type 3, which RFC 1951 reserves");
  }
}

// RFC 1951 3.2.7.
Status Inflater::ReadDynamicTables() {
  ZF_TRY(NeedBits(kHlitBits + kHdistBits + kHclenBits));
  const unsigned hlit = static_cast<unsigned>(Bits(kHlitBits)) + 257;
  const unsigned hdist = static_cast<unsigned>((bitbuf_ >> kHlitBits) & 31) + 1;
  const unsigned hclen = static_cast<unsigned>((bitbuf_ >> (kHlitBits + kHdistBits)) & 15) + 4;
  Drop(kHlitBits + kHdistBits + kHclenBits);
  if (Truncated()) return TruncatedError();
  if (hlit > kMaxLiteralCodes || hdist > kMaxDistanceCodes)
    return Corrupt("dynamic block declares " + std::to_string(hlit) + " literal/length and " + std::to_string(hdist) +
                   " distance codes, more than 286 and 30");
  uint8_t code_lengths[19] = {};
  for (unsigned i = 0; i < hclen; ++i) {
    ZF_TRY(NeedBits(kCodeLengthBits));
    code_lengths[kCodeLengthOrder[i]] = static_cast<uint8_t>(Bits(kCodeLengthBits));
    Drop(kCodeLengthBits);
  }
  if (Truncated()) return TruncatedError();
  HuffmanTable code_length_table;
  if (Status s = BuildHuffmanTable(code_lengths, HuffmanKind::kCodeLengths, &code_length_table); !s.ok())
    return Corrupt(s.message());

  uint8_t lengths[kMaxLiteralCodes + kMaxDistanceCodes] = {};
  const unsigned total = hlit + hdist;
  unsigned n = 0;
  while (n < total) {
    ZF_TRY(NeedBits(HuffmanTable::kMaxBits + 7));
    const int sym = DecodeSymbol(code_length_table);
    if (sym < 0) return Corrupt("invalid code-length code");
    if (sym < kRepeatPrevious) {
      lengths[n++] = static_cast<uint8_t>(sym);
    } else {
      uint8_t value = 0;
      unsigned repeat;
      if (sym == kRepeatPrevious) {
        if (n == 0) return Corrupt("code-length repeat (16) with no previous length");
        value = lengths[n - 1];
        repeat = 3 + static_cast<unsigned>(Bits(2));
        Drop(2);
      } else if (sym == kRepeatZero3) {
        repeat = 3 + static_cast<unsigned>(Bits(3));
        Drop(3);
      } else {
        repeat = 11 + static_cast<unsigned>(Bits(7));
        Drop(7);
      }
      if (repeat > total - n)
        return Corrupt("code-length repeat of " + std::to_string(repeat) + " runs past the " + std::to_string(total) +
                       " declared lengths");
      std::fill(lengths + n, lengths + n + repeat, value);
      n += repeat;
    }
    if (Truncated()) return TruncatedError();
  }
  if (lengths[kEndOfBlock] == 0) return Corrupt("dynamic block has no end-of-block code");
  if (Status s = BuildHuffmanTable(std::span<const uint8_t>(lengths, hlit), HuffmanKind::kLiteralLength,
                                   &dynamic_lit_);
      !s.ok())
    return Corrupt(s.message());
  if (Status s = BuildHuffmanTable(std::span<const uint8_t>(lengths + hlit, hdist), HuffmanKind::kDistance,
                                   &dynamic_dist_);
      !s.ok())
    return Corrupt(s.message());
  lit_ = &dynamic_lit_;
  dist_ = &dynamic_dist_;
  return Status::OK();
}

Status Inflater::CopyStored(size_t stop) {
  // Whole bytes already in the bit buffer come first.
  while (stored_left_ > 0 && pos_ < stop && bitcount_ >= 8) {
    if (bitcount_ - 8 < padded_bits_) return TruncatedError();
    out_[pos_++] = static_cast<std::byte>(bitbuf_ & 0xff);
    Drop(8);
    --stored_left_;
  }
  if (stored_left_ > 0 && pos_ < stop) bitbuf_ = 0;  // empty: the bytes below come straight from the input
  while (stored_left_ > 0 && pos_ < stop) {
    if (cur_ == end_) {
      if (!input_ended_) {
        ZF_ASSIGN_OR_RETURN(std::span<const std::byte> next, input_->Next());
        input_ended_ = next.empty();
        cur_ = next.data();
        end_ = next.data() + next.size();
      }
      if (cur_ == end_) return TruncatedError();
    }
    const size_t n = std::min({static_cast<size_t>(stored_left_), static_cast<size_t>(end_ - cur_), stop - pos_});
    std::memcpy(out_.data() + pos_, cur_, n);
    cur_ += n;
    loaded_ += n;
    pos_ += n;
    stored_left_ -= static_cast<uint32_t>(n);
  }
  if (stored_left_ == 0) state_ = final_block_ ? State::kDone : State::kBlockHeader;
  return Status::OK();
}

Status Inflater::DecodeHuffman(size_t stop) {
  while (pos_ < stop) {
    if (bitcount_ < kMaxPairBits) ZF_TRY(Refill());
    int sym = DecodeSymbol(*lit_);
    if (sym < kEndOfBlock) {
      if (sym < 0) return Corrupt("invalid literal/length code");
      if (Truncated()) return TruncatedError();
      out_[pos_++] = static_cast<std::byte>(sym);
      continue;
    }
    if (sym == kEndOfBlock) {
      if (Truncated()) return TruncatedError();
      state_ = final_block_ ? State::kDone : State::kBlockHeader;
      return Status::OK();
    }
    sym -= kFirstLengthSymbol;
    if (sym >= kLengthSymbols) return Corrupt("invalid literal/length symbol " + std::to_string(sym + kFirstLengthSymbol));
    const unsigned length = kLengthBase[sym] + static_cast<unsigned>(Bits(kLengthExtra[sym]));
    Drop(kLengthExtra[sym]);
    const int dsym = DecodeSymbol(*dist_);
    if (dsym < 0) return Corrupt("invalid distance code");
    if (dsym >= kDistanceSymbols) return Corrupt("invalid distance symbol " + std::to_string(dsym));
    const size_t distance = kDistanceBase[dsym] + static_cast<size_t>(Bits(kDistanceExtra[dsym]));
    Drop(kDistanceExtra[dsym]);
    if (Truncated()) return TruncatedError();
    if (distance > output_bytes())
      return Corrupt("distance " + std::to_string(distance) + " reaches before the first output byte (" +
                     std::to_string(output_bytes()) + " bytes decoded)");
    std::byte* dst = out_.data() + pos_;
    const std::byte* src = dst - distance;
    if (distance >= length) {
      std::memcpy(dst, src, length);
    } else if (distance == 1) {
      std::memset(dst, static_cast<int>(*src), length);
    } else {
      for (unsigned i = 0; i < length; ++i) dst[i] = src[i];
    }
    pos_ += length;
  }
  return Status::OK();
}

Status Inflater::Produce() {
  // Decode until the output area is full; at most one byte past the bound,
  // so a stream producing more is caught before its bytes are handed out.
  size_t stop = kInflateWindowBytes + kOutputArea;
  const uint64_t room = bound_.bytes - std::min(bound_.bytes, output_bytes());
  if (room < stop - pos_) stop = pos_ + static_cast<size_t>(room) + 1;
  while (pos_ < stop && state_ != State::kDone) {
    switch (state_) {
      case State::kBlockHeader:
        ZF_TRY(ReadBlockHeader());
        break;
      case State::kStored:
        ZF_TRY(CopyStored(stop));
        break;
      case State::kHuffman:
        ZF_TRY(DecodeHuffman(stop));
        break;
      case State::kDone:
        break;
    }
  }
  if (output_bytes() > bound_.bytes) {
    if (bound_.declared)
      return Corrupt("deflate stream produces more than the declared " + std::to_string(bound_.bytes) + " bytes");
    return Status::Limit("deflate stream produces more than " + std::to_string(bound_.bytes) +
                         " bytes, the limit for reading it whole")
        .WithOffset(Position());
  }
  if (state_ == State::kDone && bound_.declared && output_bytes() != bound_.bytes)
    return Corrupt("deflate stream ends after " + std::to_string(output_bytes()) + " bytes, the entry declares " +
                   std::to_string(bound_.bytes));
  return Status::OK();
}

Result<size_t> Inflater::Read(std::span<std::byte> dst) {
  if (!failed_.ok()) return failed_;
  if (read_ == pos_) {
    if (state_ == State::kDone || dst.empty()) return size_t{0};
    if (pos_ >= kInflateWindowBytes + kOutputArea / 2) {
      std::memmove(out_.data(), out_.data() + pos_ - kInflateWindowBytes, kInflateWindowBytes);
      slid_ += pos_ - kInflateWindowBytes;
      pos_ = read_ = kInflateWindowBytes;
    }
    if (Status s = Produce(); !s.ok()) {
      failed_ = s;
      return s;
    }
  }
  const size_t n = std::min(dst.size(), pos_ - read_);
  if (n > 0) std::memcpy(dst.data(), out_.data() + read_, n);
  read_ += n;
  return n;
}

}  // namespace zerofold::zip
