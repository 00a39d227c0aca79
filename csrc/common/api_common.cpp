// Shared host-side pieces of the C entry points; see api_common.h.
#include "api_common.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "soc_facts.h"
#if defined(FLA_NPU_TARGET_SIM)
#include "kernel_operator.h"  // the simulation's: the simulated SoC's Cube (sim::kCube)
#endif

#ifndef FLA_NPU_SOC
#error "FLA_NPU_SOC must be defined by the build (\"a2\", \"a3\" or \"a5\")"
#endif

namespace fla_npu {

namespace {
thread_local std::string g_error;
thread_local int32_t g_aclnn_status = 0;  // of the last call, when it failed in an aclnn function
thread_local std::string g_aclnn_function;
}  // namespace

int SetError(int status, const std::string& message) {
    g_error = message;
    g_aclnn_status = 0;
    g_aclnn_function.clear();
    return status;
}
void ClearError() { SetError(FLA_NPU_OK, ""); }

int SetAclnnError(const char* function, int32_t aclnn_status, const std::string& message) {
    SetError(FLA_NPU_ERR_ACLNN, message);
    g_aclnn_status = aclnn_status;
    g_aclnn_function = function;
    return FLA_NPU_ERR_ACLNN;
}

int InvalidArgument(const char* op, const std::string& message) {
    return SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(op) + ": " + message);
}

int RunExecutor(const char* op, const char* get_ws_name, void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor,
                void* stream) {
    ClearError();
    const auto invalid = [op](const std::string& msg) {
        return SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(op) + ": " + msg);
    };
    if (executor == nullptr) return invalid(std::string("`executor` is null (call ") + get_ws_name + " first)");
    if (std::string(executor->op) != op) {
        const std::string other = executor->op;
        delete executor;
        return invalid("the executor belongs to " + other);
    }
    if (workspace_size < executor->workspace_size || (executor->workspace_size > 0 && workspace == nullptr)) {
        delete executor;
        return invalid("the workspace is smaller than GetWorkspaceSize asked for");
    }
    const int status = executor->launch(workspace, workspace_size, stream);
    delete executor;
    return status;
}

const char* DtypeName(int32_t dtype) {
    switch (dtype) {
        case FLA_NPU_FLOAT32: return "float32";
        case FLA_NPU_FLOAT16: return "float16";
        case FLA_NPU_BFLOAT16: return "bfloat16";
        case FLA_NPU_INT32: return "int32";
        case FLA_NPU_INT64: return "int64";
        default: return "unknown dtype";
    }
}

bool CheckDtype(const char* op, const char* name, const FlaNpuTensor* t, std::initializer_list<int32_t> dtypes) {
    std::string allowed;
    size_t i = 0;
    for (int32_t d : dtypes) {
        if (d == t->dtype) return true;
        allowed += i == 0 ? "" : i + 1 == dtypes.size() ? " or " : ", ";
        allowed += DtypeName(d);
        ++i;
    }
    InvalidArgument(op, std::string("`") + name + "` must be " + allowed + ", got " + DtypeName(t->dtype));
    return false;
}

bool CheckAllPresent(const char* op, const char* const* names, const FlaNpuTensor* const* t, int n, const bool* required) {
    for (int i = 0; i < n; ++i)
        if (required[i] && !CheckPresent(op, names[i], t[i])) return false;
    return true;
}

int CheckStridesAndTile(const char* op, const char* const* names, const FlaNpuTensor* const* t, int n,
                        const std::function<const char*(const ShapeArg*, const DeviceFacts&)>& hook) {
    std::vector<ShapeArg> args(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        if (t[i] == nullptr) continue;  // absent: ndim -1
        if (!CheckContiguous(op, names[i], t[i])) return FLA_NPU_ERR_INVALID_ARGUMENT;
        ShapeArg& a = args[static_cast<size_t>(i)];
        a.ndim = t[i]->ndim;
        for (int d = 0; d < t[i]->ndim; ++d) a.d[d] = t[i]->shape[d];
        a.numel = Numel(t[i]);
        a.dtype = t[i]->dtype;
    }
    DeviceFacts dev;
    dev.aiv_cores = static_cast<uint32_t>(flaNpuVectorCoreNum());
    dev.ai_cores = MixedLaunchAiCoreNum();
    dev.ub_bytes = TargetUbBytes();
    dev.l0c_bytes = TargetL0cBytes();
    dev.cube_fp32 = TargetCubeTakesFp32();
    const char* bad = hook(args.data(), dev);
    return bad == nullptr ? static_cast<int>(FLA_NPU_OK) : InvalidArgument(op, bad);
}

