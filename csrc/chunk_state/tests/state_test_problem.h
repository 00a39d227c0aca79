// The problem of the state kernels' tiling tests (chunk_state, chunk_state_output): N sequences of a
// heads problem on a SoC's UB and L0C.
#ifndef FLA_NPU_CHUNK_STATE_TESTS_STATE_TEST_PROBLEM_H
#define FLA_NPU_CHUNK_STATE_TESTS_STATE_TEST_PROBLEM_H

#include "../../common/tests/tiling_test_util.h"
#include "../chunk_state_tiling.h"

namespace state_test {

inline fla_npu::chunk_state::ChunkStateProblem Problem(uint32_t N, uint32_t HV, uint32_t NC, uint32_t BT, uint32_t K, uint32_t V,
                                                       uint32_t Kg, uint32_t cores, const fla_npu::soc::SocFacts& s) {
    auto p = tiling_test::HeadsProblem<fla_npu::chunk_state::ChunkStateProblem>(NC, HV, BT, K, V, Kg, cores);
    p.N = N;
    p.ub_bytes = s.ubBytes;
    p.l0c_bytes = s.l0cBytes;
    return p;
}

}  // namespace state_test

#endif
