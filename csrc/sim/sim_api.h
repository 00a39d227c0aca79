/* fla-npu host simulation of Ascend C: the C interface read after a launch (Python via ctypes).
 *
 * A launch records its counters and its outcome in a process-wide "last launch" record. The record
 * stays valid until the next launch in this process. All functions are thread-safe. */
#ifndef FLA_NPU_SIM_API_H
#define FLA_NPU_SIM_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Counters of one simulated core (or, summed/maxed, of a whole launch). */
typedef struct FlaSimCounters {
    uint64_t gm_to_local_bytes;   /* bytes moved GM -> UB/L1 (MTE2; ND and ND->NZ) */
    uint64_t local_to_gm_bytes;   /* bytes moved UB/L0C -> GM (MTE3 DataCopy, FIX Fixpipe) */
    uint64_t vector_elem_ops;     /* vector element operations (one per active lane per instruction) */
    uint64_t cube_macs;           /* Cube multiply-adds (m*n*k per Mmad) */
    uint64_t peak_ub_bytes;       /* peak bytes handed out by TPipe::InitBuffer, per arena */
    uint64_t peak_l1_bytes;
    uint64_t peak_l0a_bytes;
    uint64_t peak_l0b_bytes;
    uint64_t peak_l0c_bytes;
} FlaSimCounters;

/* Core identity in the last launch: core_type 0 = AIC, 1 = AIV. */
typedef struct FlaSimCoreInfo {
    int32_t core_type;
    int32_t block_idx;      /* GetBlockIdx() as the kernel saw it */
    int32_t sub_block_idx;  /* GetSubBlockIdx() */
    int32_t reserved;
} FlaSimCoreInfo;

/* 1 if the last launch finished without a simulated-device fault, 0 if it failed, -1 if none ran. */
int fla_sim_last_launch_ok(void);
/* The fault message of the last launch ("" when it succeeded). */
const char* fla_sim_last_error(void);
/* Name of the last launched kernel. */
const char* fla_sim_last_kernel(void);
/* Number of simulated cores of the last launch (AIC + AIV threads). */
int fla_sim_last_core_count(void);
/* Counters of core i (0 <= i < core count); returns 0 on success, -1 on a bad index. */
int fla_sim_last_core_counters(int i, FlaSimCounters* out, FlaSimCoreInfo* info);
/* Launch totals: byte/op counters summed over cores, peaks are the maximum over cores. */
int fla_sim_last_total_counters(FlaSimCounters* out);

#ifdef __cplusplus
}
#endif

#endif
