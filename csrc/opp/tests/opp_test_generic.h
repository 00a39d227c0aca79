// The operator-package test of every op, driven by the op's spec (generated from its descriptor into
// <stage>_opp_glue.h by csrc/tools/gen_opp.py): the op's OPP path — the registered op_host tiling
// function run on a stand-in TilingContext (host_api_stub/), the tiling bytes put in a GM buffer, the
// OPP kernel entry launched on the host simulation with them, the block count and a workspace of the
// size the tiling asked for — against the sim library's direct entry point on the same inputs. An op's
// test (csrc/<op>/tests/<stage>_opp_test.cpp) only lists its calls.
//
//   Same(spec, call)                 a valid call: both paths succeed with the same tiling word for
//                                    word, block dim of the tiling's (at least 1), batch mode exactly
//                                    when the op's rule says, the workspace the op asks for (system
//                                    part first, left untouched), and bit-identical outputs, every
//                                    float element written (outputs are NaN before the launch);
//   SameRefusal(spec, call, expect)  an invalid call: the direct entry refuses it with
//                                    "<direct name>: <message>", the tiling function fails having
//                                    printed "<op type> tiling: <message>", the same message, which
//                                    mentions `expect`;
//   Registration(spec, call)         the registration (inputs, outputs, dtype combinations, formats,
//                                    attributes, SoCs) and the inference on a valid call's inputs;
//   BatchModeRefused(spec, call)     a call needing batch mode fails (naming it) when CANN refuses it.
//
//   <test> <case>    exit 0: passed; 1: a launch failed (message on stderr); 2: a check failed
//   <test> --list    the case names
#ifndef FLA_NPU_OPP_TEST_GENERIC_H
#define FLA_NPU_OPP_TEST_GENERIC_H

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fla_npu/kernels.h"
#include "kernel_operator.h"
#include "register/op_def_registry.h"
#include "sim_api.h"

#define OPP_CHECK(cond)                                                                     \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            std::fprintf(stderr, "check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            return 2;                                                                       \
        }                                                                                   \
    } while (0)

// Run a check returning 0 / an exit code, and return its code from the caller on failure.
#define OPP_TRY(expr)                               \
    do {                                            \
        if (const int rc_ = (expr)) { return rc_; } \
    } while (0)

