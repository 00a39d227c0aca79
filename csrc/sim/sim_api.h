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
    uint64_t gm_to_local_bytes; /* bytes moved GM -> UB/L1 (MTE2; ND and ND->NZ) */
    uint64_t local_to_gm_bytes; /* bytes moved UB/L0C -> GM (MTE3 DataCopy, FIX Fixpipe) */
    uint64_t vector_elem_ops;   /* vector element operations (one per active lane per instruction) */
    uint64_t cube_macs;         /* Cube multiply-adds (m*n*k per Mmad) */
    uint64_t peak_ub_bytes;     /* peak bytes handed out by TPipe::InitBuffer, per arena */
    uint64_t peak_l1_bytes;
    uint64_t peak_l0a_bytes;
    uint64_t peak_l0b_bytes;
    uint64_t peak_l0c_bytes;
    uint64_t ws_to_local_bytes; /* of gm_to_local_bytes, those read from the launch's GM workspace */
    uint64_t local_to_ws_bytes; /* of local_to_gm_bytes, those written to it */
} FlaSimCounters;

/* Core identity in the last launch: core_type 0 = AIC, 1 = AIV. */
typedef struct FlaSimCoreInfo {
    int32_t core_type;
    int32_t block_idx;     /* GetBlockIdx() as the kernel saw it */
    int32_t sub_block_idx; /* GetSubBlockIdx() */
    int32_t reserved;
} FlaSimCoreInfo;

/* Instruction trace (off unless asked: fla_sim_set_trace(1) or FLA_SIM_TRACE=1 in the environment).
 * Each simulated core records, in program order, one record per instruction and per synchronisation
 * event; fla-npu's timing model (fla_npu/perf/) replays it. Kinds: */
enum {
    FLA_SIM_TRACE_INSTR = 0,     /* an instruction on `pipe` (pipe_t: 0 S, 1 V, 2 M, 3 MTE1, 4 MTE2, 5 MTE3, 6 FIX) */
    FLA_SIM_TRACE_SET_FLAG = 1,  /* SetFlag: pipe = source pipe, peer = destination pipe, key = event * 8 + id */
    FLA_SIM_TRACE_WAIT_FLAG = 2, /* WaitFlag: pipe = destination pipe (the pipe that waits), peer = source, key as above */
    FLA_SIM_TRACE_QUEUE_SET = 3, /* EnQue (producer -> consumer) or FreeTensor (consumer -> producer): pipe = source */
    FLA_SIM_TRACE_QUEUE_WAIT =
        4, /* DeQue or AllocTensor of a buffer freed before: pipe = the waiting pipe; key matches a QUEUE_SET */
    FLA_SIM_TRACE_BARRIER = 5, /* PipeBarrier<pipe> (pipe 7 = PIPE_ALL) */
    FLA_SIM_TRACE_XSET = 6,    /* CrossCoreSetFlag<mode = detail, pipe>(key) */
    FLA_SIM_TRACE_XWAIT = 7,   /* CrossCoreWaitFlag(key), blocking `pipe` */
    FLA_SIM_TRACE_SYNC_ALL = 8 /* SyncAll<detail = 1: AIVs only, 0: all cores>() */
};
/* Where an instruction's bytes go (`detail` of FLA_SIM_TRACE_INSTR); FLA_SIM_MEM_WS: GM, in the
   launch's workspace (the AIV <-> AIC hand-offs). */
enum { FLA_SIM_MEM_GM = 0, FLA_SIM_MEM_ONCHIP = 1, FLA_SIM_MEM_L0A = 2, FLA_SIM_MEM_L0B = 3, FLA_SIM_MEM_WS = 4 };

typedef struct FlaSimTraceRecord {
    uint8_t kind;
    uint8_t pipe;
    uint8_t peer;
    uint8_t detail;
    uint32_t key;    /* flag / queue key (see the kinds) */
    uint64_t amount; /* INSTR: bytes (MTE1/MTE2/MTE3/FIX), Cube MACs (M), vector element ops (V) */
    uint64_t passes; /* INSTR: 256-byte vector repeats (V), 16 x 16 x C0 fractal steps (M); else 0 */
} FlaSimTraceRecord;

/* Turn recording on (1) or off (0) for the following launches; returns the previous setting. */
int fla_sim_set_trace(int on);
/* Number of records of core i of the last launch (-1 on a bad index; 0 when it was not traced). */
int64_t fla_sim_last_trace_length(int i);
/* Copy up to `capacity` records of core i into `out`; returns the number copied (-1 on a bad index). */
int64_t fla_sim_last_trace(int i, FlaSimTraceRecord* out, int64_t capacity);
/* 1 if some core's trace of the last launch hit the record limit (FLA_SIM_TRACE_MAX, default 8M per core). */
int fla_sim_last_trace_truncated(void);

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
