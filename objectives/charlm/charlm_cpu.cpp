#include "objectives/charlm/charlm_cpu.hpp"

#include <algorithm>
#include <type_traits>

#include "objectives/charlm/charlm_layers.hpp"
#include "src/core/error.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "src/core/parallel.hpp"

namespace stale {

namespace {

using namespace charlm;

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Every buffer the layers read starts on Eigen's largest packet alignment. Eigen's
// vectorised reductions (the small products in attention, for one) peel elements until
// the data is aligned, so their summation order depends on the address mod the packet
// size: with aligned bases the order depends only on the offsets, which are the same in
// the monolithic and the stage-wise path — the two agree bit for bit, from call to call.
template <class T>
using AVec = std::vector<T, Eigen::aligned_allocator<T>>;

// What a transformer block's forward saves for its backward (x is the block's input).
template <class T>
struct BlockActs {
  AVec<T> x, ln1, mean1, rstd1, qkv, att, atty, res2, ln2, mean2, rstd2, fch, fchg;
  void resize(Index N, int E, int NH, int B, int Tn) {
    for (auto* v : {&x, &ln1, &atty, &res2, &ln2}) v->resize(N * E);
    for (auto* v : {&mean1, &rstd1, &mean2, &rstd2}) v->resize(N);
    qkv.resize(N * 3 * E);
    fch.resize(N * 4 * E);
    fchg.resize(N * 4 * E);
    att.resize(Index(B) * NH * Tn * Tn);
  }
};

template <class T>
struct HeadActs {
  AVec<T> x, lnf, mean, rstd;
  void resize(Index N, int E) {
    x.resize(N * E);
    lnf.resize(N * E);
    mean.resize(N);
    rstd.resize(N);
  }
};

// A stage's saved state in the stage-wise pipeline.
template <class T>
struct CharLmStageCache final : StageCache {
  std::vector<int32_t> tokens;  // stage 0
  BlockActs<T> block;           // stages 1 … S−2
  HeadActs<T> head;             // stage S−1
};

// the parameters of a block of w as T, in an aligned buffer of their own (also for double:
// a block of w starts at any alignment)
template <class T>
AVec<T> params_as(const double* p, Index n) {
  AVec<T> out(n);
  for (Index i = 0; i < n; ++i) out[i] = static_cast<T>(p[i]);
  return out;
}

template <class T, class A>
void mat_to_rows(const Mat& m, std::vector<T, A>& out) {
  out.resize(m.size());
  Eigen::Map<RowMat<T>>(out.data(), m.rows(), m.cols()) = m.cast<T>();
}

template <class T>
void rows_to_mat(const T* p, Index rows, Index cols, Mat& m) {
  m = Eigen::Map<const RowMat<T>>(p, rows, cols).template cast<double>();
}

template <class T>
void copy_to_double(const AVec<T>& g, VecRef out) {
  for (Index i = 0; i < out.size(); ++i) out(i) = static_cast<double>(g[i]);
}

// ---- parallelism: groups of windows

// A stage runs on groups of about kGroupRows rows (whole windows) in parallel, each group
// through all of the stage's layers without a barrier. The grouping depends on B and T
// only, never on the thread count, and the groups' parameter gradients are summed in group
// order, so results are bit-identical for any OMP_NUM_THREADS.
constexpr int kGroupRows = 128;

struct Groups {
  int count, windows;  // group g holds windows [g·windows, min(B, (g+1)·windows))
  Groups(int B, int Tn) : windows(std::max(1, kGroupRows / Tn)) { count = (B + windows - 1) / windows; }
};

// fn(g, first window, windows) for every group. Inside, the thread's OpenMP budget is 1 so
// that Eigen's GEMMs run single-threaded with a single thread's blocking (Eigen picks a
// different depth blocking, hence summation order, when it parallelises a product itself);
// the budget is an ICV of the region's implicit task and ends with the region.
template <class F>
void for_groups(const Groups& G, int B, F&& fn) {
#ifdef _OPENMP
  // work of one group's GEMMs is far above the policy's threshold; inside a sweep worker
  // the policy says 1 (src/core/parallel.hpp)
  const int threads = parallel_threads(G.count > 1 ? kParallelMinWork : 0.0);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    omp_set_num_threads(1);
#pragma omp for schedule(static)
    for (int g = 0; g < G.count; ++g) fn(g, g * G.windows, std::min(B, (g + 1) * G.windows) - g * G.windows);
  }
#else
  for (int g = 0; g < G.count; ++g) fn(g, g * G.windows, std::min(B, (g + 1) * G.windows) - g * G.windows);
#endif
}

// Where the groups put their parameter gradients: straight into dp for a single group,
// else one zeroed buffer per group, added into dp in group order by reduce().
template <class T>
class GroupGrads {
 public:
  GroupGrads(const Groups& G, T* dp, Index n) : dp_(dp), n_(n) {
    if (G.count > 1) parts_.assign(G.count, AVec<T>(n, T(0)));
  }
  T* at(int g) { return parts_.empty() ? dp_ : parts_[g].data(); }
  void reduce() {
    if (parts_.empty()) return;
    const Index chunk = 1 << 14, nchunks = (n_ + chunk - 1) / chunk;
    const int threads = parallel_threads(static_cast<double>(n_) * static_cast<double>(parts_.size()));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (Index c = 0; c < nchunks; ++c) {
      const Index i1 = std::min(n_, (c + 1) * chunk);
      for (Index i = c * chunk; i < i1; ++i) {
        T acc = parts_[0][i];
        for (size_t g = 1; g < parts_.size(); ++g) acc += parts_[g][i];
        dp_[i] += acc;
      }
    }
  }

