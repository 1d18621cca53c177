#include "diff/diff.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rewrite/convert.h"
#include "gather/view_reader.h"
#include "io/cursor.h"
#include "io/zstd_stream.h"
#include "model/checkpoint_file.h"
#include "model/glob.h"
#include "model/hf_folder.h"
#include "torch/cast.h"

namespace zerofold::diff {

namespace {

// An element as float64: real part, imaginary part (0 for real dtypes).
struct Value {
  double re = 0;
  double im = 0;
};

double F32(uint32_t bits) { return static_cast<double>(std::bit_cast<float>(bits)); }

// The float8 formats (OCP FP8 and the fnuz variants of ml_dtypes, as torch
// names them): sign, exp_bits, man_bits, bias, and how the top codes are spent.
struct Float8Format {
  int exp_bits;
  int man_bits;
  int bias;
  enum Specials { kIeee, kFn, kFnuz } specials;  // inf+NaN at the top exponent; NaN S.1111.111; NaN 0x80
};

double Float8(uint8_t b, const Float8Format& f) {
  const bool negative = (b & 0x80) != 0;
  const int e = (b >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int m = b & ((1 << f.man_bits) - 1);
  const int top = (1 << f.exp_bits) - 1;
  if (f.specials == Float8Format::kFnuz && b == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if (f.specials == Float8Format::kIeee && e == top)
    return m != 0 ? std::numeric_limits<double>::quiet_NaN()
                  : (negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
  if (f.specials == Float8Format::kFn && e == top && m == (1 << f.man_bits) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  const double v = e == 0 ? std::ldexp(m, 1 - f.bias - f.man_bits)
                          : std::ldexp(1.0 + std::ldexp(m, -f.man_bits), e - f.bias);
  return negative ? -v : v;
}

constexpr Float8Format kE4M3FN = {4, 3, 7, Float8Format::kFn};
constexpr Float8Format kE5M2 = {5, 2, 15, Float8Format::kIeee};
constexpr Float8Format kE4M3FNUZ = {4, 3, 8, Float8Format::kFnuz};
constexpr Float8Format kE5M2FNUZ = {5, 2, 16, Float8Format::kFnuz};

// float8_e8m0fnu: an unsigned exponent, 2^(e - 127); 0xFF is NaN.
double Float8E8M0(uint8_t b) {
  return b == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, b - 127);
}

// True for the dtypes whose elements decode to numbers here.
bool IsNumeric(torch::DType d) {
  using torch::DType;
  switch (d) {
    case DType::kFloat64: case DType::kFloat32: case DType::kFloat16: case DType::kBFloat16:
    case DType::kComplex32: case DType::kComplex64: case DType::kComplex128:
    case DType::kInt64: case DType::kInt32: case DType::kInt16: case DType::kInt8:
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: case DType::kUInt64:
    case DType::kBool:
    case DType::kFloat8E4M3FN: case DType::kFloat8E5M2: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0FNU:
      return true;
    default:
      return false;
  }
}

// REQUIRES: IsNumeric(d); p holds one element (little-endian).
Value Decode(torch::DType d, const std::byte* p) {
  using torch::DType;
  switch (d) {
    case DType::kFloat64: return {std::bit_cast<double>(io::DecodeU64le(p)), 0};
    case DType::kFloat32: return {F32(io::DecodeU32le(p)), 0};
    case DType::kFloat16: return {F32(torch::Float16ToFloat32(io::DecodeU16le(p))), 0};
    case DType::kBFloat16: return {F32(torch::BFloat16ToFloat32(io::DecodeU16le(p))), 0};
    case DType::kComplex32:
      return {F32(torch::Float16ToFloat32(io::DecodeU16le(p))), F32(torch::Float16ToFloat32(io::DecodeU16le(p + 2)))};
    case DType::kComplex64: return {F32(io::DecodeU32le(p)), F32(io::DecodeU32le(p + 4))};
    case DType::kComplex128:
      return {std::bit_cast<double>(io::DecodeU64le(p)), std::bit_cast<double>(io::DecodeU64le(p + 8))};
    case DType::kInt64: return {static_cast<double>(static_cast<int64_t>(io::DecodeU64le(p))), 0};
    case DType::kInt32: return {static_cast<double>(static_cast<int32_t>(io::DecodeU32le(p))), 0};
    case DType::kInt16: return {static_cast<double>(static_cast<int16_t>(io::DecodeU16le(p))), 0};
    case DType::kInt8: return {static_cast<double>(static_cast<int8_t>(std::to_integer<uint8_t>(p[0]))), 0};
    case DType::kUInt8: return {static_cast<double>(std::to_integer<uint8_t>(p[0])), 0};
    case DType::kUInt16: return {static_cast<double>(io::DecodeU16le(p)), 0};
    case DType::kUInt32: return {static_cast<double>(io::DecodeU32le(p)), 0};
    case DType::kUInt64: return {static_cast<double>(io::DecodeU64le(p)), 0};
    case DType::kBool: return {p[0] != std::byte{0} ? 1.0 : 0.0, 0};
    case DType::kFloat8E4M3FN: return {Float8(std::to_integer<uint8_t>(p[0]), kE4M3FN), 0};
    case DType::kFloat8E5M2: return {Float8(std::to_integer<uint8_t>(p[0]), kE5M2), 0};
    case DType::kFloat8E4M3FNUZ: return {Float8(std::to_integer<uint8_t>(p[0]), kE4M3FNUZ), 0};
    case DType::kFloat8E5M2FNUZ: return {Float8(std::to_integer<uint8_t>(p[0]), kE5M2FNUZ), 0};
    case DType::kFloat8E8M0FNU: return {Float8E8M0(std::to_integer<uint8_t>(p[0])), 0};
    default: return {};
  }
}

bool IsNan(const Value& v) { return std::isnan(v.re) || std::isnan(v.im); }
bool IsFinite(const Value& v) { return std::isfinite(v.re) && std::isfinite(v.im); }
double Modulus(double re, double im) { return im == 0 ? std::fabs(re) : std::hypot(re, im); }

// torch.isclose, in float64.
bool Close(const Value& a, const Value& b, double atol, double rtol, bool equal_nan) {
  if (a.re == b.re && a.im == b.im) return true;
  if (equal_nan && IsNan(a) && IsNan(b)) return true;
  if (!IsFinite(a) || !IsFinite(b)) return false;
  return Modulus(a.re - b.re, a.im - b.im) <= atol + rtol * Modulus(b.re, b.im);
}

// A block of at most `max_elements` consecutive elements (C order) of a
// shape: the dims before `dim` fixed at `prefix`, `dim` from `start` for
// `len`, the dims after it whole.
struct Block {
  std::vector<int64_t> prefix;
  size_t dim = 0;
  int64_t start = 0;
  int64_t len = 0;
};

// The view of `t` over block `b` (same storage; shape [len, dims after]).
torch::Tensor SubView(const torch::Tensor& t, const Block& b) {
  if (t.shape.empty()) return t;
  torch::Tensor v = t;
  int64_t offset = t.storage_offset;
  for (size_t k = 0; k < b.prefix.size(); ++k) offset += b.prefix[k] * t.stride[k];
  offset += b.start * t.stride[b.dim];
  v.storage_offset = offset;
  v.shape.assign(t.shape.begin() + static_cast<std::ptrdiff_t>(b.dim), t.shape.end());
  v.stride.assign(t.stride.begin() + static_cast<std::ptrdiff_t>(b.dim), t.stride.end());
  v.shape[0] = b.len;
  return v;
}

// Calls fn(block, first element) for the blocks that tile a non-empty
// shape in C order, each of at most max_elements (>= 1) elements.
template <typename Fn>
Status ForEachBlock(const std::vector<int64_t>& shape, uint64_t max_elements, Fn fn) {
  if (shape.empty()) return fn(Block{}, uint64_t{0});
  // The outermost dim whose trailing dims hold at most max_elements.
  size_t dim = shape.size() - 1;
  uint64_t inner = 1;  // elements after `dim`
  while (dim > 0 && static_cast<uint64_t>(shape[dim]) <= max_elements / inner) {
    inner *= static_cast<uint64_t>(shape[dim]);
    --dim;
  }
  const int64_t step = static_cast<int64_t>(std::max<uint64_t>(1, std::min<uint64_t>(max_elements / inner,
                                                                                      static_cast<uint64_t>(shape[dim]))));
  Block b;
  b.dim = dim;
  b.prefix.assign(dim, 0);
  uint64_t element = 0;
  for (;;) {
    for (int64_t s = 0; s < shape[dim]; s += step) {
      b.start = s;
      b.len = std::min(step, shape[dim] - s);
      ZF_TRY(fn(b, element));
      element += static_cast<uint64_t>(b.len) * inner;
    }
    size_t k = dim;
    while (k > 0 && ++b.prefix[k - 1] == shape[k - 1]) b.prefix[--k] = 0;
    if (k == 0) return Status::OK();
  }
}

std::vector<int64_t> Unravel(uint64_t element, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    const uint64_t n = static_cast<uint64_t>(shape[d]);
    index[d] = static_cast<int64_t>(element % n);
    element /= n;
  }
  return index;
}

// Reads one side's blocks: the gathered bytes of a sub-view, hashed on the way.
class Side {
 public:
  Side(const TensorRef& ref, size_t buffer_bytes) : ref_(ref), gatherer_(buffer_bytes) {}

  Status Read(const Block& block, std::vector<std::byte>& out) {
    out.clear();
    const torch::Tensor view = SubView(*ref_.tensor, block);
    const torch::Storage& storage = ref_.ckpt->storages[view.storage];
    Status s = gatherer_.Gather(*ref_.src, storage, view, [&](std::span<const std::byte> chunk) {
      out.insert(out.end(), chunk.begin(), chunk.end());
      hasher_.Update(chunk);
      return Status::OK();
    });
    if (!s.ok()) return s.WithRecord(storage.record).WithPath(ref_.src->name());
    return Status::OK();
  }
  torch::Hash128 Digest() const { return hasher_.Digest(); }

 private:
  const TensorRef& ref_;
  gather::Gatherer gatherer_;
  torch::Xxh3Hasher hasher_;
};

Status CheckInside(const TensorRef& r) {
  const torch::Tensor& t = *r.tensor;
  if (t.storage >= r.ckpt->storages.size())
    return Status::Internal("tensor names storage " + std::to_string(t.storage)).WithRecord(t.name);
  const torch::Storage& s = r.ckpt->storages[t.storage];
  ZF_ASSIGN_OR_RETURN(torch::ByteRange extent, torch::ViewExtent(t));
  if (extent.end > s.nbytes || s.nbytes > s.record_size)
    return Status::Corrupt("view ends at byte " + std::to_string(extent.end) + " of storage " + s.key + ", which holds " +
                           std::to_string(std::min(s.nbytes, s.record_size)) + " bytes")
        .WithRecord(t.name)
        .WithPath(r.src->name());
  return Status::OK();
}

// Values of same-dtype tensors whose elements cannot be gathered (packed
// sub-byte dtypes): digests only.
Status DiffByDigest(const TensorRef& a, const TensorRef& b, const DiffOptions& options, TensorDiff& d) {
  std::vector<std::byte> buffer(std::max(options.buffer_bytes, torch::kMinDigestBuffer));
  ZF_ASSIGN_OR_RETURN(torch::Hash128 ha, torch::TensorDigest(*a.src, *a.ckpt, *a.tensor, buffer));
  ZF_ASSIGN_OR_RETURN(torch::Hash128 hb, torch::TensorDigest(*b.src, *b.ckpt, *b.tensor, buffer));
  d.digest_a = ha;
  d.digest_b = hb;
  d.same = ha == hb;
  return Status::OK();
}

}  // namespace

namespace {

// DiffTensor, telling `read` the bytes of both sides each block read.
Result<TensorDiff> DiffTensorReporting(const TensorRef& a, const TensorRef& b, const DiffOptions& options,
                                       const std::function<void(uint64_t)>& read) {
  if (options.buffer_bytes < 64)
    return Status::InvalidArgument("diff buffer of " + std::to_string(options.buffer_bytes) + " bytes; at least 64");
  const torch::Tensor& ta = *a.tensor;
  const torch::Tensor& tb = *b.tensor;
  TensorDiff d;
  d.name = ta.name;
  d.dtype_a = ta.dtype;
  d.dtype_b = tb.dtype;
  d.shape_a = ta.shape;
  d.shape_b = tb.shape;
  const bool same_dtype = ta.dtype == tb.dtype;
  const bool close_mode = options.close_mode();
  if (ta.shape != tb.shape) return d;
  if (!same_dtype && !(close_mode && IsNumeric(ta.dtype) && IsNumeric(tb.dtype))) return d;
  ZF_TRY(CheckInside(a));
  ZF_TRY(CheckInside(b));
  d.values_compared = true;
  d.numel = ta.numel();
  if (same_dtype && torch::ElementBits(ta.dtype) % 8 != 0) {
    ZF_TRY(DiffByDigest(a, b, options, d));
    if (!d.same) d.differing = d.numel;  // unknown which: counted as all
    return d;
  }
  const size_t size_a = torch::Info(ta.dtype).itemsize, size_b = torch::Info(tb.dtype).itemsize;
  const bool numeric = IsNumeric(ta.dtype) && IsNumeric(tb.dtype);
  d.numeric = numeric;
  const double atol = options.atol.value_or(kDefaultAtol), rtol = options.rtol.value_or(kDefaultRtol);
  const uint64_t max_elements = std::max<uint64_t>(1, options.buffer_bytes / std::max(size_a, size_b));
  Side side_a(a, options.buffer_bytes), side_b(b, options.buffer_bytes);
  std::vector<std::byte> bytes_a, bytes_b;
  bool found_first = false;
  if (d.numel > 0) {
    Status s = ForEachBlock(ta.shape, max_elements, [&](const Block& block, uint64_t first) -> Status {
      ZF_TRY(side_a.Read(block, bytes_a));
      ZF_TRY(side_b.Read(block, bytes_b));
      if (read) read(bytes_a.size() + bytes_b.size());
      const size_t n = bytes_a.size() / size_a;
      if (n != bytes_b.size() / size_b) return Status::Internal("blocks of different lengths").WithRecord(ta.name);
      // Bit-equal blocks add nothing in exact mode: no element differs, every |a - b| is 0.
      if (!close_mode && bytes_a == bytes_b) return Status::OK();
      for (size_t i = 0; i < n; ++i) {
        const std::byte* pa = bytes_a.data() + i * size_a;
        const std::byte* pb = bytes_b.data() + i * size_b;
        bool differs;
        Value va, vb;
        if (numeric) {
          va = Decode(ta.dtype, pa);
          vb = Decode(tb.dtype, pb);
        }
        if (close_mode && numeric) {
          differs = !Close(va, vb, atol, rtol, options.equal_nan);
        } else {
          differs = std::memcmp(pa, pb, size_a) != 0;
        }
        if (numeric && IsFinite(va) && IsFinite(vb)) {
          const double abs = Modulus(va.re - vb.re, va.im - vb.im);
          d.max_abs_diff = std::max(d.max_abs_diff, abs);
          const double mb = Modulus(vb.re, vb.im);
          if (mb != 0) d.max_rel_diff = std::max(d.max_rel_diff, abs / mb);
        }
        if (differs) {
          if (!found_first) {
            d.first_index = Unravel(first + i, ta.shape);
            found_first = true;
          }
          d.differing++;
        }
      }
      return Status::OK();
    });
    ZF_TRY(s);
  }
  if (same_dtype) {
    d.digest_a = side_a.Digest();
    d.digest_b = side_b.Digest();
  }
  d.same = d.differing == 0;
  return d;
}

}  // namespace

Result<TensorDiff> DiffTensor(const TensorRef& a, const TensorRef& b, const DiffOptions& options) {
  return DiffTensorReporting(a, b, options, nullptr);
}

Result<DiffReport> DiffTensorSets(const std::vector<TensorRef>& a, const std::vector<TensorRef>& b,
                                  const DiffOptions& options) {
  auto by_name = [&](const std::vector<TensorRef>& side) -> Result<std::map<std::string, const TensorRef*>> {
    std::map<std::string, const TensorRef*> names;
    for (const TensorRef& r : side) {
      if (!options.only.empty() && !model::MatchesAny(options.only, r.tensor->name)) continue;
      auto [it, fresh] = names.emplace(r.tensor->name, &r);
      if (!fresh) {
        std::string where = it->second->src->name() == r.src->name() ? "twice in " + r.src->name()
                                                                      : "in " + it->second->src->name() + " and " +
                                                                            r.src->name();
        return Status::Corrupt("two tensors have this name: " + where).WithRecord(r.tensor->name).WithPath(r.src->name());
      }
    }
    return names;
  };
  ZF_ASSIGN_OR_RETURN(auto names_a, by_name(a));
  ZF_ASSIGN_OR_RETURN(auto names_b, by_name(b));
  // Progress: the logical bytes of both sides of every name in both (a pair
  // whose values are not compared counts as read when it is passed).
  uint64_t total = 0, done = 0;
  for (const auto& [name, ref] : names_a)
    if (auto other = names_b.find(name); other != names_b.end())
      total += ref->tensor->nbytes() + other->second->tensor->nbytes();
  std::function<void(uint64_t)> read;
  if (options.progress) read = [&](uint64_t n) { options.progress(done += n, total); };
  DiffReport report;
  for (const auto& [name, ref] : names_a) {
    auto other = names_b.find(name);
    if (other == names_b.end()) {
      report.only_a.push_back(name);
      continue;
    }
    const uint64_t before = done;
    ZF_ASSIGN_OR_RETURN(TensorDiff d, DiffTensorReporting(*ref, *other->second, options, read));
    // Blocks may read less than nbytes (a digest-compared dtype reads by
    // other means): the pair counts whole once compared.
    if (const uint64_t whole = before + ref->tensor->nbytes() + other->second->tensor->nbytes(); whole != done) {
      done = whole;
      if (options.progress) options.progress(done, total);
    }
    if (!d.same) report.different++;
    report.tensors.push_back(std::move(d));
  }
  for (const auto& [name, ref] : names_b)
    if (!names_a.count(name)) report.only_b.push_back(name);
  return report;
}

namespace {

struct OpenFile {
  std::unique_ptr<RandomSource> src;
  torch::Checkpoint ckpt;
};

Status OpenSide(Env* env, const std::string& path, const DiffOptions& options, std::vector<std::string>& files,
                std::vector<OpenFile>& opened) {
  if (io::IsStreamName(path))
    return Status::InvalidArgument("diff reads its inputs at random; '" + path +
                                   "' is a stream ('-', .zst): save it to a file first")
        .WithPath(path);
  files = {path};
  if (env->IsDirectory(path)) {
    std::set<std::string> handled;
    ZF_ASSIGN_OR_RETURN(files, model::FolderCheckpoints(env, path, handled, model::ListOptions{options.read}));
  }
  for (const std::string& f : files) {
    OpenFile o;
    ZF_ASSIGN_OR_RETURN(o.src, env->OpenRandom(f));
    // Tensors torch has no dtype for (F6_*) are compared as their bytes.
    Result<model::CheckpointFile> read = model::ReadCheckpointFile(*o.src, options.read, model::SafetensorsGraph::kSkip,
                                                                   model::TorchlessTensors::kAsBytes);
    if (!read.ok()) return Status(read.status()).WithPath(f);
    o.ckpt = std::move(read->ckpt);
    opened.push_back(std::move(o));
  }
  return Status::OK();
}

std::vector<TensorRef> Refs(const std::vector<OpenFile>& opened) {
  std::vector<TensorRef> refs;
  for (const OpenFile& o : opened)
    for (const torch::Tensor& t : o.ckpt.tensors) refs.push_back({o.src.get(), &o.ckpt, &t});
  return refs;
}

}  // namespace

Result<DiffReport> DiffPaths(Env* env, const std::string& a, const std::string& b, const DiffOptions& options) {
  std::vector<std::string> files_a, files_b;
  std::vector<OpenFile> opened_a, opened_b;
  ZF_TRY(OpenSide(env, a, options, files_a, opened_a));
  ZF_TRY(OpenSide(env, b, options, files_b, opened_b));
  ZF_ASSIGN_OR_RETURN(DiffReport report, DiffTensorSets(Refs(opened_a), Refs(opened_b), options));
  if (!options.only.empty() && report.tensors.empty() && report.only_a.empty() && report.only_b.empty())
    return Status::InvalidArgument("--only matches no tensor of " + a + " or " + b);
  report.files_a = std::move(files_a);
  report.files_b = std::move(files_b);
  return report;
}

}  // namespace zerofold::diff
