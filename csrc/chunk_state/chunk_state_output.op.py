"""Op descriptor of the inter-chunk state kernel with the WY factors and the chunk output fused in
(stages 3, 4 and 5 of chunked KDA / Gated DeltaNet in one launch, mixed Cube + vector): read at build time by csrc/tools/
(format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkStateOutput",
    "doc": """WY factors, inter-chunk state and chunk output (stages 3, 4 and 5 of chunked KDA / Gated DeltaNet
in one launch; mixed Cube + vector): per chunk the WY kernel's products (FlaNpuWyFast: w, kg in T,
u in float32), fed straight into the state kernel's recurrence (FlaNpuChunkState: e_last,
chunk_offsets, h0, final and state_v_first as there), forming each chunk's output where it holds
the chunk-start state, so that none of w, u, kg, h and v_new goes to GM

  q      [NC, BT, HQ, K]   Cube type T (float16 / bfloat16), token-major (row r of chunk c, head h)
  k      [NC, BT, HQ, K]   T, token-major; GVA: HQ divides HV, value head h reads q / k head h / (HV / HQ)
  v      [NC, BT, HV, V]   T, token-major
  g      [NC, BT, HV, K]   float32, G: the chunk-local gate cumsum in natural-log units (e_row = e^G,
      or [NC, HV, BT, 1]   e_tail = e^(G[last row] - G)); KDA token-major, GDN (one per row) head-major
  akk    [NC, HV, BT, BT]  T, (I + L)^-1 diag(beta): lower triangular, beta on the diagonal (read as
                           given; FlaNpuChunkIntra's akk with akk_beta = 1): beta enters only here
  aqk    [NC, HV, BT, BT]  T, lower triangular (read as given)
  q_scale, k_scale [NC, HQ, BT]  float32, optional (both or neither): per-row factors of q and k (the
                           l2 norms' reciprocals, q's times the scale), applied in float32 before any
                           rounding, as if q and k were given multiplied by them
  o      [NC, BT, HV, V]   T, token-major: o[c] = T(q * e_row) @ T(S) + aqk @ T(v_new) (fp32
                           accumulation, rounded once), S the chunk-start state, v_new = u - w @ S,
                           w = T(akk @ T(k e_row)), u = akk @ v, kg = T(k e_tail): the
                           products of FlaNpuWyFast (w, kg in T), FlaNpuChunkState (h, v_new in T) and
                           FlaNpuChunkOutput on (I + L)^-1 and beta, but beta in akk (rounded with it)
                           and v_new = u - w @ S accumulated at once in fp32 (u and w @ S are not
                           rounded apart)
Every row of every chunk of a sequence is computed (padding rows of tail chunks from whatever the
inputs hold there: zeros in k, v keep them out of the state); rows of chunks outside every
sequence's range are not written. Limits as FlaNpuChunkState's; float32 Cube inputs are refused.

Workspace: per launched AI core, K v_block (2 sizeof(T) + 4) + (BT^2 + 6 BT K) sizeof(T) bytes (S's
halves and dS; -I; two slots of qe, X1 and kg). NPU flavours
forward to aclnnFlaNpuChunkStateOutput[GetWorkspaceSize](q, k, v, g, akk, aqk, eLast,
chunkOffsets, h0, qScale, kScale, o, final, stateVFirst); nothing is called without a unit.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 256},  # for the routers (the C entry point checks them too)
    "args": [("q", "in", "T"), ("k", "in", "T"), ("v", "in", "T"), ("g", "in", "float32"),
             ("akk", "in", "T"), ("aqk", "in", "T"), ("e_last", "in", "float32"), ("chunk_offsets", "in", "int32"),
             ("h0", "in?", "float32"),
             ("q_scale", "in?", "float32"), ("k_scale", "in?", "float32"), ("o", "out", "T", ["v[0]", "v[1]", "v[2]", "v[3]"]),
             ("final", "out", "float32", ["chunk_offsets[0]-1", "v[2]", "k[3]", "v[3]"], "state_v_first"),
             ("state_v_first", "int32")],
    "dtypes": {"T": ["float16", "bfloat16"]},
    "tiling": ("chunk_state_output_tiling.h", "fla_npu::chunk_state_output::ChunkStateTiling"),
    "kernel_type": "mix",
}
