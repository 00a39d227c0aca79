"""Op descriptor of the WY kernel (stage 3 of chunked KDA / Gated DeltaNet, mixed Cube + vector):
read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "WyFast",
    "args": [("k", "in"), ("v", "in"), ("beta", "in"), ("akk", "in"), ("e_row", "in"), ("e_tail", "in"), ("w", "out"),
             ("u", "out"), ("kg", "out")],
    "tiling": ("wy_fast_tiling.h", "fla_npu::wy_fast::WyFastTiling"),
    "kernels": {"float16": "fla_wy_fast_f16", "bfloat16": "fla_wy_fast_bf16"},
    "kernel_type": "mix",
    "workspace": True,
}
