// fla-npu host simulation of Ascend C — the header kernels include.
//
// On the NPU the build resolves "kernel_operator.h" to CANN's; under the simulation (FLA_NPU_TARGET=sim)
// to this file. It is a clean-room implementation of the subset of the Ascend C API the fla-npu kernels
// use, with the real names and signatures, written from the public API's names and meanings only.
// See csrc/sim/README.md for what it checks and what it cannot show.
#pragma once

#include "sim_base.h"         // qualifiers, enums, SoC profile, faults
#include "sim_cube.h"         // Cube path: ND->NZ, LoadData, Mmad, Fixpipe (fractal layouts per SoC)
#include "sim_datacopy.h"     // DataCopy, DataCopyParams, DataCopyPad
#include "sim_dtype_rules.h"  // per-SoC dtype rules (compile time)
#include "sim_dtypes.h"       // half, bfloat16_t, RoundMode, exact rounding
#include "sim_launch.h"       // Launch, FLA_SIM_LAUNCH
#include "sim_memory.h"       // TPipe, TQue, TBuf, LocalTensor, GlobalTensor
#include "sim_sync.h"         // SetFlag/WaitFlag, PipeBarrier, cross-core flags, SyncAll, core ids
#include "sim_tiling.h"       // operator-package entries: GET_TILING_DATA, GetUserWorkspace
#include "sim_vector.h"       // vector instructions
