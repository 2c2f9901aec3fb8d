// The CharLm interface over the CUDA engine (charlm_cuda_engine.hpp). Host side only: Eigen
// matrices are converted to row-major double arrays here and never reach the .cu file.
// One engine call runs at a time (a mutex): the engine keeps the last forward_all's
// activations for backward_all, and its scratch buffers are shared between calls.
#include <mutex>

#include "objectives/charlm/charlm_cuda.hpp"
#include "objectives/charlm/charlm_cuda_engine.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

using RowMatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct CudaStageCache final : StageCache {
  std::unique_ptr<CharLmCudaEngine::StageState> state;
};

std::vector<double> rows_of(const Mat& m) {
  std::vector<double> out(m.size());
  Eigen::Map<RowMatD>(out.data(), m.rows(), m.cols()) = m;
  return out;
}

Mat mat_of(const std::vector<double>& v, Index rows, Index cols) {
  return Eigen::Map<const RowMatD>(v.data(), rows, cols);
}

class CharLmCuda final : public CharLm {
 public:
  CharLmCuda(std::shared_ptr<const CharLmData> data, CharLmShape shape, CharLmCudaPrecision precision)
      : CharLm(std::move(data), shape) {
    CharLmCudaShape sh{shape_.V, shape_.E, shape_.NH, shape_.T, shape_.S};
    CharLmCudaLayout L;
    L.stage_offsets.assign(blocks_.offsets().begin(), blocks_.offsets().end());
    const auto e = embedding_layout(shape_);
    const auto b = block_layout(shape_);
    const auto h = head_layout(shape_);
    L.wte = e.wte, L.wpe = e.wpe;
    L.ln1w = b.ln1w, L.ln1b = b.ln1b, L.qkvw = b.qkvw, L.qkvb = b.qkvb, L.attprojw = b.attprojw,
    L.attprojb = b.attprojb, L.ln2w = b.ln2w, L.ln2b = b.ln2b, L.fcw = b.fcw, L.fcb = b.fcb, L.fcprojw = b.fcprojw,
    L.fcprojb = b.fcprojb;
    L.lnfw = h.lnfw, L.lnfb = h.lnfb, L.lmw = h.lmw;
    engine_ = make_charlm_cuda_engine(sh, L, precision);
  }

  std::string backend() const override { return "cuda"; }
  std::string precision() const override { return engine_->precision(); }
  std::string device_name() const { return engine_->device_name(); }
  double compute_seconds() const {
    std::lock_guard<std::mutex> lock(mu_);
    return engine_->compute_seconds();
  }

  double batch_value_grad(const Vec& z, int m, Vec& grad) const override {
    grad = Vec::Zero(z.size());
    return run_batch(z, m, 0, &grad);
  }

  void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const override {
    Vec g = Vec::Zero(z.size());
    run_batch(z, m, s, &g);
    g_s = blocks_.block(g, s);
  }

  double value(const Vec& w) const override {
    double f = 0;
    for (int m : data_->eval_batches()) f += run_batch(w, m, 0, nullptr);
    return f / static_cast<double>(data_->eval_batches().size());
  }

  double value_grad(const Vec& w, Vec& grad) const override {
    double f = 0;
    grad = Vec::Zero(w.size());
    Vec g;
    for (int m : data_->eval_batches()) {
      g = Vec::Zero(w.size());
      f += run_batch(w, m, 0, &g);
      grad += g;
    }
    const double k = static_cast<double>(data_->eval_batches().size());
    grad /= k;
    return f / k;
  }

  double validation_loss(const Vec& w) const override {
    const Index N = shape_.N();
    std::vector<int32_t> in(N), tg(N);
    double f = 0;
    for (int j = 0; j < data_->num_val_batches(); ++j) {
      data_->val_batch(j, in.data(), tg.data());
      f += forward_loss(w, in, tg, nullptr);
    }
    return f / data_->num_val_batches();
  }

