/* fla-npu native entry points: the C interface of libfla_npu_kernels.so.
 *
 * Every op has the same two-phase, aclnn-style pair in every flavour of the library:
 *
 *   status = flaNpu<Op>GetWorkspaceSize(<inputs>, <attributes>, <outputs>, &workspace_size, &executor);
 *   ...allocate workspace_size bytes of device memory (the Python runtime uses torch)...
 *   status = flaNpu<Op>(workspace, workspace_size, executor, stream);
 *
 * Flavours:
 *   sim       the kernels compiled against the host simulation of Ascend C and run on the host.
 *   a2|a3|a5  a thin bridge to the operator package (OPP) embedded in the NPU wheel, whose
 *             op_api/lib/libcust_opapi.so holds the kernels behind CANN's generated aclnn pair
 *             aclnn<Op>GetWorkspaceSize / aclnn<Op>. The library is plain C++ without a link to
 *             CANN: flaNpuSetOperatorPackage() loads that file (and, through it, CANN's
 *             libnnopbase.so) at run time; every op call needs it done first.
 *
 * GetWorkspaceSize validates everything and computes the tiling, with the same checks and
 * messages in every flavour; it writes nothing to the outputs. In the NPU flavours it then
 * describes the tensors to CANN (aclCreateTensor) and calls aclnn<Op>GetWorkspaceSize: the
 * workspace size it returns is the operator package's. The executor is single-use: the launch call
 * consumes and frees it (also when it fails); flaNpuDestroyExecutor frees one that will not be
 * launched (NPU flavours: the aclTensors are destroyed either way; CANN frees its own aclOpExecutor
 * only when it is launched). `stream` is an aclrtStream on the NPU and ignored by the simulation
 * (launches are synchronous there). Status 0 is success; otherwise flaNpuGetLastErrorMessage() says
 * what went wrong (per thread).
 *
 * Tensors are described by FlaNpuTensor: a device pointer, a dtype, the shape and the strides in
 * elements (row-major contiguous is required where an op says so). The library depends on neither
 * libtorch nor torch_npu.
 */
#ifndef FLA_NPU_KERNELS_H
#define FLA_NPU_KERNELS_H

#include <stdint.h>

#include "fla_npu/kernel_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Message of the last failed call on this thread ("" after a success). */
const char* flaNpuGetLastErrorMessage(void);
/* Free an executor that will not be launched (NULL is ignored). */
void flaNpuDestroyExecutor(FlaNpuExecutor* executor);
/* Which flavour this library is: "sim-a2", "sim-a3", "sim-a5", "a2", "a3" or "a5". */
const char* flaNpuTarget(void);
/* Vector cores a launch may use (sim: FLA_NPU_SIM_CORES or 8; NPU: the current device's AIV count
 * from the ACL runtime reached through the operator package, 1 when it cannot be queried). */
int32_t flaNpuVectorCoreNum(void);

/* NPU flavours: load the operator package's aclnn library (the vendor's op_api/lib/libcust_opapi.so)
 * with dlopen(RTLD_NOW | RTLD_GLOBAL) and resolve every op's aclnn pair and CANN's aclCreateTensor /
 * aclDestroyTensor through it (its dependencies include CANN's libnnopbase.so, so CANN's library
 * directory must be on the loader's path). The path is used as given: nothing is read from the
 * environment. Returns FLA_NPU_ERR_RUNTIME with a message naming the path and the missing file or
 * symbol on failure (a package set before stays in use). Calling it again with another path
 * switches the package for later calls. The sim flavour has no operator package:
 * FLA_NPU_ERR_INVALID_ARGUMENT. */
int flaNpuSetOperatorPackage(const char* libcust_opapi_path);

/* The aclnnStatus of the last call on this thread if it failed with FLA_NPU_ERR_ACLNN, else 0; when
 * `function` is not NULL it receives the name of the aclnn function that failed ("" otherwise). */
int32_t flaNpuGetLastAclnnStatus(const char** function);

