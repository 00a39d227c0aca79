/* fla-npu native entry points: the types of their C interface (include/fla_npu/kernels.h), apart so
 * that the plain-C++ tilings and the operator package can use them without the generated prototypes. */
#ifndef FLA_NPU_KERNEL_TYPES_H
#define FLA_NPU_KERNEL_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLA_NPU_MAX_DIMS 8

typedef enum FlaNpuDtype {
    FLA_NPU_FLOAT32 = 0,
    FLA_NPU_FLOAT16 = 1,
    FLA_NPU_BFLOAT16 = 2,
    FLA_NPU_INT32 = 3,
    FLA_NPU_INT64 = 4,
} FlaNpuDtype;

typedef struct FlaNpuTensor {
    void* data;    /* device address (host address under the simulation) */
    int32_t dtype; /* FlaNpuDtype */
    int32_t ndim;
    int64_t shape[FLA_NPU_MAX_DIMS];
    int64_t strides[FLA_NPU_MAX_DIMS]; /* in elements */
} FlaNpuTensor;

typedef enum FlaNpuStatus {
    FLA_NPU_OK = 0,
    FLA_NPU_ERR_INVALID_ARGUMENT = 1, /* rejected by GetWorkspaceSize; nothing ran */
    FLA_NPU_ERR_KERNEL = 2,           /* the kernel failed (simulation: a simulated-device fault) */
    FLA_NPU_ERR_RUNTIME = 3,          /* the device runtime refused the launch; NPU flavours: no operator
                                         package loaded, or aclCreateTensor failed */
    FLA_NPU_ERR_ACLNN = 4,            /* NPU flavours: an aclnn function of the operator package returned a
                                         non-zero aclnnStatus (flaNpuGetLastAclnnStatus) */
} FlaNpuStatus;

typedef struct FlaNpuExecutor FlaNpuExecutor;

#ifdef __cplusplus
}
#endif

#endif
