// The calls every chunk-layout kernel's OPP-vs-direct test runs (chunk output, WY): tensors
// [NC, HV, BT, ...] made by the op's `make(dtype, NC, HV, BT, K, V, Kg)`; Kg = K is KDA, Kg = 1 GDN.
#ifndef FLA_NPU_OPP_CHUNK_OPP_CASES_H
#define FLA_NPU_OPP_CHUNK_OPP_CASES_H

#include "opp_test_generic.h"

namespace opp_test {

using ChunkMaker = CallSpec (*)(int32_t dtype, int64_t NC, int64_t HV, int64_t BT, int64_t K, int64_t V, int64_t Kg);
using Cases = std::map<std::string, std::function<int()>>;

// `own` (the op's registration and shape refusals) and: KDA and GDN, every chunk size, K != V, more
// units than cores, no chunk, the widest heads (named `widest`); refused chunk size, head dim, gate columns.
inline Cases ChunkCases(const OpSpec& spec, ChunkMaker make, const char* widest, Cases own) {
    const auto same = [&spec, make](int32_t dtype, int64_t NC, int64_t HV, int64_t BT, int64_t K, int64_t V, int64_t Kg) {
        return [&spec, make, dtype, NC, HV, BT, K, V, Kg] { return Same(spec, make(dtype, NC, HV, BT, K, V, Kg)); };
    };
    const auto refused = [&spec, make](int32_t dtype, int64_t BT, int64_t V, int64_t Kg, const char* expect) {
        return [&spec, make, dtype, BT, V, Kg, expect] { return SameRefusal(spec, make(dtype, 1, 2, BT, 64, V, Kg), expect); };
    };
    own["kda_f16"] = same(FLA_NPU_FLOAT16, 3, 2, 64, 128, 128, 128);
    own["kda_bf16"] = same(FLA_NPU_BFLOAT16, 3, 2, 64, 128, 128, 128);
    own["gdn_bt32_bf16"] = same(FLA_NPU_BFLOAT16, 5, 3, 32, 64, 128, 1);
    own["gdn_bt16_f16"] = same(FLA_NPU_FLOAT16, 4, 2, 16, 128, 64, 1);
    own[widest] = same(FLA_NPU_BFLOAT16, 1, 2, 64, 256, 256, 256);
    own["many_units_f16"] = same(FLA_NPU_FLOAT16, 9, 3, 32, 32, 48, 32);
    own["empty_bf16"] = same(FLA_NPU_BFLOAT16, 0, 2, 64, 64, 64, 1);
    own["refuse_chunk_size"] = refused(FLA_NPU_FLOAT16, 48, 64, 1, "BT");
    own["refuse_head_dim"] = refused(FLA_NPU_BFLOAT16, 64, 72, 1, "multiples of 16");
    own["refuse_g_columns"] = refused(FLA_NPU_FLOAT16, 64, 64, 8, "`g`");
    return own;
}

}  // namespace opp_test

#endif
