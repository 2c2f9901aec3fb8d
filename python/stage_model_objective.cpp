// A stage-wise objective defined in Python: the C++ Objective calls of python/stage_model_objective.hpp
// turned into calls of the driver (python/stale/model.py), one interpreter-lock acquisition each.
#include "python/stage_model_objective.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/core/error.hpp"
#include "src/core/parallel.hpp"

namespace nb = nanobind;

namespace stale {

namespace {

// what the driver hands back: float64 or float32, C order (model.py makes it so)
using InArray = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using InArray32 = nb::ndarray<const float, nb::c_contig, nb::device::cpu>;
using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;

// What a Python stage keeps from its forward pass: the model's own cache object. Released
// with the interpreter lock held: the executor drops caches with the lock released.
struct PythonStageCache final : StageCache {
  explicit PythonStageCache(nb::object o) : obj(std::move(o)) {}
  ~PythonStageCache() override {
    nb::gil_scoped_acquire gil;
    obj.reset();
  }
  nb::object obj;
};

// out[i] = in[i] for n values, cast, on the threading policy's threads for a large n (a cast is
// elementwise: the same bits for any thread count). On one thread, the casts of 4M-value
// gradients were most of a 2048-wide PyTorch model's run on a GPU
// (results/gpu/torch_cuda_2026-11-26.md).
template <class To, class From>
void cast_copy(const From* in, To* out, size_t n) {
  constexpr int64_t kChunk = int64_t(1) << 16;
  const int64_t chunks = (static_cast<int64_t>(n) + kChunk - 1) / kChunk;
  const int T = parallel_threads(static_cast<double>(n));
#pragma omp parallel for num_threads(T) schedule(static) if (T > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t end = std::min<int64_t>(static_cast<int64_t>(n), (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) out[i] = static_cast<To>(in[i]);
  }
}

// a copy of an activation (held as [width × rows], see the header) as the C-order numpy array
// [rows × width] the caller owns: the same bytes, one copy pass; in float32 when the model asks for
// it (model.py's activation_dtype), cast in the same pass
template <class M>
nb::object copy_to_numpy(const Mat& a) {
  auto* owned = new M(a.rows(), a.cols());
  cast_copy(a.data(), owned->data(), static_cast<size_t>(a.size()));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<M*>(p); });
  const size_t shape[2] = {static_cast<size_t>(owned->cols()), static_cast<size_t>(owned->rows())};
  using T = typename M::Scalar;
  return nb::cast(nb::ndarray<nb::numpy, T, nb::ndim<2>>(owned->data(), 2, shape, owner), nb::rv_policy::reference);
}
nb::object activation_to_numpy(const Mat& a, bool f32) { return f32 ? copy_to_numpy<MatF>(a) : copy_to_numpy<Mat>(a); }

// a view of the harness's vector, valid during the call (no copy; writable where the harness
// hands over its own output storage, stage_backward's grad_w_s)
nb::object view(const double* p, Index n) {
  const size_t shape[1] = {static_cast<size_t>(n)};
  return nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<1>>(const_cast<double*>(p), 1, shape, nb::handle()),
                  nb::rv_policy::reference);
}

// the n values of a float64 or float32 C-order array into out (float32 cast in the copy)
void copy_values(nb::handle h, double* out, size_t n, const char* what) {
  InArray a;
  if (nb::try_cast(h, a, false)) {
    STALE_CHECK(a.size() == n, "the driver checks sizes");
    cast_copy(a.data(), out, n);
    return;
  }
  InArray32 f;
  if (!nb::try_cast(h, f, false))
    throw UserError(std::string("python model: ") + what +
                    " is not a float64 or float32 array in C order (stale.model's driver converts it)");
  STALE_CHECK(f.size() == n, "the driver checks sizes");
  cast_copy(f.data(), out, n);
}

// a C-order [rows × width] array into the activation [width × rows]: one pass
void array_to_mat(nb::handle h, Mat& out, const char* what) {
  const nb::tuple shape = nb::cast<nb::tuple>(h.attr("shape"));
  STALE_CHECK(shape.size() == 2, "the driver returns activations as 2-D arrays");
  out.resize(nb::cast<Index>(shape[1]), nb::cast<Index>(shape[0]));
  copy_values(h, out.data(), static_cast<size_t>(out.size()), what);
}

void array_to_vec(nb::handle h, VecRef out, const char* what) {
  copy_values(h, out.data(), static_cast<size_t>(out.size()), what);
}

double as_double(nb::handle h) { return nb::cast<double>(h); }

}  // namespace

