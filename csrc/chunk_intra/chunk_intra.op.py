"""Op descriptor of the intra-chunk kernel (stage 2 of chunked KDA / Gated DeltaNet, mixed Cube +
vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkIntra",
    "doc": """intra-chunk matrices (stage 2 of chunked KDA / Gated DeltaNet; mixed Cube + vector)

  q    [NC, BT, HQ, K]   Cube input type T: float16 or bfloat16 (float32 is refused); carries the scale.
                         Token-major (row r of chunk c, head h; for whole chunks the token layout
                         itself). GVA: HQ divides HV, value head h reads q / k head h / (HV / HQ)
  k    [NC, BT, HQ, K]   q's dtype
  beta [NC, HV, BT]      float32
  g    [NC, BT, HV, K]   float32, G: the chunk-local cumulative log2 decay; KDA token-major (as the
       or [NC, HV, BT, 1]  gate kernel writes it), GDN (one per row) head-major.
                         G must not increase along a chunk (a decay); padding rows hold the last value
  q_scale, k_scale [NC, HQ, BT]  float32, optional (both or neither): per-row factors of q and k (the
                         l2 norms' reciprocals, q's times the scale), applied in float32 before any
                         rounding, as if q and k were given multiplied by them
  aqk  [NC, HV, BT, BT]  A, float32 or T:  aqk[i, j] = sum_d q_id k_jd 2^(G_id - G_jd)  (j <= i, else 0)
  l    [NC, HV, BT, BT]  O, float32 or T:  l[i, j] = beta_i sum_d k_id k_jd 2^(G_id - G_jd)  (j < i, else 0)
All contiguous; BT 16, 32 or 64; K a multiple of 16 in [16, 256]; NC or HV may be 0 (nothing runs).
Exact for any decaying gate (floored per-step decays included): products go through the Cube
factored through a reference row per 16-row block row (its middle row when the diagonal block's
decay spans at most 2^+-60 (bf16) or 2^+-8 (fp16) from it, else its first row), the scaled operands
rounded once to T; a diagonal 16 x 16 block whose decay is wider from both is computed exactly per
pair on the vector unit. A T output is rounded once (the chain asks for aqk in T, what the output
kernel's Cube reads, and l in float32, what the triangular inverse reads).

Workspace: per launched AI core, two operand slots (KDA: BT (2 + (BT / 16 + 1) / 2) x K elements
of T each; GDN: none) and two result slots (KDA: 32 BT floats, the diagonal blocks; GDN: 2 BT x BT
floats). NPU flavours forward to
aclnnFlaNpuChunkIntra[GetWorkspaceSize](q, k, beta, g, qScale, kScale, aqk, l); nothing is called when there is no chunk.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 256},  # for the routers (the C entry point checks them too)
    "args": [("q", "in", "T"), ("k", "in", "T"), ("beta", "in", "float32"), ("g", "in", "float32"),
             ("q_scale", "in?", "float32"), ("k_scale", "in?", "float32"),
             ("aqk", "out", "A", ["q[0]", "beta[1]", "q[1]", "q[1]"]), ("l", "out", "O", ["q[0]", "beta[1]", "q[1]", "q[1]"])],
    "dtypes": {"T": ["float16", "bfloat16"], "A": ["float32", "T"], "O": ["float32", "T"]},
    "dtype_args": {"A": ("aqk_dtype", "float32"), "O": ("l_dtype", "float32")},
    "kernel_type": "mix",
}
