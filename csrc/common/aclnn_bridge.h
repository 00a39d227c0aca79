// The NPU flavours' bridge from the C entry points (include/fla_npu/kernels.h) to the operator
// package (OPP) embedded in the wheel. Its op_api/lib/libcust_opapi.so exports, per op, the
// two-phase pair that CANN's OPP tooling generates,
//
//   aclnnStatus aclnn<Op>GetWorkspaceSize(<input aclTensors>, <attributes>, <output aclTensors>,
//                                         uint64_t* workspaceSize, aclOpExecutor** executor);
//   aclnnStatus aclnn<Op>(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream);
//
// and, through its dependency libnnopbase.so, aclCreateTensor / aclDestroyTensor. Nothing here
// includes a CANN header or links a CANN library: the few types, constants and functions used are
// declared below by this project from CANN's public API documentation, and the functions are
// resolved with dlsym when flaNpuSetOperatorPackage() loads the package. Each op's aclnn signature
// is generated from its descriptor with its entry points (tools/gen_op_entry.py).
#ifndef FLA_NPU_ACLNN_BRIDGE_H
#define FLA_NPU_ACLNN_BRIDGE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api_common.h"
#include "fla_npu/kernels.h"

namespace fla_npu {
namespace aclnn {

// ---- the part of CANN's C ABI the bridge uses -------------------------------------------------------

struct AclTensor;        // aclTensor (opaque)
struct AclOpExecutor;    // aclOpExecutor (opaque)
using Status = int32_t;  // aclnnStatus: 0 is success

// The C type of a Float attribute in the generated aclnn signatures: every op's signature spells its
// float attributes as FloatAttr, so this is the one place to change if the tooling emits float.
using FloatAttr = double;

// aclDataType values of the dtypes the ops take; aclFormat ACL_FORMAT_ND;
// aclrtDevAttr ACL_DEV_ATTR_VECTOR_CORE_NUM.
enum AclDataType : int32_t { kAclFloat = 0, kAclFloat16 = 1, kAclInt32 = 3, kAclInt64 = 9, kAclBf16 = 27 };
constexpr int32_t kAclFormatNd = 2;
constexpr int32_t kAclDevAttrVectorCoreNum = 201;

// aclCreateTensor(viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
// tensorData) and aclDestroyTensor(tensor) (libnnopbase.so); the second phase of every op;
// aclrtGetDevice(&deviceId) and aclrtGetDeviceInfo(deviceId, attr, &value) (libascendcl.so).
using CreateTensorFn = AclTensor* (*)(const int64_t*, uint64_t, int32_t, const int64_t*, int64_t, int32_t, const int64_t*,
                                      uint64_t, void*);
using DestroyTensorFn = Status (*)(const AclTensor*);
using LaunchFn = Status (*)(void*, uint64_t, AclOpExecutor*, void*);
using GetDeviceFn = int (*)(int32_t*);
// aclnnInit(configPath): once per process before the first aclnn call (API page aclnnInit; it also
// loads the operator packages ASCEND_CUSTOM_OPP_PATH names). aclSetAclOpExecutorRepeatable(executor)
// and aclDestroyAclOpExecutor(executor): an executor CANN made in phase one is freed by phase two;
// one whose phase two never runs is made repeatable and destroyed, the pair the API pages prescribe.
using InitFn = Status (*)(const char*);
using ExecutorFn = Status (*)(AclOpExecutor*);
using GetDeviceInfoFn = int (*)(uint32_t, int32_t, int64_t*);

// ---- ops and calls ------------------------------------------------------------------------------------

// One op of the operator package, named by its aclnn pair's base name ("aclnnFlaNpuGateChunkCumsum").
// Define one per op with static storage duration, in the op's generated <stage>_entry.cpp: it registers itself, and
// flaNpuSetOperatorPackage resolves the pair of every registered op (a missing one is an error).
class Op {
  public:
    explicit Op(const char* name);
    const char* name() const { return name_.c_str(); }
    const char* get_workspace_size_name() const { return get_workspace_size_name_.c_str(); }
    size_t index() const { return index_; }

