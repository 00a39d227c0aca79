"""Op descriptor of the chunked KDA / Gated DeltaNet forward's stages 2 to 5 in one launch (mixed Cube +
vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkForward",
    "doc": """Intra-chunk matrices, WY factors, inter-chunk state and chunk output (stages 2 to 5 of chunked
KDA and Gated DeltaNet in one launch; mixed Cube + vector): per chunk FlaNpuChunkIntra's Aqk and
(I + L)^-1 diag(beta) (the same products, masks and blocked inverse) fed straight into
FlaNpuChunkStateOutput's WY, state and output products, so that nothing but the AIV <-> AIC
hand-offs of the chunk in flight goes through GM: q, k, v, g and beta are read once per unit (per
V block), o and final written once

  q      [NC, BT, HQ, K]   Cube type T (float16 / bfloat16), token-major; GVA: HQ divides HV
  k      [NC, BT, HQ, K]   T, token-major
  v      [NC, BT, HV, V]   T, token-major
  g      [NC, HV, BT, 1]   float32, G: the chunk-local gate cumsum in natural-log units, one per row
                           (Gated DeltaNet), or [NC, BT, HV, K] token-major, per key (KDA; K <= 128)
  beta   [NC, HV, BT]      float32
  e_last, chunk_offsets, h0, final, state_v_first: FlaNpuChunkStateOutput's (e_last [NC, HV, 1 or K]
                           as g's columns)
  qk_l2norm               int32 0 / 1: each row of q and k divided by its l2 norm (eps 1e-6) in
                           float32 before any rounding
  scale                   float: q's rows times scale (after the norm)
  o      [NC, BT, HV, V]   T, token-major: FlaNpuChunkStateOutput's o on FlaNpuChunkIntra's aqk, akk
                           (akk_beta = 1, both in T), q_scale and k_scale of the same call: the same
                           products and roundings, but Gated DeltaNet's l2 norms' sums of squares
                           added by the vector unit (FlaNpuChunkIntra takes them from the Cube)
Every row of every chunk of a sequence is computed (padding rows of tail chunks from whatever the
inputs hold there: zeros in k, v and beta keep them out of the state); rows of chunks outside every
sequence's range are not written. Limits as FlaNpuChunkStateOutput's; BT 32 and 64 need a Cube that
takes float32 (the inverse's merges); float32 Cube inputs are refused.

Workspace: per launched AI core, FlaNpuChunkStateOutput's with three operand slots of 5 BT x K
elements of T (its operands and q's and k's rows; KDA 3 BT x K; stage 2 runs two chunks ahead)
instead of two of 3 BT x K, two pairs of Aqk and Akk [BT, BT] of T, and floats: two result slots
[2 BT, BT], for BT 32 and 64 two inverse slots (2 BT x BT + 16 BT + 16 (BT - 16) each), three slots'
row factors [2, BT], KDA three fp32 operand slots ((32 nb + 8 nb (nb + 1)) x K, nb = BT / 16).
NPU flavours forward to aclnnFlaNpuChunkForward[GetWorkspaceSize](q, k, v, g, beta, eLast,
chunkOffsets, h0, qkL2norm, scale, o, final, stateVFirst); nothing is called without a unit.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 256},  # for the routers (the C entry point checks them too)
    "args": [("q", "in", "T"), ("k", "in", "T"), ("v", "in", "T"), ("g", "in", "float32"), ("beta", "in", "float32"),
             ("e_last", "in", "float32"), ("chunk_offsets", "in", "int32"), ("h0", "in?", "float32"),
             ("qk_l2norm", "int32"), ("scale", "float"),
             ("o", "out", "T", ["v[0]", "v[1]", "v[2]", "v[3]"]),
             ("final", "out", "float32", ["chunk_offsets[0]-1", "v[2]", "k[3]", "v[3]"], "state_v_first"),
             ("state_v_first", "int32")],
    "dtypes": {"T": ["float16", "bfloat16"]},
    "tiling": ("chunk_forward_tiling.h", "fla_npu::chunk_forward::ChunkStateTiling"),
    "kernel_type": "mix",
}
