#pragma once
// The objective interface every method reads (docs/design.md "Objective").
//
//   f(w) = (1/M) Σ_m f_m(w),   w = (w^(1), …, w^(S)) split by a BlockPartition.
//
// Three views of the same function:
//  - full value / gradient at a point (metrics, the bound, f_*),
//  - mini-batch gradient at a (mixed, stale) point, whole or one block (RPD, SGD),
//  - the stage-wise pipeline: stage s maps an activation with its block w^(s), the loss head
//    turns the last activation into the loss, backward runs the other way (docs/theory.md §7).
//    Methods without weight stashing need this view: their backward uses weights that differ
//    from the ones the forward saw.
// Batches are a fixed partition of the samples into M near-equal parts; the sampler lives in
// the method, not here.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/core/partition.hpp"
#include "src/core/state_bag.hpp"
#include "src/core/types.hpp"

namespace stale {

struct ObjectiveConstants {
  double L = std::numeric_limits<double>::quiet_NaN();  // smoothness constant of f
  bool L_exact = false;                                 // false: an upper bound (logistic)
  double mu = 0.0;                                      // strong convexity (0 if unknown)
  double f_star = std::numeric_limits<double>::quiet_NaN();
  // true: f_star is a certified lower bound f_low ≤ inf f, not the minimum (a nonconvex
  // objective, objectives/linear/nonconvex_regularizer.hpp); subopt and the bound's Δ₀ use it alike
  bool f_star_is_lower_bound = false;
  // where f_star stays unknown (NaN): a certified lower bound f_low ≤ inf f that only the bound's
  // Δ₀ = f(w₀) − f_low uses (the transformer: cross-entropy ≥ 0), so that Δ₀ is an upper bound on
  // f(w₀) − f_* while subopt stays NaN (its loss, not f − f_low, is what its figures show). The
  // nonconvex linear models put their f_low in f_star instead (f_star_is_lower_bound above).
  double f_low = std::numeric_limits<double>::quiet_NaN();
  std::optional<Vec> w_star;  // the minimiser (unset when unknown)
  std::string f_star_method;  // "closed form", "newton (‖g‖/‖g0‖ = …)", "lower bound …"
};

// What a stage keeps from its forward pass for its backward pass (activation memory).
struct StageCache {
  virtual ~StageCache() = default;
};

// Keeps f(w) and ∇f(w) current while single blocks of w change, cheaper than recomputing
// (e.g. least squares: residual and gradient updated through the Hessian's columns).
class IterateTracker {
 public:
  virtual ~IterateTracker() = default;
  // w^(s) changed by delta (the caller already changed its own copy of w)
  virtual void block_changed(int s, ConstVecRef delta) = 0;
  virtual void reset(const Vec& w) = 0;
  virtual double value() = 0;
  virtual const Vec& gradient() = 0;
  virtual double gradient_sq_norm() { return gradient().squaredNorm(); }
  // A tracker that evaluates f at the iterate itself instead of following it through the
  // deltas says false: its caller then hands it the iterate it holds (at(w), before asking for
  // a value or gradient; w must outlive those calls) instead of every block change, and the
  // tracker keeps no copy of w moved by each delta (a pass over the block per update).
  virtual bool follows_deltas() const { return true; }
  virtual void at(const Vec& /*w*/) {}
  // checkpoints (src/run/checkpoint.hpp): the incremental state, so that a resumed run's
  // metrics equal the uninterrupted run's bit for bit. The default keeps nothing: a restored
  // tracker is then the one make_tracker built at the checkpoint's iterate.
  virtual void save(StateBag&) const {}
  virtual void restore(const StateBag&) {}
};

// The trackers of the P columns of a lockstep ensemble (docs/design.md "Ensembles"), kept
// together so that applying the columns' pending block changes is one product over P columns
// instead of P. Changes are recorded per column and applied, for every column at once, when a
// value is asked for (the columns of an ensemble ask on the same cadence).
class EnsembleTracker {
 public:
  virtual ~EnsembleTracker() = default;
  virtual int columns() const = 0;
  // column p's block s changed by delta
  virtual void block_changed(int p, int s, ConstVecRef delta) = 0;
  // IterateTracker::follows_deltas / at, per column
  virtual bool follows_deltas() const { return true; }
  virtual void at(int /*p*/, const Vec& /*w*/) {}
  virtual double value(int p) = 0;
  virtual double gradient_sq_norm(int p) = 0;
  virtual Vec gradient(int p) = 0;
  // checkpoints: column p's incremental state, in the form of a single run's tracker (a
  // resumed ensemble's metrics then equal the uninterrupted ensemble's bit for bit). The
  // default keeps nothing: a restored column is then the one built at the checkpoint's iterate.
  virtual void save(int p, StateBag& b) const {
    (void)p;
    (void)b;
  }
  virtual void restore(int p, const StateBag& b) {
    (void)p;
    (void)b;
  }
};

// Column p of an ensemble tracker seen as a single run's tracker (the metrics observer of
// column p reads it as it reads its own).
std::unique_ptr<IterateTracker> column_tracker(std::shared_ptr<EnsembleTracker> ensemble, int p);

struct TextData;

// A model of text over a byte vocabulary, which `stale sample` generates from (the
// character-level GPT). An objective that is one returns itself from Objective::text_model();
// its registry entry says so (ObjectiveEntry::generates_text), so that a command can refuse
// another objective's run before building it.
class TextModel {
 public:
  virtual ~TextModel() = default;
  // the corpus: its vocabulary (token id i is vocab[i]) and encode()
  virtual const TextData& text() const = 0;
  // the longest window the model reads (T)
  virtual int context() const = 0;
  // the whole model at w on `rows` sequences of `len` ≤ context() tokens (row-major): logits
  // [rows·len × V], row r·len + t predicting the token after position t
  virtual Mat logits(const Vec& w, const std::vector<int32_t>& tokens, int rows, int len) const = 0;
};

class Objective {
 public:
  virtual ~Objective() = default;