StageModelObjective::StageModelObjective(nb::object driver, uint64_t seed) : driver_(std::move(driver)), seed_(seed) {
  nb::gil_scoped_acquire gil;
  const nb::dict info = nb::cast<nb::dict>(driver_.attr("prepare")(seed));
  std::vector<Index> sizes;
  for (nb::handle h : info["block_sizes"]) sizes.push_back(nb::cast<Index>(h));
  std::vector<Index> offsets{0};
  for (Index n : sizes) offsets.push_back(offsets.back() + n);
  blocks_ = BlockPartition(offsets);
  const Index d = blocks_.dim();
  for (nb::handle h : info["rows"]) rows_.push_back(nb::cast<Index>(h));
  for (Index r : rows_) samples_ += r;
  input_width_ = nb::cast<Index>(info["input_width"]);
  description_ = nb::cast<std::string>(info["description"]);
  has_validation_ = nb::cast<bool>(info["has_validation"]);
  f32_ = nb::cast<std::string>(info["activation_dtype"]) == "float32";
  keeps_activations_ = nb::cast<bool>(info["keeps_activations"]);
  writes_gradients_ = nb::cast<bool>(info["writes_gradients"]);
  w0_.resize(d);
  array_to_vec(info["w0"], w0_, "the initial point");
  const nb::dict c = nb::cast<nb::dict>(info["constants"]);
  auto num = [&](const char* key) {
    return c.contains(key) ? nb::cast<double>(c[key]) : std::numeric_limits<double>::quiet_NaN();
  };
  constants_.L = num("L");
  constants_.L_exact = c.contains("L_exact") && nb::cast<bool>(c["L_exact"]);
  constants_.mu = c.contains("mu") ? num("mu") : 0.0;
  constants_.f_star = num("f_star");
  constants_.f_low = num("f_low");
  constants_.f_star_is_lower_bound = c.contains("f_star_is_lower_bound") && nb::cast<bool>(c["f_star_is_lower_bound"]);
  if (c.contains("f_star_method")) constants_.f_star_method = nb::cast<std::string>(c["f_star_method"]);
  if (c.contains("w_star")) {
    Vec ws(d);
    array_to_vec(c["w_star"], ws, "constants()['w_star']");
    constants_.w_star = std::move(ws);
  }
}

StageModelObjective::~StageModelObjective() {
  nb::gil_scoped_acquire gil;
  held_.clear();  // activations of a run that stopped with micro-batches in flight
  driver_.reset();
}

nb::object StageModelObjective::take_activation(const Mat& a) const {
  if (!is_ticket(a)) return activation_to_numpy(a, f32_);
  const auto it = held_.find(a.cols());
  STALE_CHECK(it != held_.end(), "each held activation is read once");
  nb::object obj = std::move(it->second);
  held_.erase(it);
  return obj;
}

void StageModelObjective::give_activation(nb::handle obj, Mat& out, const char* what) const {
  if (!keeps_activations_) return array_to_mat(obj, out, what);
  const Index ticket = next_ticket_++;
  held_.emplace(ticket, nb::borrow(obj));
  out.resize(0, ticket);  // no storage: the column count is the ticket
}

void StageModelObjective::release(const Mat& a) const {
  if (!is_ticket(a)) return;
  nb::gil_scoped_acquire gil;
  held_.erase(a.cols());
}

Mat StageModelObjective::activation_values(const Mat& a) const {
  if (!is_ticket(a)) return a;
  nb::gil_scoped_acquire gil;
  const auto it = held_.find(a.cols());
  STALE_CHECK(it != held_.end(), "a checkpoint's gradient is still held");
  Mat out;
  array_to_mat(driver_.attr("values")(it->second), out, "a held activation gradient");
  return out;
}

Mat StageModelObjective::input_activation(int m) const {
  nb::gil_scoped_acquire gil;
  Mat a;
  give_activation(driver_.attr("input")(m), a, "input(m)");
  return a;
}

void StageModelObjective::forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                                  std::unique_ptr<StageCache>& cache, bool pinned) const {
  nb::gil_scoped_acquire gil;
  const nb::tuple r = nb::cast<nb::tuple>(
      driver_.attr("forward")(s, m, take_activation(in), view(w_s.data(), w_s.size()), pinned));
  give_activation(r[0], out, "forward's output");
  cache = std::make_unique<PythonStageCache>(nb::borrow(r[1]));
}

void StageModelObjective::stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                                        std::unique_ptr<StageCache>& cache) const {
  forward(s, m, in, w_s, out, cache, false);
}

