/* fla-npu native entry points: the C interface of libfla_npu_kernels.so.
 *
 * Every op has the same two-phase, aclnn-style pair in every flavour of the library:
 *
 *   status = flaNpu<Op>GetWorkspaceSize(<inputs>, <attributes>, <outputs>, &workspace_size, &executor);
 *   ...allocate workspace_size bytes of device memory (the Python runtime uses torch)...
 *   status = flaNpu<Op>(workspace, workspace_size, executor, stream);
 *
 * Flavours:
 *   sim       the kernels compiled against the host simulation of Ascend C and run on the host.
 *   a2|a3|a5  a thin bridge to the operator package (OPP) embedded in the NPU wheel, whose
 *             op_api/lib/libcust_opapi.so holds the kernels behind CANN's generated aclnn pair
 *             aclnn<Op>GetWorkspaceSize / aclnn<Op>. The library is plain C++ without a link to
 *             CANN: flaNpuSetOperatorPackage() loads that file (and, through it, CANN's
 *             libnnopbase.so) at run time; every op call needs it done first.
 *
 * GetWorkspaceSize validates everything and computes the tiling, with the same checks and
 * messages in every flavour; it writes nothing to the outputs. In the NPU flavours it then
 * describes the tensors to CANN (aclCreateTensor) and calls aclnn<Op>GetWorkspaceSize: the
 * workspace size it returns is the operator package's. The executor is single-use: the launch call
 * consumes and frees it (also when it fails); flaNpuDestroyExecutor frees one that will not be
 * launched (NPU flavours: the aclTensors are destroyed either way; CANN frees its own aclOpExecutor
 * only when it is launched). `stream` is an aclrtStream on the NPU and ignored by the simulation
 * (launches are synchronous there). Status 0 is success; otherwise flaNpuGetLastErrorMessage() says
 * what went wrong (per thread).
 *
 * Tensors are described by FlaNpuTensor: a device pointer, a dtype, the shape and the strides in
 * elements (row-major contiguous is required where an op says so). The library depends on neither
 * libtorch nor torch_npu.
 */
#ifndef FLA_NPU_KERNELS_H
#define FLA_NPU_KERNELS_H

#include <stdint.h>

#include "fla_npu/kernel_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Message of the last failed call on this thread ("" after a success). */
const char* flaNpuGetLastErrorMessage(void);
/* Free an executor that will not be launched (NULL is ignored). */
void flaNpuDestroyExecutor(FlaNpuExecutor* executor);
/* Which flavour this library is: "sim-a2", "sim-a3", "sim-a5", "a2", "a3" or "a5". */
const char* flaNpuTarget(void);
/* Vector cores a launch may use (sim: FLA_NPU_SIM_CORES or 8; NPU: the current device's AIV count
 * from the ACL runtime reached through the operator package, 1 when it cannot be queried). */
int32_t flaNpuVectorCoreNum(void);

/* NPU flavours: load the operator package's aclnn library (the vendor's op_api/lib/libcust_opapi.so)
 * with dlopen(RTLD_NOW | RTLD_GLOBAL) and resolve every op's aclnn pair and CANN's aclCreateTensor /
 * aclDestroyTensor through it (its dependencies include CANN's libnnopbase.so, so CANN's library
 * directory must be on the loader's path). The path is used as given: nothing is read from the
 * environment. Returns FLA_NPU_ERR_RUNTIME with a message naming the path and the missing file or
 * symbol on failure (a package set before stays in use). Calling it again with another path
 * switches the package for later calls. The sim flavour has no operator package:
 * FLA_NPU_ERR_INVALID_ARGUMENT. */
int flaNpuSetOperatorPackage(const char* libcust_opapi_path);

/* The aclnnStatus of the last call on this thread if it failed with FLA_NPU_ERR_ACLNN, else 0; when
 * `function` is not NULL it receives the name of the aclnn function that failed ("" otherwise). */
int32_t flaNpuGetLastAclnnStatus(const char** function);

/* The ops' entry points, generated from their descriptors (csrc/<op>/<stage>.op.py, with each op's
 * description) by csrc/tools/gen_op_table.py into the build directory. */
#include "fla_npu/kernel_entries.h"

#ifdef __cplusplus
}
#endif

#endif
