#pragma once
// What the fuzz suites share (issue #12, issue 34): seeded mutators of text and of binary
// files, and the loop that feeds a reader its inputs and says what went wrong.
//
// The rule every reader is held to: an input ends in success or in one UserError with a
// message (the CLI prints it on one line, its newlines escaped); nothing else may be thrown,
// nothing may be printed on stderr (HDF5's error stack dumps went there), no input may take
// longer than the watchdog's limit (a hang aborts the test naming the input's file), and no
// allocation may exceed STALE_MEMORY_LIMIT, which the data-file suites set to 64M (a reader
// sizes what it reads against what the file holds and the budget before it allocates). A
// crash or a sanitizer report in the --sanitize build fails the test; the input being read is
// then on disk where the suite writes its inputs.
//
// STALE_FUZZ_ITERATIONS sets the number of inputs per reader (its default is each suite's);
// STALE_FUZZ_SEED the base seed; STALE_FUZZ_KEEP=i saves input i of each suite to
// /tmp/stale-fuzz-NAME-i.bin. A failure prints the input (text) or saves it (binary) so that it
// can become a tests/bad_inputs case.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "src/core/error.hpp"
#include "src/core/rng.hpp"

namespace stale::fuzz {

namespace fs = std::filesystem;

inline int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// the files of `dir` ending in `ext`, sorted (directory order is not deterministic)
inline std::vector<std::string> files_in(const fs::path& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) out.push_back(slurp(e.path()));
  std::sort(out.begin(), out.end());
  return out;
}

// Text: byte flips, inserted "interesting" tokens (9223372036854775807, 1e308, nan, a raw
// newline), deletions, duplications, splices of two seeds, digit runs.
class TextMutator {
 public:
  TextMutator(uint64_t seed, std::vector<std::string> seeds) : state_(seed), seeds_(std::move(seeds)) {}

  std::string next() {
    std::string s = seeds_[below(seeds_.size())];
    const int rounds = below(2) == 0 ? 1 : 1 + static_cast<int>(below(4));  // half the inputs one edit from a seed
    for (int r = 0; r < rounds; ++r) mutate(s);
    if (s.size() > 4096) s.resize(4096);
    return s;
  }

 private:
  uint64_t below(uint64_t n) { return n == 0 ? 0 : splitmix64(state_++) % n; }

  void mutate(std::string& s) {
    static const std::vector<std::string> tokens = {
        "9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e308", "-1e308", "9.2e18",
        "4294967296", "2147483648", "1e9", "1e12", "nan", "inf", "-inf", "-1", "0", "0.5", "1.5", "2abc",
        "\n", "\r\n", "\"", "'", "[", "]", "{", "}", "=", ",", ":", "#", ".", "e", "-", "+", " ", "\t",
        std::string(1, '\0'), "\xff", "\xc3\xa9", "[[a]]", "[grid]", "[zip]", "[set]", "\"\"\"", "true",
        "objective.dim", "method.updates", "delay.max", "objective.stages", "1:", ":1", "99999999999:1"};
    const uint64_t pos = below(s.size() + 1);
    switch (below(7)) {
      case 0:  // flip a byte
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1 + below(255));
        break;
      case 1:  // insert a token
        s.insert(pos, tokens[below(tokens.size())]);
        break;
      case 2:  // replace a token-sized range with a token
        s.replace(pos, below(8), tokens[below(tokens.size())]);
        break;
      case 3:  // delete a range
        s.erase(pos, below(16));
        break;
      case 4: {  // duplicate a range
        const std::string piece = s.substr(pos, below(32));
        s.insert(below(s.size() + 1), piece);
        break;
      }
      case 5: {  // splice with another seed
        const std::string& other = seeds_[below(seeds_.size())];
        const uint64_t at = below(other.size() + 1);
        s = s.substr(0, pos) + other.substr(at);
        break;
      }
      default:  // a random digit run
        s.insert(pos, std::to_string(splitmix64(state_++) % 100000000000ULL));
    }
  }

  uint64_t state_;
  std::vector<std::string> seeds_;
};

