"""Op descriptor of the prefix-shared attention forward kernel (mixed Cube + vector): read at build
time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "PrefixSharedAttention",
    "doc": """prefix-shared attention forward (mixed Cube + vector)

  q     [bs, G, len_q, D], k and v [bs, len_kv, D]; float16 or bfloat16 (one dtype); contiguous;
        D = 64 or 128; G, len_q, len_kv >= 1 (bs may be 0: nothing runs).
  scale the scores q k^T are multiplied by it (the caller passes D**-0.5 for the default).
  out   [bs, G, len_q, D], dtype of q, contiguous:  out[b, g] = softmax(q[b, g] k[b]^T * scale) v[b].

Workspace: per launched AI core, two fp32 score tiles, one probability tile and one fp32 output
tile (128 rows each); the executor asks for it. NPU flavours forward to
aclnnFlaNpuPrefixSharedAttention[GetWorkspaceSize](q, k, v, scale, out) and ask for the operator
package's workspace; nothing is called when bs == 0.""",
    "args": [("q", "in", "T"), ("k", "in", "T"), ("v", "in", "T"), ("scale", "float"), ("out", "out", "T", "q")],
    "dtypes": {"T": ["float16", "bfloat16"]},
    "tiling": ("prefix_shared_attention_tiling.h", "fla_npu::psa::PsaTiling"),
    "body": ("prefix_shared_attention_kernel.h", "fla_npu::psa::RunPrefixSharedAttention"),
    "kernel_type": "mix",
    "batch_mode": "fla_npu::psa::RunsSyncAll",  # the split merge waits on SyncAll
}