void StageModelObjective::stage_forward_pinned(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                                               std::unique_ptr<StageCache>& cache) const {
  forward(s, m, in, w_s, out, cache, true);
}

double StageModelObjective::loss_forward_backward(int m, const Mat& last, Mat& grad_last) const {
  nb::gil_scoped_acquire gil;
  const nb::tuple r = nb::cast<nb::tuple>(driver_.attr("loss")(m, take_activation(last)));
  give_activation(r[1], grad_last, "loss's gradient");
  return as_double(r[0]);
}

void StageModelObjective::stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache,
                                         VecRef grad_w_s, Mat& grad_in) const {
  nb::gil_scoped_acquire gil;
  const auto* c = dynamic_cast<const PythonStageCache*>(cache);
  STALE_CHECK(c != nullptr, "a backward pass after its stage's forward pass");
  // a model that writes its gradient into grad_w_s (model.py's _writes_gradients) returns that
  // view itself, and nothing is copied
  const nb::object into = writes_gradients_ ? view(grad_w_s.data(), grad_w_s.size()) : nb::none();
  const nb::tuple r = nb::cast<nb::tuple>(
      driver_.attr("backward")(s, m, take_activation(grad_out), view(w_s.data(), w_s.size()), c->obj, into));
  if (!r[0].is(into)) array_to_vec(r[0], grad_w_s, "backward's parameter gradient");
  // None: the driver keeps no gradient of the data (model.py's backward, stage 0 of a model
  // that keeps its activations): nothing reads it
  if (r[1].is_none()) grad_in.resize(0, 0);
  else give_activation(r[1], grad_in, "backward's input gradient");
}

double StageModelObjective::pipeline(const Vec& z, int m, Vec* grad, int lowest) const {
  const int S = stages();
  std::vector<std::unique_ptr<StageCache>> caches(static_cast<size_t>(S));
  Mat act = input_activation(m), next;
  for (int s = 0; s < S; ++s) {
    // z outlives the backward below, which reads the same block
    stage_forward_pinned(s, m, act, blocks_.block(z, s), next, caches[static_cast<size_t>(s)]);
    act.swap(next);
  }
  Mat g, g_in;
  const double loss = loss_forward_backward(m, act, g);
  if (grad) {
    for (int s = S - 1; s >= lowest; --s) {
      stage_backward(s, m, g, blocks_.block(z, s), caches[static_cast<size_t>(s)].get(), blocks_.block(*grad, s), g_in);
      caches[static_cast<size_t>(s)].reset();
      g.swap(g_in);
    }
  }
  release(g);  // the gradient below the lowest stage differentiated (or the loss's, without a backward)
  return loss;
}

double StageModelObjective::batch_value_grad(const Vec& z, int m, Vec& grad) const {
  grad.resize(dim());
  return pipeline(z, m, &grad, 0);
}

void StageModelObjective::batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const {
  thread_local Vec grad;
  grad.resize(dim());
  pipeline(z, m, &grad, s);
  g_s = blocks_.block(grad, s);
}

double StageModelObjective::value(const Vec& w) const {
  double f = 0;
  for (int m = 0; m < num_batches(); ++m) f += pipeline(w, m, nullptr, 0);
  return f / num_batches();
}

double StageModelObjective::value_grad(const Vec& w, Vec& grad) const {
  grad = Vec::Zero(dim());
  Vec g(dim());
  double f = 0;
  for (int m = 0; m < num_batches(); ++m) {
    f += pipeline(w, m, &g, 0);
    grad += g;
  }
  grad /= static_cast<double>(num_batches());
  return f / num_batches();
}

Vec StageModelObjective::initial_point(uint64_t seed) const {
  if (seed == seed_) return w0_;
  nb::gil_scoped_acquire gil;
  Vec w(dim());
  array_to_vec(driver_.attr("initial_point")(seed), w, "initial_params(seed)");
  return w;
}

std::string StageModelObjective::data_checksum(uint64_t* bytes) const {
  if (data_sha_.empty()) {
    nb::gil_scoped_acquire gil;
    const nb::tuple r = nb::cast<nb::tuple>(driver_.attr("data_checksum")());
    data_sha_ = nb::cast<std::string>(r[0]);
    data_bytes_ = nb::cast<uint64_t>(r[1]);
  }
  if (bytes) *bytes = data_bytes_;
  return data_sha_;
}

double StageModelObjective::validation_loss(const Vec& w) const {
  if (!has_validation_) return std::numeric_limits<double>::quiet_NaN();
  nb::gil_scoped_acquire gil;
  return as_double(driver_.attr("validation_loss")(view(w.data(), w.size())));
}

}  // namespace stale
