"""Op descriptor of the prefix-shared attention forward kernel (mixed Cube + vector): read at build
time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "PrefixSharedAttention",
    "args": [("q", "in"), ("k", "in"), ("v", "in"), ("scale", "float"), ("out", "out")],
    "tiling": ("prefix_shared_attention_tiling.h", "fla_npu::psa::PsaTiling"),
    "kernels": {"float16": "fla_prefix_shared_attention_f16", "bfloat16": "fla_prefix_shared_attention_bf16"},
    "kernel_type": "mix",
    "workspace": True,
}
