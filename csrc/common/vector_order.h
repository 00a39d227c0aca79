// Ordering of dependent vector instructions. On arch 2201 (a2/a3) a vector instruction that reads
// what an earlier vector instruction wrote must be separated from it by PipeBarrier<PIPE_V>; on 3510
// (a5) the hardware orders the vector pipe (API/同步控制/核内同步/PipeBarrier(ISASI).md and
// 关键特性说明.md). The kernels are compiled with --cce-auto-sync=off, so they say it themselves.
#ifndef FLA_NPU_COMMON_VECTOR_ORDER_H
#define FLA_NPU_COMMON_VECTOR_ORDER_H

#include "kernel_operator.h"

namespace fla_npu {

// Call between a vector instruction and a later one that reads its result. Not needed before a queue
// hand-off (EnQue/DeQue order V against MTE3) nor between instructions on different 32-byte blocks.
__aicore__ inline void OrderV() {
#if __NPU_ARCH__ != 3510
    AscendC::PipeBarrier<PIPE_V>();
#endif
}

}  // namespace fla_npu

#endif
