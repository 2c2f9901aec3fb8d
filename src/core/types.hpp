#pragma once
// Numeric types shared by every layer. Double precision on the CPU is the reference.
#include <Eigen/Dense>
#include <cstdint>
#include <vector>

namespace stale {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;
using VecRef = Eigen::Ref<Vec>;
using ConstVecRef = Eigen::Ref<const Vec>;
using MatRef = Eigen::Ref<Mat>;
using ConstMatRef = Eigen::Ref<const Mat>;
using Index = Eigen::Index;
using IndexVec = std::vector<int64_t>;

}  // namespace stale
