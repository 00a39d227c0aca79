"""Op descriptor of the inter-chunk state kernel (stage 4 of chunked KDA / Gated DeltaNet, mixed
Cube + vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkState",
    "doc": """inter-chunk state (stage 4 of chunked KDA / Gated DeltaNet; mixed Cube + vector)

  w             [NC, HV, BT, K]  Cube type T: float16 or bfloat16 (float32 is refused: see below)
  u             [NC, HV, BT, V]  float32
  kg            [NC, HV, BT, K]  w's dtype
  e_last        [NC, HV, Kg]     float32, the chunk's decay e^G_last; Kg = K (KDA) or 1 (GDN)
  chunk_offsets [N + 1]          int32: the chunks of sequence n are [chunk_offsets[n],
                                 chunk_offsets[n + 1]), read by the kernel (never on the host)
  h0            [N, HV, K, V]    float32 or NULL (zeros); [N, HV, V, K] with state_v_first
  h             [NC, HV, K, V]   float32 or T: the chunk-start states (rounded once)
  v_new         [NC, HV, BT, V]  float32 or T: u - w @ S (rounded once)
  final         [N, HV, K, V]    float32: the state after each sequence ([N, HV, V, K] with
                                 state_v_first)
  state_v_first 0 or 1
Per sequence and head, S = h0 (or 0), then per chunk c in order: h[c] = S, v_new[c] = u[c] -
w[c] @ S, S = diag(e_last[c]) S + kg[c]^T @ v_new[c]; final = S. S stays on chip in float32; the
Cube multiplies in T with S and v_new split into hi + lo halves of T (fp32 accumulation), so w
and kg are the only rounded inputs. All contiguous; BT 16, 32 or 64; K and V multiples of 16 in
[16, 256]; a sequence with no chunk gets final = h0. Padding rows of tail chunks must hold zero
w, kg and u rows (they then leave S unchanged). Float32 w / kg are refused with a message: kg
reaches the Cube transposed, a load that exists for 2-byte types only.

Workspace: per launched AI core, (K + BT) * v_block * (2 sizeof(T) + 4) bytes (the hi / lo halves
and the Cube's fp32 products). NPU flavours forward to aclnnFlaNpuChunkState[GetWorkspaceSize](w,
u, kg, eLast, chunkOffsets, h0, h, vNew, final, stateVFirst); nothing is called without a unit.""",
    "limits": {"chunk_sizes": [16, 32, 64], "head_dim": 256},  # for the routers (the C entry point checks them too)
    "args": [("w", "in", "T"), ("u", "in", "float32"), ("kg", "in", "T"), ("e_last", "in", "float32"),
             ("chunk_offsets", "in", "int32"), ("h0", "in?", "float32"),
             ("h", "out", "H", ["w[0]", "w[1]", "w[3]", "u[3]"]), ("v_new", "out", "V", "u"),
             ("final", "out", "float32", ["chunk_offsets[0]-1", "w[1]", "w[3]", "u[3]"], "state_v_first"),
             ("state_v_first", "int32")],
    "dtypes": {"T": ["float16", "bfloat16"], "H": ["float32", "T"], "V": ["float32", "T"]},
    "dtype_args": {"H": ("h_dtype", "float32"), "V": ("v_new_dtype", "float32"), "T": ("cube_dtype", "bfloat16")},
    "kernel_type": "mix",
}
