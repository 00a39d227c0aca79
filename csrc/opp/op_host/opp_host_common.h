// What the op_host files (generated from the op descriptors by csrc/tools/gen_opp.py) share: the
// call's tensors and the device facts the op's tiling hook takes (common/shape_args.h), read from a
// TilingContext and CANN's platform info; the tiling struct copied into the tiling buffer; the launch
// facts (block dim, schedule mode, workspace).
//
// CANN host API used here (names and signatures from CANN's public documentation and public op
// sources; see ../README.md): gert::TilingContext (GetInputShape, GetOptionalInputShape,
// GetOutputShape, GetInputDesc, GetOptionalInputDesc, GetOutputDesc, GetAttrs, GetPlatformInfo, SetBlockDim,
// SetScheduleMode, GetRawTilingData, GetWorkspaceSizes), gert::StorageShape::GetStorageShape, gert::Shape (GetDimNum, GetDim,
// GetShapeSize), platform_ascendc::PlatformAscendC (GetCoreNumAiv, GetCoreNumAic, GetCoreMemSize,
// GetLibApiWorkSpaceSize).
#ifndef FLA_NPU_OPP_HOST_COMMON_H
#define FLA_NPU_OPP_HOST_COMMON_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

#include "../../common/shape_args.h"
#include "../../common/soc_facts.h"

#ifndef FLA_NPU_OPP_SOC
#error "FLA_NPU_OPP_SOC (2, 3 or 5: a2, a3, a5) is set by csrc/opp from ASCEND_COMPUTE_UNIT"
#endif

