#include "objectives/linear_model_cuda.hpp"
#include "src/backend/backend.hpp"
#include "src/core/error.hpp"

namespace stale {

std::unique_ptr<Objective> make_linear_model_cuda(std::shared_ptr<const LinearData>, int, double, LinearLoss,
                                                  Precision, const ObjectiveConstants&) {
  throw UserError("backend cuda: " + cuda_unavailable_reason());
}

}  // namespace stale
