"""Op descriptor of the WY kernel (stage 3 of chunked KDA / Gated DeltaNet, mixed Cube + vector):
read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "WyFast",
    "doc": """WY factors (stage 3 of chunked KDA / Gated DeltaNet; mixed Cube + vector)

  k      [NC, BT, HQ, K]   Cube input type T: float16 or bfloat16 (float32 is refused: see below).
                           Token-major (row r of chunk c, head h; for whole chunks the token layout
                           itself). GVA: HQ divides HV, value head h reads k head h / (HV / HQ)
  v      [NC, BT, HV, V]   k's dtype, token-major
  beta   [NC, HV, BT]      float32
  akk    [NC, HV, BT, BT]  k's dtype, (I + L)^-1: lower triangular, unit diagonal (read as given)
  g      [NC, BT, HV, K]   float32, G: the chunk-local gate cumsum in natural-log units; KDA
      or [NC, HV, BT, 1]   token-major (as the gate kernel writes it), GDN (one per row) head-major. e_row = e^G,
                           e_tail = e^(G[last row] - G), formed here.
  w      [NC, HV, BT, K]   O:        w  = akk @ T(beta * k * e_row)   (fp32 accumulation)
  u      [NC, HV, BT, V]   float32:  u  = akk @ T(beta * v)
  kg     [NC, HV, BT, K]   O:        kg = k * e_tail
O: float32, or k's dtype (w and kg computed in float32 and rounded once: what the state kernel's
Cube reads, written so by this kernel instead of a cast pass after it).
T(x): x formed in float32 and rounded once to k's dtype. All contiguous; BT 16, 32 or 64; K and V
multiples of 16 in [16, 256]; NC or HV may be 0 (nothing runs). Every row of every chunk is
computed, padding rows of tail chunks included (from whatever the inputs hold there). Float32
inputs are refused with a message: the scaled k and v reach the Cube through a transposing load
that exists for 2-byte types only.

Workspace: per launched AI core, two slots of BT * (K + V) elements of k's dtype, through which
the vector cores hand T(beta k e_row) and T(beta v) to the Cube. NPU flavours forward to
aclnnFlaNpuWyFast[GetWorkspaceSize](k, v, beta, akk, g, w, u, kg) and ask for the
operator package's workspace; nothing is called when there is no chunk.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 256},  # for the routers (the C entry point checks them too)
    "args": [("k", "in", "T"), ("v", "in", "T"), ("beta", "in", "float32"), ("akk", "in", "T"),
             ("g", "in", "float32"), ("w", "out", "O", ["k[0]", "v[2]", "k[1]", "k[3]"]),
             ("u", "out", "float32", ["v[0]", "v[2]", "v[1]", "v[3]"]), ("kg", "out", "O", ["k[0]", "v[2]", "k[1]", "k[3]"])],
    "dtypes": {"T": ["float16", "bfloat16"], "O": ["float32", "T"]},
    "dtype_args": {"O": ("out_dtype", "float32")},
    "kernel_type": "mix",
}
