#pragma once
// The device half of the CUDA twin of the character-level GPT (charlm_cuda_engine.cu), behind an
// Eigen-free interface of plain host arrays — for the reason linear_cuda_engine.hpp gives:
// nvcc (C++17, no -march=native) and the host compiler disagree on Eigen's aligned
// allocator, so no Eigen type may cross into a .cu file. charlm_cuda_objective.cpp (host
// compiler) adapts this engine to the Objective interface; without nvcc,
// charlm_cuda_nocuda.cpp's factory says "built without CUDA".
//
// Layout conventions are the CPU twin's (charlm.hpp, charlm_layers.hpp): activations are
// row-major [rows·len × E], row b·len + t; w is the flat parameter vector, stage by stage.
// The engine computes in T = float or double; every host array here is double and is
// converted on the device. Precision tf32 is the float engine with cuBLAS's TF32 tensor-core
// mode: operands of every GEMM are rounded to 10-bit mantissas (unit roundoff 2^-11) and
// accumulated in float32; storage and every other kernel stay float32.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stale {

struct CharLmCudaShape {
  int V = 0, E = 0, NH = 0, T = 0, S = 0;  // the batch (rows) comes with each call
};

// parameter offsets: stage blocks in w, and tensors inside each kind of stage (charlm.hpp)
struct CharLmCudaLayout {
  std::vector<int64_t> stage_offsets;  // S + 1 values
  int64_t wte = 0, wpe = 0;            // stage 0
  int64_t ln1w = 0, ln1b = 0, qkvw = 0, qkvb = 0, attprojw = 0, attprojb = 0, ln2w = 0, ln2b = 0, fcw = 0, fcb = 0,
          fcprojw = 0, fcprojb = 0;  // a transformer block
  int64_t lnfw = 0, lnfb = 0, lmw = 0;  // the head
};

enum class CharLmCudaPrecision { Float64, Float32, Tf32 };

// "float64" | "float32" | "tf32" (the config key `precision`)
CharLmCudaPrecision charlm_cuda_precision(const std::string& name);
std::string to_string(CharLmCudaPrecision p);

class CharLmCudaEngine {
 public:
  // what a stage's forward leaves on the device for its backward
  struct StageState {
    virtual ~StageState() = default;
  };

  virtual ~CharLmCudaEngine() = default;
  virtual std::string precision() const = 0;
  virtual std::string device_name() const = 0;

  // The whole model at w (d values) on rows sequences of len tokens: writes the logits
  // (rows·len × V). Keeps every stage's activations on the device for backward_all.
  virtual void forward_all(const double* w, const int32_t* tokens, int rows, int len, double* logits) = 0;
  // Backward of the last forward_all from dlogits (rows·len × V): the parameter gradient of
  // the stages s ≥ lowest into grad[offset(lowest) …] (d values; the rest is not written).
  virtual void backward_all(const double* dlogits, int lowest, double* grad) = 0;

  // One stage: s = 0 reads tokens (rows·len), s > 0 reads in (rows·len × E); out is
  // rows·len × E, or × V for the last stage.
  virtual std::unique_ptr<StageState> stage_forward(int s, int rows, int len, const int32_t* tokens,
                                                    const double* in, const double* w_s, double* out) = 0;
  // grad_w_s gets the block's gradient; grad_in (rows·len × E) is not written for s = 0.
  virtual void stage_backward(int s, const StageState& state, const double* grad_out, const double* w_s,
                              double* grad_w_s, double* grad_in) = 0;

  // Device time (CUDA events) of the layers of every forward_all and backward_all so far:
  // from after the inputs are on the device to before the results leave it. The rest of a
  // call's wall time is transfers, precision conversions and host work (benchmarks use this
  // to say what device-resident state would buy).
  virtual double compute_seconds() const = 0;
};

// true when this binary holds charlm_cuda_engine.cu (false: the stub, e.g. a CPU-only build)
bool charlm_cuda_compiled();

// Throws UserError when CUDA is not compiled in or no device is present.
std::unique_ptr<CharLmCudaEngine> make_charlm_cuda_engine(const CharLmCudaShape& shape, const CharLmCudaLayout& layout,
                                                          CharLmCudaPrecision precision);

// Measured float32-storage GEMM throughput of device 0 (cuBLAS SGEMM, n × n × n, on random
// operands), in FLOP/s: FP32 math (tf32 = false) or TF32 tensor-core math (tf32 = true).
// The peaks the benchmark compares the model with.
double cuda_sgemm_flops(int n, bool tf32);

}  // namespace stale