namespace fla_npu {
namespace opp {

constexpr const char* kSoc = FLA_NPU_OPP_SOC == 5 ? "a5" : FLA_NPU_OPP_SOC == 3 ? "a3" : "a2";

// Fails a tiling function. The message goes to stderr: CANN's logging macros for ops are not part
// of the custom-op API this project could confirm.
inline ge::graphStatus Fail(const char* op, const char* message) {
    std::fprintf(stderr, "%s tiling: %s\n", op, message);
    return ge::GRAPH_FAILED;
}

// A tensor of the call as the op's tiling hook takes it: absent (null shape), or its shape and the
// dtype of its description (-1 without one).
inline ShapeArg ArgOf(const gert::StorageShape* s, const gert::CompileTimeTensorDesc* desc) {
    ShapeArg out;
    if (s == nullptr) return out;
    const gert::Shape& shape = s->GetStorageShape();
    out.ndim = static_cast<int32_t>(shape.GetDimNum());
    for (int32_t i = 0; i < out.ndim && i < FLA_NPU_MAX_DIMS; ++i) out.d[i] = shape.GetDim(i);
    out.numel = shape.GetShapeSize();
    if (desc != nullptr) {
        switch (desc->GetDataType()) {
            case ge::DT_FLOAT: out.dtype = FLA_NPU_FLOAT32; break;
            case ge::DT_FLOAT16: out.dtype = FLA_NPU_FLOAT16; break;
            case ge::DT_BF16: out.dtype = FLA_NPU_BFLOAT16; break;
            case ge::DT_INT32: out.dtype = FLA_NPU_INT32; break;
            case ge::DT_INT64: out.dtype = FLA_NPU_INT64; break;
            default: break;
        }
    }
    return out;
}

// The call's tensors in the registration's order into t[0 .. n_inputs + n_outputs): the inputs, then
// the outputs. An optional input (optional[i]) is read by its registration index
// (GetOptionalInputShape/Desc), a required one by its index among the inputs the call has
// (GetInputShape/Desc count only present inputs; public op sources rely on this, not documented).
inline void ReadTensors(gert::TilingContext* context, const bool* optional, int n_inputs, int n_outputs, ShapeArg* t) {
    size_t present = 0;
    for (int i = 0; i < n_inputs; ++i) {
        if (optional[i]) {
            t[i] = ArgOf(context->GetOptionalInputShape(i), context->GetOptionalInputDesc(i));
            if (t[i].present()) ++present;
        } else {
            t[i] = ArgOf(context->GetInputShape(present), context->GetInputDesc(present));
            ++present;
        }
    }
    for (int i = 0; i < n_outputs; ++i) t[n_inputs + i] = ArgOf(context->GetOutputShape(i), context->GetOutputDesc(i));
}

// Usable UB per vector core: the SoC facts' usable size (the toolchain's reserves taken off), or
// less if the platform reports less. Whether GetCoreMemSize(UB) already
// excludes that reserve is not documented; taking the smaller keeps the tiling within the device.
inline uint32_t UbBytes(const platform_ascendc::PlatformAscendC& platform) {
    uint64_t ub = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    const uint64_t assumed = soc::Find(kSoc)->ubBytes;
    return static_cast<uint32_t>(ub < assumed ? ub : assumed);
}

inline uint32_t L0cBytes(const platform_ascendc::PlatformAscendC& platform) {
    uint64_t l0c = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
    return static_cast<uint32_t>(l0c > 0xFFFFFFFFull ? 0xFFFFFFFFull : l0c);
}

// The tiling struct (a POD shared with the kernel, read there by GET_TILING_DATA) into the
// context's tiling buffer.
template <class Tiling>
ge::graphStatus SaveTiling(gert::TilingContext* context, const char* op, const Tiling& t) {
    auto* raw = context->GetRawTilingData();
    if (raw == nullptr || raw->GetData() == nullptr || raw->GetCapacity() < sizeof(Tiling))
        return Fail(op, "the tiling buffer is smaller than the tiling struct");
    std::memcpy(raw->GetData(), &t, sizeof(Tiling));
    raw->SetDataSize(sizeof(Tiling));
    return ge::GRAPH_SUCCESS;
}

// Cores to launch: the tiling's count, at least 1 (a launch has 1..65535 blocks; with no work
// every core's unit range is empty).
inline uint32_t BlockDim(uint32_t tiling_block_dim) { return tiling_block_dim > 0 ? tiling_block_dim : 1u; }

// The device facts the tiling hooks take.
inline DeviceFacts FactsOf(const platform_ascendc::PlatformAscendC& platform) {
    DeviceFacts dev;
    dev.aiv_cores = platform.GetCoreNumAiv();
    dev.ai_cores = platform.GetCoreNumAic();
    dev.ub_bytes = UbBytes(platform);
    dev.l0c_bytes = L0cBytes(platform);
    return dev;
}

// TilingContext::SetScheduleMode: 1 is batch mode (all blocks of the launch scheduled together).
constexpr uint32_t kBatchMode = 1;

// After the op's tiling hook: the tiling into the tiling buffer; the block dim (vector cores of a
// vector kernel, AI cores of a mixed one: each one AIC + two AIVs); batch mode when `batch_mode`
// (a kernel waiting on the hardware SyncAll needs all its blocks resident at once, or two such
// launches on two streams can each hold part of the cores and wait for the rest forever: API page
// SyncAll, constraints; TilingContext::SetScheduleMode); the workspace: none (no workspace and no
// Ascend C library API that needs one), or the system workspace followed by the kernel's
// `user_workspace_bytes`, which the kernel finds with GetUserWorkspace.
template <class Tiling>
ge::graphStatus FinishTiling(gert::TilingContext* context, const char* op, const Tiling& t, bool batch_mode, bool workspace,
                             uint64_t user_workspace_bytes, const platform_ascendc::PlatformAscendC& platform) {
    const ge::graphStatus saved = SaveTiling(context, op, t);
    if (saved != ge::GRAPH_SUCCESS) return saved;
    context->SetBlockDim(BlockDim(t.block_dim));
    if (batch_mode && context->SetScheduleMode(kBatchMode) != ge::GRAPH_SUCCESS)
        return Fail(op, "SetScheduleMode(1) (batch mode, needed by the kernel's SyncAll) failed");
    size_t* sizes = context->GetWorkspaceSizes(1);
    if (sizes == nullptr) return Fail(op, "no workspace size slot");
    sizes[0] = workspace ? static_cast<size_t>(platform.GetLibApiWorkSpaceSize()) + static_cast<size_t>(user_workspace_bytes) : 0;
    return ge::GRAPH_SUCCESS;
}

}  // namespace opp
}  // namespace fla_npu

#endif