namespace opp_test {

// ---- the op's spec (generated) and a call (the op's test) --------------------------------------------

// An attribute's value: `i` for an int32 attribute (the operator package's Int, int64_t), `f` for a float one.
struct AttrValue {
    int64_t i = 0;
    float f = 0.0f;
};

struct DimRule {
    int input;
    int64_t dim;        // or the value, without an input
    int64_t minus = 0;  // subtracted from the input's dimension
};

struct TensorDef {
    const char* name;
    bool input;
    bool optional;
    std::vector<int32_t> dtypes;  // FlaNpuDtype per dtype combination (one OPP kernel binary each)
    // Outputs: the inferred shape, {(input, -1)}: that input's shape; else per dimension (input, i[, m]):
    // dimension i of that input (less m), or (-1, n): n.
    std::vector<DimRule> shape_rule;
};

struct AttrDef {
    const char* name;
    bool is_int;
};

struct OpSpec {
    const char* op_type;             // "FlaNpuChunkOutput"
    const char* direct_name;         // "flaNpuChunkOutput"
    std::vector<TensorDef> tensors;  // inputs, then outputs
    std::vector<AttrDef> attrs;
    std::vector<std::string> configs;
    size_t tiling_bytes;
    uint32_t (*block_dim)(const void* tiling);
    bool workspace;
    uint64_t (*user_workspace_bytes)(const void* tiling);  // when `workspace`
    bool (*batch_mode)(const void* tiling);                // null: never batch mode
    int (*get_workspace_size)(const FlaNpuTensor* const* t, const AttrValue* a, uint64_t* ws, FlaNpuExecutor** ex);
    int (*run)(void* ws, uint64_t ws_size, FlaNpuExecutor* ex, void* stream);
    int32_t (*last_tiling)(uint32_t* words, int32_t capacity);
    void (*launch_opp)(size_t combo, uint32_t block_dim, GM_ADDR const* a, GM_ADDR ws, GM_ADDR tiling);
};

// One tensor of a call.
struct TensorVal {
    int32_t dtype = FLA_NPU_FLOAT32;
    std::vector<int64_t> shape;
    bool present = true;          // false: an absent optional input
    std::vector<int32_t> ints;    // the contents of an int32 input
    float lo = -1.0f, hi = 1.0f;  // the range of a float input's pseudo-random values
};

struct CallSpec {
    std::vector<TensorVal> t;  // in the spec's order
    std::vector<AttrValue> attrs;
};

// The chunk kernels' gate cumsum G of Kg columns: KDA token-major [NC, BT, HV, Kg], GDN (Kg = 1)
// head-major [NC, HV, BT, 1] (common/chunk_shapes.h's GateHeadMajor).
inline std::vector<int64_t> GateDims(int64_t NC, int64_t HV, int64_t BT, int64_t Kg) {
    return Kg == 1 ? std::vector<int64_t>{NC, HV, BT, 1} : std::vector<int64_t>{NC, BT, HV, Kg};
}

// A float tensor (inputs: pseudo-random values in [lo, hi)).
inline TensorVal Floats(int32_t dtype, std::vector<int64_t> shape, float lo = -1.0f, float hi = 1.0f) {
    TensorVal v;
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.lo = lo;
    v.hi = hi;
    return v;
}

// An int32 input of these values.
inline TensorVal Ints(std::vector<int64_t> shape, std::vector<int32_t> values) {
    TensorVal v;
    v.dtype = FLA_NPU_INT32;
    v.shape = std::move(shape);
    v.ints = std::move(values);
    return v;
}

// `c` with tensor `i` of another shape (a defect for SameRefusal).
inline CallSpec Reshaped(CallSpec c, size_t i, std::vector<int64_t> shape) {
    c.t[i].shape = std::move(shape);
    return c;
}

inline TensorVal Absent() {
    TensorVal v;
    v.present = false;
    return v;
}

// ---- helpers -------------------------------------------------------------------------------------------

inline int64_t Numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

inline size_t ElemBytes(int32_t dtype) { return dtype == FLA_NPU_FLOAT16 || dtype == FLA_NPU_BFLOAT16 ? 2 : 4; }

inline ge::DataType GeType(int32_t dtype) {
    switch (dtype) {
        case FLA_NPU_FLOAT32: return ge::DT_FLOAT;
        case FLA_NPU_FLOAT16: return ge::DT_FLOAT16;
        case FLA_NPU_BFLOAT16: return ge::DT_BF16;
        case FLA_NPU_INT32: return ge::DT_INT32;
        default: return ge::DT_UNDEFINED;
    }
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

// The tensors of one call: inputs (the same bytes for both paths) and each path's outputs, poisoned
// with NaN (float) or -1 (int32) before the launch.
struct Data {
    std::vector<std::vector<uint8_t>> direct, opp;
};

inline int MakeData(const OpSpec& spec, const CallSpec& c, Data* d) {
    OPP_CHECK(c.t.size() == spec.tensors.size() && c.attrs.size() == spec.attrs.size());
    d->direct.resize(c.t.size());
    for (size_t i = 0; i < c.t.size(); ++i) {
        const TensorVal& v = c.t[i];
        if (!v.present) continue;
        const int64_t n = Numel(v.shape);
        std::vector<uint8_t>& bytes = d->direct[i];
        bytes.resize(static_cast<size_t>(n) * ElemBytes(v.dtype));
        Rng rng(static_cast<uint64_t>(i * 7919 + n * 31 + v.dtype));
        for (int64_t e = 0; e < n; ++e) {
            uint8_t* at = bytes.data() + e * ElemBytes(v.dtype);
            if (!spec.tensors[i].input) {
                const uint32_t nan32 = 0x7FC00000u, poison32 = 0xFFFFFFFFu;
                const uint16_t nan16 = 0xFFFF;
                if (ElemBytes(v.dtype) == 2) std::memcpy(at, &nan16, 2);
                else std::memcpy(at, v.dtype == FLA_NPU_FLOAT32 ? &nan32 : &poison32, 4);
            } else if (v.dtype == FLA_NPU_INT32) {
                OPP_CHECK(v.ints.size() == static_cast<size_t>(n));
                std::memcpy(at, &v.ints[static_cast<size_t>(e)], 4);
            } else {
                const float x = v.lo + (v.hi - v.lo) * 0.5f * (rng.Next() + 1.0f);
                if (v.dtype == FLA_NPU_FLOAT32) std::memcpy(at, &x, 4);
                else {
                    const uint16_t bits = v.dtype == FLA_NPU_FLOAT16 ? half(x).bits : bfloat16_t(x).bits;
                    std::memcpy(at, &bits, 2);
                }
            }
        }
    }
    d->opp = d->direct;
    return 0;
}

// The direct entry point (flaNpu<Op>GetWorkspaceSize + flaNpu<Op>) on the call; its status, and
// flaNpuGetLastErrorMessage() in *message on failure.
inline int RunDirect(const OpSpec& spec, const CallSpec& c, Data& d, std::string* message) {
    std::vector<FlaNpuTensor> descs(c.t.size());
    std::vector<const FlaNpuTensor*> ptrs(c.t.size(), nullptr);
    for (size_t i = 0; i < c.t.size(); ++i) {
        if (!c.t[i].present) continue;
        descs[i] = Desc(d.direct[i].data(), c.t[i].dtype, c.t[i].shape);
        ptrs[i] = &descs[i];
    }
    uint64_t ws_size = 0;
    FlaNpuExecutor* ex = nullptr;
    int status = spec.get_workspace_size(ptrs.data(), c.attrs.data(), &ws_size, &ex);
    std::vector<uint8_t> ws(static_cast<size_t>(ws_size));
    if (status == FLA_NPU_OK) status = spec.run(ws.empty() ? nullptr : ws.data(), ws_size, ex, nullptr);
    if (status != FLA_NPU_OK) *message = flaNpuGetLastErrorMessage();
    return status;
}

// The OPP path: the registered tiling function on a TilingContext of the call's shapes, dtypes and
// attributes, on the simulated platform (*platform).
inline ge::graphStatus RunTiling(const OpSpec& spec, const CallSpec& c, gert::TilingContext* ctx, fe::PlatFormInfos* platform) {
    ctx->platform = platform;
    ctx->inputs.clear();
    ctx->outputs.clear();
    for (size_t i = 0; i < c.t.size(); ++i) {
        const gert::TensorArg a = c.t[i].present ? gert::Tensor(c.t[i].shape, GeType(c.t[i].dtype)) : gert::Absent();
        (spec.tensors[i].input ? ctx->inputs : ctx->outputs).push_back(a);
    }
    ctx->attrs.values.clear();
    for (size_t i = 0; i < c.attrs.size(); ++i)
        ctx->attrs.values.push_back(spec.attrs[i].is_int ? gert::RuntimeAttrs::Value{c.attrs[i].i, 0.0f}
                                                         : gert::RuntimeAttrs::Value{0, c.attrs[i].f});
    return Registered(spec.op_type)->aicore.tiling(ctx);
}

// The dtype combination (column of the registration) of the call's tensors, or -1.
inline int Combination(const OpSpec& spec, const CallSpec& c) {
    for (size_t k = 0; k < spec.tensors[0].dtypes.size(); ++k) {
        bool all = true;
        for (size_t i = 0; i < c.t.size(); ++i) all = all && (!c.t[i].present || spec.tensors[i].dtypes[k] == c.t[i].dtype);
        if (all) return static_cast<int>(k);
    }
    return -1;
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

// Every float element of an output written (it was NaN before the launch).
inline int CheckAllFinite(const std::vector<uint8_t>& bytes, int32_t dtype) {
    const size_t eb = ElemBytes(dtype);
    for (size_t e = 0; e < bytes.size() / eb; ++e) {
        float x = 0.0f;
        if (dtype == FLA_NPU_FLOAT32) std::memcpy(&x, &bytes[e * 4], 4);
        else if (dtype == FLA_NPU_INT32) continue;
        else {
            uint16_t bits;
            std::memcpy(&bits, &bytes[e * 2], 2);
            x = dtype == FLA_NPU_FLOAT16 ? float(half::FromBits(bits)) : float(bfloat16_t::FromBits(bits));
        }
        OPP_CHECK(std::isfinite(x));
    }
    return 0;
}

// ---- the checks ------------------------------------------------------------------------------------------

// A valid call (see the top of this file); `extra` checks the tiling further (may be empty).
inline int Same(const OpSpec& spec, const CallSpec& c, const std::function<int(const void* tiling)>& extra = {}) {
    Data d;
    OPP_TRY(MakeData(spec, c, &d));
    std::string message;
    if (RunDirect(spec, c, d, &message) != FLA_NPU_OK) {
        std::fprintf(stderr, "direct entry failed: %s\n", message.c_str());
        return 2;
    }
    uint32_t words[64];
    OPP_CHECK(size_t(spec.last_tiling(words, 64)) * 4 == spec.tiling_bytes);

    fe::PlatFormInfos platform = SimPlatform();
    gert::TilingContext ctx;
    OPP_CHECK(RunTiling(spec, c, &ctx, &platform) == ge::GRAPH_SUCCESS);
    OPP_CHECK(ctx.tiling.GetDataSize() == spec.tiling_bytes);
    OPP_CHECK(std::memcmp(ctx.tiling.GetData(), words, spec.tiling_bytes) == 0);
    const uint32_t block_dim = spec.block_dim(words);
    OPP_CHECK(ctx.block_dim == (block_dim > 0 ? block_dim : 1u));
    const bool batch = spec.batch_mode != nullptr && spec.batch_mode(words);
    OPP_CHECK(ctx.schedule_mode == (batch ? 1u : 0u) && ctx.schedule_mode_calls == (batch ? 1 : 0));
    const uint64_t user = spec.workspace ? spec.user_workspace_bytes(words) : 0;
    OPP_CHECK(ctx.workspace.size() == 1);
    OPP_CHECK(ctx.workspace[0] == (spec.workspace ? platform.lib_api_workspace_bytes + user : 0));
    if (extra) OPP_TRY(extra(words));

    const int combo = Combination(spec, c);
    OPP_CHECK(combo >= 0);
    LaunchBuffers buffers(ctx);
    std::vector<GM_ADDR> a(c.t.size(), nullptr);  // an absent optional input: null
    for (size_t i = 0; i < c.t.size(); ++i)
        if (c.t[i].present) a[i] = Gm(d.opp[i].data());
    spec.launch_opp(static_cast<size_t>(combo), ctx.block_dim, a.data(), buffers.WorkspaceGm(), buffers.TilingGm());

    for (size_t i = 0; i < c.t.size(); ++i) {
        if (spec.tensors[i].input) continue;
        OPP_CHECK(d.opp[i].size() == d.direct[i].size());
        OPP_CHECK(std::memcmp(d.opp[i].data(), d.direct[i].data(), d.opp[i].size()) == 0);
        OPP_TRY(CheckAllFinite(d.opp[i], c.t[i].dtype));
    }
    for (uint64_t i = 0; i < platform.lib_api_workspace_bytes && spec.workspace; ++i) OPP_CHECK(buffers.workspace[i] == kCanary);
    return 0;
}

// An invalid call (see the top of this file).
inline int SameRefusal(const OpSpec& spec, const CallSpec& c, const char* expect) {
    Data d;
    OPP_TRY(MakeData(spec, c, &d));
    std::string direct;
    OPP_CHECK(RunDirect(spec, c, d, &direct) == FLA_NPU_ERR_INVALID_ARGUMENT);
    const std::string prefix = std::string(spec.direct_name) + ": ";
    OPP_CHECK(direct.rfind(prefix, 0) == 0);
    direct = direct.substr(prefix.size());

    gert::TilingContext ctx;
    fe::PlatFormInfos platform = SimPlatform();
    ge::graphStatus status = ge::GRAPH_SUCCESS;
    const std::string opp = CaptureStderr([&] { status = RunTiling(spec, c, &ctx, &platform); });
    OPP_CHECK(status == ge::GRAPH_FAILED);
    if (opp != std::string(spec.op_type) + " tiling: " + direct + "\n" || direct.find(expect) == std::string::npos) {
        std::fprintf(stderr, "direct: %s\nopp: %s", direct.c_str(), opp.c_str());
        return 2;
    }
    return 0;
}

// The registration, and the inference on the inputs of `c` (a valid call whose output dtypes are
// the inference's: an output dtype chosen by the caller is inferred as its first choice).
inline int Registration(const OpSpec& spec, const CallSpec& c) {
    const ops::OpDef* def = Registered(spec.op_type);
    OPP_CHECK(def != nullptr && def->aicore.tiling != nullptr && def->infer_shape != nullptr && def->infer_dtype != nullptr);
    std::vector<const TensorDef*> ins, outs;
    for (const TensorDef& t : spec.tensors) (t.input ? ins : outs).push_back(&t);
    OPP_CHECK(def->inputs.size() == ins.size() && def->outputs.size() == outs.size());
    for (size_t i = 0; i < spec.tensors.size(); ++i) {
        const TensorDef& t = spec.tensors[i];
        const ops::OpParamDef& p = t.input ? def->inputs[i] : def->outputs[i - ins.size()];
        std::vector<ge::DataType> types;
        for (int32_t dtype : t.dtypes) types.push_back(GeType(dtype));
        OPP_CHECK(p.name == t.name && p.param_type == (t.optional ? ops::OPTIONAL : ops::REQUIRED));
        OPP_CHECK(p.dtypes == types && p.formats == std::vector<ge::Format>(types.size(), ge::FORMAT_ND));
    }
    OPP_CHECK(def->attrs.size() == spec.attrs.size());
    for (size_t i = 0; i < spec.attrs.size(); ++i)
        OPP_CHECK(def->attrs[i].name == spec.attrs[i].name && def->attrs[i].attr_type == ops::REQUIRED &&
                  def->attrs[i].kind == (spec.attrs[i].is_int ? ops::OpAttrDef::kInt : ops::OpAttrDef::kFloat));
    OPP_CHECK(def->aicore.configs == spec.configs);

    gert::InferShapeContext shape_ctx;
    gert::InferDataTypeContext dtype_ctx;
    for (size_t i = 0; i < ins.size(); ++i) {
        shape_ctx.inputs.push_back(c.t[i].present ? gert::Shape(c.t[i].shape) : gert::Shape());
        dtype_ctx.inputs.push_back(c.t[i].present ? GeType(c.t[i].dtype) : ge::DT_UNDEFINED);
    }
    shape_ctx.outputs.resize(outs.size());
    dtype_ctx.outputs.assign(outs.size(), ge::DT_UNDEFINED);
    OPP_CHECK(def->infer_shape(&shape_ctx) == ge::GRAPH_SUCCESS && def->infer_dtype(&dtype_ctx) == ge::GRAPH_SUCCESS);
    const int combo = Combination(spec, c);
    OPP_CHECK(combo >= 0);
    for (size_t o = 0; o < outs.size(); ++o) {
        std::vector<int64_t> want;
        const auto& rule = outs[o]->shape_rule;
        const bool whole = rule.size() == 1 && rule[0].dim < 0;  // an input's shape
        if (whole) want = c.t[static_cast<size_t>(rule[0].input)].shape;
        for (size_t k = 0; !whole && k < rule.size(); ++k)
            want.push_back(rule[k].input < 0
                               ? rule[k].dim
                               : c.t[static_cast<size_t>(rule[k].input)].shape[static_cast<size_t>(rule[k].dim)] - rule[k].minus);
        OPP_CHECK(shape_ctx.outputs[o] == gert::Shape(want));
        OPP_CHECK(dtype_ctx.outputs[o] == GeType(outs[o]->dtypes[static_cast<size_t>(combo)]));
    }
    return 0;
}

// A call that needs batch mode: if CANN refuses SetScheduleMode, the tiling fails (naming it)
// instead of launching a kernel that may deadlock.
inline int BatchModeRefused(const OpSpec& spec, const CallSpec& c) {
    OPP_CHECK(spec.batch_mode != nullptr);
    gert::TilingContext ctx;
    ctx.schedule_mode_status = ge::GRAPH_FAILED;
    fe::PlatFormInfos platform = SimPlatform();
    ge::graphStatus status = ge::GRAPH_SUCCESS;
    const std::string err = CaptureStderr([&] { status = RunTiling(spec, c, &ctx, &platform); });
    OPP_CHECK(status == ge::GRAPH_FAILED);
    OPP_CHECK(ctx.schedule_mode_calls == 1 && err.find("SetScheduleMode(1)") != std::string::npos);
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