 private:
  T* dp_;
  Index n_;
  std::vector<AVec<T>> parts_;
};

// ---- the three kinds of stage, on T buffers

template <class T>
void embed_forward(const CharLmShape& sh, const T* p, const int32_t* tokens, int B, int Tn, T* out) {
  const auto L = embedding_layout(sh);
  const int E = sh.E;
  for_groups(Groups(B, Tn), B, [&](int, int b0, int nb) {
    const Index r0 = Index(b0) * Tn;
    encoder_forward(out + r0 * E, tokens + r0, p + L.wte, p + L.wpe, nb, Tn, E);
  });
}

template <class T>
void embed_backward(const CharLmShape& sh, T* dp, const T* dout, const int32_t* tokens, int B, int Tn) {
  const auto L = embedding_layout(sh);
  const int E = sh.E;
  const Groups G(B, Tn);
  GroupGrads<T> grads(G, dp, L.size);
  for_groups(G, B, [&](int g, int b0, int nb) {
    const Index r0 = Index(b0) * Tn;
    T* d = grads.at(g);
    encoder_backward(d + L.wte, d + L.wpe, dout + r0 * E, tokens + r0, nb, Tn, E);
  });
  grads.reduce();
}

// a.x holds the input on entry
template <class T>
void block_forward(const CharLmShape& sh, const T* p, BlockActs<T>& a, int B, int Tn, T* out) {
  const auto L = block_layout(sh);
  const int E = sh.E, NH = sh.NH;
  for_groups(Groups(B, Tn), B, [&](int, int b0, int nb) {
    const Index r = Index(b0) * Tn, n = Index(nb) * Tn;
    const int N = static_cast<int>(n);
    T *x = a.x.data() + r * E, *ln1 = a.ln1.data() + r * E, *qkv = a.qkv.data() + r * 3 * E,
      *att = a.att.data() + Index(b0) * NH * Tn * Tn, *atty = a.atty.data() + r * E, *res2 = a.res2.data() + r * E,
      *ln2 = a.ln2.data() + r * E, *fch = a.fch.data() + r * 4 * E, *fchg = a.fchg.data() + r * 4 * E;
    // the two residual branches' outputs are not needed by backward: scratch, not cache
    AVec<T> branch(n * E);
    layernorm_forward(ln1, a.mean1.data() + r, a.rstd1.data() + r, x, p + L.ln1w, p + L.ln1b, N, E);
    matmul_forward(qkv, ln1, p + L.qkvw, p + L.qkvb, N, E, 3 * E);
    attention_forward(atty, att, qkv, nb, Tn, E, NH);
    matmul_forward(branch.data(), atty, p + L.attprojw, p + L.attprojb, N, E, E);
    residual_forward(res2, x, branch.data(), n * E);
    layernorm_forward(ln2, a.mean2.data() + r, a.rstd2.data() + r, res2, p + L.ln2w, p + L.ln2b, N, E);
    matmul_forward(fch, ln2, p + L.fcw, p + L.fcb, N, E, 4 * E);
    gelu_forward(fchg, fch, n * 4 * E);
    matmul_forward(branch.data(), fchg, p + L.fcprojw, p + L.fcprojb, N, 4 * E, E);
    residual_forward(out + r * E, res2, branch.data(), n * E);
  });
}

// dp accumulates the block's parameter gradient; dx (N·E) is overwritten with d loss / d x
template <class T>
void block_backward(const CharLmShape& sh, const T* p, const BlockActs<T>& a, const T* dout, int B, int Tn, T* dp,
                    T* dx) {
  const auto L = block_layout(sh);
  const int E = sh.E, NH = sh.NH;
  const Groups G(B, Tn);
  GroupGrads<T> grads(G, dp, L.size);
  for_groups(G, B, [&](int g, int b0, int nb) {
    const Index r = Index(b0) * Tn, n = Index(nb) * Tn, nE = n * E;
    const int N = static_cast<int>(n);
    T* d = grads.at(g);
    const T *x = a.x.data() + r * E, *ln1 = a.ln1.data() + r * E, *qkv = a.qkv.data() + r * 3 * E,
            *att = a.att.data() + Index(b0) * NH * Tn * Tn, *atty = a.atty.data() + r * E,
            *res2 = a.res2.data() + r * E, *ln2 = a.ln2.data() + r * E, *fch = a.fch.data() + r * 4 * E,
            *fchg = a.fchg.data() + r * 4 * E;
    T* dxg = dx + r * E;
    AVec<T> dres2(nE, T(0)), dbranch(nE, T(0)), dwide(nE * 4, T(0)), dwide2(nE * 4, T(0)), dln(nE, T(0));
    // out = res2 + fcproj(gelu(fc(ln2(res2))))
    residual_backward(dres2.data(), dbranch.data(), dout + r * E, nE);
    matmul_backward(dwide.data(), d + L.fcprojw, d + L.fcprojb, dbranch.data(), fchg, p + L.fcprojw, N, 4 * E, E);
    gelu_backward(dwide2.data(), fch, dwide.data(), nE * 4);
    matmul_backward(dln.data(), d + L.fcw, d + L.fcb, dwide2.data(), ln2, p + L.fcw, N, E, 4 * E);
    layernorm_backward(dres2.data(), d + L.ln2w, d + L.ln2b, dln.data(), res2, p + L.ln2w, a.mean2.data() + r,
                       a.rstd2.data() + r, N, E);
    // res2 = x + attproj(attention(qkv(ln1(x))))
    std::fill(dxg, dxg + nE, T(0));
    std::fill(dbranch.begin(), dbranch.end(), T(0));
    residual_backward(dxg, dbranch.data(), dres2.data(), nE);
    AVec<T> datty(nE, T(0)), dqkv(nE * 3, T(0));
    matmul_backward(datty.data(), d + L.attprojw, d + L.attprojb, dbranch.data(), atty, p + L.attprojw, N, E, E);
    attention_backward(dqkv.data(), datty.data(), qkv, att, nb, Tn, E, NH);
    std::fill(dln.begin(), dln.end(), T(0));
    matmul_backward(dln.data(), d + L.qkvw, d + L.qkvb, dqkv.data(), ln1, p + L.qkvw, N, E, 3 * E);
    layernorm_backward(dxg, d + L.ln1w, d + L.ln1b, dln.data(), x, p + L.ln1w, a.mean1.data() + r,
                       a.rstd1.data() + r, N, E);
  });
  grads.reduce();
}

// a.x holds the input on entry; logits [N, V]
template <class T>
void head_forward(const CharLmShape& sh, const T* p, HeadActs<T>& a, int B, int Tn, T* logits) {
  const auto L = head_layout(sh);
  const int E = sh.E, V = sh.V;
  for_groups(Groups(B, Tn), B, [&](int, int b0, int nb) {
    const Index r = Index(b0) * Tn;
    const int N = nb * Tn;
    layernorm_forward(a.lnf.data() + r * E, a.mean.data() + r, a.rstd.data() + r, a.x.data() + r * E, p + L.lnfw,
                      p + L.lnfb, N, E);
    matmul_forward(logits + r * V, a.lnf.data() + r * E, p + L.lmw, static_cast<const T*>(nullptr), N, E, V);
  });
}

template <class T>
void head_backward(const CharLmShape& sh, const T* p, const HeadActs<T>& a, const T* dlogits, int B, int Tn, T* dp,
                   T* dx) {
  const auto L = head_layout(sh);
  const int E = sh.E, V = sh.V;
  const Groups G(B, Tn);
  GroupGrads<T> grads(G, dp, L.size);
  for_groups(G, B, [&](int g, int b0, int nb) {
    const Index r = Index(b0) * Tn;
    const int N = nb * Tn;
    T* d = grads.at(g);
    AVec<T> dlnf(Index(N) * E, T(0));
    matmul_backward(dlnf.data(), d + L.lmw, static_cast<T*>(nullptr), dlogits + r * V, a.lnf.data() + r * E,
                    p + L.lmw, N, E, V);
    std::fill(dx + r * E, dx + (r + N) * E, T(0));
    layernorm_backward(dx + r * E, d + L.lnfw, d + L.lnfb, dlnf.data(), a.x.data() + r * E, p + L.lnfw,
                       a.mean.data() + r, a.rstd.data() + r, N, E);
  });
  grads.reduce();
}

}  // namespace

