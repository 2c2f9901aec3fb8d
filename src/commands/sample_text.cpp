// `sample` (src/commands/sample_text.hpp): one row of a text model's run, its characters drawn
// one at a time.
#include "src/commands/sample_text.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "objectives/data/text_data.hpp"
#include "objectives/objective_factory.hpp"
#include "objectives/objective_registry.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/core/rng.hpp"
#include "src/io/h5.hpp"

namespace stale {

namespace {

// index of a draw from softmax(logits / τ); τ → 0 is the arg-max
int draw(const Eigen::Ref<const Eigen::RowVectorXd>& logits, double temperature, Rng& rng) {
  Index best = 0;
  logits.maxCoeff(&best);
  if (temperature <= 0) return static_cast<int>(best);
  Eigen::RowVectorXd p = ((logits.array() - logits(best)) / temperature).exp();
  const double u = rng.uniform() * p.sum();
  double acc = 0;
  for (Index v = 0; v < p.size(); ++v)
    if ((acc += p(v)) > u) return static_cast<int>(v);
  return static_cast<int>(p.size() - 1);
}

// the registered objectives whose runs stale sample reads, for its refusal
std::string text_objectives() {
  std::string names;
  for (const auto& e : ObjectiveRegistry::entries())
    if (e.generates_text) names += (names.empty() ? "objective.name = \"" : " or \"") + e.name + "\"";
  return names;
}

}  // namespace

SampleResult sample_text(const SampleRequest& c) {
  SampleResult res;
  auto file = h5::open_file_readonly(c.run);
  const Config cfg = Config::from_string(h5::read_attr_string(file.id(), "config"), c.run + " (config attribute)");
  const std::string objective = cfg.get_string("objective.name");
  if (!objective_entry(objective).generates_text)
    throw UserError(c.run + ": objective.name is \"" + objective + "\", which models no text; stale sample reads a run of " +
                    text_objectives());
  if (!h5::exists(file.id(), "iterates"))
    throw UserError(c.run + ": no /iterates in the run file (set log.iterates_every > 0, e.g. = method.updates)");
  hsize_t rows = 0, cols = 0;
  const std::vector<double> it = h5::read_matrix_double(file.id(), "iterates", rows, cols);
  if (rows == 0) throw UserError(c.run + ": /iterates is empty (the run stored no iterate)");
  const int64_t row = c.row < 0 ? static_cast<int64_t>(rows) + c.row : c.row;
  if (row < 0 || row >= static_cast<int64_t>(rows))
    throw UserError("--row " + std::to_string(c.row) + " is outside the " + std::to_string(rows) + " stored iterates");
  int64_t k = -1;
  if (h5::exists(file.id(), "iterates_k")) {
    const auto ks = h5::read_vector_int(file.id(), "iterates_k");
    if (row < static_cast<int64_t>(ks.size())) k = ks[row];
  }

  auto obj = make_objective(cfg, BackendKind::Cpu);
  const TextModel* f = obj->text_model();
  STALE_CHECK(f != nullptr, "an objective whose registry entry says generates_text is a TextModel");
  if (static_cast<Index>(cols) != obj->dim())
    throw UserError(c.run + ": iterates have " + std::to_string(cols) + " coordinates, the config's model " +
                    std::to_string(obj->dim()));
  const Vec w = Eigen::Map<const Vec>(it.data() + row * cols, static_cast<Index>(cols));

  const TextData& text = f->text();
  std::vector<int32_t> ctx;
  for (char ch : c.prompt) {
    const int id = text.encode(ch);
    if (id < 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(ch)));
      throw UserError(std::string("--prompt: the byte ") + hex + " is not in the corpus's vocabulary (" +
                      std::to_string(text.vocab_size()) + " characters; a character LM reads bytes)");
    }
    ctx.push_back(id);
  }
  if (ctx.empty()) ctx.push_back(text.encode('\n') >= 0 ? text.encode('\n') : 0);

  res.row = row;
  res.k = k;
  res.parameters = static_cast<int64_t>(obj->dim());
  res.precision = obj->precision();
  if (c.validation) res.validation_loss = obj->validation_loss(w);

  Rng rng(static_cast<uint64_t>(c.seed), Stream::Eval, 0x5A4D);
  const int T = f->context();
  std::string out = c.prompt;
  std::vector<int32_t> window;
  for (int i = 0; i < c.chars; ++i) {
    const size_t len = std::min<size_t>(ctx.size(), T);
    window.assign(ctx.end() - static_cast<std::ptrdiff_t>(len), ctx.end());
    const Mat logits = f->logits(w, window, 1, static_cast<int>(len));
    const int next = draw(logits.row(static_cast<Index>(len) - 1), c.temperature, rng);
    ctx.push_back(next);
    out.push_back(text.vocab[next]);
  }
  res.text = std::move(out);
  return res;
}

}  // namespace stale
