// The CUDA linear models as an Objective: the host half of the CUDA twin of
// linear_model_cpu.cpp. Everything that touches the data runs on the device through
// LinearCudaEngine (linear_model_cuda.cu); this adapter maps the Objective calls onto its
// four operations and adds the (λ/2)‖w‖² term and the nonconvex regulariser r(w)
// (objectives/linear/nonconvex_regularizer.hpp: coordinate-wise, the CPU twin's own code) on the host
// in double, where the point is.
// It contains no CUDA code and is compiled by the host compiler in every build; without
// nvcc the engine factory is the stub that says "built without CUDA".
//
// Batch bookkeeping mirrors the CPU twin exactly: batch m is rows [off_m, off_m+1), a batch
// loss is the mean over its rows (scale 1/b_m), the full loss uses the sample weights c_i.
// Like the CPU twin, mini-batch gradients at one point are evaluated stage by stage
// (staged = true), so they equal the stage-wise pipeline's bit for bit; full-data and
// batched calls are single products.
#include <map>

#include "objectives/linear/linear_cuda_engine.hpp"
#include "objectives/linear/linear_model_cuda.hpp"
#include "objectives/linear/nonconvex_regularizer.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

class LinearModelCuda final : public Objective {
 public:
  LinearModelCuda(std::shared_ptr<const LinearData> data, int stages, double l2, NonconvexRegularizer reg,
                  LinearLoss loss, Precision precision, const ObjectiveConstants& constants)
      : data_(std::move(data)), l2_(l2), reg_(reg), loss_(loss) {
    blocks_ = BlockPartition(data_->d(), stages);
    constants_ = constants;
    LinearCudaData view{data_->X.data(), data_->y.data(), data_->weight.data(), data_->n(), data_->d(), {}};
    for (Index off : blocks_.offsets()) view.block_offsets.push_back(off);
    engine_ = make_linear_cuda_engine(view, loss, precision);
  }

  std::string name() const override { return loss_ == LinearLoss::Logistic ? "logistic" : "quadratic"; }
  int num_batches() const override { return data_->num_batches(); }
  Index num_samples() const override { return data_->n(); }
  Index batch_rows(int m) const override { return data_->batch_offsets[m + 1] - data_->batch_offsets[m]; }
  std::string backend() const override { return "cuda"; }
  std::string precision() const override { return engine_->precision(); }

  double value(const Vec& w) const override {
    check_point(w);
    double v = 0;
    engine_->grad_many(w.data(), 1, {full_group(1)}, true, false, 0, 0, nullptr, &v);
    v += 0.5 * l2_ * w.squaredNorm();
    if (reg_.active()) v += reg_.value(w);
    return v;
  }

  double value_grad(const Vec& w, Vec& grad) const override {
    check_point(w);
    grad.resize(dim());
    double v = 0;
    engine_->grad_many(w.data(), 1, {full_group(1)}, true, false, 0, dim(), grad.data(), &v);
    if (l2_ != 0) grad += l2_ * w;
    v += 0.5 * l2_ * w.squaredNorm();
    if (reg_.active()) {
      reg_.add_gradient(w, grad);
      v += reg_.value(w);
    }
    return v;
  }

  double batch_value_grad(const Vec& z, int m, Vec& grad) const override {
    check_point(z);
    grad.resize(dim());
    double v = 0;
    engine_->grad_many(z.data(), 1, {batch_group(m, 0, 1)}, false, true, 0, dim(), grad.data(), &v);
    if (l2_ != 0) grad += l2_ * z;
    v = v * (1.0 / static_cast<double>(batch_rows(m))) + 0.5 * l2_ * z.squaredNorm();
    if (reg_.active()) {
      reg_.add_gradient(z, grad);
      v += reg_.value(z);
    }
    return v;
  }

  void batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const override {
    check_point(z);
    const Index off = blocks_.offset(s), ds = blocks_.size(s);
    STALE_CHECK(g_s.size() == ds, "g_s has the size of block s");
    engine_->grad_many(z.data(), 1, {batch_group(m, 0, 1)}, false, true, off, ds, g_s.data(), nullptr);
    if (l2_ != 0) g_s += l2_ * z.segment(off, ds);
    if (reg_.active()) reg_.add_gradient(z.segment(off, ds), g_s);
  }