template <class T>
CharLmCpu<T>::CharLmCpu(std::shared_ptr<const CharLmData> data, CharLmShape shape) : CharLm(std::move(data), shape) {}

template <class T>
std::string CharLmCpu<T>::precision() const {
  return std::is_same_v<T, float> ? "float32" : "float64";
}

template <class T>
typename CharLmCpu<T>::Blocks CharLmCpu<T>::to_blocks(const Vec& w) const {
  STALE_CHECK(w.size() == dim(), "w has the objective's dimension");
  Blocks b(stages());
  for (int s = 0; s < stages(); ++s) b[s] = params_as<T>(w.data() + blocks_.offset(s), blocks_.size(s));
  return b;
}

template <class T>
typename CharLmCpu<T>::Blocks CharLmCpu<T>::zero_blocks() const {
  Blocks b(stages());
  for (int s = 0; s < stages(); ++s) b[s].assign(blocks_.size(s), T(0));
  return b;
}

template <class T>
double CharLmCpu<T>::run(const Blocks& params, const int32_t* inputs, const int32_t* targets, int rows, int len,
                         Blocks* grads, int lowest, Mat* logits_out) const {
  const auto& sh = shape_;
  const int N = rows * len, E = sh.E, V = sh.V, S = sh.S;
  STALE_CHECK(len >= 1 && len <= sh.T, "sequence length within the context");
  std::vector<BlockActs<T>> acts(sh.layers());
  HeadActs<T> head;
  AVec<T> cur(Index(N) * E);
  embed_forward(sh, params[0].data(), inputs, rows, len, cur.data());
  for (int l = 0; l < sh.layers(); ++l) {
    acts[l].resize(N, E, sh.NH, rows, len);
    acts[l].x = cur;
    block_forward(sh, params[l + 1].data(), acts[l], rows, len, cur.data());
  }
  head.resize(N, E);
  head.x = cur;
  AVec<T> logits(Index(N) * V);
  head_forward(sh, params[S - 1].data(), head, rows, len, logits.data());
  AVec<double> ld(logits.begin(), logits.end());
  if (logits_out) *logits_out = Eigen::Map<const RowMat<double>>(ld.data(), N, V);
  if (!targets) return 0.0;
  AVec<double> dld(grads ? ld.size() : 0);
  const double loss = charlm_loss_head(ld.data(), targets, N, V, grads ? dld.data() : nullptr);
  if (!grads) return loss;

  auto& g = *grads;
  AVec<T> dlogits(dld.begin(), dld.end()), dx(Index(N) * E), dnext(Index(N) * E);
  head_backward(sh, params[S - 1].data(), head, dlogits.data(), rows, len, g[S - 1].data(), dx.data());
  for (int l = sh.layers() - 1; l >= 0 && l + 1 >= lowest; --l) {
    block_backward(sh, params[l + 1].data(), acts[l], dx.data(), rows, len, g[l + 1].data(), dnext.data());
    std::swap(dx, dnext);
  }
  if (lowest == 0) embed_backward(sh, g[0].data(), dx.data(), inputs, rows, len);
  return loss;
}

