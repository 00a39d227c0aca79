"""Op descriptor of the inter-chunk state kernel (stage 4 of chunked KDA / Gated DeltaNet, mixed
Cube + vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkState",
    "args": [("w", "in"), ("u", "in"), ("kg", "in"), ("e_last", "in"), ("chunk_offsets", "in"), ("h0", "in?"),
             ("h", "out"), ("v_new", "out"), ("final", "out"), ("state_v_first", "int32")],
    "tiling": ("chunk_state_tiling.h", "fla_npu::chunk_state::ChunkStateTiling"),
    "kernels": {"float16": "fla_chunk_state_f16", "bfloat16": "fla_chunk_state_bf16"},
    "kernel_type": "mix",
    "workspace": True,
}
