"""Op descriptor of the inter-chunk state kernel with the chunk output fused in (stages 4 and 5 of
chunked KDA / Gated DeltaNet in one launch, mixed Cube + vector): read at build time by csrc/tools/
(format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkStateOutput",
    "doc": """inter-chunk state and chunk output (stages 4 and 5 of chunked KDA / Gated DeltaNet in one
launch; mixed Cube + vector): the state kernel's recurrence (FlaNpuChunkState: w, u, kg, e_last,
chunk_offsets, h0, final and state_v_first as there) forming each chunk's output where it holds the
chunk-start state, so that neither h nor v_new goes to GM

  q      [NC, BT, HQ, K]   w's dtype T, token-major (row r of chunk c, head h); GVA: HQ divides HV,
                           value head h reads q head h / (HV / HQ)
  g      [NC, BT, HV, K]   float32, G: the chunk-local gate cumsum in log2 units (e_row = 2^G); KDA
      or [NC, HV, BT, 1]   token-major, GDN (one per row) head-major, as FlaNpuChunkOutput's
  aqk    [NC, HV, BT, BT]  T, lower triangular (read as given)
  o      [NC, BT, HV, V]   T, token-major: o[c] = T(q * e_row) @ T(S) + aqk @ T(v_new) (fp32
                           accumulation, rounded once), S the chunk-start state and v_new = u - w @ S
                           (the products FlaNpuChunkOutput forms from FlaNpuChunkState's h and
                           v_new in T: the same o)
Every row of every chunk of a sequence is computed (padding rows of tail chunks from whatever the
inputs hold there); rows of chunks outside every sequence's range are not written. Limits and the
refused float32 Cube type as FlaNpuChunkState's.

Workspace: per launched AI core, (K + BT) * v_block * (2 sizeof(T) + 4) + BT * K * sizeof(T) bytes
(the state kernel's hand-off and qe). NPU flavours forward to
aclnnFlaNpuChunkStateOutput[GetWorkspaceSize](w, u, kg, eLast, chunkOffsets, h0, q, g, aqk, o,
final, stateVFirst); nothing is called without a unit.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 256},  # for the routers (the C entry point checks them too)
    "args": [("w", "in", "T"), ("u", "in", "float32"), ("kg", "in", "T"), ("e_last", "in", "float32"),
             ("chunk_offsets", "in", "int32"), ("h0", "in?", "float32"), ("q", "in", "T"), ("g", "in", "float32"),
             ("aqk", "in", "T"), ("o", "out", "T", ["q[0]", "q[1]", "u[1]", "u[3]"]),
             ("final", "out", "float32", ["chunk_offsets[0]-1", "w[1]", "w[3]", "u[3]"], "state_v_first"),
             ("state_v_first", "int32")],
    "dtypes": {"T": ["float16", "bfloat16"]},
    "tiling": ("chunk_state_output_tiling.h", "fla_npu::chunk_state_output::ChunkStateTiling"),
    "kernel_type": "mix",
}