template <class T>
double CharLmCpu<T>::batch_loss(const Vec& w, int m, Mat* logits_out) const {
  const Index N = shape_.N();
  std::vector<int32_t> in(N), tg(N);
  data_->batch(m, in.data(), tg.data());
  return run(to_blocks(w), in.data(), tg.data(), shape_.B, shape_.T, nullptr, 0, logits_out);
}

template <class T>
double CharLmCpu<T>::batch_value_grad(const Vec& z, int m, Vec& grad) const {
  const Index N = shape_.N();
  std::vector<int32_t> in(N), tg(N);
  data_->batch(m, in.data(), tg.data());
  Blocks g = zero_blocks();
  const double loss = run(to_blocks(z), in.data(), tg.data(), shape_.B, shape_.T, &g, 0, nullptr);
  grad.resize(z.size());
  for (int s = 0; s < stages(); ++s) copy_to_double(g[s], blocks_.block(grad, s));
  return loss;
}

template <class T>
void CharLmCpu<T>::batch_block_grad(const Vec& z, int m, int s, VecRef g_s) const {
  const Index N = shape_.N();
  std::vector<int32_t> in(N), tg(N);
  data_->batch(m, in.data(), tg.data());
  Blocks g = zero_blocks();
  run(to_blocks(z), in.data(), tg.data(), shape_.B, shape_.T, &g, s, nullptr);
  copy_to_double(g[s], g_s);
}

