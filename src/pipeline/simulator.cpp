// The event loop: one pending op per device, keyed by (start, device), in a tournament tree
// over the devices (a device's key changes in place, so an update is one leaf-to-root pass,
// with no pushes or pops). An op gets a finite key only once its dependencies have run, and
// every dependency that crosses devices is an F or B, whose duration is positive; so an op
// keyed after (t, d) was taken starts later than t, or at t on d itself after it in program
// order. The order ops are taken in is therefore the serial order of simulator.hpp.
#include "src/pipeline/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <sstream>

#include "src/core/error.hpp"

namespace stale {

void DelayStats::reset(int nblocks, bool pairs) {
  blocks = nblocks;
  count.assign(nblocks, 0);
  update_max.assign(nblocks, -1);
  update_sum.assign(nblocks, 0);
  read_max.assign(nblocks, -1);
  read_sum.assign(nblocks, 0);
  pair_max.assign(pairs ? static_cast<size_t>(nblocks) * nblocks : 0, -1);
  pair_sum.assign(pairs ? static_cast<size_t>(nblocks) * nblocks : 0, 0);
}

int64_t DelayStats::updates() const {
  int64_t n = 0;
  for (int64_t c : count) n += c;
  return n;
}
int64_t DelayStats::max_overall() const {
  return update_max.empty() ? -1 : *std::max_element(update_max.begin(), update_max.end());
}
double DelayStats::mean_overall() const {
  const int64_t n = updates();
  if (n == 0) return 0.0;
  double s = 0;
  for (int64_t x : update_sum) s += static_cast<double>(x);
  return s / (static_cast<double>(n) * blocks);
}
double DelayStats::mean_by_update_block(int a) const {
  return count[a] == 0 ? 0.0 : static_cast<double>(update_sum[a]) / (static_cast<double>(count[a]) * blocks);
}
double DelayStats::mean_by_read_block(int j) const {
  const int64_t n = updates();
  return n == 0 ? 0.0 : static_cast<double>(read_sum[j]) / static_cast<double>(n);
}

std::vector<int64_t> SimResult::delay_row(const Update& u, bool backward) const {
  STALE_CHECK(!forward_read.empty(), "delay_row needs SimOptions::reads");
  std::vector<int64_t> row(blocks);
  const size_t base = static_cast<size_t>(u.oldest) * blocks;
  for (int j = 0; j < blocks; ++j) {
    const bool bwd = backward && j >= u.block;
    row[j] = u.index - (bwd ? backward_read[base + j] : forward_read[base + j]);
  }
  return row;
}

namespace {

// Stashed versions of one block: (version, micro-batches holding it), versions increasing.
// Entries whose count dropped to zero in the middle stay until they reach the front.
struct Stash {
  std::deque<std::pair<int32_t, int32_t>> held;
  int live = 0;  // entries with a positive count

  void hold(int32_t v) {
    if (!held.empty() && held.back().first == v) {
      if (held.back().second++ == 0) ++live;
    } else {
      held.emplace_back(v, 1);
      ++live;
    }
  }
  void release(int32_t v) {
    // B mostly runs in F order, so the version released is usually the oldest held
    auto it = held.front().first == v
                  ? held.begin()
                  : std::lower_bound(held.begin(), held.end(), std::make_pair(v, std::numeric_limits<int32_t>::min()));
    STALE_CHECK(it != held.end() && it->first == v && it->second > 0, "releasing a version nobody stashed");
    if (--it->second == 0) --live;
    while (!held.empty() && held.front().second == 0) held.pop_front();
  }
  // versions kept: the stashed ones plus the current one unless a micro-batch holds it
  int stored(int32_t current) const {
    const bool current_held = !held.empty() && held.back().first == current && held.back().second > 0;
    return live + (current_held ? 0 : 1);
  }
};

}  // namespace

class Simulation {
 public:
  Simulation(const Schedule& s, const CostModel& c, const SimOptions& o) : s_(s), costs_(c), opt_(o) {}
  void start();
  // the device whose op starts next in the serial order, −1 when no op can start
  int next_device() const { return key_[tree_[1]] < std::numeric_limits<double>::infinity() ? tree_[1] : -1; }
  int64_t op_of(int d) const { return pc_[d]; }
  double start_of(int d) const { return head_start_[d]; }
  // the cost model's duration of device d's next op; draws its noise, so once per op
  double nominal_duration(int d);
  // runs device d's next op, which takes `duration`; true when it was a block update
  bool execute(int d, double duration);
  SimResult finish();
  const SimResult& partial() const { return r_; }
  int64_t executed() const { return executed_; }

