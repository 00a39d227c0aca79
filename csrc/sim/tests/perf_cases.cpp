// Synthetic kernels with known timing answers, for the timing model (fla_npu/perf/): a pure copy, a
// Cube-only loop, a load -> vector -> store pipeline serialised by flags or double buffered with
// queues, and an AIC -> AIV cross-core hand-off. Built as a shared library (a2 profile) that
// tests/perf/test_model.py loads with ctypes: fla_perf_case(name, n) launches one kernel with
// tracing on; the trace is then read through the simulation's C interface (sim_api.h).
#include <cstring>
#include <string>
#include <vector>

#include "cube_buffers.h"
#include "kernel_operator.h"
#include "sim_api.h"

using namespace AscendC;

namespace {

GM_ADDR G(void* p) { return static_cast<GM_ADDR>(p); }

// y = x, `tiles` tiles of kCopyTile floats per core, two UB buffers: the load of tile i + 2 waits
// for the store of tile i (MTE3_MTE2), the store of tile i for its load (MTE2_MTE3).
constexpr int32_t kCopyTile = 16384;  // 64 KB
void perf_copy(GM_ADDR x, GM_ADDR y, int32_t tiles) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * kCopyTile * sizeof(float));
    LocalTensor<float> all = buf.Get<float>();
    const int64_t base = GetBlockIdx() * int64_t(tiles) * kCopyTile;
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x + base, int64_t(tiles) * kCopyTile);
    gy.SetGlobalBuffer((__gm__ float*)y + base, int64_t(tiles) * kCopyTile);
    for (int32_t t = 0; t < tiles; ++t) {
        const int32_t b = t % 2;
        LocalTensor<float> l = all[b * kCopyTile];
        if (t >= 2) WaitFlag<HardEvent::MTE3_MTE2>(b);
        DataCopy(l, gx[int64_t(t) * kCopyTile], kCopyTile);
        SetFlag<HardEvent::MTE2_MTE3>(b);
        WaitFlag<HardEvent::MTE2_MTE3>(b);
        DataCopy(gy[int64_t(t) * kCopyTile], l, kCopyTile);
        SetFlag<HardEvent::MTE3_MTE2>(b);
    }
    for (int32_t t = tiles > 2 ? tiles - 2 : 0; t < tiles; ++t) WaitFlag<HardEvent::MTE3_MTE2>(t % 2);
}

// `iters` Mmads of 128 x 128 x 128 fp16 accumulating into one L0C tile (A and B filled once by
// InitConstValue), then one Fixpipe of the fp32 result to GM.
constexpr uint32_t kCube = 128;
// The Cube work of perf_cube and perf_cross.
static void CubeWork(GM_ADDR c, int32_t iters) {
    TPipe pipe;
    CubeBuffers cb(pipe, kCube * kCube * sizeof(half), kCube * kCube * sizeof(half), kCube * kCube * sizeof(float), false);
    LocalTensor<half> a = cb.a2.Get<half>(), b = cb.b2.Get<half>();
    LocalTensor<float> lc = cb.c.Get<float>();
    const uint16_t fractals = uint16_t(kCube * kCube * sizeof(half) / 512);
    InitConstValue(a, InitConstValueParams<half>(1, fractals, 0, half(0.5f)));
    InitConstValue(b, InitConstValueParams<half>(1, fractals, 0, half(0.25f)));
    SetFlag<HardEvent::MTE1_M>(0);
    WaitFlag<HardEvent::MTE1_M>(0);
    for (int32_t i = 0; i < iters; ++i) Mmad(lc, a, b, MmadParams(kCube, kCube, kCube, 0, false, i == 0));
    SetFlag<HardEvent::M_FIX>(0);
    WaitFlag<HardEvent::M_FIX>(0);
    GlobalTensor<float> gc;
    gc.SetGlobalBuffer((__gm__ float*)c, kCube * kCube);
    Fixpipe<float, float, CFG_ROW_MAJOR>(gc, lc, FixpipeParamsV220(kCube, kCube, kCube, kCube, false));
}
void perf_cube(GM_ADDR c, int32_t iters) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    CubeWork(c, iters);
}

