#include "src/io/delay_moments_file.hpp"

namespace stale {

void write_delay_moments_group(hid_t file, const DelayMoments& m) {
  auto g = h5::create_group(file, "delay_moments");
  const auto W = static_cast<hsize_t>(m.windows()), S = static_cast<hsize_t>(m.blocks);
  h5::write_attr(g.id(), "window", m.window);
  h5::write_attr(g.id(), "max_overall", m.max_overall());
  h5::write_vector(g.id(), "k_end", m.k_end);
  h5::write_vector(g.id(), "count", m.count);
  h5::write_vector(g.id(), "running_max", m.running_max);
  h5::write_matrix(g.id(), "mean", m.mean.data(), W, S);
  h5::write_matrix(g.id(), "second", m.second.data(), W, S);
  h5::write_matrix(g.id(), "max", m.max.data(), W, S);
}

}  // namespace stale
