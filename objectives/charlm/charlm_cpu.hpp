#pragma once
// CPU twin of the character-level GPT (charlm.hpp): the layers of charlm_layers.hpp with
// Eigen GEMMs and OpenMP, templated on the scalar. float is the training path (E5 with
// precision = "float32"); double is the reference the gradient checks run on.
//
// The float model converts at its edges only: w (double) to float on entry of a call, the
// double activations of the stage interface to float and back at stage boundaries (exact:
// a float survives the round trip through double), gradients back to double. Inside a
// stage everything is float, and a stage's saved activations live in its StageCache.
// The loss head (softmax cross-entropy) always runs in double on the logits.
//
// batch_value_grad is the monolithic path: the same stage functions called in the same
// order on in-memory buffers, without the Mat round trips; the stage-wise pipeline
// reproduces it bit for bit (tests/objectives/test_charlm.cpp).
#include <memory>

#include "objectives/charlm/charlm.hpp"

namespace stale {

template <class T>
class CharLmCpu final : public CharLm {
 public:
  CharLmCpu(std::shared_ptr<const CharLmData> data, CharLmShape shape);

  std::string precision() const override;

  double value(const Vec& w) const override;
  double value_grad(const Vec& w, Vec& grad) const override;
  double batch_value_grad(const Vec& z, int m, Vec& grad) const override;
  void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const override;

  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override;
  double loss_forward_backward(int m, const Mat& last, Mat& grad_last) const override;
  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache, VecRef grad_w_s,
                      Mat& grad_in) const override;

  double validation_loss(const Vec& w) const override;
  Mat logits(const Vec& w, const std::vector<int32_t>& tokens, int rows, int len) const override;

  // the monolithic forward of training batch m at w: its loss, and its logits [B·T × V]
  // when asked for
  double batch_loss(const Vec& w, int m, Mat* logits_out = nullptr) const;

 private:
  // one aligned T buffer per stage (parameters or their gradients)
  using Blocks = std::vector<std::vector<T, Eigen::aligned_allocator<T>>>;
  Blocks to_blocks(const Vec& w) const;
  Blocks zero_blocks() const;
  // forward (and backward when grads ≠ null, down to stage `lowest`) of the whole model on
  // rows × len tokens; targets null = no loss (returns 0)
  double run(const Blocks& params, const int32_t* inputs, const int32_t* targets, int rows, int len, Blocks* grads,
             int lowest, Mat* logits_out) const;
};

extern template class CharLmCpu<float>;
extern template class CharLmCpu<double>;

}  // namespace stale
