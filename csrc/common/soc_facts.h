// Per-SoC hardware facts, in one table read by the host tilings, the C entry points and the host
// simulation (which sizes its arenas from the usable sizes, so a kernel that fits the simulation
// fits the device). Plain C++ (no standard headers beyond <cstdint>): kernels see it through the
// tiling headers.
//
// Sources (asc-devkit docs/zh/guide/.../架构规格/NPU架构版本2201.md and NPU架构版本3510.md):
//   2201 (a2 = 910B, a3 = 910_93): UB 192 KB, of which 256 B are reserved by the framework and
//     compiler and 8 KB by Ascend C for APIs such as Select ("192KB - 256B - 8KB" usable unless
//     --cce-disable-asc-reserved-ubuf); L1 512 KB - 256 B usable; L0A/L0B 64 KB; L0C 128 KB.
//   3510 (a5 = 950): UB 256 KB, 248 KB usable by default (6 KB vector-function stack + 2 KB
//     Ascend C reserve); L1 512 KB; L0A/L0B 64 KB; L0C 256 KB.
//   Vector-pipe ordering (API/同步控制/核内同步/PipeBarrier(ISASI).md, 关键特性说明.md): on 2201 a vector
//     instruction reading what an earlier one wrote needs PipeBarrier<PIPE_V> between them; on 3510 the
//     hardware orders PIPE_V.
//   L0A fractal order (Mmad.md 表1/表2, NPU架构版本3510.md): Zz on 2201, Nz on 3510; 3510 removed the
//     L0A/L0B fill instruction (Fill.md).
#ifndef FLA_NPU_COMMON_SOC_FACTS_H
#define FLA_NPU_COMMON_SOC_FACTS_H

#include <cstdint>

namespace fla_npu {
namespace soc {

struct SocFacts {
    const char* name;  // "a2", "a3", "a5"
    uint32_t arch;     // __NPU_ARCH__ of the device build
    uint32_t ubBytes;  // UB a vector core may carve (usable, not physical)
    uint32_t l1Bytes;  // L1 an AIC may carve (usable)
    uint32_t l0aBytes;
    uint32_t l0bBytes;
    uint32_t l0cBytes;
    bool bf16VectorArith;    // bf16 Add/Sub/Mul/Max/Min/Adds/Muls/Compare/Select on the vector unit
    bool vectorPipeOrdered;  // the hardware orders dependent vector instructions (else PipeBarrier<PIPE_V>)
    bool l0aNz;              // Mmad reads A from L0A in Nz fractal order (3510); else Zz (2201)
    bool l0FillAllowed;      // Fill/InitConstValue may write L0A/L0B (2201); 3510 fills L1 only
};

inline constexpr uint32_t kKiB = 1024;
inline constexpr SocFacts kA2{
    "a2", 2201, 192 * kKiB - 256 - 8 * kKiB, 512 * kKiB - 256, 64 * kKiB, 64 * kKiB, 128 * kKiB, false, false, false, true};
inline constexpr SocFacts kA3{"a3",         2201,  kA2.ubBytes, kA2.l1Bytes, kA2.l0aBytes, kA2.l0bBytes,
                              kA2.l0cBytes, false, false,       false,       true};
inline constexpr SocFacts kA5{"a5", 3510, 248 * kKiB, 512 * kKiB, 64 * kKiB, 64 * kKiB, 256 * kKiB, true, true, true, false};

// L0A / L0B are the same size on every supported SoC: tilings may use this constant.
inline constexpr uint32_t kL0abBytes = kA2.l0aBytes;
static_assert(kA2.l0bBytes == kL0abBytes && kA5.l0aBytes == kL0abBytes && kA5.l0bBytes == kL0abBytes,
              "tilings assume one L0A/L0B size");
// The usable L1 of the smallest supported SoC (a2 and a3's): the L1 every tiling may carve.
inline constexpr uint32_t kL1Bytes = kA2.l1Bytes;
static_assert(kA3.l1Bytes >= kL1Bytes && kA5.l1Bytes >= kL1Bytes, "kL1Bytes is the smallest usable L1");

namespace detail {
constexpr bool Same(const char* a, const char* b) {
    for (; *a && *a == *b; ++a, ++b) {}
    return *a == *b;
}
}  // namespace detail

// The facts of SoC `name`, or nullptr for an unknown name.
constexpr const SocFacts* Find(const char* name) {
    return name == nullptr                ? nullptr
           : detail::Same(name, kA2.name) ? &kA2
           : detail::Same(name, kA3.name) ? &kA3
           : detail::Same(name, kA5.name) ? &kA5
                                          : nullptr;
}

}  // namespace soc
}  // namespace fla_npu

#endif
