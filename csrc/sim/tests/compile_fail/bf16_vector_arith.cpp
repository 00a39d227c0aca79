// Must NOT compile for a2/a3 (no bf16 vector arithmetic on arch 2201); must compile for a5.
// Compiled by tests/sim/test_sim.py with -DFLA_SIM_SOC=... and -DOP=<instruction>.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void bf16_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<bfloat16_t> x = b.Get<bfloat16_t>();
#if OP == 1
    Add(x, x, x, 64);
#elif OP == 2
    Exp(x, x, 64);
#elif OP == 3
    Muls(x, x, bfloat16_t(2.0f), 64);
#elif OP == 4
    Mul(x, x, x, 64, 1, BinaryRepeatParams());
#endif
}
