// How every kernel shares its work among the cores it launches: `num_units` independent units in
// contiguous ranges, the first `units_rem` cores taking one more than the others. The tiling sets
// the split (SplitUnits, host only); each core reads its range back (CoreUnits, host and device).
// A Tiling is any struct with the fields num_units, block_dim, units_per_core and units_rem.
#ifndef FLA_NPU_CORE_SPLIT_H
#define FLA_NPU_CORE_SPLIT_H

#include <cstdint>

#include "aicore.h"

namespace fla_npu {
namespace core_split {

// Splits `num_units` over min(num_units, core_num) cores; sets t->num_units, block_dim,
// units_per_core and units_rem (block_dim 0, nothing launched, when there is no unit).
template <typename Tiling>
void SplitUnits(uint32_t num_units, uint32_t core_num, Tiling* t) {
    t->num_units = num_units;
    t->block_dim = num_units < core_num ? num_units : core_num;
    t->units_per_core = t->block_dim > 0 ? num_units / t->block_dim : 0;
    t->units_rem = t->block_dim > 0 ? num_units % t->block_dim : 0;
}

// First unit and unit count of core `block`.
template <typename Tiling>
FLA_NPU_AICORE inline void CoreUnits(const Tiling& t, uint32_t block, uint32_t* first, uint32_t* count) {
    *count = t.units_per_core + (block < t.units_rem ? 1u : 0u);
    *first = block * t.units_per_core + (block < t.units_rem ? block : t.units_rem);
}

}  // namespace core_split
}  // namespace fla_npu

#endif
