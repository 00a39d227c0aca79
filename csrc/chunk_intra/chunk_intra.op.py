"""Op descriptor of the intra-chunk kernel (stage 2 of chunked KDA / Gated DeltaNet, mixed Cube +
vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkIntra",
    "doc": """intra-chunk matrices and the triangular inverse (stage 2 of chunked KDA / Gated DeltaNet; mixed
Cube + vector)

  q    [NC, BT, HQ, K]   Cube input type T: float16 or bfloat16 (float32 is refused).
                         Token-major (row r of chunk c, head h; for whole chunks the token layout
                         itself). GVA: HQ divides HV, value head h reads q / k head h / (HV / HQ)
  k    [NC, BT, HQ, K]   q's dtype
  beta [NC, HV, BT]      float32
  g    [NC, BT, HV, K]   float32, G: the chunk-local cumulative log decay (natural log); KDA token-major (as the
       or [NC, HV, BT, 1]  gate kernel writes it), GDN (one per row) head-major.
                         G must not increase along a chunk (a decay); padding rows hold the last value
  qk_l2norm              int32 0 / 1, scale float: each row of q and k is multiplied, in float32 before
                         anything is rounded, by its factor: scale / sqrt(sum x^2 + 1e-6) for q and
                         1 / sqrt(sum k^2 + 1e-6) for k with qk_l2norm (FLA's l2norm), else scale and 1;
                         q and k below are the rows times their factors
  aqk  [NC, HV, BT, BT]  A, float32 or T:  aqk[i, j] = sum_d q_id k_jd 2^(G_id - G_jd)  (j <= i, else 0)
  akk  [NC, HV, BT, BT]  O, float32 or T:  akk = (I + L)^-1 with L[i, j] = beta_i sum_d k_id k_jd
                         2^(G_id - G_jd) (j < i, else 0); unit lower triangular, exact zeros above
  akk_beta               int32 0 / 1: with 1, akk = (I + L)^-1 diag(beta) (column j times beta_j: the
                         operand of the fused state kernel, FlaNpuChunkStateOutput, which then reads
                         k and v as given); the diagonal holds beta then
  q_scale, k_scale [NC, HQ, BT]  float32: the factors of q's and k's rows (for the fused state kernel)
All contiguous; BT 16, 32 or 64; K a multiple of 16 in [16, 256]; NC or HV may be 0 (nothing runs).
Exact for any decaying gate (floored per-step decays included): products go through the Cube
factored through a reference row per 16-row block row (its middle row when the diagonal block's
decay spans at most 2^+-60 (bf16) or 2^+-8 (fp16) from it, else its first row), the scaled operands
rounded once to T; a diagonal 16 x 16 block whose decay is wider from both is computed exactly per
pair on the vector unit. The inverse is solve_tril's blocked forward substitution in the same launch
(16 x 16 diagonal blocks on the vector unit in float32, the merges as float32 Cube products: BT 32 and
64 need a Cube that takes float32); L itself never reaches GM outside the workspace. A T output is
rounded once (the chain asks for both in T, what the fused state kernel's Cube reads).

Workspace: per launched AI core, two operand slots (KDA: BT (2 + (BT / 16 + 1) / 2) x K floats
each; GDN: none), two result slots (KDA: 32 BT floats, the diagonal blocks; GDN: 2 BT x BT floats,
3 BT x BT with qk_l2norm) and, for BT 32 and 64, three inverse slots (L, the transposed inverse,
-X_bb and R^T: 2 BT x BT + 16 BT + 16 (BT - 16) floats). NPU flavours forward to aclnnFlaNpuChunkIntra[GetWorkspaceSize](q, k,
beta, g, qkL2norm, scale, akkBeta, aqk, akk, qScale, kScale); nothing is called when there is no chunk.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 256},  # for the routers (the C entry point checks them too)
    "args": [("q", "in", "T"), ("k", "in", "T"), ("beta", "in", "float32"), ("g", "in", "float32"),
             ("qk_l2norm", "int32"), ("scale", "float"), ("akk_beta", "int32"),
             ("aqk", "out", "A", ["q[0]", "beta[1]", "q[1]", "q[1]"]), ("akk", "out", "O", ["q[0]", "beta[1]", "q[1]", "q[1]"]),
             ("q_scale", "out", "float32", ["q[0]", "q[2]", "q[1]"]), ("k_scale", "out", "float32", ["q[0]", "q[2]", "q[1]"])],
    "dtypes": {"T": ["float16", "bfloat16"], "A": ["float32", "T"], "O": ["float32", "T"]},
    "dtype_args": {"A": ("aqk_dtype", "float32"), "O": ("akk_dtype", "float32")},
    "kernel_type": "mix",
}
