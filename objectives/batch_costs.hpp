#pragma once
// The data cost of every mini-batch, for op durations that depend on the data
// (costs.coupling = "data", src/pipeline/state_costs.hpp): the work one micro-batch of that
// batch asks of each stage, up to a constant.
//
//  - linear models: 1 + the mean number of nonzero features per sample: the work of a sparse
//    X_b w plus the loss head's (LIBSVM data such as w7a vary from row to row, and hold
//    empty rows; dense generated data has d in every row, so its costs are all equal and
//    the coupling changes nothing);
//  - charlm: the mean, over the batch's windows, of the characters before the window's
//    first line break (all T when there is none) — the non-padding length the window would
//    have if each sequence ended at the end of its verse line, as with a line-level batcher
//    that pads to T. A proxy: the model itself still trains on the whole window.
//
// Only the CPU twins keep their data on the host; other objectives are a UserError naming
// costs.coupling.
#include <vector>

#include "objectives/objective.hpp"

namespace stale {

std::vector<double> batch_data_costs(const Objective& f);

}  // namespace stale