 private:
  enum State : uint8_t { Blocked, Queued, Done };
  void advance_head(int d);
  void try_start(int d);
  // tournament tree: leaves are devices (key +inf when blocked or done), node i holds the
  // device with the smallest (key, device) below it
  void tree_set(int d, double key);
  void update_block(const Op& op, double start, double end);
  void adjust_versions(int block, int before);

  const Schedule& s_;
  const CostModel costs_;  // copies: a Simulator may outlive its arguments
  const SimOptions opt_;
  SimResult r_;

  int S_ = 0, NB_ = 0;
  int64_t M_ = 0;
  double latency_ = 0;
  std::vector<double> durF_, durB_, durW_;
  std::vector<CostModel::Noise> noise_;
  std::vector<int64_t> pc_, pc_end_;
  std::vector<double> free_, head_start_;
  std::vector<State> state_;
  std::vector<double> endF_, endB_;  // [mb · blocks + b], −1 until the op ran
  int leaves_ = 1;
  std::vector<double> key_;
  std::vector<int> tree_;

  std::vector<int64_t> upd_count_;   // per replica
  std::vector<int32_t> version_;     // [replica · blocks + b]
  std::vector<int64_t> inflight_;    // per device
  std::vector<int64_t> versions_;    // per device: versions stored now
  std::vector<Stash> stash_;         // per block
  std::vector<int32_t> oldest_;      // per block: oldest micro-batch since the last step
  std::vector<int64_t> row_, row_b_;
  // for the by-read-block statistics, per oldest micro-batch: largest k, count and Σ k of the
  // updates that read it ([0]: all, [1]: steady); and Σ_j c(j, mb) for the by-update rows
  struct ReadAggregate {
    std::vector<int64_t> kmax, n, ksum;
  };
  ReadAggregate agg_[2];
  std::vector<int64_t> read_sum_;
  void add_update_stats(DelayStats& st, ReadAggregate& agg, int b, int64_t k, int32_t oldest);
  void finish_read_stats(DelayStats& st, const ReadAggregate& agg);
  bool keep_backward_ = false;
  int64_t executed_ = 0;
};

void Simulation::tree_set(int d, double key) {
  key_[d] = key;
  int node = (leaves_ + d) >> 1;
  int winner = d;
  int sibling_pos = (leaves_ + d) ^ 1;
  while (node >= 1) {
    const int other = sibling_pos >= leaves_ ? sibling_pos - leaves_ : tree_[sibling_pos];
    // lower device wins ties: stage order inside a slot
    if (key_[other] < key_[winner] || (key_[other] == key_[winner] && other < winner)) winner = other;
    tree_[node] = winner;
    sibling_pos = node ^ 1;
    node >>= 1;
  }
}

void Simulation::advance_head(int d) { state_[d] = pc_[d] == pc_end_[d] ? Done : Blocked; }

double Simulation::nominal_duration(int d) {
  // the noise is drawn per op in the device's program order (cost_model.hpp), whenever the
  // caller asks: the same draws as when simulate() took them ahead of the op's start
  const Op& op = s_.ops[pc_[d]];
  double t = op.kind == OpKind::Forward ? durF_[d] : op.kind == OpKind::Backward ? durB_[d] : durW_[d];
  // an F&B pair (DualPipe) hides overlap·min(t_F, t_B + t_W) of itself; the F carries the saving
  if (op.overlapped()) t -= costs_.overlap() * std::min(durF_[d], durB_[d] + durW_[d]);
  if (!noise_.empty()) t *= noise_[d].next();
  return t;
}

void Simulation::try_start(int d) {
  const Op& op = s_.ops[pc_[d]];
  const size_t idx = static_cast<size_t>(op.microbatch) * NB_ + op.block;
  double t = free_[d];
  switch (op.kind) {
    case OpKind::Forward:
      if (op.block > 0) {
        const double e = endF_[idx - 1];
        if (e < 0) return;
        t = std::max(t, e + (s_.device_of(op.block - 1) != d ? latency_ : 0.0));
      }
      break;
    case OpKind::Backward: {
      if (endF_[idx] < 0) return;
      if (op.block + 1 < NB_) {
        const double e = endB_[idx + 1];
        if (e < 0) return;
        t = std::max(t, e + (s_.device_of(op.block + 1) != d ? latency_ : 0.0));
      }
      break;
    }
    case OpKind::Weight:
      if (endB_[idx] < 0) return;
      break;
  }
  state_[d] = Queued;
  head_start_[d] = t;
  tree_set(d, t);
}

void Simulation::adjust_versions(int block, int before) {
  const int d = s_.device_of(block);
  versions_[d] += stash_[block].stored(version_[block]) - before;
  r_.peak_versions[d] = std::max(r_.peak_versions[d], versions_[d]);
}

void Simulation::update_block(const Op& op, double start, double end) {
  const int b = op.block;
  const int rep = s_.replica_of(op.microbatch);
  const int64_t k = upd_count_[rep]++;
  const int before = s_.stash ? stash_[b].stored(version_[b]) : 0;
  ++version_[static_cast<size_t>(rep) * NB_ + b];
  if (s_.stash) adjust_versions(b, before);
  ++r_.updates_per_block[b];
  ++r_.total_updates;
  const int32_t oldest = oldest_[b];
  oldest_[b] = std::numeric_limits<int32_t>::max();
  if (opt_.updates) r_.updates.push_back(Update{k, b, rep, op.microbatch, oldest, start, end});
  if (!opt_.delay_stats && !opt_.delay_table) return;
  const size_t base = static_cast<size_t>(oldest) * NB_;
  const int64_t* cf = r_.forward_read.data() + base;
  const bool steady = oldest >= r_.steady_margin && op.microbatch < M_ - r_.steady_margin;
  if (opt_.delay_stats) {
    add_update_stats(r_.delays, agg_[0], b, k, oldest);
    if (steady) add_update_stats(r_.steady_delays, agg_[1], b, k, oldest);
    if (opt_.delay_pairs) {
      for (DelayStats* st : {&r_.delays, steady ? &r_.steady_delays : nullptr}) {
        if (!st) continue;
        int64_t* mx = st->pair_max.data() + static_cast<size_t>(b) * NB_;
        int64_t* sm = st->pair_sum.data() + static_cast<size_t>(b) * NB_;
        for (int j = 0; j < NB_; ++j) {
          const int64_t d = k - cf[j];
          mx[j] = mx[j] > d ? mx[j] : d;
          sm[j] += d;
        }
      }
    }
  }
  if (!opt_.delay_table) return;
  for (int j = 0; j < NB_; ++j) row_[j] = k - cf[j];
  r_.delay_table.insert(r_.delay_table.end(), row_.begin(), row_.end());
  if (keep_backward_) {
    const int64_t* cb = r_.backward_read.data() + base;
    for (int j = 0; j < NB_; ++j) row_b_[j] = j < b ? row_[j] : k - cb[j];
    r_.delay_table_backward.insert(r_.delay_table_backward.end(), row_b_.begin(), row_b_.end());
  }
}

void Simulation::add_update_stats(DelayStats& st, ReadAggregate& agg, int b, int64_t k, int32_t oldest) {
  // c(j, mb) is nondecreasing in j, so block 0 carries the row's largest delay
  ++st.count[b];
  st.update_max[b] = std::max(st.update_max[b], k - r_.forward_read[static_cast<size_t>(oldest) * NB_]);
  st.update_sum[b] += int64_t{NB_} * k - read_sum_[oldest];
  agg.kmax[oldest] = std::max(agg.kmax[oldest], k);
  ++agg.n[oldest];
  agg.ksum[oldest] += k;
}

void Simulation::finish_read_stats(DelayStats& st, const ReadAggregate& agg) {
  // Σ_k (k − c(j, mb_k)) = Σ_mb (Σ k − n · c(j, mb)); max_k = max_mb (k_max − c(j, mb))
  for (int64_t mb = 0; mb < M_; ++mb) {
    if (agg.n[mb] == 0) continue;
    const int64_t* c = r_.forward_read.data() + static_cast<size_t>(mb) * NB_;
    for (int j = 0; j < NB_; ++j) {
      st.read_max[j] = std::max(st.read_max[j], agg.kmax[mb] - c[j]);
      st.read_sum[j] += agg.ksum[mb] - agg.n[mb] * c[j];
    }
  }
}

bool Simulation::execute(int d, double duration) {
  const int64_t i = pc_[d];
  const Op& op = s_.ops[i];
  const double start = head_start_[d];
  const double end = start + duration;
  if (opt_.timeline) {
    r_.start[i] = start;
    r_.end[i] = end;
  }
  free_[d] = end;
  r_.busy[d] += duration;
  r_.makespan = std::max(r_.makespan, end);

  const int b = op.block;
  const int64_t mb = op.microbatch;
  const size_t idx = static_cast<size_t>(mb) * NB_ + b;
  const int rep = s_.replica_of(mb);
  int32_t& ver = version_[static_cast<size_t>(rep) * NB_ + b];
  const bool releases = op.kind == (s_.split_backward ? OpKind::Weight : OpKind::Backward);

  switch (op.kind) {
    case OpKind::Forward: {
      endF_[idx] = end;
      r_.forward_read[idx] = upd_count_[rep];
      if (opt_.delay_stats) read_sum_[mb] += upd_count_[rep];
      r_.forward_version[idx] = ver;
      r_.peak_inflight[d] = std::max(r_.peak_inflight[d], ++inflight_[d]);
      if (s_.stash) {
        const int before = stash_[b].stored(ver);
        stash_[b].hold(ver);
        adjust_versions(b, before);
      }
      break;
    }
    case OpKind::Backward: {
      endB_[idx] = end;
      const int32_t vf = r_.forward_version[idx];
      r_.max_crossed[b] = std::max<int64_t>(r_.max_crossed[b], ver - vf);
      const int32_t vb = s_.stash ? vf : ver;
      if (vb != vf) r_.backward_differs = true;
      if (!r_.backward_read.empty()) {
        r_.backward_version[idx] = vb;
        r_.backward_read[idx] = vb == vf ? r_.forward_read[idx] : upd_count_[rep];
      }
      if (s_.stash) {
        const int before = stash_[b].stored(ver);
        stash_[b].release(vf);
        adjust_versions(b, before);
      }
      break;
    }
    case OpKind::Weight:
      break;
  }
  const bool updated = releases && op.updates();
  if (releases) {
    --inflight_[d];
    oldest_[b] = std::min<int32_t>(oldest_[b], static_cast<int32_t>(mb));
    if (updated) update_block(op, start, end);
  }
  if (op.averages())
    for (int rr = 0; rr < s_.replicas; ++rr) ++version_[static_cast<size_t>(rr) * NB_ + b];

  // the device's next op, and the neighbour that may have waited for this one
  ++pc_[d];
  advance_head(d);
  if (state_[d] == Blocked) try_start(d);
  if (state_[d] != Queued) tree_set(d, std::numeric_limits<double>::infinity());
  int other = -1;
  if (op.kind == OpKind::Forward && b + 1 < NB_) other = s_.device_of(b + 1);
  if (op.kind == OpKind::Backward && b > 0) other = s_.device_of(b - 1);
  if (other >= 0 && other != d && state_[other] == Blocked) try_start(other);
  ++executed_;
  return updated;
}

void Simulation::start() {
  S_ = s_.stages;
  NB_ = s_.blocks();
  M_ = s_.microbatches;
  costs_.check_stages(S_);
  STALE_CHECK(s_.replicas == 1 || s_.accumulation == 1, "replicas > 1 needs a step per micro-batch");
  STALE_CHECK(s_.replicas == 1 || !s_.stash, "stashing is modelled for one replica");

  r_.stages = S_;
  r_.blocks = NB_;
  r_.microbatches = M_;
  r_.stash = s_.stash;
  r_.busy.assign(S_, 0.0);
  r_.peak_inflight.assign(S_, 0);
  r_.peak_versions.assign(S_, s_.stash ? 0 : s_.chunks);
  r_.max_crossed.assign(NB_, 0);
  r_.updates_per_block.assign(NB_, 0);
  r_.steady_margin = opt_.steady_margin >= 0 ? opt_.steady_margin : 2 * int64_t{NB_};
  r_.delays.reset(NB_, opt_.delay_pairs);
  r_.steady_delays.reset(NB_, opt_.delay_pairs);
  if (opt_.delay_stats) {
    read_sum_.assign(M_, 0);
    for (auto& a : agg_) {
      a.kmax.assign(M_, -1);
      a.n.assign(M_, 0);
      a.ksum.assign(M_, 0);
    }
  }
  if (opt_.timeline) {
    r_.start.assign(s_.ops.size(), 0.0);
    r_.end.assign(s_.ops.size(), 0.0);
  }
  const size_t cells = static_cast<size_t>(M_) * NB_;
  r_.forward_read.assign(cells, 0);
  r_.forward_version.assign(cells, 0);
  keep_backward_ = !s_.stash && opt_.delay_table;
  if (opt_.reads || keep_backward_) {
    r_.backward_read.assign(cells, 0);
    r_.backward_version.assign(cells, 0);
  }
  endF_.assign(cells, -1.0);
  endB_.assign(cells, -1.0);
  row_.assign(NB_, 0);
  row_b_.assign(NB_, 0);

  latency_ = costs_.latency();
  durF_.resize(S_);
  durB_.resize(S_);
  durW_.resize(S_);
  for (int d = 0; d < S_; ++d) {
    const double v = s_.chunks;
    durF_[d] = costs_.forward(d) / v;
    durB_[d] = (s_.split_backward ? costs_.backward(d) : costs_.backward(d) + costs_.weight(d)) / v;
    durW_[d] = costs_.weight(d) / v;
  }
  if (costs_.random())
    for (int d = 0; d < S_; ++d) noise_.emplace_back(costs_, d);

  upd_count_.assign(s_.replicas, 0);
  version_.assign(static_cast<size_t>(s_.replicas) * NB_, 0);
  inflight_.assign(S_, 0);
  versions_.assign(S_, 0);
  stash_.assign(s_.stash ? NB_ : 0, Stash{});
  if (s_.stash)
    for (int b = 0; b < NB_; ++b) versions_[s_.device_of(b)] += 1;  // the initial weights
  if (s_.stash) r_.peak_versions = versions_;
  oldest_.assign(NB_, std::numeric_limits<int32_t>::max());

  pc_.assign(s_.offsets.begin(), s_.offsets.end() - 1);
  pc_end_.assign(s_.offsets.begin() + 1, s_.offsets.end());
  free_.assign(S_, 0.0);
  head_start_.assign(S_, 0.0);
  state_.assign(S_, Blocked);
  leaves_ = 2;
  while (leaves_ < S_) leaves_ *= 2;
  constexpr double inf = std::numeric_limits<double>::infinity();
  key_.assign(leaves_, inf);
  tree_.assign(2 * static_cast<size_t>(leaves_), 0);
  for (int node = leaves_ - 1; node >= 1; --node)  // all keys are +inf: the leftmost leaf wins
    tree_[node] = 2 * node >= leaves_ ? 2 * node - leaves_ : tree_[2 * node];
  for (int d = 0; d < S_; ++d) {
    advance_head(d);
    if (state_[d] == Blocked) try_start(d);
  }
}

SimResult Simulation::finish() {
  if (executed_ != s_.size()) {
    std::ostringstream os;
    os << "schedule " << s_.name << " deadlocked after " << executed_ << " of " << s_.size() << " ops; waiting:";
    for (int d = 0; d < S_; ++d)
      if (state_[d] != Done) {
        const Op& op = s_.ops[pc_[d]];
        os << " device " << d << " " << op_kind_letter(op.kind) << op.microbatch << "@" << op.block << ";";
      }
    throw InternalError(os.str());
  }

  if (opt_.delay_stats) {
    finish_read_stats(r_.delays, agg_[0]);
    finish_read_stats(r_.steady_delays, agg_[1]);
  }

  double total_busy = 0;
  r_.bubble.assign(S_, 0.0);
  for (int d = 0; d < S_; ++d) {
    total_busy += r_.busy[d];
    r_.bubble[d] = r_.makespan > 0 ? 1.0 - r_.busy[d] / r_.makespan : 0.0;
  }
  r_.bubble_overall = r_.makespan > 0 ? 1.0 - total_busy / (S_ * r_.makespan) : 0.0;
  if (!r_.backward_differs) r_.delay_table_backward.clear();
  if (!opt_.reads) {
    r_.forward_read = {};
    r_.forward_version = {};
    r_.backward_read = {};
    r_.backward_version = {};
  }
  return std::move(r_);
}

Simulator::Simulator(const Schedule& schedule, const CostModel& costs, const SimOptions& options)
    : impl_(std::make_unique<Simulation>(schedule, costs, options)) {
  impl_->start();
}
Simulator::~Simulator() = default;
int64_t Simulator::next() {
  device_ = impl_->next_device();
  return device_ < 0 ? -1 : impl_->op_of(device_);
}
double Simulator::next_start() const { return impl_->start_of(device_); }
double Simulator::nominal_duration() { return impl_->nominal_duration(device_); }
const Update* Simulator::finish(double duration) {
  STALE_CHECK(device_ >= 0, "Simulator::finish without an op from next()");
  STALE_CHECK(duration >= 0 && std::isfinite(duration), "an op's duration must be finite and >= 0");
  const int d = device_;
  device_ = -1;
  const bool updated = impl_->execute(d, duration);
  const SimResult& r = impl_->partial();
  return updated && !r.updates.empty() ? &r.updates.back() : nullptr;
}
const SimResult& Simulator::partial() const { return impl_->partial(); }
SimResult Simulator::result() { return impl_->finish(); }

SimResult simulate(const Schedule& schedule, const CostModel& costs, const SimOptions& options) {
  Simulator sim(schedule, costs, options);
  while (sim.next() >= 0) sim.finish(sim.nominal_duration());
  return sim.result();
}

}  // namespace stale