// y = x * 1.0001^passes per tile: load (MTE2), `passes` Muls (V), store (MTE3).
// serial: one buffer, every hand-off a flag, the next load after the store: nothing overlaps.
// double buffered: depth-2 queues, the load of tile i + 1 runs under the vector work of tile i.
constexpr int32_t kPipeTile = 4096;  // 16 KB of floats
void perf_pipeline(GM_ADDR x, GM_ADDR y, int32_t tiles, int32_t passes, int32_t doubleBuffered) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float*)x, int64_t(tiles) * kPipeTile);
    gy.SetGlobalBuffer((__gm__ float*)y, int64_t(tiles) * kPipeTile);
    auto compute = [&](const LocalTensor<float>& dst, const LocalTensor<float>& src) {
        Muls(dst, src, 1.0001f, kPipeTile);
        for (int32_t p = 1; p < passes; ++p) {
            PipeBarrier<PIPE_V>();
            Muls(dst, dst, 1.0001f, kPipeTile);
        }
    };
    if (!doubleBuffered) {
        TBuf<TPosition::VECCALC> bin, bout;
        pipe.InitBuffer(bin, kPipeTile * sizeof(float));
        pipe.InitBuffer(bout, kPipeTile * sizeof(float));
        LocalTensor<float> in = bin.Get<float>(), out = bout.Get<float>();
        for (int32_t t = 0; t < tiles; ++t) {
            if (t > 0) {
                WaitFlag<HardEvent::MTE3_MTE2>(0);
                WaitFlag<HardEvent::MTE3_V>(0);
            }
            DataCopy(in, gx[int64_t(t) * kPipeTile], kPipeTile);
            SetFlag<HardEvent::MTE2_V>(0);
            WaitFlag<HardEvent::MTE2_V>(0);
            compute(out, in);
            SetFlag<HardEvent::V_MTE3>(0);
            WaitFlag<HardEvent::V_MTE3>(0);
            DataCopy(gy[int64_t(t) * kPipeTile], out, kPipeTile);
            // the next load overwrites `in` only after this store (which also orders it after the
            // vector reads of `in`), and the next vector pass overwrites `out` only after it
            SetFlag<HardEvent::MTE3_MTE2>(0);
            SetFlag<HardEvent::MTE3_V>(0);
        }
        if (tiles > 0) {
            WaitFlag<HardEvent::MTE3_MTE2>(0);
            WaitFlag<HardEvent::MTE3_V>(0);
        }
        return;
    }
    TQue<QuePosition::VECIN, 2> qin;
    TQue<QuePosition::VECOUT, 2> qout;
    pipe.InitBuffer(qin, 2, kPipeTile * sizeof(float));
    pipe.InitBuffer(qout, 2, kPipeTile * sizeof(float));
    for (int32_t t = 0; t < tiles; ++t) {
        LocalTensor<float> in = qin.AllocTensor<float>();
        DataCopy(in, gx[int64_t(t) * kPipeTile], kPipeTile);
        qin.EnQue(in);
        in = qin.DeQue<float>();
        LocalTensor<float> out = qout.AllocTensor<float>();
        compute(out, in);
        qout.EnQue(out);
        qin.FreeTensor(in);
        out = qout.DeQue<float>();
        DataCopy(gy[int64_t(t) * kPipeTile], out, kPipeTile);
        qout.FreeTensor(out);
    }
}

// AIC: `iters` Mmads (as perf_cube), Fixpipe, then CrossCoreSetFlag to its AIVs; each AIV waits for
// it, then does one small vector instruction. The AIVs cannot finish before the Cube work.
void perf_cross(GM_ADDR c, int32_t iters) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    if ASCEND_IS_AIC {
        CubeWork(c, iters);
        CrossCoreSetFlag<2, PIPE_FIX>(1);
    } else {
        TPipe pipe;
        TBuf<TPosition::VECCALC> buf;
        pipe.InitBuffer(buf, 256 * sizeof(float));
        LocalTensor<float> l = buf.Get<float>();
        CrossCoreWaitFlag(1);
        Duplicate(l, 1.0f, 256);
    }
}

}  // namespace

extern "C" {

// Launch one synthetic kernel with tracing on: "copy" (n tiles of 64 KB per core on 8 AIV cores),
// "cube" (n Mmads), "serial" / "double" (n tiles of the pipeline, 8 vector passes each), "cross"
// (n Mmads then the hand-off). Returns 0 when the launch succeeded, 1 when it failed
// (fla_sim_last_error), 2 for an unknown name.
int fla_perf_case(const char* name, int32_t n) {
    const int prev = fla_sim_set_trace(1);
    const std::string c = name ? name : "";
    bool ok = true;
    if (c == "copy") {
        const int blocks = 8;
        std::vector<float> x(size_t(blocks) * n * kCopyTile, 1.0f), y(x.size());
        ok = sim::TryLaunch("perf_copy", KERNEL_TYPE_AIV_ONLY, blocks, perf_copy, G(x.data()), G(y.data()), n);
    } else if (c == "cube") {
        std::vector<float> out(kCube * kCube);
        ok = sim::TryLaunch("perf_cube", KERNEL_TYPE_AIC_ONLY, 1, perf_cube, G(out.data()), n);
    } else if (c == "serial" || c == "double") {
        std::vector<float> x(size_t(n) * kPipeTile, 1.0f), y(x.size());
        ok = sim::TryLaunch("perf_pipeline", KERNEL_TYPE_AIV_ONLY, 1, perf_pipeline, G(x.data()), G(y.data()), n, 8,
                            int32_t(c == "double"));
    } else if (c == "cross") {
        std::vector<float> out(kCube * kCube);
        ok = sim::TryLaunch("perf_cross", KERNEL_TYPE_MIX_AIC_1_2, 1, perf_cross, G(out.data()), n);
    } else {
        fla_sim_set_trace(prev);
        return 2;
    }
    fla_sim_set_trace(prev);
    return ok ? 0 : 1;
}

}  // extern "C"
