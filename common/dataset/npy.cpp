#include "common/dataset/npy.h"

#include <charconv>
#include <string_view>

#include "common/dataset/mapped_file.h"
#include "common/io/atomic_file.h"

namespace suite::dataset {

namespace {
constexpr std::string_view kMagic{"\x93NUMPY", 6};
constexpr size_t kAlign = 64;           // numpy ARRAY_ALIGN since 1.14
constexpr size_t kGrowthDigits = 21;    // numpy GROWTH_AXIS_MAX_DIGITS since 1.24

// Python repr of a shape tuple: (), (n,), (a, b).
std::string shape_repr(std::span<const uint64_t> shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}
}  // namespace

uint64_t NpyArray::element_count() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

void NpyArray::check_type(size_t size, bool is_signed, bool is_float) const {
  const bool float_dtype = dtype == DType::Float32 || dtype == DType::Float64;
  const bool signed_dtype = float_dtype || dtype == DType::Int8 || dtype == DType::Int16 ||
                            dtype == DType::Int32 || dtype == DType::Int64;
  if (size != itemsize(dtype) || is_signed != signed_dtype || is_float != float_dtype)
    throw ToolError("npy: array holds " + std::string(dtype_name(dtype)) + ", accessed with another element type");
}

std::string npy_header(DType dtype, std::span<const uint64_t> shape) {
  std::string dict = "{'descr': '" + std::string(npy_descr(dtype)) + "', 'fortran_order': False, 'shape': " +
                     shape_repr(shape) + ", }";
  // numpy 1.24+: room for the first axis to grow to 21 digits without rewriting the header.
  if (!shape.empty()) dict.append(kGrowthDigits - std::to_string(shape[0]).size(), ' ');
  const size_t hlen = dict.size() + 1;  // + '\n'
  const size_t pad = kAlign - ((kMagic.size() + 4 + hlen) % kAlign);
  dict.append(pad, ' ');
  dict += '\n';
  std::string out(kMagic);
  // Format 1.0 has a u16 length; these headers are always far below 65536.
  const size_t header_len = dict.size();
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header_len & 0xff);
  out += static_cast<char>((header_len >> 8) & 0xff);
  return out + dict;
}

void write_npy(const std::string& path, DType dtype, std::span<const uint64_t> shape, std::span<const std::byte> data) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  if (n * itemsize(dtype) != data.size())
    throw ToolError(path, "npy: shape needs " + std::to_string(n * itemsize(dtype)) + " bytes of data, got " +
                              std::to_string(data.size()));
  const std::string header = npy_header(dtype, shape);
  AtomicFile out(path);
  out.write(header.data(), header.size());
  if (!data.empty()) out.write(reinterpret_cast<const char*>(data.data()), data.size());
  out.commit();
}

void write_npy(const std::string& path, const NpyArray& array) {
  write_npy(path, array.dtype, array.shape, array.data);
}

namespace {

// Minimal parser for the dict literal numpy writes: {'descr': '<i4', 'fortran_order': False, 'shape': (3, 2), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(NpyArray& out) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        std::string descr = parse_string();
        auto dt = dtype_from_npy_descr(descr);
        if (!dt) fail("descr", "unsupported dtype '" + descr + "' (little-endian integers/floats only)");
        out.dtype = *dt;
        have_descr = true;
      } else if (key == "fortran_order") {
        if (consume("False")) {
        } else if (consume("True")) {
          fail("fortran_order", "Fortran-order arrays are not supported");
        } else {
          fail("fortran_order", "expected True or False");
        }
        have_order = true;
      } else if (key == "shape") {
        out.shape = parse_shape();
        have_shape = true;
      } else {
        fail("header", "unexpected key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_ws();
      if (peek() != '}') fail("header", "expected ',' or '}'");
    }
    if (!have_descr) fail("descr", "missing");
    if (!have_order) fail("fortran_order", "missing");
    if (!have_shape) fail("shape", "missing");
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ToolError(name_, field + ": " + what);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail("header", std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  bool consume(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("header", "expected a quoted string at offset " + std::to_string(pos_));
    auto end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) fail("header", "unterminated string");
    std::string v(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return v;
  }
  std::vector<uint64_t> parse_shape() {
    std::vector<uint64_t> shape;
    expect('(');
    while (true) {
      skip_ws();
      if (peek() == ')') {
        ++pos_;
        return shape;
      }
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
      if (ec != std::errc()) fail("shape", "expected a non-negative integer at offset " + std::to_string(pos_));
      pos_ = static_cast<size_t>(p - s_.data());
      shape.push_back(v);
      skip_ws();
      if (peek() == ',') ++pos_;
      else if (peek() != ')') fail("shape", "expected ',' or ')'");
    }
  }

  std::string_view s_;
  const std::string& name_;
  size_t pos_ = 0;
};

}  // namespace

NpyArray parse_npy(std::span<const std::byte> bytes, const std::string& name) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 10 || std::memcmp(p, kMagic.data(), kMagic.size()) != 0)
    throw ToolError(name, "magic: not a .npy file (expected \\x93NUMPY)");
  const unsigned major = p[6];
  size_t header_len = 0, prefix = 0;
  if (major == 1) {
    header_len = p[8] | (size_t{p[9]} << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw ToolError(name, "header: truncated");
    header_len = p[8] | (size_t{p[9]} << 8) | (size_t{p[10]} << 16) | (size_t{p[11]} << 24);
    prefix = 12;
  } else {
    throw ToolError(name, "version: format version " + std::to_string(major) + "." + std::to_string(p[7]) +
                              " is not supported");
  }
  if (bytes.size() < prefix + header_len) throw ToolError(name, "header: truncated");
  NpyArray out;
  std::string_view text(reinterpret_cast<const char*>(p + prefix), header_len);
  HeaderParser(text, name).parse(out);
  uint64_t count = 1;
  for (uint64_t d : out.shape) {
    if (d != 0 && count > UINT64_MAX / d) throw ToolError(name, "shape: too large");
    count *= d;
  }
  const size_t isz = itemsize(out.dtype);
  const size_t body = bytes.size() - prefix - header_len;
  if (count > body / isz || count * isz != body)
    throw ToolError(name, "data: " + std::to_string(body) + " bytes, shape needs " +
                              std::to_string(count) + " elements of " + std::to_string(isz) + " bytes");
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(prefix + header_len), bytes.end());
  return out;
}

NpyArray read_npy(const std::string& path) {
  MappedFile f(path);
  return parse_npy(f.bytes(), path);
}

}  // namespace suite::dataset