bool CheckPresent(const char* op, const char* name, const FlaNpuTensor* t) {
    if (t == nullptr) {
        SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(op) + ": `" + name + "` is required");
        return false;
    }
    if (t->ndim < 0 || t->ndim > FLA_NPU_MAX_DIMS) {
        SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(op) + ": `" + name + "` has an invalid number of dimensions");
        return false;
    }
    for (int i = 0; i < t->ndim; ++i)
        if (t->shape[i] < 0) {
            SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(op) + ": `" + name + "` has a negative dimension");
            return false;
        }
    if (t->data == nullptr && Numel(t) > 0) {
        SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(op) + ": `" + name + "` has no data pointer");
        return false;
    }
    return true;
}

bool CheckContiguous(const char* op, const char* name, const FlaNpuTensor* t) {
    if (Numel(t) == 0) return true;  // strides of an empty tensor mean nothing
    int64_t expect = 1;
    for (int i = t->ndim - 1; i >= 0; --i) {
        if (t->shape[i] != 1 && t->strides[i] != expect) {
            SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(op) + ": `" + name + "` must be contiguous (row-major)");
            return false;
        }
        expect *= t->shape[i];
    }
    return true;
}

int64_t Numel(const FlaNpuTensor* t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
    return n;
}

const char* TargetSoc() { return FLA_NPU_SOC; }
uint32_t TargetUbBytes() { return soc::Find(FLA_NPU_SOC)->ubBytes; }
uint32_t TargetL0cBytes() { return soc::Find(FLA_NPU_SOC)->l0cBytes; }

#if defined(FLA_NPU_TARGET_SIM)
bool TargetCubeTakesFp32() { return AscendC::sim::kCube.fp32Inputs; }
#else
bool TargetCubeTakesFp32() { return true; }  // a2/a3 (2201) and a5 (3510) Cubes take float x float
#endif

uint32_t MixedLaunchAiCoreNum() {
    const int32_t aiv = flaNpuVectorCoreNum();
    return aiv >= 2 ? static_cast<uint32_t>(aiv / 2) : 1u;
}

bool BeginGetWorkspaceSize(const char* op, uint64_t* workspace_size, FlaNpuExecutor** executor) {
    ClearError();
    if (workspace_size == nullptr || executor == nullptr) {
        SetError(FLA_NPU_ERR_INVALID_ARGUMENT, std::string(op) + ": `workspace_size` and `executor` must not be null");
        return false;
    }
    *executor = nullptr;
    *workspace_size = 0;
    return true;
}

int FinishGetWorkspaceSize(int make_executor_status, FlaNpuExecutor* const* executor, uint64_t* workspace_size) {
    if (make_executor_status != FLA_NPU_OK) return make_executor_status;
    *workspace_size = (*executor)->workspace_size;
    return FLA_NPU_OK;
}

}  // namespace fla_npu

extern "C" {

const char* flaNpuGetLastErrorMessage(void) { return fla_npu::g_error.c_str(); }

int32_t flaNpuGetLastAclnnStatus(const char** function) {
    if (function != nullptr) *function = fla_npu::g_aclnn_function.c_str();
    return fla_npu::g_aclnn_status;
}

void flaNpuDestroyExecutor(FlaNpuExecutor* executor) { delete executor; }

const char* flaNpuTarget(void) {
#if defined(FLA_NPU_TARGET_SIM)
    return "sim-" FLA_NPU_SOC;
#else
    return FLA_NPU_SOC;
#endif
}

#if defined(FLA_NPU_TARGET_SIM)
// The NPU flavours' flaNpuVectorCoreNum and flaNpuSetOperatorPackage are in aclnn_bridge.cpp.
int32_t flaNpuVectorCoreNum(void) {
    // Simulated cores are host threads: a handful is enough to exercise the split across cores.
    const char* env = std::getenv("FLA_NPU_SIM_CORES");
    if (env != nullptr) {
        const long n = std::strtol(env, nullptr, 10);
        if (n >= 1 && n <= 256) return static_cast<int32_t>(n);
    }
    return 8;
}

int flaNpuSetOperatorPackage(const char* libcust_opapi_path) {
    (void)libcust_opapi_path;
    return fla_npu::SetError(FLA_NPU_ERR_INVALID_ARGUMENT,
                             "flaNpuSetOperatorPackage: the sim flavour has no operator package (its kernels run on the "
                             "host simulation, built into this library)");
}
#endif

}  // extern "C"