/* The ops' entry points, generated from their descriptors (csrc/<op>/<stage>.op.py, with each op's
 * description) by csrc/tools/gen_op_table.py into the build directory. */
#include "fla_npu/kernel_entries.h"

/* ---- triangular inverse (second half of stage 2 of chunked KDA / Gated DeltaNet; mixed Cube + vector)
 *
 *   l    [NC, HV, BT, BT]  float32, strictly lower triangular: only the part below the diagonal is read
 *                          (the diagonal and the upper triangle are ignored, whatever they hold)
 *   akk  [NC, HV, BT, BT]  float32, float16 or bfloat16:  akk = (I + l)^-1, unit lower triangular, exact
 *                          zeros above the diagonal; computed in fp32 and rounded once to akk's dtype
 * Both contiguous; BT 16, 32 or 64; NC or HV may be 0 (nothing runs). The 16 x 16 diagonal blocks are
 * inverted by substitution on the vector unit, the blocks below them merged on the Cube (fp32 inputs,
 * fp32 accumulation).
 *
 * Workspace: per launched AI core, two slots of BT * BT + BT * 16 + (BT - 16) * 16 float32 elements
 * (none for BT = 16), through which the vector cores hand the diagonal blocks' inverses to the Cube.
 * NPU flavours forward to aclnnFlaNpuSolveTril[GetWorkspaceSize](l, akk) and ask for the operator
 * package's workspace; nothing is called when there is no chunk.
 */
int flaNpuSolveTrilGetWorkspaceSize(const FlaNpuTensor* l, const FlaNpuTensor* akk, uint64_t* workspace_size,
                                    FlaNpuExecutor** executor);
int flaNpuSolveTril(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream);

/* The tiling the last GetWorkspaceSize computed on this thread, as uint32 words of
 * fla_npu::solve_tril::SolveTrilTiling (for tests and diagnostics); returns the word count. */
int32_t flaNpuSolveTrilLastTiling(uint32_t* words, int32_t capacity);

/* ---- Inter-chunk state (stage 4 of chunked KDA / Gated DeltaNet; mixed Cube + vector) -----------
 *
 *   w             [NC, HV, BT, K]  Cube type T: float16 or bfloat16 (float32 is refused: see below)
 *   u             [NC, HV, BT, V]  float32
 *   kg            [NC, HV, BT, K]  w's dtype
 *   e_last        [NC, HV, Kg]     float32, the chunk's decay 2^G_last; Kg = K (KDA) or 1 (GDN)
 *   chunk_offsets [N + 1]          int32: the chunks of sequence n are [chunk_offsets[n],
 *                                  chunk_offsets[n + 1]), read by the kernel (never on the host)
 *   h0            [N, HV, K, V]    float32 or NULL (zeros); [N, HV, V, K] with state_v_first
 *   h             [NC, HV, K, V]   float32 or T: the chunk-start states (rounded once)
 *   v_new         [NC, HV, BT, V]  float32 or T: u - w @ S (rounded once)
 *   final         [N, HV, K, V]    float32: the state after each sequence ([N, HV, V, K] with
 *                                  state_v_first)
 *   state_v_first 0 or 1
 * Per sequence and head, S = h0 (or 0), then per chunk c in order: h[c] = S, v_new[c] = u[c] -
 * w[c] @ S, S = diag(e_last[c]) S + kg[c]^T @ v_new[c]; final = S. S stays on chip in float32; the
 * Cube multiplies in T with S and v_new split into hi + lo halves of T (fp32 accumulation), so w
 * and kg are the only rounded inputs. All contiguous; BT 16, 32 or 64; K and V multiples of 16 in
 * [16, 256]; a sequence with no chunk gets final = h0. Padding rows of tail chunks must hold zero
 * w, kg and u rows (they then leave S unchanged). Float32 w / kg are refused with a message: kg
 * reaches the Cube transposed, a load that exists for 2-byte types only.
 *
 * Workspace: per launched AI core, (K + BT) * v_block * (2 sizeof(T) + 4) bytes (the hi / lo halves
 * and the Cube's fp32 products). NPU flavours forward to aclnnFlaNpuChunkState[GetWorkspaceSize](w,
 * u, kg, eLast, chunkOffsets, h0, h, vNew, final, stateVFirst); nothing is called without a unit.
 */
