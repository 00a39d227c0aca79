"""Op descriptor of the gate activation + chunk-local cumsum kernel (stage 1 of chunked KDA / Gated
DeltaNet): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "GateChunkCumsum",
    "args": [("g", "in"), ("a_log", "in?"), ("dt_bias", "in?"), ("cu_seqlens", "in?"), ("chunk_indices", "in?"),
             ("chunk_size", "int32"), ("gate_form", "int32"), ("lower_bound", "float"), ("scale", "float"),
             ("out", "out")],
    "tiling": ("gate_cumsum_tiling.h", "fla_npu::gate::GateCumsumTiling"),
    "kernels": {"float32": "fla_gate_chunk_cumsum_f32", "float16": "fla_gate_chunk_cumsum_f16",
                "bfloat16": "fla_gate_chunk_cumsum_bf16"},
    "kernel_type": "vector",
    "workspace": False,
}