  void stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                     std::unique_ptr<StageCache>& cache) const override {
    cache.reset();  // a linear stage needs nothing from its forward pass for its backward pass
    const Index b = batch_rows(m);
    STALE_CHECK(in.rows() == b && in.cols() == 1 && w_s.size() == blocks_.size(s), "in is b × 1, w_s is block s");
    out.resize(b, 1);
    engine_->forward_slice(data_->batch_offsets[m], b, blocks_.offset(s), blocks_.size(s), w_s.data(), in.data(),
                           out.data());
  }

  double loss_forward_backward(int m, const Mat& last, Mat& grad_last) const override {
    const Index b = batch_rows(m);
    STALE_CHECK(last.rows() == b && last.cols() == 1, "the last activation is b × 1");
    grad_last.resize(b, 1);
    const double inv_b = 1.0 / static_cast<double>(b);
    return engine_->loss_head(data_->batch_offsets[m], b, last.data(), inv_b, grad_last.data()) * inv_b;
  }

  void stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache*, VecRef grad_w_s,
                      Mat& grad_in) const override {
    const Index b = batch_rows(m), ds = blocks_.size(s);
    STALE_CHECK(grad_out.rows() == b && grad_out.cols() == 1 && grad_w_s.size() == ds, "grad_out is b × 1");
    engine_->backward_slice(data_->batch_offsets[m], b, blocks_.offset(s), ds, grad_out.data(), grad_w_s.data());
    if (l2_ != 0) grad_w_s += l2_ * w_s;
    if (reg_.active()) reg_.add_gradient(w_s, grad_w_s);
    grad_in = grad_out;  // d(in + X_s w_s)/d in = I
  }

  // Columns are grouped by batch so that each distinct batch is one GEMM pair on the device;
  // the packed order is undone on the host.
  void batch_grad_many(const Mat& Z, const std::vector<int>& batches, Mat& G) const override {
    STALE_CHECK(Z.rows() == dim() && static_cast<size_t>(Z.cols()) == batches.size(), "Z is d × P, one batch per column");
    const int P = static_cast<int>(Z.cols());
    G.resize(dim(), P);
    if (P == 0) return;
    std::map<int, std::vector<int>> by_batch;
    for (int p = 0; p < P; ++p) {
      STALE_CHECK(batches[p] >= 0 && batches[p] < num_batches(), "batch ids lie in [0, M)");
      by_batch[batches[p]].push_back(p);
    }
    if (by_batch.size() == 1) {
      engine_->grad_many(Z.data(), P, {batch_group(batches[0], 0, P)}, false, false, 0, dim(), G.data(), nullptr);
    } else {
      Mat Zp(dim(), P), Gp(dim(), P);
      std::vector<int> order;
      std::vector<LinearCudaEngine::Group> groups;
      for (const auto& [m, cols] : by_batch) {
        groups.push_back(batch_group(m, static_cast<int>(order.size()), static_cast<int>(cols.size())));
        for (int p : cols) {
          Zp.col(static_cast<Index>(order.size())) = Z.col(p);
          order.push_back(p);
        }
      }
      engine_->grad_many(Zp.data(), P, groups, false, false, 0, dim(), Gp.data(), nullptr);
      for (int j = 0; j < P; ++j) G.col(order[j]) = Gp.col(j);
    }
    if (l2_ != 0) G += l2_ * Z;
    if (reg_.active()) reg_.add_gradient_cols(Z, G);
  }

  void value_grad_many(const Mat& Z, Mat& G, Vec& values) const override {
    STALE_CHECK(Z.rows() == dim(), "Z is d × P");
    const int P = static_cast<int>(Z.cols());
    G.resize(dim(), P);
    values.resize(P);
    if (P == 0) return;
    engine_->grad_many(Z.data(), P, {full_group(P)}, true, false, 0, dim(), G.data(), values.data());
    if (l2_ != 0) {
      G += l2_ * Z;
      values += 0.5 * l2_ * Z.colwise().squaredNorm().transpose();
    }
    if (reg_.active()) {
      reg_.add_gradient_cols(Z, G);
      for (int p = 0; p < P; ++p) values(p) += reg_.value(Z.col(p));
    }
  }

 private:
  LinearCudaEngine::Group full_group(int P) const { return {0, data_->n(), 0, P, 1.0}; }
  LinearCudaEngine::Group batch_group(int m, int first_col, int num_cols) const {
    STALE_CHECK(m >= 0 && m < num_batches(), "batch ids lie in [0, M)");
    const Index b = batch_rows(m);
    return {data_->batch_offsets[m], b, first_col, num_cols, 1.0 / static_cast<double>(b)};
  }
  void check_point(const Vec& w) const { STALE_CHECK(w.size() == dim(), "the point has dimension d"); }

  std::shared_ptr<const LinearData> data_;
  double l2_;
  NonconvexRegularizer reg_;
  LinearLoss loss_;
  std::unique_ptr<LinearCudaEngine> engine_;  // mutable device state behind a const interface
};

}  // namespace

std::unique_ptr<Objective> make_linear_model_cuda(std::shared_ptr<const LinearData> data, int stages, double l2,
                                                  NonconvexRegularizer reg, LinearLoss loss, Precision precision,
                                                  const ObjectiveConstants& constants) {
  return std::make_unique<LinearModelCuda>(std::move(data), stages, l2, reg, loss, precision, constants);
}

}  // namespace stale
