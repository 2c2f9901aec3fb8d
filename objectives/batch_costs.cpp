#include "objectives/batch_costs.hpp"

#include <algorithm>

#include "objectives/charlm/charlm.hpp"
#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/linear/linear_model_cpu_sparse.hpp"
#include "src/core/error.hpp"

namespace stale {

namespace {

std::vector<double> linear_costs(const LinearData& data) {
  std::vector<double> c(data.num_batches());
  for (int m = 0; m < data.num_batches(); ++m) {
    const Index lo = data.batch_offsets[m], hi = data.batch_offsets[m + 1];
    double nnz = 0;
    if (data.sparse()) {  // CSR: the batch's stored entries (an explicit 0 in the file is no work)
      const auto* v = data.X_sparse.valuePtr();
      for (int p = data.X_sparse.outerIndexPtr()[lo]; p < data.X_sparse.outerIndexPtr()[hi]; ++p) nnz += v[p] != 0.0;
    }
    for (Index j = 0; j < data.d() && !data.sparse(); ++j)  // column-major: walk down the columns
      for (Index i = lo; i < hi; ++i) nnz += data.X(i, j) != 0.0;
    c[m] = 1.0 + nnz / static_cast<double>(hi - lo);  // + the loss head's work per sample
  }
  return c;
}

std::vector<double> charlm_costs(const CharLm& f) {
  const CharLmData& data = f.data();
  const int B = data.B(), T = data.T();
  const int newline = data.text().encode('\n');
  std::vector<int32_t> in(static_cast<size_t>(B) * T), out(in.size());
  std::vector<double> c(data.num_batches());
  for (int m = 0; m < data.num_batches(); ++m) {
    data.batch(m, in.data(), out.data());
    double total = 0;
    for (int b = 0; b < B; ++b) {
      int len = T;
      for (int t = 0; t < T; ++t)
        if (in[static_cast<size_t>(b) * T + t] == newline) {
          len = t;
          break;
        }
      total += len;
    }
    // a batch whose windows all start at a line break would cost nothing: count the
    // break itself, so that every batch costs at least one character per window
    c[m] = std::max(1.0, total / B);
  }
  return c;
}

}  // namespace

std::vector<double> batch_data_costs(const Objective& f) {
  if (const auto* q = dynamic_cast<const LinearModelCpu<SquaredLoss>*>(&f)) return linear_costs(q->data());
  if (const auto* l = dynamic_cast<const LinearModelCpu<LogisticLoss>*>(&f)) return linear_costs(l->data());
  if (const auto* q = dynamic_cast<const LinearModelCpuSparse<SquaredLoss>*>(&f)) return linear_costs(q->data());
  if (const auto* l = dynamic_cast<const LinearModelCpuSparse<LogisticLoss>*>(&f)) return linear_costs(l->data());
  if (const auto* lm = dynamic_cast<const CharLm*>(&f)) return charlm_costs(*lm);
  throw UserError("costs.coupling = \"data\": objective " + f.name() + " on backend " + f.backend() +
                  " does not keep its data on the host; use backend = \"cpu\"");
}

}  // namespace stale