int flaNpuChunkStateGetWorkspaceSize(const FlaNpuTensor* w, const FlaNpuTensor* u, const FlaNpuTensor* kg,
                                     const FlaNpuTensor* e_last, const FlaNpuTensor* chunk_offsets, const FlaNpuTensor* h0,
                                     const FlaNpuTensor* h, const FlaNpuTensor* v_new, const FlaNpuTensor* final,
                                     int32_t state_v_first, uint64_t* workspace_size, FlaNpuExecutor** executor);
int flaNpuChunkState(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream);

/* The tiling the last GetWorkspaceSize computed on this thread, as uint32 words of
 * fla_npu::chunk_state::ChunkStateTiling (for tests and diagnostics); returns the word count. */
int32_t flaNpuChunkStateLastTiling(uint32_t* words, int32_t capacity);

/* ---- intra-chunk matrices (stage 2 of chunked KDA / Gated DeltaNet; mixed Cube + vector) ---------
 *
 *   q    [NC, HV, BT, K]   Cube input type T: float16 or bfloat16 (float32 is refused); carries the scale
 *   k    [NC, HV, BT, K]   q's dtype
 *   beta [NC, HV, BT]      float32
 *   g    [NC, HV, BT, Kg]  float32, G: the chunk-local cumulative log2 decay; Kg = K (KDA) or 1 (GDN).
 *                          G must not increase along a chunk (a decay); padding rows hold the last value
 *   aqk  [NC, HV, BT, BT]  float32 or T:  aqk[i, j] = sum_d q_id k_jd 2^(G_id - G_jd)  (j <= i, else 0)
 *   l    [NC, HV, BT, BT]  aqk's dtype:   l[i, j] = beta_i sum_d k_id k_jd 2^(G_id - G_jd)  (j < i, else 0)
 * All contiguous; BT 16, 32 or 64; K a multiple of 16 in [16, 256]; NC or HV may be 0 (nothing runs).
 * Exact for any decaying gate (floored per-step decays included): products go through the Cube
 * factored through a reference row (factors <= 1 off the diagonal blocks, within 2^+-60 (bf16) or
 * 2^+-8 (fp16) inside them), the scaled operands rounded once to T; a diagonal 16 x 16 block whose
 * decay is wider is computed exactly per pair on the vector unit. A T output is rounded once.
 *
 * Workspace: per launched AI core, two operand slots (KDA: BT (2 + (BT / 16 + 1) / 2) x K elements
 * of T each; GDN: none) and two result slots (KDA: 32 BT floats, the diagonal blocks; GDN: 2 BT x BT
 * floats). NPU flavours forward to
 * aclnnFlaNpuChunkIntra[GetWorkspaceSize](q, k, beta, g, aqk, l); nothing is called when there is no chunk.
 */
int flaNpuChunkIntraGetWorkspaceSize(const FlaNpuTensor* q, const FlaNpuTensor* k, const FlaNpuTensor* beta,
                                     const FlaNpuTensor* g, const FlaNpuTensor* aqk, const FlaNpuTensor* l,
                                     uint64_t* workspace_size, FlaNpuExecutor** executor);
int flaNpuChunkIntra(void* workspace, uint64_t workspace_size, FlaNpuExecutor* executor, void* stream);

/* The tiling the last GetWorkspaceSize computed on this thread, as uint32 words of
 * fla_npu::chunk_intra::ChunkIntraTiling (for tests and diagnostics); returns the word count. */
int32_t flaNpuChunkIntraLastTiling(uint32_t* words, int32_t capacity);

#ifdef __cplusplus
}
#endif

#endif
