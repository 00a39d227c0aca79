// Shared pieces of the op_host files: the device facts the plain-C++ tilings take, read from CANN's
// platform info; shapes out of a TilingContext; the tiling struct copied into the tiling buffer.
//
// CANN host API used here (names and signatures from CANN's public documentation and public op
// sources; see ../README.md): gert::TilingContext (GetInputShape, GetOptionalInputShape,
// GetOutputShape, GetInputDesc, GetAttrs, GetPlatformInfo, SetBlockDim, GetRawTilingData,
// GetWorkspaceSizes), gert::StorageShape::GetStorageShape, gert::Shape (GetDimNum, GetDim,
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

// A shape as the plain-C++ checks take it; ndim -1: an absent optional tensor.
struct Dims {
    int32_t ndim = -1;
    int64_t d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t numel = 0;
};

inline Dims DimsOf(const gert::StorageShape* s) {
    Dims out;
    if (s == nullptr) return out;
    const gert::Shape& shape = s->GetStorageShape();
    out.ndim = static_cast<int32_t>(shape.GetDimNum());
    for (int32_t i = 0; i < out.ndim && i < 8; ++i) out.d[i] = shape.GetDim(i);
    out.numel = shape.GetShapeSize();
    return out;
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

}  // namespace opp
}  // namespace fla_npu

#endif
