// Cube dtype rules: OP=0 (half x half -> float) must compile on every SoC; OP=1 (half x bfloat16_t),
// OP=2 (int8 x int8 -> int32, not simulated) and OP=3 (a half L0C) must not.
// Compiled by tests/sim/test_sim.py with -DFLA_SIM_SOC=... and -DOP=<case>.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void mmad_kernel() {
    TPipe pipe;
    TBuf<TPosition::A2> a;
    TBuf<TPosition::B2> b;
    TBuf<TPosition::CO1> c;
    pipe.InitBuffer(a, 512);
    pipe.InitBuffer(b, 512);
    pipe.InitBuffer(c, 1024);
    MmadParams p(16, 16, 16, 0, false, true);
#if OP == 0
    Mmad(c.Get<float>(), a.Get<half>(), b.Get<half>(), p);
#elif OP == 1
    Mmad(c.Get<float>(), a.Get<half>(), b.Get<bfloat16_t>(), p);
#elif OP == 2
    Mmad(c.Get<int32_t>(), a.Get<int8_t>(), b.Get<int8_t>(), p);
#elif OP == 3
    Mmad(c.Get<half>(), a.Get<half>(), b.Get<half>(), p);
#endif
}
