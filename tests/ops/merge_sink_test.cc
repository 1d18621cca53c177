#include "ops/merge_sink.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zerofold::ops {
namespace {

// Collects what it is given; fails from the `fail_at`-th Append on.
class RecordingSink final : public Sink {
 public:
  explicit RecordingSink(size_t fail_at = SIZE_MAX) : fail_at_(fail_at) {}
  Status Append(std::span<const std::byte> data) override {
    if (++appends_ >= fail_at_) return Status::IOError("No space left on device").WithPath(name_);
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    return Status::OK();
  }
  uint64_t position() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  const std::vector<std::byte>& bytes() const { return bytes_; }
  size_t appends() const { return appends_; }

 private:
  std::string name_ = "out.bin";
  size_t fail_at_;
  size_t appends_ = 0;
  std::vector<std::byte> bytes_;
};

std::vector<std::byte> Pattern(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) & 0xFF);
  return v;
}

TEST_CASE("BackgroundWriteSink passes every byte on, in order, whatever the append sizes") {
  for (size_t buffer : {size_t{1}, size_t{7}, size_t{64}, size_t{4096}}) {
    CAPTURE(buffer);
    RecordingSink target;
    std::vector<std::byte> want;
    {
      BackgroundWriteSink sink(&target, buffer);
      for (size_t n : {0, 1, 5, 63, 64, 65, 1000, 4096, 10000, 3}) {
        std::vector<std::byte> chunk = Pattern(n, static_cast<uint32_t>(want.size()));
        want.insert(want.end(), chunk.begin(), chunk.end());
        REQUIRE(sink.Append(chunk).ok());
      }
      CHECK_EQ(sink.position(), want.size());
      CHECK_EQ(sink.name(), "out.bin");
      REQUIRE(sink.Drain().ok());
      CHECK(target.bytes() == want);  // complete after Drain
      REQUIRE(sink.Drain().ok());     // twice is harmless
    }
    CHECK(target.bytes() == want);
  }
}

TEST_CASE("BackgroundWriteSink returns the target's first error, and keeps returning it") {
  RecordingSink target(/*fail_at=*/3);
  BackgroundWriteSink sink(&target, 16);
  std::vector<std::byte> chunk = Pattern(16, 0);
  Status first;
  for (int i = 0; i < 10 && first.ok(); ++i) first = sink.Append(chunk);
  if (first.ok()) first = sink.Drain();
  CHECK_EQ(first.code(), Code::kIO);
  CHECK_EQ(first.path(), "out.bin");
  CHECK_EQ(first.message(), "No space left on device");
  CHECK_EQ(sink.Append(chunk).code(), Code::kIO);
  CHECK_EQ(sink.Drain().code(), Code::kIO);
  CHECK_EQ(target.bytes().size(), 32u);  // the two appends before the failure
}

TEST_CASE("BackgroundWriteSink destroyed without Drain waits for its writer") {
  RecordingSink target;
  {
    BackgroundWriteSink sink(&target, 8);
    std::vector<std::byte> chunk = Pattern(100, 1);
    REQUIRE(sink.Append(chunk).ok());
  }
  // Full buffers went out; the partial last one was dropped with the sink.
  CHECK_EQ(target.bytes().size(), 96u);
}

}  // namespace
}  // namespace zerofold::ops
