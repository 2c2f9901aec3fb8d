#include "objectives/data/npy.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "src/core/error.hpp"

namespace stale {

namespace {

[[noreturn]] void bad(const std::string& what, const std::string& why) { throw UserError(what + ": " + why); }

// header text quoted in a message: at most 40 bytes, control and non-ASCII bytes as \xNN (a
// damaged header's newline would break the one-line error)
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  return s.size() > 40 ? out + "…" : out;
}

std::string read_bytes(const std::string& path, const std::string& kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open " + kind + " file");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

uint64_t le(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}

// the value of 'key' in the header dict, as the raw text up to the next top-level comma
std::string header_field(const std::string& h, const std::string& key, const std::string& what) {
  const auto at = h.find("'" + key + "'");
  if (at == std::string::npos) bad(what, "the .npy header has no '" + printable(key) + "' field");
  auto p = h.find(':', at);
  if (p == std::string::npos) bad(what, "the .npy header's '" + key + "' field has no value");
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  size_t end = p;
  int depth = 0;
  while (end < h.size()) {
    const char c = h[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if ((c == ',' && depth == 0) || c == '}') break;
    ++end;
  }
  return h.substr(p, end - p);
}

template <class T>
double value_at(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

}  // namespace

int64_t NpyArray::size() const {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

NpyArray parse_npy(const std::string& b, const std::string& what) {
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) bad(what, "not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(b[6]);
  if (major < 1 || major > 3) bad(what, ".npy format version " + std::to_string(major) + " is not 1, 2 or 3");
  const size_t len_bytes = major == 1 ? 2 : 4, start = 8 + len_bytes;
  if (b.size() < start) bad(what, "truncated .npy header");
  const size_t header_len = le(b, 8, static_cast<int>(len_bytes));
  if (b.size() < start + header_len) bad(what, "truncated .npy header");
  const std::string h = b.substr(start, header_len);

  std::string descr = header_field(h, "descr", what);
  if (descr.size() < 4 || descr.front() != '\'' || descr.back() != '\'')
    bad(what, "dtype " + printable(descr) + " is not a simple dtype (structured arrays are not data matrices)");
  descr = descr.substr(1, descr.size() - 2);
  const char order = descr[0], kind = descr[1];
  const int item = std::atoi(descr.c_str() + 2);
  if (order == '>' && item > 1)
    bad(what, "dtype " + printable(descr) + " is big-endian; save little-endian (the default)");
  using Reader = double (*)(const char*);
  Reader read = nullptr;
  if (kind == 'f' && item == 8) read = value_at<double>;
  if (kind == 'f' && item == 4) read = value_at<float>;
  if (kind == 'i' && item == 8) read = value_at<int64_t>;
  if (kind == 'i' && item == 4) read = value_at<int32_t>;
  if (kind == 'i' && item == 2) read = value_at<int16_t>;
  if (kind == 'i' && item == 1) read = value_at<int8_t>;
  if (kind == 'u' && item == 8) read = value_at<uint64_t>;
  if (kind == 'u' && item == 4) read = value_at<uint32_t>;
  if (kind == 'u' && item == 2) read = value_at<uint16_t>;
  if ((kind == 'u' || kind == 'b') && item == 1) read = value_at<uint8_t>;
  if (!read)
    bad(what, "dtype " + printable(descr) + " is not a real, integer or bool type (float64/32, int, uint, bool)");

  const std::string fortran = header_field(h, "fortran_order", what);
  if (fortran != "True" && fortran != "False")
    bad(what, "fortran_order is " + printable(fortran) + ", not True or False");
  const std::string shape = header_field(h, "shape", what);
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    bad(what, "shape " + printable(shape) + " is not a tuple");
  NpyArray a;
  std::istringstream ss(shape.substr(1, shape.size() - 2));
  for (std::string tok; std::getline(ss, tok, ',');) {
    if (tok.find_first_not_of(' ') == std::string::npos) continue;
    char* end = nullptr;
    const long long v = std::strtoll(tok.c_str(), &end, 10);
    if (v < 0 || *end != '\0') bad(what, "shape " + printable(shape) + " has a non-integer entry");
    a.shape.push_back(v);
  }
  // the values the shape declares, without overflow, before anything is sized by them: a
  // shape of (2^33, 2^33, 3) is 2^67 values, which wrapped round to a small count (issue 34)
  uint64_t n = 1, need = 0;
  bool overflow = false;
  for (int64_t d : a.shape) overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n);
  overflow |= __builtin_mul_overflow(n, static_cast<uint64_t>(item), &need);
  const size_t data_at = start + header_len;
  if (overflow || b.size() - data_at < need)
    bad(what, "truncated: shape " + printable(shape) + " needs " +
                  (overflow ? "more than 2^64" : std::to_string(need)) + " bytes of data, the file has " +
                  std::to_string(b.size() - data_at));
  a.values.resize(static_cast<size_t>(n));
  const char* p = b.data() + data_at;
  if (fortran == "False" || a.shape.size() < 2) {
    for (uint64_t i = 0; i < n; ++i) a.values[i] = read(p + i * static_cast<uint64_t>(item));
  } else {
    // column-major on disk: element (i0, i1, ...) sits at i0 + s0 (i1 + s1 (...)); store C order
    std::vector<int64_t> idx(a.shape.size(), 0);
    for (uint64_t f = 0; f < n; ++f) {
      int64_t c = 0;
      for (size_t k = 0; k < a.shape.size(); ++k) c = c * a.shape[k] + idx[k];
      a.values[static_cast<size_t>(c)] = read(p + f * static_cast<uint64_t>(item));
      for (size_t k = 0; k < idx.size() && ++idx[k] == a.shape[k]; ++k) idx[k] = 0;
    }
  }
  return a;
}

NpyArray load_npy(const std::string& path) { return parse_npy(read_bytes(path, ".npy"), path); }

std::map<std::string, NpyArray> load_npz(const std::string& path) {
  const std::string b = read_bytes(path, ".npz");
  // the end-of-central-directory record: signature PK\5\6, within the last 64 KiB + 22 bytes
  if (b.size() < 22) bad(path, "not an .npz file (too short for a zip archive)");
  size_t eocd = std::string::npos;
  for (size_t i = b.size() - 22 + 1; i-- > 0 && b.size() - i <= 65557;)
    if (b.compare(i, 4, "PK\x05\x06") == 0) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos) bad(path, "not an .npz file (no zip end-of-central-directory record)");
  const uint64_t entries = le(b, eocd + 10, 2);
  uint64_t cd = le(b, eocd + 16, 4);
  std::map<std::string, NpyArray> out;
  for (uint64_t e = 0; e < entries; ++e) {
    if (cd + 46 > b.size() || b.compare(cd, 4, "PK\x01\x02") != 0) bad(path, "corrupt zip central directory");
    const uint64_t method = le(b, cd + 10, 2);
    uint64_t csize = le(b, cd + 20, 4), usize = le(b, cd + 24, 4), local = le(b, cd + 42, 4);
    const size_t name_len = le(b, cd + 28, 2), extra_len = le(b, cd + 30, 2), comment_len = le(b, cd + 32, 2);
    if (cd + 46 + name_len + extra_len > b.size()) bad(path, "corrupt zip central directory");
    const std::string name = b.substr(cd + 46, name_len);
    // zip64: sizes/offset of 0xFFFFFFFF live in the extra field 0x0001, in this order; each
    // read stays inside the field (a damaged length pointed past it, and past the file)
    const size_t extra_end = cd + 46 + name_len + extra_len;
    for (size_t x = cd + 46 + name_len; x + 4 <= extra_end;) {
      const uint64_t id = le(b, x, 2), len = le(b, x + 2, 2);
      const size_t field_end = std::min<size_t>(extra_end, x + 4 + len);
      size_t q = x + 4;
      if (id == 1) {
        if (usize == 0xFFFFFFFFu && q + 8 <= field_end) usize = le(b, q, 8), q += 8;
        if (csize == 0xFFFFFFFFu && q + 8 <= field_end) csize = le(b, q, 8), q += 8;
        if (local == 0xFFFFFFFFu && q + 8 <= field_end) local = le(b, q, 8), q += 8;
      }
      x += 4 + len;
    }
    cd += 46 + name_len + extra_len + comment_len;
    const std::string what = path + ": member " + printable(name);
    if (method == 8) bad(what, "is deflate-compressed (np.savez_compressed); save with np.savez or as .npy files");
    if (method != 0) bad(what, "uses zip compression method " + std::to_string(method) + "; save with np.savez");
    // offsets and sizes compared by subtraction: a zip64 value near 2^64 wrapped a sum round
    if (local > b.size() || b.size() - local < 30 || b.compare(local, 4, "PK\x03\x04") != 0)
      bad(what, "corrupt zip local header");
    const uint64_t data = local + 30 + le(b, local + 26, 2) + le(b, local + 28, 2);
    if (data > b.size() || csize > b.size() - data || csize != usize) bad(what, "truncated zip member");
    std::string key = name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    out[key] = parse_npy(b.substr(data, csize), what);
  }
  if (out.empty()) bad(path, "the .npz archive holds no arrays");
  return out;
}

}  // namespace stale
