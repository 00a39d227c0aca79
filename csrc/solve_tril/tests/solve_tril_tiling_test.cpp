// Unit tests of the triangular-inverse kernel's host tiling (plain C++, no simulation, no CANN).
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "../../common/tests/tiling_test_util.h"
#include "solve_tril_tiling.h"

using namespace fla_npu::solve_tril;
namespace soc = fla_npu::soc;

static SolveTrilProblem Problem(uint32_t NC, uint32_t HV, uint32_t BT, uint32_t out_kind, uint32_t cores) {
    auto p = tiling_test::UnitsProblem<SolveTrilProblem>(NC, HV, BT, cores);
    p.out_kind = out_kind;
    return p;
}

// Buffers fit; the slot holds XT, the nb blocks -X_bb and R^T back to back; DataCopy rows of a block
// are whole 32-byte blocks in every output type.
static void CheckBuffers(const SolveTrilTiling& t, const SolveTrilProblem& p) {
    CHECK(t.nb * kBlock == t.BT);
    CHECK(t.out_bytes == (p.out_kind == kOutFloat32 ? 4u : 2u) && (kBlock * t.out_bytes) % 32 == 0);
    CHECK(t.ub_bytes_used <= p.ub_bytes);
    if (t.nb == 1) {
        CHECK(t.ws_slot_elems == 0 && t.ws_bytes_per_core == 0 && UserWorkspaceBytes(t) == 0 && t.l1_bytes_used == 0);
        return;
    }
    CHECK(t.ws_nx_off == t.BT * t.BT && t.ws_rt_off == t.ws_nx_off + t.nb * kBlockElems);
    CHECK(t.ws_slot_elems == t.ws_rt_off + (t.BT - kBlock) * kBlock && t.ws_bytes_per_core == 2 * t.ws_slot_elems * 4);
    CHECK(t.l0a_bytes_used <= soc::kL0abBytes && t.l0b_bytes_used <= soc::kL0abBytes && t.l0c_bytes_used <= p.l0c_bytes);
    CHECK(t.l1_bytes_used <= fla_npu::soc::kL1Bytes);
}

static void TestShapes() {
    for (uint32_t BT : {16u, 32u, 64u})
        for (uint32_t kind : {kOutFloat32, kOutFloat16, kOutBfloat16})
            for (uint32_t cores : {1u, 3u, 16u})
                tiling_test::CheckTiled<SolveTrilTiling>(Problem(5, 3, BT, kind, cores), cores, CheckBuffers);
    SolveTrilTiling t;
    const char* err = nullptr;
    CHECK(ComputeTiling(Problem(0, 4, 64, kOutFloat32, 8), &t, &err) == 0 && t.block_dim == 0 && UserWorkspaceBytes(t) == 0);
    // BT = 16 needs no Cube: a SoC without float32 Cube inputs still takes it.
    SolveTrilProblem p = Problem(2, 2, 16, kOutFloat16, 4);
    p.cube_fp32 = false;
    CHECK(ComputeTiling(p, &t, &err) == 0);
}

static void TestRefusals() {
    SolveTrilTiling t;
    const char* err = nullptr;
    SolveTrilProblem p = Problem(2, 2, 64, kOutFloat32, 4);
    p.in_bytes = 2;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "float32") != nullptr);
    p = Problem(2, 2, 64, 3, 4);
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "Akk") != nullptr);
    p = Problem(2, 2, 64, kOutFloat32, 4);
    p.cube_fp32 = false;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "takes no float32") != nullptr);
    for (uint32_t BT : {8u, 48u, 128u})
        CHECK(ComputeTiling(Problem(2, 2, BT, kOutFloat32, 4), &t, &err) != 0 && std::strstr(err, "BT"));
    CHECK(ComputeTiling(Problem(2, 2, 64, kOutFloat32, 0), &t, &err) != 0);
    p = Problem(2, 2, 64, kOutFloat32, 4);
    p.ub_bytes = 8 * 1024;
    CHECK(ComputeTiling(p, &t, &err) != 0 && std::strstr(err, "UB") != nullptr);
}

static void TestArgs() {
    using tiling_test::Arg;
    const auto l = Arg({3, 2, 64, 64}, FLA_NPU_FLOAT32), akk = Arg({3, 2, 64, 64}, FLA_NPU_BFLOAT16),
               bad = Arg({3, 2, 64, 32}, FLA_NPU_FLOAT32), other = Arg({3, 1, 64, 64}),
               l48 = Arg({3, 2, 48, 48}, FLA_NPU_FLOAT32);
    SolveTrilProblem p;
    auto check = [&](std::initializer_list<fla_npu::ShapeArg> call) {
        return tiling_test::CheckCall(&p, tiling_test::Device(8, 100000, 131072), call);
    };
    CHECK(check({l, Arg({3, 2, 64})}) != nullptr);
    CHECK(check({l, akk}) == nullptr);
    CHECK(p.NC == 3 && p.HV == 2 && p.BT == 64 && p.out_kind == kOutBfloat16 && p.core_num == 8 && p.ub_bytes == 100000);
    CHECK(tiling_test::Names(check({bad, bad}), "[NC, HV, BT, BT]"));
    CHECK(tiling_test::Names(check({l, other}), "`akk`"));
    CHECK(tiling_test::Names(check({l48, l48}), "BT"));
}

int main() {
    TestShapes();
    TestRefusals();
    TestArgs();
    return tiling_test::Report("solve_tril tiling");
}