  private:
    std::string name_;
    std::string get_workspace_size_name_;
    size_t index_;
};

struct Package;  // a loaded operator package: its resolved functions (aclnn_bridge.cpp)

// One call of an op: the aclTensors describing its arguments (destroyed with the Call), CANN's
// executor and workspace size from the first phase, then the launch. An executor whose launch never
// happens (the FlaNpuExecutor deleted unlaunched, or refused before the launch) is released with the Call. Held by the
// FlaNpuExecutor's launch function, so deleting the executor (after the launch, or flaNpuDestroyExecutor) destroys the
// aclTensors. Messages start with `caller` (the op's entry-point name, as validation's do).
class Call {
  public:
    // FLA_NPU_OK and `*call` set, or FLA_NPU_ERR_RUNTIME (no operator package loaded yet).
    static int Begin(const Op& op, const char* caller, std::shared_ptr<Call>* call);
    Call(const Op& op, const char* caller, std::shared_ptr<const Package> package);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

    // aclTensors for `tensors` (nullptr for a null descriptor: an absent optional input), in ND format
    // with the descriptor's shape as view and storage shape, row-major strides, offset 0 and the data
    // pointer. FLA_NPU_ERR_RUNTIME if aclCreateTensor fails (naming `names[i]`).
    template <size_t N>
    int Describe(const FlaNpuTensor* const (&tensors)[N], const char* const (&names)[N], const AclTensor* (&out)[N]) {
        for (size_t i = 0; i < N; ++i) {
            const int status = Describe(tensors[i], names[i], &out[i]);
            if (status != FLA_NPU_OK) return status;
        }
        return FLA_NPU_OK;
    }
    int Describe(const FlaNpuTensor* t, const char* name, const AclTensor** out);

    // Phase one: aclnn<Op>GetWorkspaceSize(args..., &workspace_size, &executor), with Fn its type:
    // Status (*)(<op arguments>, uint64_t*, AclOpExecutor**). A non-zero status: FLA_NPU_ERR_ACLNN.
    template <typename Fn, typename... Args>
    int GetWorkspaceSize(Args&&... args) {
        const Fn fn = reinterpret_cast<Fn>(get_workspace_size_fn_);
        const Status status = fn(std::forward<Args>(args)..., &workspace_size_, &executor_);
        return Check(op_.get_workspace_size_name(), status);
    }
    uint64_t workspace_size() const { return workspace_size_; }

    // Phase two: aclnn<Op>(workspace, workspace_size, executor, stream). A non-zero status:
    // FLA_NPU_ERR_ACLNN.
    int Launch(void* workspace, uint64_t workspace_size, void* stream);

  private:
    int Check(const char* function, Status status);

    const Op& op_;
    const char* caller_;
    std::shared_ptr<const Package> package_;
    void* get_workspace_size_fn_ = nullptr;
    std::vector<const AclTensor*> tensors_;
    uint64_t workspace_size_ = 0;
    AclOpExecutor* executor_ = nullptr;
};

// The NPU flavours' MakeExecutor, alike for every op: begins a Call of `op` (an error if no operator
// package is loaded), then, unless there is `nothing_to_do` (an executor that launches nothing),
// describes `tensors` and runs phase one as `first_phase(call, described_tensors)`, the op's
// GetWorkspaceSize<Fn>(...) with its attributes; the executor's launch is phase two.
template <size_t N, typename FirstPhase>
int ForwardToPackage(const Op& op, const char* caller, bool nothing_to_do, const FlaNpuTensor* const (&tensors)[N],
                     const char* const (&names)[N], FirstPhase&& first_phase, FlaNpuExecutor** executor) {
    std::shared_ptr<Call> c;
    int status = Call::Begin(op, caller, &c);
    if (status != FLA_NPU_OK) return status;
    if (nothing_to_do) {
        *executor = NewExecutor(caller, 0, [](void*, uint64_t, void*) { return static_cast<int>(FLA_NPU_OK); });
        return FLA_NPU_OK;
    }
    const AclTensor* t[N];
    status = c->Describe(tensors, names, t);
    if (status == FLA_NPU_OK) status = first_phase(*c, t);
    if (status != FLA_NPU_OK) return status;
    *executor = NewExecutor(caller, c->workspace_size(),
                            [c](void* ws, uint64_t ws_size, void* stream) { return c->Launch(ws, ws_size, stream); });
    return FLA_NPU_OK;
}

}  // namespace aclnn
}  // namespace fla_npu

#endif