  Mat logits(const Vec& w, const std::vector<int32_t>& tokens, int rows, int len) const override {
    STALE_CHECK(static_cast<Index>(tokens.size()) == Index(rows) * len && len >= 1 && len <= shape_.T,
                "tokens are rows × len, len within the context");
    for (int32_t t : tokens) STALE_CHECK(t >= 0 && t < shape_.V, "token ids within the vocabulary");
    std::vector<double> l(static_cast<size_t>(rows) * len * shape_.V);
    {
      std::lock_guard<std::mutex> lock(mu_);
      engine_->forward_all(w.data(), tokens.data(), rows, len, l.data());
    }
    return mat_of(l, Index(rows) * len, shape_.V);
  }

  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override {
    STALE_CHECK(s >= 0 && s < shape_.S && w_s.size() == blocks_.size(s), "stage id and block size");
    const Index N = shape_.N();
    const Index cols = s == shape_.S - 1 ? shape_.V : shape_.E;
    std::vector<int32_t> tok(N), tg(N);
    std::vector<double> x;
    if (s == 0) {
      data_->batch(m, tok.data(), tg.data());
    } else {
      STALE_CHECK(in.rows() == N && in.cols() == shape_.E, "a stage's input is B·T × E");
      x = rows_of(in);
    }
    const Vec ws = w_s;  // contiguous
    std::vector<double> y(N * cols);
    auto c = std::make_unique<CudaStageCache>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      c->state = engine_->stage_forward(s, shape_.B, shape_.T, tok.data(), x.data(), ws.data(), y.data());
    }
    out = mat_of(y, N, cols);
    cache = std::move(c);
  }

  double loss_forward_backward(int m, const Mat& last, Mat& grad_last) const override {
    const int N = static_cast<int>(shape_.N()), V = shape_.V;
    STALE_CHECK(last.rows() == N && last.cols() == V, "the last activation is the B·T × V logits");
    std::vector<int32_t> in(N), tg(N);
    data_->batch(m, in.data(), tg.data());
    const std::vector<double> l = rows_of(last);
    std::vector<double> dl(l.size());
    const double loss = charlm_loss_head(l.data(), tg.data(), N, V, dl.data());
    grad_last = mat_of(dl, N, V);
    return loss;
  }

  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache, VecRef grad_w_s,
                      Mat& grad_in) const override {
    (void)m;
    const auto* c = dynamic_cast<const CudaStageCache*>(cache);
    STALE_CHECK(c != nullptr && c->state, "stage_backward needs the cache of this objective's stage_forward");
    STALE_CHECK(grad_w_s.size() == blocks_.size(s) && w_s.size() == blocks_.size(s), "block sizes");
    const Index N = shape_.N();
    const std::vector<double> dout = rows_of(grad_out);
    const Vec ws = w_s;
    std::vector<double> gw(blocks_.size(s)), gin(s > 0 ? N * shape_.E : 0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      engine_->stage_backward(s, *c->state, dout.data(), ws.data(), gw.data(), gin.data());
    }
    grad_w_s = Eigen::Map<const Vec>(gw.data(), static_cast<Index>(gw.size()));
    grad_in = s > 0 ? mat_of(gin, N, shape_.E) : Mat(N, 0);
  }

 private:
  // loss of training batch m at z; its gradient (stages ≥ lowest) into *grad when asked
  double run_batch(const Vec& z, int m, int lowest, Vec* grad) const {
    const Index N = shape_.N();
    std::vector<int32_t> in(N), tg(N);
    data_->batch(m, in.data(), tg.data());
    return forward_loss(z, in, tg, grad, lowest);
  }

  double forward_loss(const Vec& z, const std::vector<int32_t>& in, const std::vector<int32_t>& tg, Vec* grad,
                      int lowest = 0) const {
    STALE_CHECK(z.size() == dim(), "w has the objective's dimension");
    const int N = static_cast<int>(shape_.N()), V = shape_.V;
    std::vector<double> l(static_cast<size_t>(N) * V), dl(grad ? l.size() : 0);
    std::lock_guard<std::mutex> lock(mu_);
    engine_->forward_all(z.data(), in.data(), shape_.B, shape_.T, l.data());
    const double loss = charlm_loss_head(l.data(), tg.data(), N, V, grad ? dl.data() : nullptr);
    if (grad) engine_->backward_all(dl.data(), lowest, grad->data());
    return loss;
  }

  std::unique_ptr<CharLmCudaEngine> engine_;
  mutable std::mutex mu_;
};

}  // namespace

CharLmCudaPrecision charlm_cuda_precision(const std::string& name) {
  if (name == "float64") return CharLmCudaPrecision::Float64;
  if (name == "float32") return CharLmCudaPrecision::Float32;
  if (name == "tf32") return CharLmCudaPrecision::Tf32;
  throw UserError("precision = \"" + name + "\": the CUDA char-level GPT takes float64 | float32 | tf32");
}

std::string to_string(CharLmCudaPrecision p) {
  switch (p) {
    case CharLmCudaPrecision::Float64: return "float64";
    case CharLmCudaPrecision::Float32: return "float32";
    case CharLmCudaPrecision::Tf32: return "tf32";
  }
  return "?";
}

std::unique_ptr<CharLm> make_charlm_cuda(std::shared_ptr<const CharLmData> data, CharLmShape shape,
                                         CharLmCudaPrecision precision) {
  return std::make_unique<CharLmCuda>(std::move(data), shape, precision);
}

double charlm_cuda_compute_seconds(const CharLm& f) {
  const auto* c = dynamic_cast<const CharLmCuda*>(&f);
  STALE_CHECK(c != nullptr, "charlm_cuda_compute_seconds needs the CUDA twin (make_charlm_cuda)");
  return c->compute_seconds();
}

}  // namespace stale
