// Inflates a raw deflate stream (RFC 1951) held in memory once through
// zip::Inflater, reading 1 MiB at a time, and prints the seconds taken, the
// output bytes and their CRC-32. bench/inflate_bench.py makes the inputs
// and runs it against zlib. Usage: inflate_bench FILE.deflate SIZE
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "zip/crc32.h"
#include "zip/inflate.h"

namespace {

class MemoryInput final : public zerofold::zip::InflateInput {
 public:
  explicit MemoryInput(const std::vector<std::byte>& bytes) : bytes_(bytes) {}
  zerofold::Result<std::span<const std::byte>> Next() override {
    std::span<const std::byte> out(bytes_.data() + at_, bytes_.size() - at_);
    at_ = bytes_.size();
    return out;
  }

 private:
  const std::vector<std::byte>& bytes_;
  size_t at_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: inflate_bench FILE.deflate SIZE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> stream(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) stream[i] = static_cast<std::byte>(chars[i]);
  const uint64_t size = std::strtoull(argv[2], nullptr, 10);
  std::vector<std::byte> out(1 << 20);
  MemoryInput input(stream);
  const auto start = std::chrono::steady_clock::now();
  zerofold::zip::Inflater inflater(&input, 0, zerofold::zip::InflateBound{size, true});
  uint64_t total = 0;
  uint32_t crc = 0;
  while (true) {
    zerofold::Result<size_t> got = inflater.Read(out);
    if (!got.ok()) {
      std::fprintf(stderr, "inflate_bench: %s\n", got.status().ToString().c_str());
      return 1;
    }
    if (*got == 0) break;
    crc = zerofold::zip::Crc32(crc, std::span(out).first(*got));
    total += *got;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.6f %llu %08x\n", seconds, static_cast<unsigned long long>(total), crc);
  return 0;
}
