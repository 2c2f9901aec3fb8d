#pragma once
// A stage-wise objective defined in Python (README "Your own model"): the user's stages, loss
// and data (python/stale/model.py, stale.StageModel) seen through the C++ Objective interface,
// so that every method, schedule, version store, observer and run file of the harness drives
// it unchanged. Each call takes the interpreter lock (the run itself releases it).
//
// What crosses the boundary, and why:
//  - a stage's parameters w_s (and the full w for a validation loss) go to Python as numpy
//    views of the harness's own storage, no copy: they are valid for the call only;
//  - activations and their gradients are copied into an array Python owns: a model keeps its
//    input in its cache for the backward pass, long after the executor freed that Mat;
//  - everything Python returns is copied into the harness's Mat / Vec (one copy per op).
// An activation is held transposed, as the Mat [width × rows], whose column-major storage is
// numpy's C-order [rows × width]: each copy is one memcpy (or one cast, for a float32 model). (The transposing copies of a
// [rows × width] Mat were the largest cost of a run of 512-wide stages: results/PERFORMANCE.md,
// "PyTorch stages".) Methods only move activations between this objective's own calls, so
// their layout is its own; activation_width() is the input's width.
// A model that keeps its activations (stale.torch: tensors that stay on their device) hands its
// forward activations and their gradients over as Python objects: the objective holds each one
// and gives the executor a ticket in its place, an empty Mat (0 rows) whose column count names
// it; the next forward, the loss or the next backward takes the object back (each is read once:
// the executor drops an op's input after the call). Forward activations are never checkpointed
// (a resumed run recomputes them); a checkpoint stores the gradients in flight as values
// (activation_values: the held object copied out, still held), and a resumed run hands those
// to the model as arrays. Stage 0's input gradient is not held (the driver returns None for
// it: nothing reads it), and a gradient that no later call takes (pipeline() stopping above
// stage 0) is released, so the table holds only what is in flight.
// The Python side (model.py's driver) checks shapes, sizes and dtypes and raises
// stale.ConfigError with one line; a Python exception propagates unchanged out of the run,
// and the run file is removed (RunSession::abort), as for any failed run.
#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "objectives/objective.hpp"

namespace stale {

class StageModelObjective final : public Objective {
 public:
  // `driver`: a stale.model._Driver around the user's model; `seed`: the run's seed (its
  // initial point and the dropout streams of stale.torch). Calls driver.prepare(seed), which
  // probes batch 0 through every stage (shape, size and finiteness checks) before any file exists.
  StageModelObjective(nanobind::object driver, uint64_t seed);
  ~StageModelObjective() override;

  std::string name() const override { return "python"; }
  std::string description() const override { return description_; }
  int num_batches() const override { return static_cast<int>(rows_.size()); }
  Index num_samples() const override { return samples_; }
  Index batch_rows(int m) const override { return rows_[static_cast<size_t>(m)]; }
  // activations differ in width from stage to stage; only the ensemble column calls read this,
  // and a Python model never runs in a lockstep ensemble (its registry entry says so)
  Index activation_width() const override { return input_width_; }

  // f = (1/M) Σ_m f_m and its gradient, every batch through the pipeline at w
  double value(const Vec& w) const override;
  double value_grad(const Vec& w, Vec& grad) const override;
  double batch_value_grad(const Vec& z, int m, Vec& grad) const override;
  // forward through every stage, backward from the last stage down to s
  void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const override;

  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override;
  // the driver is told that w_s stays where it is until the backward (a model that says
  // _pinned_views, stale.torch in float64 on the CPU, then views it instead of copying it)
  void stage_forward_pinned(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                            std::unique_ptr<StageCache>& cache) const override;
  double loss_forward_backward(int m, const Mat& last, Mat& grad_last) const override;
  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache, VecRef grad_w_s,
                      Mat& grad_in) const override;
  Mat input_activation(int m) const override;
  Mat activation_values(const Mat& a) const override;

  Vec initial_point(uint64_t seed) const override;
  double validation_loss(const Vec& w) const override;
  // the driver's checksum of the model's data and stages (model.py's data_checksum): what a
  // resume must find again; asked only where a run file is written (hashing the data is 0.16 s
  // per 188 MB), once
  std::string data_checksum(uint64_t* bytes) const override;

 private:
  // batch m's loss at z and, when grad is given, the gradient of blocks lowest..S-1 written
  // into grad (stages below `lowest` skip their backward)
  double pipeline(const Vec& z, int m, Vec* grad, int lowest) const;
  void forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out, std::unique_ptr<StageCache>& cache,
               bool pinned) const;

  // the activation the executor hands in: the held object a ticket names (taken out of the
  // table), or a copy of a's values as a numpy array
  nanobind::object take_activation(const Mat& a) const;
  // the model's activation as the executor's Mat: a ticket when the model keeps its
  // activations, else a copy of its values
  void give_activation(nanobind::handle obj, Mat& out, const char* what) const;
  // drops the object a ticket names (a gradient nothing will take); anything else is left alone
  void release(const Mat& a) const;
  bool is_ticket(const Mat& a) const { return keeps_activations_ && a.rows() == 0 && a.cols() > 0; }

  nanobind::object driver_;
  bool keeps_activations_ = false;
  bool writes_gradients_ = false;  // the model writes grad_w_s into the harness's storage (model.py)
  mutable std::unordered_map<Index, nanobind::object> held_;  // ticket → activation (GIL held)
  mutable Index next_ticket_ = 1;
  std::vector<Index> rows_;
  Index samples_ = 0;
  Index input_width_ = 1;
  std::string description_;
  bool has_validation_ = false;
  bool f32_ = false;  // activations go to Python as float32 (the model's activation_dtype)
  Vec w0_;
  uint64_t seed_ = 0;
  mutable std::string data_sha_;  // "" until asked
  mutable uint64_t data_bytes_ = 0;
};

}  // namespace stale
