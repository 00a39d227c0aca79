// Shared host-side pieces of the C entry points; see api_common.h.
#include "api_common.h"

#include <cstdlib>
#include <string>

#include "../gate/gate_cumsum_tiling.h"

#if !defined(FLA_NPU_TARGET_SIM)
#include "acl/acl.h"
#endif

#ifndef FLA_NPU_SOC
#error "FLA_NPU_SOC must be defined by the build (\"a2\", \"a3\" or \"a5\")"
#endif

namespace fla_npu {

namespace {
thread_local std::string g_error;
}

int SetError(int status, const std::string& message) {
    g_error = message;
    return status;
}
void ClearError() { g_error.clear(); }

int RunExecutor(const char* op, const char* get_ws_name, void* workspace, uint64_t workspace_size,
                FlaNpuExecutor* executor, void* stream) {
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
uint32_t TargetUbBytes() { return gate::UbBytesForSoc(FLA_NPU_SOC); }

}  // namespace fla_npu

extern "C" {

const char* flaNpuGetLastErrorMessage(void) { return fla_npu::g_error.c_str(); }

void flaNpuDestroyExecutor(FlaNpuExecutor* executor) { delete executor; }

const char* flaNpuTarget(void) {
#if defined(FLA_NPU_TARGET_SIM)
    return "sim-" FLA_NPU_SOC;
#else
    return FLA_NPU_SOC;
#endif
}

int32_t flaNpuVectorCoreNum(void) {
#if defined(FLA_NPU_TARGET_SIM)
    // Simulated cores are host threads: a handful is enough to exercise the split across cores.
    const char* env = std::getenv("FLA_NPU_SIM_CORES");
    if (env != nullptr) {
        const long n = std::strtol(env, nullptr, 10);
        if (n >= 1 && n <= 256) return static_cast<int32_t>(n);
    }
    return 8;
#else
    // Not buildable here (no CANN): the AIV count of the current device from the ACL runtime.
    int32_t device = 0;
    int64_t value = 0;
    if (aclrtGetDevice(&device) != ACL_SUCCESS) return 1;
    if (aclrtGetDeviceInfo(static_cast<uint32_t>(device), ACL_DEV_ATTR_VECTOR_CORE_NUM, &value) != ACL_SUCCESS || value < 1) return 1;
    return static_cast<int32_t>(value);
#endif
}

}  // extern "C"
