// Shared pieces of the host tiling unit tests (csrc/<op>/tests/*_tiling_test.cpp; plain C++, no
// simulation, no CANN): a CHECK that counts failures and carries on, the check that the cores cover
// the units, the problems and hook calls of the chunk ops, and the exit status.
#ifndef FLA_NPU_TILING_TEST_UTIL_H
#define FLA_NPU_TILING_TEST_UTIL_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../shape_args.h"
#include "../soc_facts.h"

namespace tiling_test {
inline int failures = 0;
}  // namespace tiling_test

#define CHECK(c)                                                                \
    do {                                                                        \
        if (!(c)) {                                                             \
            std::fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #c); \
            ++tiling_test::failures;                                            \
        }                                                                       \
    } while (0)

namespace tiling_test {

// Every unit is taken by exactly one core, in order; the per-core counts differ by at most one.
// (CoreUnits is the op's, found by argument-dependent lookup.)
template <typename Tiling>
void CheckCover(const Tiling& t) {
    uint32_t next = 0, lo = 0xFFFFFFFFu, hi = 0;
    for (uint32_t b = 0; b < t.block_dim; ++b) {
        uint32_t first = 0, count = 0;
        CoreUnits(t, b, &first, &count);
        CHECK(first == next);
        next = first + count;
        lo = count < lo ? count : lo;
        hi = count > hi ? count : hi;
    }
    CHECK(next == t.num_units);
    if (t.block_dim > 0) CHECK(hi - lo <= 1 && lo >= 1);
}

// The problem of a chunk-layout op (a chunk_tiling::ChunkProblem) on an A2's UB and L0C, its own
// fields at their defaults.
template <typename Problem>
Problem UnitsProblem(uint32_t NC, uint32_t HV, uint32_t BT, uint32_t cores) {
    Problem p;
    p.NC = NC;
    p.HV = HV;
    p.BT = BT;
    p.core_num = cores;
    p.ub_bytes = fla_npu::soc::kA2.ubBytes;
    p.l0c_bytes = fla_npu::soc::kA2.l0cBytes;
    return p;
}

// The problem of an op over [K, V] heads (a chunk_tiling::HeadsProblem: chunk_output, wy_fast,
// chunk_state), likewise.
template <typename Problem>
Problem HeadsProblem(uint32_t NC, uint32_t HV, uint32_t BT, uint32_t K, uint32_t V, uint32_t Kg, uint32_t cores) {
    auto p = UnitsProblem<Problem>(NC, HV, BT, cores);
    p.K = K;
    p.V = V;
    p.Kg = Kg;
    return p;
}

// A call's tensor of shape `dims` (its rank: their count) and `dtype`, as a tiling hook sees it.
inline fla_npu::ShapeArg Arg(std::initializer_list<int64_t> dims, int32_t dtype = FLA_NPU_FLOAT16) {
    fla_npu::ShapeArg a;
    a.ndim = static_cast<int32_t>(dims.size());
    int64_t* d = a.d;
    for (int64_t n : dims) *d++ = n;
    a.dtype = dtype;
    return a;
}

// Arg with its element count set too (the hooks that check a tensor's size read it).
inline fla_npu::ShapeArg Numbered(std::initializer_list<int64_t> dims, int32_t dtype) {
    fla_npu::ShapeArg a = Arg(dims, dtype);
    a.numel = 1;
    for (int64_t d : dims) a.numel *= d;
    return a;
}

// A device of `cores` AI cores with `ub_bytes` of UB and `l0c_bytes` of L0C, whose Cube takes float32.
inline fla_npu::DeviceFacts Device(uint32_t cores, uint32_t ub_bytes, uint32_t l0c_bytes) {
    fla_npu::DeviceFacts dev;
    dev.ai_cores = cores;
    dev.ub_bytes = ub_bytes;
    dev.l0c_bytes = l0c_bytes;
    return dev;
}

// The op's shape checks (its ProblemFromShapes, found through the problem's namespace) on a call of
// the tensors `call` and the attributes `attrs` on `dev`: nullptr and *p, or the message.
template <typename Problem, typename... Attrs>
const char* CheckCall(Problem* p, const fla_npu::DeviceFacts& dev, std::initializer_list<fla_npu::ShapeArg> call,
                      Attrs... attrs) {
    return ProblemFromShapes(call.begin(), attrs..., dev, p);
}

// Whether `message` (of a refusal) names `what`.
inline bool Names(const char* message, const char* what) { return message != nullptr && std::strstr(message, what) != nullptr; }

// A chunk op's problem `p` of 5 chunks x 3 heads on `cores` cores: tiled (by its ComputeTiling, found
// as CoreUnits is), 15 units over min(cores, 15) cores, covered, the workspace a slice per core;
// `check_buffers(t, p)`.
template <typename Tiling, typename Problem, typename CheckBuffers>
void CheckTiled(const Problem& p, uint32_t cores, CheckBuffers check_buffers) {
    Tiling t;
    const char* err = nullptr;
    CHECK(ComputeTiling(p, &t, &err) == 0);
    CHECK(t.num_units == 15 && t.block_dim == (cores < 15 ? cores : 15));
    CheckCover(t);
    CHECK(UserWorkspaceBytes(t) == uint64_t(t.block_dim) * t.ws_bytes_per_core);
    check_buffers(t, p);
}

// The chunk kernels (chunk_output, wy_fast), whose problems are made by
// `problem(NC, HV, BT, K, V, Kg, cores)`: CheckTiled at every chunk size, head dims 16 to 256 for K
// and V, Kg 1 (GDN) or K (KDA), 1, 3 and 16 cores.
template <typename Tiling, typename MakeProblem, typename CheckBuffers>
void CheckChunkShapes(MakeProblem problem, CheckBuffers check_buffers) {
    const uint32_t bts[] = {16, 32, 64}, dims[] = {16, 48, 64, 128, 256};
    for (uint32_t BT : bts)
        for (uint32_t K : dims)
            for (uint32_t V : dims)
                for (uint32_t Kg : {1u, K})
                    for (uint32_t cores : {1u, 3u, 16u})
                        CheckTiled<Tiling>(problem(5, 3, BT, K, V, Kg, cores), cores, check_buffers);
}

// What both refuse: float32 Cube inputs (with the reason), a chunk size over 64, head dims not
// multiples of 16 or over 256, an e_row that is neither [.., 1] nor [.., K], no core.
template <typename Tiling, typename MakeProblem>
void CheckChunkRefusals(MakeProblem problem) {
    Tiling t;
    const char* err = nullptr;
    auto p = problem(2, 2, 64, 128, 128, 128, 4);
    p.elem_bytes = 4;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "float32") != nullptr &&
          std::strstr(err, "transposing") != nullptr);
    p.cube_fp32 = false;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "takes no float32") != nullptr);
    CHECK(ComputeTiling(problem(2, 2, 128, 128, 128, 1, 4), &t, &err) != 0 && std::strstr(err, "BT") != nullptr);
    CHECK(ComputeTiling(problem(2, 2, 64, 100, 128, 1, 4), &t, &err) != 0 && std::strstr(err, "multiples of 16") != nullptr);
    CHECK(ComputeTiling(problem(2, 2, 64, 128, 512, 1, 4), &t, &err) != 0 && std::strstr(err, "multiples of 16") != nullptr);
    CHECK(ComputeTiling(problem(2, 2, 64, 128, 128, 7, 4), &t, &err) != 0 &&
          std::strstr(err, "g must have 1 or K columns") != nullptr);
    CHECK(ComputeTiling(problem(2, 2, 64, 128, 128, 1, 0), &t, &err) != 0);
}

// The exit status: 0 and "<name>: all checks passed" when no CHECK failed, else 1.
inline int Report(const char* name) {
    if (failures) {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("%s: all checks passed\n", name);
    return 0;
}

}  // namespace tiling_test

#endif
