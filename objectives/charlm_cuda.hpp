#pragma once
// The CUDA twin of the character-level GPT as an Objective: charlm_cuda_objective.cpp
// adapts the device engine (charlm_cuda_engine.hpp, charlm_cuda.cu: cuBLAS GEMMs and small
// kernels) to the CharLm interface. The loss head runs on the host in double, as in the
// CPU twin. Without nvcc, or without a device, the factory throws a UserError that says why.
#include <memory>

#include "objectives/charlm.hpp"

namespace stale {

// float32 = true: float kernels and cuBLAS SGEMM (the training path); false: float64
std::unique_ptr<CharLm> make_charlm_cuda(std::shared_ptr<const CharLmData> data, CharLmShape shape, bool float32);

}  // namespace stale