template <class T>
double CharLmCpu<T>::value(const Vec& w) const {
  double f = 0;
  for (int m : data_->eval_batches()) f += batch_loss(w, m);
  return f / static_cast<double>(data_->eval_batches().size());
}

template <class T>
double CharLmCpu<T>::value_grad(const Vec& w, Vec& grad) const {
  double f = 0;
  grad = Vec::Zero(w.size());
  Vec g;
  for (int m : data_->eval_batches()) {
    f += batch_value_grad(w, m, g);
    grad += g;
  }
  const double k = static_cast<double>(data_->eval_batches().size());
  grad /= k;
  return f / k;
}

template <class T>
double CharLmCpu<T>::validation_loss(const Vec& w) const {
  const Index N = shape_.N();
  std::vector<int32_t> in(N), tg(N);
  const Blocks p = to_blocks(w);
  double f = 0;
  for (int j = 0; j < data_->num_val_batches(); ++j) {
    data_->val_batch(j, in.data(), tg.data());
    f += run(p, in.data(), tg.data(), shape_.B, shape_.T, nullptr, 0, nullptr);
  }
  return f / data_->num_val_batches();
}

template <class T>
Mat CharLmCpu<T>::logits(const Vec& w, const std::vector<int32_t>& tokens, int rows, int len) const {
  STALE_CHECK(static_cast<Index>(tokens.size()) == Index(rows) * len, "tokens are rows × len");
  for (int32_t t : tokens) STALE_CHECK(t >= 0 && t < shape_.V, "token ids within the vocabulary");
  Mat out;
  run(to_blocks(w), tokens.data(), nullptr, rows, len, nullptr, 0, &out);
  return out;
}

// ---- the stage-wise pipeline

