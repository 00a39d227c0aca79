// Compare/Select/Fixpipe dtype rules. OP=0 (float Compare/CompareScalar/Select, half Fixpipe NZ into
// L1) compiles on every SoC; OP=1 (int32_t Compare) and OP=2 (bfloat16_t Select) compile on a5 only;
// OP=3 (a non-uint8_t Compare destination) and OP=4 (a float NZ Fixpipe) compile nowhere.
// Compiled by tests/sim/test_sim.py with -DFLA_SIM_SOC=... and -DOP=<case>.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void cmp_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b, m;
    TBuf<TPosition::A1> l1;
    TBuf<TPosition::CO1> c;
    pipe.InitBuffer(b, 1024);
    pipe.InitBuffer(m, 256);
    pipe.InitBuffer(l1, 1024);
    pipe.InitBuffer(c, 1024);
    LocalTensor<uint8_t> mask = m.Get<uint8_t>();
    FixpipeParamsV220 fp(16, 16, 16, 16, false);
#if OP == 0
    LocalTensor<float> x = b.Get<float>();
    Compare(mask, x, x, CMPMODE::LT, 64);
    CompareScalar(mask, x, 0.0f, CMPMODE::GE, 64);
    Select(x, mask, x, x, SELMODE::VSEL_TENSOR_TENSOR_MODE, 64);
    Select(x, mask, x, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 64);
    fp.quantPre = F322F16;
    Fixpipe<half, float, CFG_NZ>(l1.Get<half>(), c.Get<float>(), fp);
#elif OP == 1
    LocalTensor<int32_t> x = b.Get<int32_t>();
    Compare(mask, x, x, CMPMODE::EQ, 64);
#elif OP == 2
    LocalTensor<bfloat16_t> x = b.Get<bfloat16_t>();
    Select(x, mask, x, x, SELMODE::VSEL_TENSOR_TENSOR_MODE, 128);
#elif OP == 3
    LocalTensor<float> x = b.Get<float>();
    Compare(m.Get<int16_t>(), x, x, CMPMODE::LT, 64);
#elif OP == 4
    Fixpipe<float, float, CFG_NZ>(l1.Get<float>(), c.Get<float>(), fp);
#endif
}
