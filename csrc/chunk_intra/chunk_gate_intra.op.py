"""Op descriptor of the intra-chunk kernel with KDA's gate in its launch (stages 1 and 2 of chunked
KDA, mixed Cube + vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkGateIntra",
    "doc": """KDA's gate activation and chunk-local cumsum with the intra-chunk matrices and the triangular
inverse (stages 1 and 2 of chunked KDA in one launch; mixed Cube + vector): FlaNpuChunkIntra whose
vector cores form G from the raw gate (FlaNpuGateChunkCumsum's activation; the sums per 16-row block,
then carried: within float32 rounding of its in-order sums) instead of
reading it, and write it once for the state kernel (FlaNpuChunkStateOutput) with its e_last

  q, k, beta     as FlaNpuChunkIntra's (T float16 or bfloat16; beta [NC, HV, BT] float32)
  g    [NC, BT, HV, K]   R: float32 or T, the raw per-key gate, token-major (chunk layout)
  a_log   [HV]           float32, or NULL (required by gate_form 1; optional for 2; unused by 0)
  dt_bias [HV * K]       float32, or NULL
  chunk_len [NC]         int32: the valid rows of each chunk (0..BT); the rows at or past it are
                         padding: their activated gate counts as 0
  gate_form, lower_bound as FlaNpuGateChunkCumsum's (scale 1: natural-log units)
  qk_l2norm, scale, akk_beta, aqk, akk, q_scale, k_scale  as FlaNpuChunkIntra's; aqk and akk in T
  gate [NC, BT, HV, K]   float32: G, the chunk-local cumsum of the activated gate (padding rows hold
                         the last valid row's value)
  e_last [NC, HV, K]     float32: e^G of each chunk's last row (FlaNpuChunkStateOutput's e_last)
All contiguous; BT 16, 32 or 64; K a multiple of 16 in [16, 128] (the chunk's G stays in the UB);
NC or HV may be 0 (nothing runs). Workspace: FlaNpuChunkIntra's and, for BT 32 and 64, per launched
AI core two gate slots of BT x K floats (each vector core's activated rows for the other). NPU flavours forward to
aclnnFlaNpuChunkGateIntra[GetWorkspaceSize](q, k, beta, g, aLogOptional, dtBiasOptional, chunkLen,
gateForm, lowerBound, qkL2norm, scale, akkBeta, aqk, akk, qScale, kScale, gate, eLast); nothing is
called when there is no chunk.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 128},  # for the routers (the C entry point checks them too)
    "args": [("q", "in", "T"), ("k", "in", "T"), ("beta", "in", "float32"), ("g", "in", "R"),
             ("a_log", "in?", "float32"), ("dt_bias", "in?", "float32"), ("chunk_len", "in", "int32"),
             ("gate_form", "int32"), ("lower_bound", "float"),
             ("qk_l2norm", "int32"), ("scale", "float"), ("akk_beta", "int32"),
             ("aqk", "out", "T", ["q[0]", "beta[1]", "q[1]", "q[1]"]), ("akk", "out", "T", ["q[0]", "beta[1]", "q[1]", "q[1]"]),
             ("q_scale", "out", "float32", ["q[0]", "q[2]", "q[1]"]), ("k_scale", "out", "float32", ["q[0]", "q[2]", "q[1]"]),
             ("gate", "out", "float32", "g"), ("e_last", "out", "float32", ["g[0]", "g[2]", "g[3]"])],
    "dtypes": {"T": ["float16", "bfloat16"], "R": ["float32", "T"]},
    "tiling": ("chunk_gate_intra_tiling.h", "fla_npu::chunk_gate_intra::ChunkIntraTiling"),
    "kernel_type": "mix",
}
