#include "objectives/charlm/charlm.hpp"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <sstream>

#include "objectives/charlm/charlm_cpu.hpp"
#include "objectives/charlm/charlm_cuda.hpp"
#include "objectives/charlm/charlm_layers.hpp"
#include "objectives/data/libsvm.hpp"
#include "objectives/objective_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"

namespace stale {

EmbeddingLayout embedding_layout(const CharLmShape& sh) {
  const Index E = sh.E;
  return {0, Index(sh.V) * E, Index(sh.V + sh.T) * E};
}

BlockLayout block_layout(const CharLmShape& sh) {
  const Index E = sh.E;
  BlockLayout l{};
  Index o = 0;
  auto take = [&](Index n) {
    const Index at = o;
    o += n;
    return at;
  };
  l.ln1w = take(E);
  l.ln1b = take(E);
  l.qkvw = take(3 * E * E);
  l.qkvb = take(3 * E);
  l.attprojw = take(E * E);
  l.attprojb = take(E);
  l.ln2w = take(E);
  l.ln2b = take(E);
  l.fcw = take(4 * E * E);
  l.fcb = take(4 * E);
  l.fcprojw = take(4 * E * E);
  l.fcprojb = take(E);
  l.size = o;
  return l;
}

HeadLayout head_layout(const CharLmShape& sh) {
  const Index E = sh.E;
  return {0, E, 2 * E, 2 * E + Index(sh.V) * E};
}

std::vector<Index> charlm_stage_offsets(const CharLmShape& sh) {
  STALE_CHECK(sh.S >= 3, "charlm needs S >= 3 stages");
  std::vector<Index> off{0, embedding_layout(sh).size};
  for (int l = 0; l < sh.layers(); ++l) off.push_back(off.back() + block_layout(sh).size);
  off.push_back(off.back() + head_layout(sh).size);
  return off;
}

Index charlm_parameter_count(const CharLmShape& sh) { return charlm_stage_offsets(sh).back(); }

Vec charlm_init(const CharLmShape& sh, uint64_t seed) {
  const auto off = charlm_stage_offsets(sh);
  Vec w = Vec::Zero(off.back());
  const double std = 0.02, proj_std = 0.02 / std::sqrt(2.0 * sh.layers());
  auto normal = [&](Rng& rng, Index at, Index n, double s) {
    for (Index i = 0; i < n; ++i) w(at + i) = s * rng.normal();
  };
  const Index E = sh.E;
  {
    Rng rng(seed, Stream::Init, 0);
    const auto L = embedding_layout(sh);
    normal(rng, off[0] + L.wte, Index(sh.V) * E, std);
    normal(rng, off[0] + L.wpe, Index(sh.T) * E, std);
  }
  const auto L = block_layout(sh);
  for (int s = 1; s <= sh.layers(); ++s) {
    Rng rng(seed, Stream::Init, s);
    const Index o = off[s];
    w.segment(o + L.ln1w, E).setOnes();
    w.segment(o + L.ln2w, E).setOnes();
    normal(rng, o + L.qkvw, 3 * E * E, std);
    normal(rng, o + L.attprojw, E * E, proj_std);
    normal(rng, o + L.fcw, 4 * E * E, std);
    normal(rng, o + L.fcprojw, 4 * E * E, proj_std);
  }
  {
    Rng rng(seed, Stream::Init, sh.S - 1);
    const auto H = head_layout(sh);
    const Index o = off[sh.S - 1];
    w.segment(o + H.lnfw, E).setOnes();
    normal(rng, o + H.lmw, Index(sh.V) * E, std);
  }
  return w;
}

// ---- data

CharLmData::CharLmData(std::shared_ptr<const TextData> text, int B, int T, Index windows, uint64_t seed)
    : text_(std::move(text)), B_(B), T_(T) {
  STALE_CHECK(B >= 1 && T >= 1, "B, T >= 1");
  M_ = static_cast<int>(windows / B);
  STALE_CHECK(M_ >= 1, "at least B windows");
  starts_ = draw_windows(0, text_->train_size(), T + 1, Index(M_) * B, seed, Stream::DataGen);
  val_starts_ = draw_windows(text_->train_size(), static_cast<Index>(text_->tokens.size()), T + 1,
                             Index(kValBatches) * B, seed, Stream::Eval, 1);
  // kEvalBatches distinct training batches (all of them when M is smaller): a partial
  // Fisher–Yates shuffle of 0..M−1, sorted
  std::vector<int> ids(M_);
  for (int i = 0; i < M_; ++i) ids[i] = i;
  Rng rng(seed, Stream::Eval, 0);
  const int k = std::min(M_, kEvalBatches);
  for (int i = 0; i < k; ++i) std::swap(ids[i], ids[i + static_cast<int>(rng.uniform_int(M_ - i))]);
  eval_.assign(ids.begin(), ids.begin() + k);
  std::sort(eval_.begin(), eval_.end());
}

void CharLmData::gather(const std::vector<Index>& starts, Index first, int32_t* inputs, int32_t* targets) const {
  const auto& tok = text_->tokens;
  for (int b = 0; b < B_; ++b) {
    const Index s = starts[first + b];
    for (int t = 0; t < T_; ++t) {
      inputs[b * T_ + t] = tok[s + t];
      targets[b * T_ + t] = tok[s + t + 1];
    }
  }
}

void CharLmData::batch(int m, int32_t* inputs, int32_t* targets) const {
  STALE_CHECK(m >= 0 && m < M_, "batch id in 0..M-1");
  gather(starts_, Index(m) * B_, inputs, targets);
}

void CharLmData::val_batch(int j, int32_t* inputs, int32_t* targets) const {
  STALE_CHECK(j >= 0 && j < num_val_batches(), "validation batch id");
  gather(val_starts_, Index(j) * B_, inputs, targets);
}

// ---- the shared part of every twin

CharLm::CharLm(std::shared_ptr<const CharLmData> data, CharLmShape shape) : data_(std::move(data)), shape_(shape) {
  STALE_CHECK(shape_.S >= 3 && shape_.E % shape_.NH == 0, "valid shape");
  STALE_CHECK(data_->B() == shape_.B && data_->T() == shape_.T && data_->text().vocab_size() == shape_.V,
              "data and shape agree");
  blocks_ = BlockPartition(charlm_stage_offsets(shape_));
  constants_.f_star_method = "unknown (a neural network); the bound's Delta0 uses f_low = 0 (cross-entropy >= 0)";
  constants_.f_low = 0.0;
}

std::string CharLm::description() const {
  std::ostringstream os;
  os << "char-level GPT: V=" << shape_.V << " E=" << shape_.E << " heads=" << shape_.NH << " T=" << shape_.T
     << " B=" << shape_.B << " S=" << shape_.S << " (" << shape_.layers() << " blocks), " << dim()
     << " parameters, M=" << num_batches() << " training batches; f = mean loss over " << data_->eval_batches().size()
     << " fixed training batches (seed's Eval stream); precision " << precision();
  return os.str();
}

double charlm_loss_head(const double* logits, const int32_t* targets, int N, int V, double* dlogits) {
  std::vector<double> probs(static_cast<size_t>(N) * V);
  const double loss = charlm::crossentropy_forward(probs.data(), logits, targets, N, V);
  if (dlogits) {
    std::fill(dlogits, dlogits + static_cast<size_t>(N) * V, 0.0);
    charlm::crossentropy_backward(dlogits, probs.data(), targets, 1.0, N, V);
  }
  return loss;
}

// ---- config

CharLmShape charlm_shape_from_config(const Config& cfg, int vocab) {
  CharLmShape sh;
  sh.V = vocab;
  sh.E = static_cast<int>(cfg.get_int("objective.embedding"));
  sh.NH = static_cast<int>(cfg.get_int("objective.heads"));
  sh.T = static_cast<int>(cfg.get_int("objective.context"));
  sh.B = static_cast<int>(cfg.get_int("objective.batch_size"));
  sh.S = static_cast<int>(cfg.get_int("objective.stages"));
  if (sh.S < 3)
    config_error("objective.stages", "charlm needs S >= 3 (embedding, at least one transformer block, head); got " +
                                         std::to_string(sh.S));
  if (sh.E % sh.NH != 0)
    config_error("objective.heads", std::to_string(sh.NH) + " heads do not divide the embedding width " +
                                        std::to_string(sh.E) + " (objective.embedding)");
  return sh;
}

std::shared_ptr<const CharLmData> charlm_data_from_config(const Config& cfg, int B, int T) {
  std::string file = cfg.get_string("objective.data");
  if (file.empty()) file = "tinyshakespeare.txt";
  auto text = std::make_shared<TextData>(load_text(resolve_data_file(file, cfg.get_string("objective.data_dir"))));
  const Index windows = cfg.get_int("objective.samples");
  if (windows < B)
    config_error("objective.samples", std::to_string(windows) + " training windows is fewer than one batch (" +
                                          std::to_string(B) + " = objective.batch_size)");
  if (text->train_size() < T + 1 || text->val_size() < T + 1)
    config_error("objective.context", "T = " + std::to_string(T) + " does not fit in the text's train (" +
                                          std::to_string(text->train_size()) + ") or validation (" +
                                          std::to_string(text->val_size()) + ") split");
  return std::make_shared<CharLmData>(text, B, T, windows, static_cast<uint64_t>(cfg.get_int("seed")));
}

std::unique_ptr<Objective> make_charlm(const Config& cfg, BackendKind backend) {
  const int B = static_cast<int>(cfg.get_int("objective.batch_size"));
  const int T = static_cast<int>(cfg.get_int("objective.context"));
  auto data = charlm_data_from_config(cfg, B, T);
  const CharLmShape sh = charlm_shape_from_config(cfg, data->text().vocab_size());
  const std::string precision = cfg.get_string("precision");
  if (backend != BackendKind::Cuda && precision == "tf32")
    config_error("precision", "\"tf32\" is the cuda backend's tensor-core mode; the cpu twin takes float64 | float32");
  std::unique_ptr<Objective> f;
  if (backend == BackendKind::Cuda) f = make_charlm_cuda(data, sh, charlm_cuda_precision(precision));
  else if (precision == "float32") f = std::make_unique<CharLmCpu<float>>(data, sh);
  else f = std::make_unique<CharLmCpu<double>>(data, sh);
  std::string file = cfg.get_string("objective.data");
  if (file.empty()) file = "tinyshakespeare.txt";
  f->set_data_file(std::filesystem::absolute(resolve_data_file(file, cfg.get_string("objective.data_dir")))
                       .lexically_normal()
                       .string());
  return f;
}

namespace {

ObjectiveFootprint charlm_footprint(const Config& cfg, const FootprintContext& ctx) {
  ObjectiveFootprint fp;
  // in double: the config's ranges allow E² beyond 2^63. The layouts above in closed form, with
  // the byte vocabulary's bound V = 256 (the corpus decides V): embeddings V·E + T·E, S − 2
  // blocks of 12E² + 13E, the final layer norm 2E and the LM head V·E (a test holds this equal
  // to charlm_parameter_count)
  const double E = static_cast<double>(cfg.get_int("objective.embedding"));
  const double T = static_cast<double>(cfg.get_int("objective.context"));
  const double NH = static_cast<double>(cfg.get_int("objective.heads"));
  const double S = static_cast<double>(cfg.get_int("objective.stages"));
  const double B = static_cast<double>(cfg.get_int("objective.batch_size"));
  const double n = static_cast<double>(cfg.get_int("objective.samples"));
  const double V = 256;
  const double layers = std::max(1.0, S - 2);
  fp.parameters = V * E + T * E + layers * (12 * E * E + 13 * E) + 2 * E + V * E;
  fp.parameter_keys = "objective.embedding² × objective.stages";
  fp.element_bytes = cfg.get_string("precision") == "float32" ? 4.0 : 8.0;
  fp.memory.push_back({"charlm parameters",
                       "objective.embedding × objective.stages = " + format_count(E) + " × " + format_count(S),
                       fp.parameters * fp.element_bytes * 4});  // w, gradient, two work copies
  const double per_block = B * T * (20 * E + 2 * NH * T) + B * T * V * 3;
  fp.memory.push_back({"charlm activations",
                       "objective.batch_size × objective.context × objective.embedding = " + format_count(B) + " × " +
                           format_count(T) + " × " + format_count(E),
                       per_block * layers * fp.element_bytes * ctx.in_flight});
  fp.memory.push_back({"charlm training windows", "objective.samples = " + format_count(n), n * 8.0});  // int64 starts
  return fp;
}

// the char-GPT as arrays, for a twin built elsewhere (stale.torch.charlm_stages): its shape, every
// training batch's tokens [M × B·T], the block offsets and the initial point; built in float64
// on the cpu (the twin casts to what it runs in)
ObjectiveExport charlm_export(const Config& config) {
  Config cfg = config;
  cfg.apply_override("precision=\"float64\"");
  const std::unique_ptr<Objective> f = make_charlm(cfg, BackendKind::Cpu);
  const auto* lm = dynamic_cast<const CharLm*>(f.get());
  STALE_CHECK(lm != nullptr, "make_charlm makes a CharLm");
  const CharLmShape& sh = lm->shape();
  const size_t M = static_cast<size_t>(lm->num_batches()), N = static_cast<size_t>(sh.N());
  std::vector<int32_t> inputs(M * N), targets(M * N);
  for (size_t m = 0; m < M; ++m) lm->data().batch(static_cast<int>(m), inputs.data() + m * N, targets.data() + m * N);
  ObjectiveExport out;
  out.put("V", static_cast<int64_t>(sh.V));
  out.put("E", static_cast<int64_t>(sh.E));
  out.put("NH", static_cast<int64_t>(sh.NH));
  out.put("T", static_cast<int64_t>(sh.T));
  out.put("B", static_cast<int64_t>(sh.B));
  out.put("S", static_cast<int64_t>(sh.S));
  out.put("inputs", ExportArray<int32_t>{std::move(inputs), {M, N}});
  out.put("targets", ExportArray<int32_t>{std::move(targets), {M, N}});
  out.put("offsets", ExportArray<int64_t>{std::vector<int64_t>(lm->blocks().offsets().begin(), lm->blocks().offsets().end()), {}});
  const Vec w0 = lm->initial_point(static_cast<uint64_t>(cfg.get_int("seed")));
  out.put("w0", ExportArray<double>{std::vector<double>(w0.data(), w0.data() + w0.size()), {}});
  out.put("description", lm->description());
  return out;
}

const bool registered = ObjectiveRegistry::add(
    {"charlm", "character-level GPT (llm.c-style layers) on a text corpus, split into stages by layer", 2,
     {"objective.samples", "objective.embedding", "objective.heads", "objective.context", "objective.data",
      "objective.data_dir"},
     {},
     make_charlm, charlm_footprint,
     // each run builds its own: sharing across threads is claimed only where a test holds it (the linear models)
     /*shared_across_runs=*/false, /*ensembles_on_cpu=*/false, /*fixed_hessian=*/false, /*generates_text=*/true,
     ArrayData::None, charlm_export});
}  // namespace

}  // namespace stale
