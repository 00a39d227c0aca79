"""Op descriptor of chunked KDA's whole forward in one launch (stages 1 to 5, mixed Cube + vector):
read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkGateForward",
    "doc": """KDA's gate activation and chunk-local cumsum, intra-chunk matrices, WY factors, inter-chunk state
and chunk output (stages 1 to 5 of chunked KDA in one launch; mixed Cube + vector): FlaNpuChunkForward
whose vector cores form G and e_last from the raw gate (FlaNpuChunkGateIntra's arithmetic: the same
bits) instead of reading them, so that the raw gate is read once and neither G nor e_last reaches GM

  q, k, v, beta  as FlaNpuChunkForward's (T float16 or bfloat16; K up to 128)
  g    [NC, BT, HV, K]   R: float32 or T, the raw per-key gate, token-major (chunk layout)
  a_log, dt_bias, chunk_len, gate_form, lower_bound  as FlaNpuChunkGateIntra's
  chunk_offsets, h0, qk_l2norm, scale, o, final, state_v_first  as FlaNpuChunkForward's
o and final are those of FlaNpuChunkGateIntra (akk_beta 1) followed by FlaNpuChunkStateOutput, bit for
bit. Limits as FlaNpuChunkForward's with KDA's gate; NC or HV may be 0 (nothing runs).

Workspace: FlaNpuChunkForward's and, per launched AI core, floats: two exchange slots of 3 (BT / 16) K
(each vector core's block sums of G for the other), three slots of the two vector cores' e_last rows
(2 K) and three of BT x K (the G blocks of diagonal blocks computed exactly). NPU flavours forward to
aclnnFlaNpuChunkGateForward[GetWorkspaceSize](q, k, v, g, beta, aLogOptional, dtBiasOptional,
chunkLen, chunkOffsets, h0Optional, gateForm, lowerBound, qkL2norm, scale, o, final, stateVFirst);
nothing is called without a unit.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 128},  # for the routers (the C entry point checks them too)
    "args": [("q", "in", "T"), ("k", "in", "T"), ("v", "in", "T"), ("g", "in", "R"), ("beta", "in", "float32"),
             ("a_log", "in?", "float32"), ("dt_bias", "in?", "float32"), ("chunk_len", "in", "int32"),
             ("chunk_offsets", "in", "int32"), ("h0", "in?", "float32"),
             ("gate_form", "int32"), ("lower_bound", "float"), ("qk_l2norm", "int32"), ("scale", "float"),
             ("o", "out", "T", ["v[0]", "v[1]", "v[2]", "v[3]"]),
             ("final", "out", "float32", ["chunk_offsets[0]-1", "v[2]", "k[3]", "v[3]"], "state_v_first"),
             ("state_v_first", "int32")],
    "dtypes": {"T": ["float16", "bfloat16"], "R": ["float32", "T"]},
    "tiling": ("chunk_gate_forward_tiling.h", "fla_npu::chunk_gate_forward::ChunkStateTiling"),
    "kernel_type": "mix",
}
