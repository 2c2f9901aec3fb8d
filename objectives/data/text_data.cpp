#include "objectives/data/text_data.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "src/core/error.hpp"

namespace stale {

int TextData::encode(char c) const {
  const auto it = std::lower_bound(vocab.begin(), vocab.end(), c,
                                   [](char a, char b) { return static_cast<uint8_t>(a) < static_cast<uint8_t>(b); });
  return it != vocab.end() && *it == c ? static_cast<int>(it - vocab.begin()) : -1;
}

std::string TextData::decode(const std::vector<int>& ids) const {
  std::string s;
  s.reserve(ids.size());
  for (int id : ids) {
    STALE_CHECK(id >= 0 && id < vocab_size(), "token id outside the vocabulary");
    s.push_back(vocab[id]);
  }
  return s;
}

TextData make_text_data(const std::string& text, double train_fraction) {
  STALE_CHECK(train_fraction > 0 && train_fraction < 1, "train_fraction in (0, 1)");
  TextData d;
  std::array<bool, 256> seen{};
  for (char c : text) seen[static_cast<uint8_t>(c)] = true;
  for (int b = 0; b < 256; ++b)
    if (seen[b]) d.vocab.push_back(static_cast<char>(b));
  std::array<uint8_t, 256> id{};
  for (size_t i = 0; i < d.vocab.size(); ++i) id[static_cast<uint8_t>(d.vocab[i])] = static_cast<uint8_t>(i);
  d.tokens.resize(text.size());
  for (size_t i = 0; i < text.size(); ++i) d.tokens[i] = id[static_cast<uint8_t>(text[i])];
  d.train_end = static_cast<Index>(train_fraction * static_cast<double>(text.size()));
  return d;
}

TextData load_text(const std::string& path, double train_fraction) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(path + ": is a directory, not a text corpus");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open the text corpus");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() < 100)
    throw UserError(path + ": the corpus has " + std::to_string(text.size()) +
                    " bytes; a character LM needs at least a few hundred (is it the right file?)");
  return make_text_data(text, train_fraction);
}

std::vector<Index> draw_windows(Index begin, Index end, Index length, Index count, uint64_t seed, Stream stream,
                                uint64_t substream) {
  STALE_CHECK(end - begin >= length, "the span must hold one window");
  Rng rng(seed, stream, substream);
  const uint64_t positions = static_cast<uint64_t>(end - begin - length + 1);
  std::vector<Index> starts(count);
  for (auto& s : starts) s = begin + static_cast<Index>(rng.uniform_int(positions));
  return starts;
}

}  // namespace stale
