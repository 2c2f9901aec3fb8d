#include "objectives/linear/linear_export.hpp"

#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/linear/linear_model_cpu_sparse.hpp"
#include "objectives/objective_factory.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"

namespace stale {

ObjectiveExport linear_objective_export(const Config& cfg) {
  const std::unique_ptr<Objective> f = make_objective(cfg, BackendKind::Cpu);
  // the cpu twins of this family, dense and CSR, each with its loss
  const LinearData* data = nullptr;
  if (const auto* ls = dynamic_cast<const LeastSquaresCpu*>(f.get())) data = &ls->data();
  if (const auto* lg = dynamic_cast<const LogisticCpu*>(f.get())) data = &lg->data();
  if (const auto* ls = dynamic_cast<const LeastSquaresCpuSparse*>(f.get())) data = &ls->data();
  if (const auto* lg = dynamic_cast<const LogisticCpuSparse*>(f.get())) data = &lg->data();
  STALE_CHECK(data != nullptr, "a linear-model objective on the cpu");
  const size_t n = static_cast<size_t>(data->n()), d = static_cast<size_t>(data->d());
  auto vec = [](const Vec& v) { return ExportArray<double>{std::vector<double>(v.data(), v.data() + v.size()), {}}; };
  ObjectiveExport out;
  if (data->sparse()) {
    // CSR data (objective.storage) stay CSR
    const SparseRowMat& S = data->X_sparse;
    out.put("X", std::monostate{});
    out.put("X_csr/indptr",
            ExportArray<int64_t>{std::vector<int64_t>(S.outerIndexPtr(), S.outerIndexPtr() + S.rows() + 1), {}});
    out.put("X_csr/indices",
            ExportArray<int64_t>{std::vector<int64_t>(S.innerIndexPtr(), S.innerIndexPtr() + S.nonZeros()), {}});
    out.put("X_csr/data", ExportArray<double>{std::vector<double>(S.valuePtr(), S.valuePtr() + S.nonZeros()), {}});
    out.put("X_csr/shape", ExportTuple{{static_cast<int64_t>(n), static_cast<int64_t>(d)}});
  } else {
    // row-major (Mat is column-major)
    std::vector<double> X(n * d);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < d; ++j) X[i * d + j] = data->X(static_cast<Index>(i), static_cast<Index>(j));
    out.put("X", ExportArray<double>{std::move(X), {n, d}});
  }
  out.put("y", vec(data->y));
  out.put("weight", vec(data->weight));
  out.put("batch_offsets",
          ExportArray<int64_t>{std::vector<int64_t>(data->batch_offsets.begin(), data->batch_offsets.end()), {}});
  out.put("w_true", data->w_true ? ExportValue(vec(*data->w_true)) : ExportValue(std::monostate{}));
  const auto& c = f->constants();
  out.put("L", c.L);
  out.put("L_exact", c.L_exact);
  out.put("mu", c.mu);
  out.put("f_star", c.f_star);
  out.put("f_star_method", c.f_star_method);
  out.put("f_star_is_lower_bound", c.f_star_is_lower_bound);
  out.put("w_star", c.w_star ? ExportValue(vec(*c.w_star)) : ExportValue(std::monostate{}));
  std::vector<int64_t> sizes;
  for (int st = 0; st < f->stages(); ++st) sizes.push_back(f->blocks().size(st));
  out.put("block_sizes", ExportArray<int64_t>{std::move(sizes), {}});
  out.put("description", objective_description(*f, cfg));
  return out;
}

}  // namespace stale
