#pragma once
// The character-level GPT objective (docs/theory.md §7, experiment E5): a GPT-2-style model cut
// into S pipeline stages,
//
//   stage 0          token + position embedding                x = wte[tok] + wpe[t]
//   stage 1 … S−2    one pre-LayerNorm transformer block each  x += attn(ln1(x)); x += mlp(ln2(x))
//   stage S−1        final LayerNorm + bias-free LM head       logits = ln_f(x) · W_lmᵀ
//   loss head        mean cross-entropy over the B·T positions
//
// with causal multi-head self-attention (fused QKV, output projection) and an MLP of width
// 4E with GELU. w is the flat vector of all parameters, stage by stage (unequal block
// sizes, BlockPartition with explicit offsets); inside a stage the tensors follow llm.c's
// order (see the *Layout structs). Activations between stages are [B·T × E] (rows b·T + t);
// the last stage's output is the [B·T × V] logits, which the loss head reads.
//
//   f(w) = (1/M) Σ_m f_m(w),  f_m = mean next-character cross-entropy on training batch m,
//
// batch m being B fixed windows of T + 1 characters of the training split (CharLmData).
// f itself is too expensive to evaluate exactly, so value()/value_grad() — what the run
// log's "loss" series and ‖∇f‖² report — are the mean over a fixed set of kEvalBatches
// training batches (drawn once from the seed's Eval stream); validation_loss() is the mean
// over kValBatches fixed batches of the validation split. L and f_* are unknown (NaN): the bound's
// Δ₀ uses f_low = 0 (cross-entropy ≥ 0), and a run estimates L along its path
// (src/theory/smoothness_estimator.hpp, log.L_estimate), labelled an estimate wherever it is written.
#include <memory>
#include <string>
#include <vector>

#include "objectives/data/text_data.hpp"
#include "objectives/objective.hpp"
#include "src/backend/backend.hpp"

namespace stale {

class Config;

struct CharLmShape {
  int V = 65;   // vocabulary
  int E = 64;   // embedding width (channels C)
  int NH = 4;   // attention heads
  int T = 32;   // context length
  int B = 16;   // windows per mini-batch
  int S = 6;    // pipeline stages: 1 embedding + (S − 2) blocks + 1 head
  int layers() const { return S - 2; }
  Index N() const { return Index(B) * T; }
};

// parameter offsets inside each stage's block of w
struct EmbeddingLayout {
  Index wte, wpe, size;  // wte [V, E], wpe [T, E]
};
struct BlockLayout {
  // ln1 [E]×2, qkv [3E, E] + [3E], attn proj [E, E] + [E], ln2 [E]×2, fc [4E, E] + [4E],
  // fc proj [E, 4E] + [E]: 12E² + 13E values
  Index ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb, size;
};
struct HeadLayout {
  Index lnfw, lnfb, lmw, size;  // ln_f [E]×2, LM head [V, E] (no bias)
};
EmbeddingLayout embedding_layout(const CharLmShape& sh);
BlockLayout block_layout(const CharLmShape& sh);
HeadLayout head_layout(const CharLmShape& sh);
// block boundaries of w: {0, |stage 0|, …, d}
std::vector<Index> charlm_stage_offsets(const CharLmShape& sh);
Index charlm_parameter_count(const CharLmShape& sh);

// GPT-2 initialisation: weights N(0, 0.02²), the two residual projections of each block
// N(0, (0.02/√(2·layers))²), biases 0, LayerNorm gains 1. Stage s draws from
// Rng(seed, Stream::Init, s), so a stage's init does not depend on the other stages.
Vec charlm_init(const CharLmShape& sh, uint64_t seed);

// The batches of the objective over a text corpus.
class CharLmData {
 public:
  static constexpr int kEvalBatches = 8;  // training batches behind value()/value_grad()
  static constexpr int kValBatches = 8;   // validation batches behind validation_loss()

  // `windows` training windows (M = windows / B batches) drawn from Rng(seed, DataGen);
  // evaluation batch ids from Rng(seed, Eval, 0); validation windows from Rng(seed, Eval, 1)
  CharLmData(std::shared_ptr<const TextData> text, int B, int T, Index windows, uint64_t seed);

  const TextData& text() const { return *text_; }
  int B() const { return B_; }
  int T() const { return T_; }
  int num_batches() const { return M_; }
  // inputs and targets of training batch m, B·T tokens each, row b·T + t
  void batch(int m, int32_t* inputs, int32_t* targets) const;
  const std::vector<int>& eval_batches() const { return eval_; }
  int num_val_batches() const { return static_cast<int>(val_starts_.size()) / B_; }
  void val_batch(int j, int32_t* inputs, int32_t* targets) const;

 private:
  void gather(const std::vector<Index>& starts, Index first, int32_t* inputs, int32_t* targets) const;
  std::shared_ptr<const TextData> text_;
  int B_, T_, M_;
  std::vector<Index> starts_, val_starts_;
  std::vector<int> eval_;
};

// What every twin (CPU float32/float64, CUDA) of the objective offers beyond Objective.
class CharLm : public Objective, public TextModel {
 public:
  CharLm(std::shared_ptr<const CharLmData> data, CharLmShape shape);

  std::string name() const override { return "charlm"; }
  int num_batches() const override { return data_->num_batches(); }
  Index num_samples() const override { return Index(data_->num_batches()) * shape_.B; }
  Index activation_width() const override { return shape_.E; }
  Index batch_rows(int) const override { return shape_.N(); }
  // stage 0 reads the tokens of batch m, not an activation: its input is an empty B·T × 0
  Mat input_activation(int m) const override { return Mat(batch_rows(m), 0); }
  Vec initial_point(uint64_t seed) const override { return charlm_init(shape_, seed); }
  std::string description() const override;

  const CharLmShape& shape() const { return shape_; }
  const CharLmData& data() const { return *data_; }

  // mean cross-entropy over the fixed validation batches
  double validation_loss(const Vec& w) const override = 0;
  // TextModel: the corpus, T, and logits() (each twin's)
  const TextModel* text_model() const override { return this; }
  const TextData& text() const override { return data_->text(); }
  int context() const override { return shape_.T; }

 protected:
  std::shared_ptr<const CharLmData> data_;
  CharLmShape shape_;
};

// The loss head every twin runs on the host, in double: mean softmax cross-entropy of
// row-major logits [N × V] against targets, and (when dlogits ≠ null) its gradient.
double charlm_loss_head(const double* logits, const int32_t* targets, int N, int V, double* dlogits);

// config → shape (objective.embedding, heads, context, batch_size, stages), checked
CharLmShape charlm_shape_from_config(const Config& cfg, int vocab);
// config → data (objective.data, default tinyshakespeare.txt, resolved by
// resolve_data_file; objective.samples training windows)
std::shared_ptr<const CharLmData> charlm_data_from_config(const Config& cfg, int B, int T);
// config → objective on `backend`: the CPU twin in float32 when precision = "float32"
// (the E5 training path), float64 otherwise; the CUDA twin in the configured precision
std::unique_ptr<Objective> make_charlm(const Config& cfg, BackendKind backend);

}  // namespace stale
