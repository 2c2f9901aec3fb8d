#pragma once
// Y(:, p) += A · D(:, p) for p < P: the products behind every exact-metrics tracker (H[:, s] ΔW_s
// on the Hessian route) for one run or a lockstep ensemble of P runs.
//
// Why not Eigen: a one-column GEMV re-reads A (a 512 × 64 block of H is 256 KiB, from L2 or L3)
// for every run of an ensemble, and Eigen's GEMM packs A on every call, which cost as much as
// the multiply at P ≈ 9. This kernel streams A once for all columns of D, with tiles of 8 rows
// × 4–6 columns of Y in registers; A may be packed once (pack_panels: 8-row panels, each column's 8 values
// contiguous) so that the stream is sequential — measured on a 512 × 64 block of a 512 × 512 H
// (tests/bench/bench_block_product.cpp).
//
// Every element is summed in one fixed order whatever P, the packing, the column blocking or the
// machine: the columns j are cut into consecutive groups (all k below 128, else 16, or 4 for a
// stride of 4000 or more); each group's Σ A(i, j) D(j, p) is one chain of multiply-adds in
// ascending j — fused where the build has FMA instructions, and unfused for an odd matrix's
// last row — added to Y(i, p) when the group ends. Column p of a P-column call therefore equals the one-column call on D(:, p)
// bit for bit (an ensemble column ≡ its run alone), packed equals unpacked, and the vector and
// scalar paths agree. The groups are those of Eigen 3.4's column-major GEMV, so a tracker that
// moved from Eigen to this kernel gives the same bits as before (tests/core/test_block_product.cpp
// checks Y += A x against Eigen for several shapes).
#include <memory>
#include <mutex>
#include <vector>

#include "src/core/types.hpp"

namespace stale {

// A: rows × k, column stride lda; D: k × P, column stride ldd; Y: rows × P, column stride ldy
void add_block_product(const double* A, Index lda, Index rows, Index k, const double* D, Index ldd, double* Y,
                       Index ldy, Index P);

// A (rows × k, stride lda) as ⌈rows/8⌉ panels of k × 8 values (zero rows pad the last panel)
std::vector<double> pack_panels(const double* A, Index lda, Index rows, Index k);
// the same product on Ap = pack_panels(A, lda, rows, k) (lda only sets the partial sums)
void add_packed_block_product(const double* Ap, Index lda, Index rows, Index k, const double* D, Index ldd, double* Y,
                              Index ldy, Index P);

// The column blocks [offsets[s], offsets[s + 1]) of A (rows × cols, column stride lda) for
// add(s, …): each block packed on its first use when the copies take at most max_packed_bytes,
// else read in place — the same bits either way, so the choice changes the speed only. Safe to
// share between threads. A must outlive this.
class ColumnBlockProducts {
 public:
  ColumnBlockProducts() = default;
  ColumnBlockProducts(const double* A, Index lda, Index rows, std::vector<Index> offsets, size_t max_packed_bytes);
  // Y(:, p) += A[:, block s] · D(:, p) for p < P (D: size_s × P, stride ldd; Y: rows × P, stride ldy)
  void add(int s, const double* D, Index ldd, double* Y, Index ldy, Index P) const;
  bool packed() const { return pack_; }

 private:
  const double* A_ = nullptr;
  Index lda_ = 0, rows_ = 0;
  std::vector<Index> offsets_;
  bool pack_ = false;
  mutable std::vector<std::vector<double>> packed_;  // [block]: pack_panels of its columns, once used
  std::unique_ptr<std::once_flag[]> packed_once_;
};

}  // namespace stale
