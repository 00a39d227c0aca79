// FLA_NPU_AICORE marks inline helpers shared by the host (tiling, tests) and the kernels: on the
// device build they must carry __aicore__ (Bisheng defines __CCE_AICORE__ when compiling device code).
#ifndef FLA_NPU_AICORE_H
#define FLA_NPU_AICORE_H

#if defined(__CCE_AICORE__)
#define FLA_NPU_AICORE __aicore__
#else
#define FLA_NPU_AICORE
#endif

#endif
