#pragma once
// The CUDA twin of the character-level GPT as an Objective: charlm_cuda_objective.cpp
// adapts the device engine (charlm_cuda_engine.hpp, charlm_cuda_engine.cu: cuBLAS GEMMs
// and small kernels) to the CharLm interface. The loss head runs on the host in double, as in the
// CPU twin. Without nvcc, or without a device, the factory throws a UserError that says why.
#include <memory>

#include "objectives/charlm/charlm.hpp"
#include "objectives/charlm/charlm_cuda_engine.hpp"

namespace stale {

// Float32: float kernels and cuBLAS SGEMM in FP32 (the training path); Tf32: the same with
// TF32 tensor-core GEMMs; Float64: the reference.
std::unique_ptr<CharLm> make_charlm_cuda(std::shared_ptr<const CharLmData> data, CharLmShape shape,
                                         CharLmCudaPrecision precision);

// Device time of the layers of f's whole-model passes so far (CharLmCudaEngine::
// compute_seconds); f must come from make_charlm_cuda.
double charlm_cuda_compute_seconds(const CharLm& f);

}  // namespace stale
