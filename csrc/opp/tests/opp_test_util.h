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

#include <cmath>
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
            std::fprintf(stderr, "check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            return 2;                                                              \
        }                                                                          \
    } while (0)

// Run a check returning 0 / an exit code, and return its code from the caller on failure.
#define OPP_TRY(expr)                 \
    do {                              \
        if (const int rc_ = (expr)) { \
            return rc_;               \
        }                             \
    } while (0)

namespace opp_test {

inline int64_t Numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

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

// `n` pseudo-random values in [-1, 1) as float16 / bfloat16 bit patterns (`dtype` FLA_NPU_FLOAT16 or
// FLA_NPU_BFLOAT16).
inline void FillHalf(Rng& rng, int32_t dtype, int64_t n, std::vector<uint16_t>* x) {
    x->resize(static_cast<size_t>(n));
    for (auto& e : *x) {
        const float f = rng.Next();
        e = dtype == FLA_NPU_FLOAT16 ? half(f).bits : bfloat16_t(f).bits;
    }
}

// `n` pseudo-random values in [0.1, 1) (decay factors, beta).
inline void FillPositive(Rng& rng, int64_t n, std::vector<float>* x) {
    x->resize(static_cast<size_t>(n));
    for (auto& e : *x) e = 0.55f + 0.45f * rng.Next();
}

// A call of a chunk kernel (chunk_output, wy_fast), whose Call has these fields.
template <typename Call>
Call ChunkCall(int32_t dtype, int64_t NC, int64_t HV, int64_t BT, int64_t K, int64_t V, int64_t Kg) {
    Call c;
    c.dtype = dtype;
    c.NC = NC;
    c.HV = HV;
    c.BT = BT;
    c.K = K;
    c.V = V;
    c.Kg = Kg;
    return c;
}

// The two front ends of one op, each test's Call (the arguments) and Data (inputs and outputs):
//   run_direct   the direct entry point (flaNpu<Op>GetWorkspaceSize + flaNpu<Op>); its status, and
//                flaNpuGetLastErrorMessage() in *message on failure;
//   last_tiling  flaNpu<Op>LastTiling, the words of the direct entry's last tiling;
//   run_tiling   the registered op_host tiling function on a TilingContext built for the call.
template <typename Call, typename Data>
struct FrontEnds {
    const char* op_type;      // the OPP op type, e.g. "FlaNpuChunkOutput"
    const char* direct_name;  // the direct entry point, e.g. "flaNpuChunkOutput"
    int (*run_direct)(const Call&, Data&, std::string*);
    int32_t (*last_tiling)(uint32_t*, int32_t);
    ge::graphStatus (*run_tiling)(const Call&, const Data&, gert::TilingContext*, fe::PlatFormInfos*);
};

// A valid call, first half: the direct entry succeeds; then the op_host tiling function on the
// simulated platform (*platform) succeeds and gives the same tiling, byte for byte, and a block dim
// of the tiling's (at least 1). The tiling in *t.
template <typename Tiling, typename Call, typename Data>
int SameTiling(const FrontEnds<Call, Data>& ops, const Call& c, Data& d, gert::TilingContext* ctx,
               fe::PlatFormInfos* platform, Tiling* t) {
    std::string message;
    if (ops.run_direct(c, d, &message) != FLA_NPU_OK) {
        std::fprintf(stderr, "direct entry failed: %s\n", message.c_str());
        return 2;
    }
    uint32_t words[64];
    const int32_t n_words = ops.last_tiling(words, 64);
    OPP_CHECK(size_t(n_words) * 4 == sizeof(Tiling));

    *platform = SimPlatform();
    OPP_CHECK(ops.run_tiling(c, d, ctx, platform) == ge::GRAPH_SUCCESS);
    OPP_CHECK(ctx->tiling.GetDataSize() == sizeof(Tiling));
    OPP_CHECK(std::memcmp(ctx->tiling.GetData(), words, sizeof(Tiling)) == 0);
    std::memcpy(t, words, sizeof(Tiling));
    OPP_CHECK(ctx->block_dim == (t->block_dim > 0 ? t->block_dim : 1u));
    return 0;
}

// An invalid call: the direct entry refuses it (FLA_NPU_ERR_INVALID_ARGUMENT, its message prefixed
// with "<direct name>: ") and the op_host tiling function fails, having printed
// "<op type> tiling: " and the same message; the message mentions `expect`.
template <typename Call, typename Data>
int SameRefusal(const FrontEnds<Call, Data>& ops, const Call& c, Data d, const char* expect) {
    std::string direct;
    OPP_CHECK(ops.run_direct(c, d, &direct) == FLA_NPU_ERR_INVALID_ARGUMENT);
    const std::string prefix = std::string(ops.direct_name) + ": ";
    OPP_CHECK(direct.rfind(prefix, 0) == 0);
    direct = direct.substr(prefix.size());

    gert::TilingContext ctx;
    fe::PlatFormInfos platform = SimPlatform();
    ge::graphStatus status = ge::GRAPH_SUCCESS;
    const std::string opp = CaptureStderr([&] { status = ops.run_tiling(c, d, &ctx, &platform); });
    OPP_CHECK(status == ge::GRAPH_FAILED);
    if (opp != std::string(ops.op_type) + " tiling: " + direct + "\n" || direct.find(expect) == std::string::npos) {
        std::fprintf(stderr, "direct: %s\nopp: %s", direct.c_str(), opp.c_str());
        return 2;
    }
    return 0;
}

// What CANN's runtime hands a kernel entry: the tiling bytes copied to GM, and a workspace of the
// size the tiling asked for, filled with kCanary.
constexpr uint8_t kCanary = 0x5A;

struct LaunchBuffers {
    std::vector<uint8_t> tiling, workspace;

    explicit LaunchBuffers(const gert::TilingContext& ctx) {
        auto& raw = const_cast<gert::TilingData&>(ctx.tiling);
        const uint8_t* bytes = static_cast<const uint8_t*>(raw.GetData());
        tiling.assign(bytes, bytes + raw.GetDataSize());
        workspace.assign(ctx.workspace.empty() ? 0 : ctx.workspace[0], kCanary);
    }
    GM_ADDR TilingGm() { return tiling.data(); }
    GM_ADDR WorkspaceGm() { return workspace.empty() ? nullptr : workspace.data(); }
};

// The workspace a tiling asked for: one buffer, the system part (`platform`'s) first, then the
// kernel's `user_bytes`.
inline int CheckWorkspaceRequest(const gert::TilingContext& ctx, const fe::PlatFormInfos& platform, uint64_t user_bytes) {
    OPP_CHECK(ctx.workspace.size() == 1 && ctx.workspace[0] == platform.lib_api_workspace_bytes + user_bytes);
    return 0;
}

// The system part of the workspace is not the kernel's: still all kCanary after the launch.
inline int CheckSystemWorkspaceIntact(const LaunchBuffers& buffers, const fe::PlatFormInfos& platform) {
    OPP_CHECK(buffers.workspace.size() >= platform.lib_api_workspace_bytes);
    for (uint64_t i = 0; i < platform.lib_api_workspace_bytes; ++i) OPP_CHECK(buffers.workspace[i] == kCanary);
    return 0;
}

// The OPP path's output is bit-identical to the direct entry's.
template <typename T>
int CheckSameBits(const std::vector<T>& opp, const std::vector<T>& direct) {
    OPP_CHECK(opp.size() == direct.size());
    OPP_CHECK(std::memcmp(opp.data(), direct.data(), opp.size() * sizeof(T)) == 0);
    return 0;
}

// Every element written (the outputs were NaN before the launch).
inline int CheckAllFinite(const std::vector<float>& out) {
    for (float x : out) OPP_CHECK(std::isfinite(x));
    return 0;
}

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
