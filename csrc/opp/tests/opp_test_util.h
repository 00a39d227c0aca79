// Shared pieces of the operator-package tests (csrc/<op>/tests/*_opp_test.cpp): each compares an op's
// OPP path — its op_host tiling function run on a stand-in TilingContext (host_api_stub/), the tiling
// bytes put in a GM buffer, the OPP kernel entry launched on the host simulation with them — with
// the sim library's direct entry point on the same inputs.
//
//   <test> <case>    exit 0: passed; 1: a launch failed (message on stderr); 2: a check failed
//   <test> --list    the case names
#ifndef FLA_NPU_OPP_TEST_UTIL_H
#define FLA_NPU_OPP_TEST_UTIL_H

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fla_npu/kernels.h"
#include "kernel_operator.h"
#include "register/op_def_registry.h"
#include "sim_api.h"

#define OPP_CHECK(cond)                                                            \
    do {                                                                           \
        if (!(cond)) {                                                             \
            std::fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #cond); \
            return 2;                                                              \
        }                                                                          \
    } while (0)

namespace opp_test {

// A contiguous tensor descriptor for the direct entry points.
inline FlaNpuTensor Desc(const void* data, int32_t dtype, const std::vector<int64_t>& shape) {
    FlaNpuTensor t{};
    t.data = const_cast<void*>(data);
    t.dtype = dtype;
    t.ndim = static_cast<int32_t>(shape.size());
    int64_t stride = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
        t.shape[i] = shape[i];
        t.strides[i] = stride;
        stride *= shape[i];
    }
    return t;
}

inline GM_ADDR Gm(const void* p) { return static_cast<GM_ADDR>(const_cast<void*>(p)); }

// What CANN's platform info would report on the simulated SoC, with the direct entry points' core
// counts (flaNpuVectorCoreNum vector cores; an AI core is one AIC and two AIVs).
inline fe::PlatFormInfos SimPlatform() {
    using AscendC::sim::ArenaKind;
    fe::PlatFormInfos p;
    p.aiv = static_cast<uint32_t>(flaNpuVectorCoreNum());
    p.aic = p.aiv >= 2 ? p.aiv / 2 : 1;
    p.ub_bytes = AscendC::sim::kSoc.arenaBytes[static_cast<int>(ArenaKind::UB)];
    p.l0c_bytes = AscendC::sim::kSoc.arenaBytes[static_cast<int>(ArenaKind::L0C)];
    p.lib_api_workspace_bytes = static_cast<uint32_t>(AscendC::sim::kSysWorkspaceBytes);
    return p;
}

inline const ops::OpDef* Registered(const char* op_type) {
    auto it = ops::Registry().find(op_type);
    return it == ops::Registry().end() ? nullptr : it->second.get();
}

// What `fn` writes to stderr (the op_host tiling functions report failures there).
inline std::string CaptureStderr(const std::function<void()>& fn) {
    std::fflush(stderr);
    char path[] = "/tmp/fla_npu_opp_test_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return "<mkstemp failed>";
    const int saved = dup(2);
    dup2(fd, 2);
    fn();
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::string text;
    if (FILE* f = std::fopen(path, "r")) {
        char buf[512];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
        std::fclose(f);
    }
    close(fd);
    unlink(path);
    return text;
}

// Deterministic pseudo-random floats in [-1, 1).
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
    float Next() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<float>((s >> 40) & 0xFFFFFF) / float(1 << 23) - 1.0f;
    }
};

inline int Main(int argc, char** argv, const std::map<std::string, std::function<int()>>& cases) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <case>|--list\n", argv[0]);
        return 64;
    }
    const std::string name = argv[1];
    if (name == "--list") {
        for (const auto& kv : cases) std::printf("%s\n", kv.first.c_str());
        return 0;
    }
    auto it = cases.find(name);
    if (it == cases.end()) {
        std::fprintf(stderr, "unknown case %s\n", name.c_str());
        return 64;
    }
    try {
        return it->second();
    } catch (const AscendC::sim::LaunchError& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}

}  // namespace opp_test

#endif
