#pragma once
// Seam of the CUDA twin of the linear models. The device work lives in linear_model_cuda.cu
// (cuBLAS) behind LinearCudaEngine; linear_model_cuda_objective.cpp adapts it to Objective.
// A build without nvcc links linear_model_cuda_nocuda.cpp, which says so.
#include <memory>

#include "objectives/linear/linear_cuda_engine.hpp"  // LinearLoss, Precision
#include "objectives/linear/linear_data.hpp"
#include "objectives/linear/nonconvex_regularizer.hpp"
#include "objectives/objective.hpp"

namespace stale {

// constants (f's own, with the nonconvex regulariser's) are computed once on the CPU twin and
// handed over
std::unique_ptr<Objective> make_linear_model_cuda(std::shared_ptr<const LinearData> data, int stages, double l2,
                                                  NonconvexRegularizer reg, LinearLoss loss, Precision precision,
                                                  const ObjectiveConstants& constants);

}  // namespace stale
