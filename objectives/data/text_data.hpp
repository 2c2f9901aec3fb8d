#pragma once
// A character-level text corpus (docs/theory.md §7: Tiny Shakespeare, 65 characters).
//
// The vocabulary is the sorted set of distinct bytes of the file (token id = rank), so it is
// a pure function of the text; the token stream is split once into the first 90 % (train)
// and the last 10 % (validation), as in nanoGPT's shakespeare_char.
// Windows: a training batch is B windows of T + 1 consecutive tokens (inputs = the first T,
// targets = the last T); their start offsets are drawn once from a seeded stream, so batch m
// is a fixed set — the harness's f(w) = (1/M) Σ_m f_m(w) with fixed f_m.
#include <cstdint>
#include <string>
#include <vector>

#include "src/core/rng.hpp"
#include "src/core/types.hpp"

namespace stale {

struct TextData {
  std::string vocab;            // sorted distinct bytes; token id i is vocab[i]
  std::vector<uint8_t> tokens;  // the whole text, encoded
  Index train_end = 0;          // tokens [0, train_end) train, [train_end, size) validation

  int vocab_size() const { return static_cast<int>(vocab.size()); }
  Index train_size() const { return train_end; }
  Index val_size() const { return static_cast<Index>(tokens.size()) - train_end; }
  // token id of a byte, −1 when the byte is not in the vocabulary
  int encode(char c) const;
  std::string decode(const std::vector<int>& ids) const;
};

// Reads `path`, builds the vocabulary and the split (train_fraction of the tokens first).
// Throws a UserError when the file cannot be read or is too short to split.
TextData load_text(const std::string& path, double train_fraction = 0.9);
// the same from text in memory (tests)
TextData make_text_data(const std::string& text, double train_fraction = 0.9);

// Start offsets of `count` windows of `length` tokens inside [begin, end), uniform and
// independent, from Rng(seed, stream, substream). Requires end − begin ≥ length.
std::vector<Index> draw_windows(Index begin, Index end, Index length, Index count, uint64_t seed, Stream stream,
                                uint64_t substream = 0);

}  // namespace stale
