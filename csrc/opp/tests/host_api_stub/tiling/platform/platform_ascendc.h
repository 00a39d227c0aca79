// Test stand-in for CANN's platform_ascendc::PlatformAscendC (see ../../register/op_def_registry.h):
// reports what the test put in fe::PlatFormInfos.
#ifndef FLA_NPU_OPP_HOST_API_STUB_PLATFORM_H
#define FLA_NPU_OPP_HOST_API_STUB_PLATFORM_H

#include <cstdint>

#include "../../register/op_def_registry.h"

namespace platform_ascendc {

enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

class PlatformAscendC {
  public:
    explicit PlatformAscendC(fe::PlatFormInfos* info) : info_(info) {}
    uint32_t GetCoreNumAiv() const { return info_->aiv; }
    uint32_t GetCoreNumAic() const { return info_->aic; }
    void GetCoreMemSize(const CoreMemType& type, uint64_t& size) const {
        size = type == CoreMemType::UB ? info_->ub_bytes : type == CoreMemType::L0_C ? info_->l0c_bytes : 0;
    }
    uint32_t GetLibApiWorkSpaceSize() const { return info_->lib_api_workspace_bytes; }

  private:
    fe::PlatFormInfos* info_;
};

}  // namespace platform_ascendc

#endif
