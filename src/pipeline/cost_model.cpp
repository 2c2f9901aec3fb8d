#include "src/pipeline/cost_model.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "src/core/error.hpp"

namespace stale {

namespace {

[[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& valid) {
  throw UserError("cost " + key + "=" + value + ": " + valid);
}

// `shown` is what the error quotes: the whole value even when `text` is one list item
double parse_number(const std::string& key, const std::string& text, const std::string& valid,
                    const std::string& shown) {
  if (text.empty()) bad(key, shown, "empty number; " + valid);
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(x))
    bad(key, shown, "'" + text + "' is not a number; " + valid);
  return x;
}
double parse_number(const std::string& key, const std::string& text, const std::string& valid) {
  return parse_number(key, text, valid, text);
}

std::vector<double> parse_list(const std::string& key, const std::string& value, double min, bool min_open) {
  const std::string valid = std::string("expected a number ") + (min_open ? "> " : ">= ") +
                            std::to_string(static_cast<int>(min)) + " or a comma-separated list of one per stage";
  std::vector<double> out;
  size_t pos = 0;
  while (true) {
    const size_t comma = value.find(',', pos);
    const std::string item = value.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const double v = parse_number(key, item, valid, value);
    if (min_open ? !(v > min) : !(v >= min)) bad(key, value, valid);
    out.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

std::string join(const std::vector<double>& v) {
  std::ostringstream os;
  os.precision(17);
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  return os.str();
}

}  // namespace

const std::vector<std::string>& CostModel::keys() {
  static const std::vector<std::string> k = {"forward", "backward", "weight", "overlap", "latency", "jitter",
                                             "straggler_prob", "straggler_slowdown", "pareto_alpha", "seed"};
  return k;
}

void CostModel::set(const std::string& key, const std::string& value) {
  if (key == "forward") {
    forward_ = parse_list(key, value, 0, true);
  } else if (key == "backward") {
    backward_ = parse_list(key, value, 0, true);
  } else if (key == "weight") {
    weight_ = parse_list(key, value, 0, false);
  } else if (key == "overlap") {
    overlap_ = parse_number(key, value, "expected a fraction in [0, 1]");
    if (!(overlap_ >= 0 && overlap_ <= 1)) bad(key, value, "expected a fraction in [0, 1]");
  } else if (key == "latency") {
    latency_ = parse_number(key, value, "expected a number >= 0");
    if (!(latency_ >= 0)) bad(key, value, "expected a number >= 0");
  } else if (key == "jitter") {
    jitter_ = parse_number(key, value, "expected a lognormal sigma >= 0");
    if (!(jitter_ >= 0)) bad(key, value, "expected a lognormal sigma >= 0");
  } else if (key == "straggler_prob") {
    straggler_prob_ = parse_number(key, value, "expected a probability in [0, 1]");
    if (!(straggler_prob_ >= 0 && straggler_prob_ <= 1)) bad(key, value, "expected a probability in [0, 1]");
  } else if (key == "straggler_slowdown") {
    straggler_slowdown_ = parse_number(key, value, "expected a factor >= 1");
    if (!(straggler_slowdown_ >= 1)) bad(key, value, "expected a factor >= 1");
  } else if (key == "pareto_alpha") {
    pareto_alpha_ = parse_number(key, value, "expected a tail index >= 0 (0 = the fixed straggler_slowdown)");
    if (!(pareto_alpha_ >= 0)) bad(key, value, "expected a tail index >= 0 (0 = the fixed straggler_slowdown)");
  } else if (key == "seed") {
    char* end = nullptr;
    errno = 0;
    const unsigned long long s = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || end != value.c_str() + value.size() || errno == ERANGE)
      bad(key, value, "expected a non-negative integer");
    seed_ = s;
  } else {
    std::string valid;
    for (const auto& k : keys()) valid += (valid.empty() ? "" : ", ") + k;
    throw UserError("unknown cost key '" + key + "'; valid keys: " + valid);
  }
}

void CostModel::set(const std::string& setting) {
  const size_t eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UserError("cost setting '" + setting + "' is not key=value (e.g. forward=1 or backward=1,1,2,1)");
  set(setting.substr(0, eq), setting.substr(eq + 1));
}

CostModel CostModel::parse(const std::vector<std::string>& settings) {
  CostModel m;
  for (const auto& s : settings) m.set(s);
  return m;
}

std::string CostModel::describe() const {
  std::ostringstream os;
  os.precision(17);
  os << "forward=" << join(forward_) << " backward=" << join(backward_) << " weight=" << join(weight_)
     << " latency=" << latency_ << " jitter=" << jitter_ << " straggler_prob=" << straggler_prob_
     << " straggler_slowdown=" << straggler_slowdown_;
  if (pareto_alpha_ > 0) os << " pareto_alpha=" << pareto_alpha_;  // only when set: older files stay as they were
  if (overlap_ > 0) os << " overlap=" << overlap_;                 // likewise
  os << " seed=" << seed_;
  return os.str();
}

void CostModel::check_stages(int stages) const {
  auto check = [&](const char* key, const std::vector<double>& v) {
    if (v.size() != 1 && static_cast<int>(v.size()) != stages)
      throw UserError(std::string("cost ") + key + " has " + std::to_string(v.size()) +
                      " values but the schedule has " + std::to_string(stages) +
                      " stages; give one value or one per stage");
  };
  check("forward", forward_);
  check("backward", backward_);
  check("weight", weight_);
}

CostModel CostModel::scaled(double factor) const {
  CostModel m = *this;
  for (auto* v : {&m.forward_, &m.backward_, &m.weight_})
    for (double& x : *v) x *= factor;
  m.latency_ *= factor;
  return m;
}

double CostModel::Noise::next() {
  // always two draws per op, so that turning one kind of noise on or off does not shift the
  // other's stream
  const double z = rng_.normal();
  const double u = rng_.uniform();
  double f = sigma_ > 0 ? std::exp(sigma_ * z - 0.5 * sigma_ * sigma_) : 1.0;
  if (u < prob_) f *= alpha_ > 0 ? std::pow(1.0 - u / prob_, -1.0 / alpha_) : slowdown_;
  return f;
}

}  // namespace stale
