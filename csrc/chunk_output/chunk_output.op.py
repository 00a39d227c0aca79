"""Op descriptor of the chunk output kernel (stage 5 of chunked KDA / Gated DeltaNet, mixed Cube +
vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkOutput",
    "doc": """chunk output (stage 5 of chunked KDA / Gated DeltaNet; mixed Cube + vector)

  q      [NC, BT, HQ, K]   Cube input type T: float16 or bfloat16 (float32 is refused: see below).
                           Token-major (row r of chunk c, head h; for whole chunks the token layout
                           itself). GVA: HQ divides HV, value head h reads q head h / (HV / HQ)
  g      [NC, BT, HV, K]   float32, G: the chunk-local gate cumsum in natural-log units; KDA
      or [NC, HV, BT, 1]   token-major (as the gate kernel writes it), GDN (one per row) head-major; e_row = e^G,
                           formed here
  s      [NC, HV, K, V]    q's dtype, the chunk-start states (as the state kernel writes them in T)
  aqk    [NC, HV, BT, BT]  q's dtype, lower triangular (read as given)
  v_new  [NC, HV, BT, V]   q's dtype
  out    [NC, BT, HV, V]   float32 or q's dtype (rounded once):  out = T(q * e_row) @ s + aqk @ v_new
                           (fp32 accumulation), token-major: out[c, r, h] is row r of chunk c, head h
                           (for B sequences of whole chunks, the token layout [B, T, HV, V] itself)
All contiguous; BT 16, 32 or 64; K and V multiples of 16 in [16, 256]; NC or HV may be 0 (nothing
runs). Every row of every chunk is computed, padding rows of tail chunks included (from whatever
the inputs hold there). Float32 inputs are refused with a message: s and v_new reach the Cube
through a transposing load that exists for 2-byte types only.

Workspace: per launched AI core, two slots of BT * K elements of q's dtype, through which the
vector cores hand q * e_row to the Cube. NPU flavours forward to
aclnnFlaNpuChunkOutput[GetWorkspaceSize](q, g, s, aqk, vNew, out) and ask for the operator
package's workspace; nothing is called when there is no chunk.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 256},  # for the routers (the C entry point checks them too)
    "args": [("q", "in", "T"), ("g", "in", "float32"), ("s", "in", "T"), ("aqk", "in", "T"),
             ("v_new", "in", "T"), ("out", "out", "O", ["v_new[0]", "v_new[2]", "v_new[1]", "v_new[3]"])],
    "dtypes": {"T": ["float16", "bfloat16"], "O": ["float32", "T"]},
    "dtype_args": {"O": ("out_dtype", "float32")},
    "kernel_type": "mix",
}
