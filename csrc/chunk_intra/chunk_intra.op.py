"""Op descriptor of the intra-chunk kernel (stage 2 of chunked KDA / Gated DeltaNet, mixed Cube +
vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkIntra",
    "args": [("q", "in"), ("k", "in"), ("beta", "in"), ("g", "in"), ("aqk", "out"), ("l", "out")],
    "tiling": ("chunk_intra_tiling.h", "fla_npu::chunk_intra::ChunkIntraTiling"),
    "kernels": {"float16": "fla_chunk_intra_f16", "bfloat16": "fla_chunk_intra_bf16"},
    "kernel_type": "mix",
    "workspace": True,
}