// Binary files (HDF5, .npy, .npz): bit flips, bytes and 2/4/8-byte fields set to boundary
// values, truncations, inserted and deleted runs, duplicated ranges, splices — and the shape
// and size fields: every place a seed stores one of its `sizes` (the rows, columns, element
// counts and byte lengths of its arrays, little-endian in 2, 4 or 8 bytes, or in decimal as
// a .npy header writes them) is a target for a huge value (2^31, 2^32, 2^40, 2^62, 2^64 − 1):
// the 6 GB allocation of issue 34 came from such a shape. A third of the inputs are one edit
// from a seed, so the deep paths behind a valid header stay reachable.
class ByteMutator {
 public:
  ByteMutator(uint64_t seed, std::vector<std::string> seeds, std::vector<uint64_t> sizes)
      : state_(seed), seeds_(std::move(seeds)) {
    REQUIRE(!seeds_.empty());
    for (const auto& s : seeds_) fields_.push_back(find_fields(s, sizes));
  }

  std::string next() {
    const size_t i = below(seeds_.size());
    std::string s = seeds_[i];
    const int rounds = below(3) == 0 ? 1 : 1 + static_cast<int>(below(3));
    for (int r = 0; r < rounds; ++r) mutate(s, i);
    return s;
  }

 private:
  struct Field {
    size_t at;
    int width;  // 2, 4, 8 bytes little-endian; 0: decimal text of `digits` characters
    size_t digits;
  };

  uint64_t below(uint64_t n) { return n == 0 ? 0 : splitmix64(state_++) % n; }

  static std::vector<Field> find_fields(const std::string& s, const std::vector<uint64_t>& sizes) {
    std::vector<Field> out;
    for (uint64_t v : sizes) {
      for (int w : {8, 4, 2}) {
        if (w < 8 && v >> (8 * w)) continue;
        std::string pat(static_cast<size_t>(w), '\0');
        for (int b = 0; b < w; ++b) pat[static_cast<size_t>(b)] = static_cast<char>((v >> (8 * b)) & 0xff);
        for (size_t at = s.find(pat); at != std::string::npos; at = s.find(pat, at + 1)) out.push_back({at, w, 0});
      }
      const std::string dec = std::to_string(v);
      for (size_t at = s.find(dec); at != std::string::npos; at = s.find(dec, at + 1)) {
        const bool digit_before = at > 0 && std::isdigit(static_cast<unsigned char>(s[at - 1]));
        const bool digit_after =
            at + dec.size() < s.size() && std::isdigit(static_cast<unsigned char>(s[at + dec.size()]));
        if (!digit_before && !digit_after) out.push_back({at, 0, dec.size()});
      }
    }
    return out;
  }

  uint64_t huge() {
    static const uint64_t values[] = {0,          1,          0x7fffffffULL, 0x80000000ULL, 0xffffffffULL,
                                      1ULL << 32, 1ULL << 40, 1ULL << 48,    1ULL << 62,    1ULL << 63,
                                      ~0ULL,      6ULL << 30, 1ULL << 20,    0x7fffffffffffffffULL};
    return values[below(std::size(values))];
  }

  void put(std::string& s, size_t at, int width, uint64_t v) {
    for (int b = 0; b < width && at + static_cast<size_t>(b) < s.size(); ++b)
      s[at + static_cast<size_t>(b)] = static_cast<char>((v >> (8 * b)) & 0xff);
  }

