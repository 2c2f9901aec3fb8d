#pragma once
// Independent re-derivations the pipeline tests compare the simulator against. They are
// written the slow, obvious way on purpose (maps, sorts, full scans).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "src/core/rng.hpp"
#include "src/pipeline/cost_model.hpp"
#include "src/pipeline/schedule.hpp"
#include "src/pipeline/simulator.hpp"

namespace stale::test {

// (kind, block, micro-batch) → index into Schedule::ops
inline std::map<std::tuple<int, int, int64_t>, int64_t> op_index(const Schedule& s) {
  std::map<std::tuple<int, int, int64_t>, int64_t> idx;
  for (int64_t i = 0; i < s.size(); ++i) {
    const Op& op = s.ops[i];
    idx[{static_cast<int>(op.kind), op.block, op.microbatch}] = i;
  }
  return idx;
}

inline std::vector<int> device_of_op(const Schedule& s) {
  std::vector<int> dev(s.ops.size());
  for (int d = 0; d < s.stages; ++d)
    for (int64_t i = s.offsets[d]; i < s.offsets[d + 1]; ++i) dev[i] = d;
  return dev;
}

// ops sorted by (start, device, program position): the serial order simulator.hpp defines
inline std::vector<int64_t> serial_order(const Schedule& s, const SimResult& r) {
  const auto dev = device_of_op(s);
  std::vector<int64_t> order(s.ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::make_tuple(r.start[a], dev[a], a) < std::make_tuple(r.start[b], dev[b], b);
  });
  return order;
}

// A random cost model: per-stage lists, latency, jitter and stragglers, each on or off.
inline CostModel random_costs(Rng& rng, int stages) {
  CostModel c;
  auto list = [&](double lo, double hi) {
    std::string v;
    for (int d = 0; d < stages; ++d) {
      if (d) v += ',';
      v += std::to_string(lo + (hi - lo) * rng.uniform());
    }
    return v;
  };
  if (rng.uniform() < 0.5) c.set("forward", list(0.5, 2.0));
  if (rng.uniform() < 0.5) c.set("backward", list(0.5, 3.0));
  if (rng.uniform() < 0.5) c.set("weight", list(0.0, 1.5));
  if (rng.uniform() < 0.5) c.set("latency", std::to_string(0.3 * rng.uniform()));
  if (rng.uniform() < 0.5) c.set("jitter", std::to_string(0.5 * rng.uniform()));
  if (rng.uniform() < 0.3) {
    c.set("straggler_prob", "0.1");
    c.set("straggler_slowdown", "3");
  }
  c.set("seed", std::to_string(rng.uniform_int(1000)));
  return c;
}

}  // namespace stale::test
