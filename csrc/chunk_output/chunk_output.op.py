"""Op descriptor of the chunk output kernel (stage 5 of chunked KDA / Gated DeltaNet, mixed Cube +
vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "ChunkOutput",
    "args": [("q", "in"), ("e_row", "in"), ("s", "in"), ("aqk", "in"), ("v_new", "in"), ("out", "out")],
    "tiling": ("chunk_output_tiling.h", "fla_npu::chunk_output::ChunkOutputTiling"),
    "kernels": {"float16": "fla_chunk_output_f16", "bfloat16": "fla_chunk_output_bf16"},
    "kernel_type": "mix",
    "workspace": True,
}