  void mutate(std::string& s, size_t seed_index) {
    const auto& fields = fields_[seed_index];
    const uint64_t pos = below(s.size() + 1);
    switch (below(9)) {
      case 0:
      case 1: {  // a shape or size field → a huge value (its place in the seed; earlier edits may have moved it)
        if (fields.empty()) break;
        const Field& f = fields[below(fields.size())];
        if (f.at >= s.size()) break;
        if (f.width > 0) {
          put(s, f.at, f.width, huge());
        } else {
          s.replace(f.at, f.digits, std::to_string(huge() >> below(8)));
        }
        break;
      }
      case 2:  // flip a bit
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
        break;
      case 3:  // a byte to a boundary value
        if (!s.empty()) {
          static const unsigned char bytes[] = {0, 1, 0x7f, 0x80, 0xff};
          s[below(s.size())] = static_cast<char>(bytes[below(std::size(bytes))]);
        }
        break;
      case 4: {  // a 2/4/8-byte field anywhere to a boundary value
        const int w = 2 << below(3);
        if (s.size() >= static_cast<size_t>(w)) put(s, below(s.size() - static_cast<size_t>(w) + 1), w, huge());
        break;
      }
      case 5:  // truncate
        s.resize(below(s.size() + 1));
        break;
      case 6: {  // insert random bytes
        std::string run(1 + below(16), '\0');
        for (auto& c : run) c = static_cast<char>(below(256));
        s.insert(pos, run);
        break;
      }
      case 7:  // delete a range
        s.erase(pos, 1 + below(32));
        break;
      default: {  // duplicate a range, or splice with another seed
        if (below(2) == 0) {
          const std::string piece = s.substr(pos, 1 + below(64));
          s.insert(below(s.size() + 1), piece);
        } else {
          const std::string& other = seeds_[below(seeds_.size())];
          s = s.substr(0, pos) + other.substr(std::min<size_t>(pos, other.size()));
        }
      }
    }
  }

  uint64_t state_;
  std::vector<std::string> seeds_;
  std::vector<std::vector<Field>> fields_;
};

// Aborts the process when one input takes longer than `limit`: a hang would otherwise end in
// ctest's timeout without saying which input. The input is on disk at `input_path`.
class Watchdog {
 public:
  Watchdog(std::string name, std::string input_path, std::chrono::seconds limit)
      : name_(std::move(name)), input_(std::move(input_path)), limit_(limit), thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(m_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void tick(int64_t i) {
    std::lock_guard<std::mutex> l(m_);
    input_index_ = i;
    since_ = std::chrono::steady_clock::now();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> l(m_);
    while (!done_) {
      cv_.wait_for(l, std::chrono::milliseconds(200));
      if (!done_ && std::chrono::steady_clock::now() - since_ > limit_) {
        std::fprintf(stderr, "fuzz %s: input %lld ran longer than %lld s (a hang); it is at %s\n", name_.c_str(),
                     static_cast<long long>(input_index_), static_cast<long long>(limit_.count()), input_.c_str());
        std::abort();
      }
    }
  }
  std::string name_, input_;
  std::chrono::seconds limit_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  int64_t input_index_ = -1;
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
  std::thread thread_;
};

// stderr into a file while one input is read: a reader that prints (HDF5's error stack) fails.
// A sanitizer report is printed there too before the process aborts: SIGABRT copies what was
// captured to the real stderr first, so that the report is not lost with the process.
namespace capture_detail {
inline int saved_fd = -1;
inline char path[4096];
inline struct sigaction previous {};
extern "C" inline void on_abort(int sig) {
  if (saved_fd >= 0) {
    const int in = open(path, O_RDONLY);
    char buf[4096];
    for (ssize_t n; in >= 0 && (n = ::read(in, buf, sizeof buf)) > 0;)
      if (::write(saved_fd, buf, static_cast<size_t>(n)) < 0) break;
    dup2(saved_fd, STDERR_FILENO);
  }
  sigaction(sig, &previous, nullptr);
  raise(sig);
}
}  // namespace capture_detail

class CaptureStderr {
 public:
  explicit CaptureStderr(const fs::path& file) : path_(file) {
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, STDERR_FILENO);
    close(fd);
    std::strncpy(capture_detail::path, path_.c_str(), sizeof capture_detail::path - 1);
    capture_detail::saved_fd = saved_;
    struct sigaction sa = {};
    sa.sa_handler = capture_detail::on_abort;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGABRT, &sa, &capture_detail::previous);
  }
  ~CaptureStderr() { restore(); }
  // what was printed since
  std::string finish() {
    restore();
    return slurp(path_);
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    sigaction(SIGABRT, &capture_detail::previous, nullptr);
    capture_detail::saved_fd = -1;
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    saved_ = -1;
  }
  fs::path path_;
  int saved_ = -1;
};

