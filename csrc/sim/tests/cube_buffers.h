// The Cube buffers of the simulation's test kernels, written once for them: A and B in L1, their
// L0A / L0B copies and one L0C tile (fp32), carved in that order (the L1 pair left out when a kernel
// fills L0A / L0B directly), so that a fault names them TBuf<A1>, TBuf<B1>, TBuf<A2>, ... as before.
#pragma once

#include "kernel_operator.h"

struct CubeBuffers {
    AscendC::TBuf<AscendC::TPosition::A1> a1;
    AscendC::TBuf<AscendC::TPosition::B1> b1;
    AscendC::TBuf<AscendC::TPosition::A2> a2;
    AscendC::TBuf<AscendC::TPosition::B2> b2;
    AscendC::TBuf<AscendC::TPosition::CO1> c;

    // aBytes: A in L1 and in L0A; bBytes: B in L1 and in L0B; cBytes: the L0C tile.
    CubeBuffers(AscendC::TPipe& pipe, uint32_t aBytes, uint32_t bBytes, uint32_t cBytes, bool withL1 = true) {
        if (withL1) {
            pipe.InitBuffer(a1, aBytes);
            pipe.InitBuffer(b1, bBytes);
        }
        pipe.InitBuffer(a2, aBytes);
        pipe.InitBuffer(b2, bBytes);
        pipe.InitBuffer(c, cBytes);
    }
};
