// Shared host-side pieces of the C entry points (include/fla_npu/kernels.h): the per-thread error
// message, the single-use executor, tensor-descriptor checks and the flavour's launch facts.
// The NPU flavours' bridge to the operator package's aclnn functions is in aclnn_bridge.h.
#ifndef FLA_NPU_API_COMMON_H
#define FLA_NPU_API_COMMON_H

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

#include "fla_npu/kernels.h"
#include "shape_args.h"

struct FlaNpuExecutor {
    const char* op = "";
    // Runs the op: (workspace, workspace_size, stream) -> FlaNpuStatus. Whatever it holds (NPU
    // flavours: the aclTensors of the call) is released when the executor is deleted.
    std::function<int(void*, uint64_t, void*)> launch;
    uint64_t workspace_size = 0;
};

namespace fla_npu {

int SetError(int status, const std::string& message);  // returns status
void ClearError();
// An aclnn function of the operator package returned `aclnn_status` (!= 0): sets the message and
// what flaNpuGetLastAclnnStatus reports; returns FLA_NPU_ERR_ACLNN.
int SetAclnnError(const char* function, int32_t aclnn_status, const std::string& message);

// SetError(FLA_NPU_ERR_INVALID_ARGUMENT, "<op>: <message>"): an entry point refusing its arguments.
int InvalidArgument(const char* op, const std::string& message);

// Argument checks; each returns false after SetError(FLA_NPU_ERR_INVALID_ARGUMENT, "<op>: ...").
bool CheckPresent(const char* op, const char* name, const FlaNpuTensor* t);
bool CheckContiguous(const char* op, const char* name, const FlaNpuTensor* t);
int64_t Numel(const FlaNpuTensor* t);
// CheckPresent on each of the `n` tensors `t` (named `names`) that is `required` (the others may be
// null): the first check of every generated entry point, from its descriptor's "in?" inputs.
bool CheckAllPresent(const char* op, const char* const* names, const FlaNpuTensor* const* t, int n, const bool* required);
// The end of a C entry point's checks, after its dtype checks: CheckContiguous on each given tensor,
// then `hook`, the op's TilingFromShapes (the shape checks and tiling the operator package runs), on
// their shapes (a null tensor: absent) and the flavour's launch facts. FLA_NPU_OK, or the first
// defect refused (InvalidArgument).
int CheckStridesAndTile(const char* op, const char* const* names, const FlaNpuTensor* const* t, int n,
                        const std::function<const char*(const ShapeArg*, const DeviceFacts&)>& hook);
const char* DtypeName(int32_t dtype);
// Refuses a tensor whose dtype is none of `dtypes`: "<op>: `<name>` must be A, B or C, got D" (the
// dtypes named in the order given). Returns false after SetError(FLA_NPU_ERR_INVALID_ARGUMENT, ...).
bool CheckDtype(const char* op, const char* name, const FlaNpuTensor* t, std::initializer_list<int32_t> dtypes);

// The end of the C entry point of an op whose checks are its tiling hook's: CheckStridesAndTile on
// the call's `n` tensors (named `names`) with the op's TilingFromShapes (found through the namespace
// of the call's tiling) on the op's attributes `attrs`, which sets call->tiling.
template <typename Call, typename... Attrs>
int TileCall(const char* op, const char* const* names, int n, Call* call, Attrs... attrs) {
    return CheckStridesAndTile(op, names, call->t, n, [call, attrs...](const ShapeArg* a, const DeviceFacts& dev) {
        return TilingFromShapes(a, attrs..., dev, &call->tiling);
    });
}

// Opening of every `<op>GetWorkspaceSize`: clears the error, refuses null out-pointers and zeroes
// them. Returns false after SetError(FLA_NPU_ERR_INVALID_ARGUMENT, "<op>: ...").
bool BeginGetWorkspaceSize(const char* op, uint64_t* workspace_size, FlaNpuExecutor** executor);

// Close of every `<op>GetWorkspaceSize`: passes on the flavour's MakeExecutor status and, on
// success, reports the executor's workspace size.
int FinishGetWorkspaceSize(int make_executor_status, FlaNpuExecutor* const* executor, uint64_t* workspace_size);

// A new executor of `op` (every flavour builds its executors alike; deleted by RunExecutor).
inline FlaNpuExecutor* NewExecutor(const char* op, uint64_t workspace_size, std::function<int(void*, uint64_t, void*)> launch) {
    auto* ex = new FlaNpuExecutor;
    ex->op = op;
    ex->workspace_size = workspace_size;
    ex->launch = std::move(launch);
    return ex;
}

// The second phase of every op: checks that `executor` belongs to `op` and that the workspace is
// large enough, runs it and frees it (also on error). `get_ws_name` names the first phase.
int RunExecutor(const char* op, const char* get_ws_name, void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor,
                void* stream);

// The `<op>LastTiling(words, capacity)` entry points: copy up to `capacity` 32-bit words of an op's
// last tiling into `words` (if not null) and return how many words the tiling has.
template <typename Tiling>
int32_t CopyTiling(const Tiling& tiling, uint32_t* words, int32_t capacity) {
    constexpr int32_t n = static_cast<int32_t>(sizeof(Tiling) / sizeof(uint32_t));
    if (words != nullptr) std::memcpy(words, &tiling, sizeof(uint32_t) * static_cast<size_t>(capacity < n ? capacity : n));
    return n;
}

// Usable UB bytes per vector core of the flavour's SoC.
uint32_t TargetUbBytes();
// The SoC profile name of the flavour ("a2", "a3", "a5").
const char* TargetSoc();
// L0C bytes per AI core of the flavour's SoC (the mixed Cube ops' tilings need it).
uint32_t TargetL0cBytes();
// Whether the flavour's Cube takes float x float (IEEE fp32) inputs.
bool TargetCubeTakesFp32();
// AI cores a mixed (AIC + 2 AIV) launch may use: one per two vector cores, at least one.
uint32_t MixedLaunchAiCoreNum();

}  // namespace fla_npu

#endif