struct Tally {
  int64_t accepted = 0, rejected = 0;
};

// Feeds `count` inputs from `next` to `target`, which reads `input` (written there first, or
// left to the target when input is empty). A failing input is printed (text) or saved to a
// file named in the failure (`binary`). `after`, when given, checks what an input left behind
// (open HDF5 objects) and returns what is wrong, or "".
inline Tally run_inputs(const std::string& name, int64_t count, const fs::path& input, const fs::path& scratch,
                        const std::function<std::string()>& next, const std::function<void(const std::string&)>& target,
                        bool binary, const std::function<std::string()>& after = nullptr) {
  Tally t;
  const int64_t keep = env_int("STALE_FUZZ_KEEP", -1);
  const auto t0 = std::chrono::steady_clock::now();
  Watchdog dog(name, input.string(), std::chrono::seconds(env_int("STALE_FUZZ_HANG_SECONDS", 30)));
  for (int64_t i = 0; i < count; ++i) {
    const std::string bytes = next();
    if (!input.empty()) write(input, bytes);
    if (i == keep) write(fs::temp_directory_path() / ("stale-fuzz-" + name + "-" + std::to_string(i) + ".bin"), bytes);
    dog.tick(i);
    std::string thrown, printed;
    {
      CaptureStderr capture(scratch / "stderr.txt");
      try {
        target(bytes);
        ++t.accepted;
      } catch (const UserError& e) {
        ++t.rejected;
        // the CLI prints it as one line (one_line escapes the input's newlines it may quote)
        if (std::string(e.what()).empty()) thrown = "an empty UserError";
      } catch (const std::exception& e) {
        thrown = std::string("threw ") + typeid(e).name() + ": " + e.what();
      }
      printed = capture.finish();
    }
    if (after) {
      const std::string left = after();
      if (!left.empty()) thrown += (thrown.empty() ? "" : "; ") + left;
    }
    // a warning line is the CLI's convention; anything else on stderr is a failure, but for
    // ASan's notice that it returned NULL for a malloc HDF5 made of a damaged size (only with
    // allocator_may_return_null, test_fuzz_data_files.cpp: HDF5 then fails the read cleanly)
    std::string unexpected;
    for (size_t a = 0; a < printed.size();) {
      const size_t b = std::min(printed.find('\n', a), printed.size());
      const std::string line = printed.substr(a, b - a);
      if (!line.empty() && line.rfind("warning: ", 0) != 0 &&
          line.find("WARNING: AddressSanitizer failed to allocate") == std::string::npos)
        unexpected += line + "\n";
      a = b + 1;
    }
    if (!unexpected.empty()) thrown += (thrown.empty() ? "" : "; ") + std::string("printed on stderr:\n") + unexpected;
    if (!thrown.empty()) {
      std::string kept;
      if (binary) {
        const fs::path saved = fs::temp_directory_path() / ("stale-fuzz-" + name + "-" + std::to_string(i) + ".bin");
        write(saved, bytes);
        kept = "saved at " + saved.string();
      } else {
        kept = "\n--- input ---\n" + bytes + "\n-------------";
      }
      FAIL_CHECK(name << " input " << i << ": " << thrown << " (" << kept << ")");
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(name << ": " << count << " inputs, " << t.accepted << " accepted, " << t.rejected << " rejected (UserError), "
               << secs << " s");
  CHECK(t.accepted + t.rejected == count);
  return t;
}

}  // namespace stale::fuzz