template <class T>
void CharLmCpu<T>::stage_forward(int s, int m, const Mat& in, ConstVecRef w_s, Mat& out,
                                 std::unique_ptr<StageCache>& cache) const {
  const auto& sh = shape_;
  STALE_CHECK(s >= 0 && s < sh.S && w_s.size() == blocks_.size(s), "stage id and block size");
  const int N = static_cast<int>(sh.N());
  auto c = std::make_unique<CharLmStageCache<T>>();
  const AVec<T> p = params_as<T>(w_s.data(), w_s.size());
  if (s == 0) {
    c->tokens.resize(N);
    std::vector<int32_t> targets(N);
    data_->batch(m, c->tokens.data(), targets.data());
    AVec<T> x(Index(N) * sh.E);
    embed_forward(sh, p.data(), c->tokens.data(), sh.B, sh.T, x.data());
    rows_to_mat(x.data(), N, sh.E, out);
  } else if (s < sh.S - 1) {
    STALE_CHECK(in.rows() == N && in.cols() == sh.E, "a block's input is B·T × E");
    c->block.resize(N, sh.E, sh.NH, sh.B, sh.T);
    mat_to_rows(in, c->block.x);
    AVec<T> y(Index(N) * sh.E);
    block_forward(sh, p.data(), c->block, sh.B, sh.T, y.data());
    rows_to_mat(y.data(), N, sh.E, out);
  } else {
    STALE_CHECK(in.rows() == N && in.cols() == sh.E, "the head's input is B·T × E");
    c->head.resize(N, sh.E);
    mat_to_rows(in, c->head.x);
    AVec<T> logits(Index(N) * sh.V);
    head_forward(sh, p.data(), c->head, sh.B, sh.T, logits.data());
    rows_to_mat(logits.data(), N, sh.V, out);
  }
  cache = std::move(c);
}

template <class T>
double CharLmCpu<T>::loss_forward_backward(int m, const Mat& last, Mat& grad_last) const {
  const int N = static_cast<int>(shape_.N()), V = shape_.V;
  STALE_CHECK(last.rows() == N && last.cols() == V, "the last activation is the B·T × V logits");
  std::vector<int32_t> in(N), tg(N);
  data_->batch(m, in.data(), tg.data());
  AVec<double> l, dl(Index(N) * V);
  mat_to_rows(last, l);
  const double loss = charlm_loss_head(l.data(), tg.data(), N, V, dl.data());
  rows_to_mat(dl.data(), N, V, grad_last);
  return loss;
}

template <class T>
void CharLmCpu<T>::stage_backward(int s, int m, const Mat& grad_out, ConstVecRef w_s, const StageCache* cache,
                                  VecRef grad_w_s, Mat& grad_in) const {
  (void)m;
  const auto& sh = shape_;
  const auto* c = dynamic_cast<const CharLmStageCache<T>*>(cache);
  STALE_CHECK(c != nullptr, "stage_backward needs the cache of this objective's stage_forward");
  STALE_CHECK(grad_w_s.size() == blocks_.size(s) && w_s.size() == blocks_.size(s), "block sizes");
  const int N = static_cast<int>(sh.N());
  const AVec<T> p = params_as<T>(w_s.data(), w_s.size());
  AVec<T> dout, dp(w_s.size(), T(0)), dx(Index(N) * sh.E);
  mat_to_rows(grad_out, dout);
  if (s == 0) {
    embed_backward(sh, dp.data(), dout.data(), c->tokens.data(), sh.B, sh.T);
    grad_in = Mat(N, 0);  // the tokens have no gradient
  } else if (s < sh.S - 1) {
    block_backward(sh, p.data(), c->block, dout.data(), sh.B, sh.T, dp.data(), dx.data());
    rows_to_mat(dx.data(), N, sh.E, grad_in);
  } else {
    head_backward(sh, p.data(), c->head, dout.data(), sh.B, sh.T, dp.data(), dx.data());
    rows_to_mat(dx.data(), N, sh.E, grad_in);
  }
  copy_to_double(dp, grad_w_s);
}

template class CharLmCpu<float>;
template class CharLmCpu<double>;

}  // namespace stale