  virtual std::string name() const = 0;
  Index dim() const { return blocks_.dim(); }
  int stages() const { return blocks_.stages(); }
  const BlockPartition& blocks() const { return blocks_; }
  virtual int num_batches() const = 0;
  virtual Index num_samples() const = 0;
  const ObjectiveConstants& constants() const { return constants_; }
  // width of the activation passed between stages (1 for the linear models)
  virtual Index activation_width() const { return 1; }
  virtual Index batch_rows(int m) const = 0;

  // ---- full objective
  virtual double value(const Vec& w) const = 0;
  virtual double value_grad(const Vec& w, Vec& grad) const = 0;

  // ---- mini-batch m ∈ {0..M−1} at a point z (z may be a mixed stale point)
  virtual double batch_value_grad(const Vec& z, int m, Vec& grad) const = 0;
  // ∇_{w^(s)} f_m(z), written into g_s (size of block s)
  virtual void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const = 0;
  // the same at the point whose block i starts at blocks[i] (a mixed point read in place from
  // the version store); the default gathers the blocks and calls batch_block_grad
  virtual void batch_block_grad_blocks(const std::vector<const double*>& blocks, int m, int s, VecRef g_s) const;

  // ---- stage-wise pipeline (batch m); in/out are [batch_rows(m) × activation_width()] for the
  // built-in objectives (the lockstep-ensemble calls below slice them so); methods only move
  // activations between an objective's own calls (a Python model holds them transposed)
  virtual void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                             std::unique_ptr<StageCache>& cache) const = 0;
  // The same forward, called where the caller promises that this micro-batch's stage_backward
  // of stage s will read w_s at this very address, which stays allocated until then (its values
  // may change in place before it: a method without weight stashing steps the live block). An
  // objective may then keep views of w_s in its cache instead of a copy of the weights
  // (stale.torch in float64 on the CPU: no weight copy per op). The default is stage_forward.
  virtual void stage_forward_pinned(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                                    std::unique_ptr<StageCache>& cache) const {
    stage_forward(s, m, in, w_s, out, cache);
  }
  // loss of f_m's data term at the last activation, and d loss / d activation
  virtual double loss_forward_backward(int m, const Mat& last, Mat& grad_last) const = 0;
  virtual void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s,
                              const StageCache* cache, VecRef grad_w_s, Mat& grad_in) const = 0;
  // the activation entering stage 0
  virtual Mat input_activation(int m) const { return Mat::Zero(batch_rows(m), activation_width()); }
  // the values of an activation or activation gradient a method holds between calls, for a
  // checkpoint: `a` itself, or, where the objective holds them elsewhere and hands out a
  // stand-in (python/stage_model_objective.hpp), the values it names (which stay held)
  virtual Mat activation_values(const Mat& a) const { return a; }

  // ---- batched evaluation: gradients of f_{batches[p]} at the columns Z[:, p] (d × P).
  // The fast path on a GPU (one GEMM instead of P GEMVs); the default loops.
  virtual void batch_grad_many(const Mat& Z, const std::vector<int>& batches, Mat& G) const;
  // full-data values and gradients at the columns of Z (d × P): G is d × P, values has P
  // entries (e.g. the same step of P runs of a sweep). The default loops over value_grad.
  virtual void value_grad_many(const Mat& Z, Mat& G, Vec& values) const;

  virtual std::unique_ptr<IterateTracker> make_tracker(const Vec& w) const;

  // ---- lockstep ensembles (docs/design.md "Ensembles"): one call for P points at once,
  // column p of every matrix belonging to point p, so that an objective can evaluate P
  // points with one GEMM where a single point takes a GEMV. Weights are d_s × P (or d × P);
  // activations are batch_rows × (P · activation_width()), point p's in the p-th slice of
  // activation_width() columns; caches hold one entry per column. With P = 1 each call is
  // the single-point call itself, bit for bit; the defaults loop over the columns.
  // G: d_s × P, at the mixed points of an ensemble's columns cols read in place from its
  // version store, which keeps each block's columns side by side: column c's block i starts at
  // blocks[i] + cols[c] · d_i (RPD's loop, optimizers/rpd.cpp). The default calls
  // batch_block_grad_blocks column by column: with P = 1 the single-point call itself.
  virtual void batch_block_grad_cols(const std::vector<const double*>& blocks, const std::vector<int>& cols, int m,
                                     int s, Mat& G) const;
  virtual void stage_forward_cols(int s, int m, const Mat& in, const Mat& W_s, Mat& out,
                                  std::vector<std::unique_ptr<StageCache>>& caches) const;
  // losses(p) is point p's loss; last holds P slices of equal width (the loss head's input need
  // not be activation_width() wide: the transformer's logits are V wide)
  virtual void loss_forward_backward_cols(int m, const Mat& last, Index P, Mat& grad_last, Vec& losses) const;
  virtual void stage_backward_cols(int s, int m, const Mat& grad_out, const Mat& W_s,
                                   const std::vector<std::unique_ptr<StageCache>>& caches, Mat& grad_W,
                                   Mat& grad_in) const;
  // the trackers of P points (W: d × P); the default keeps P single trackers
  virtual std::unique_ptr<EnsembleTracker> make_ensemble_tracker(const Mat& W) const;
  // whether the column calls above are faster than P single calls (the sweep engine groups
  // runs into ensembles only then)
  virtual bool batches_columns() const { return false; }

  // w_0 of a run: zeros (the authors' choice for the linear models); models that cannot
  // start at zero (the transformer: zero LayerNorm gains and weights give zero gradients)
  // draw their initialisation from Rng(seed, Stream::Init)
  virtual Vec initial_point(uint64_t seed) const {
    (void)seed;
    return Vec::Zero(dim());
  }
  // held-out loss at w, logged as /metrics/val_loss at the log cadence (NaN: no held-out set)
  virtual double validation_loss(const Vec& w) const {
    (void)w;
    return std::numeric_limits<double>::quiet_NaN();
  }
  // one line for the run file's /objective description ("" = the data generator's name)
  virtual std::string description() const { return ""; }

  // the data file this objective read ("" for generated data), resolved; the run file records
  // it with its size and SHA-256
  const std::string& data_file() const { return data_file_; }
  void set_data_file(std::string path) { data_file_ = std::move(path); }
  // for data handed over in memory (a Python model's: python/stale/model.py), the SHA-256 of
  // what identifies them and the bytes it covered, which the run file records in place of a
  // data file's and a resume checks as it checks a file's; "" for a data file or generated data
  virtual std::string data_checksum(uint64_t* bytes) const {
    (void)bytes;
    return "";
  }
  // whether the exact ‖∇f(w_k)‖² at every update is cheap (a tracker moves it per block
  // change): log.exact_mean = "auto" follows it
  virtual bool cheap_exact_metrics() const { return false; }

  // backend and precision this instance evaluates with
  virtual std::string backend() const { return "cpu"; }
  virtual std::string precision() const { return "float64"; }

  // the objective as a text model (nullptr: it models no text)
  virtual const TextModel* text_model() const { return nullptr; }

 protected:
  BlockPartition blocks_;
  ObjectiveConstants constants_;
  std::string data_file_;
};

}  // namespace stale
