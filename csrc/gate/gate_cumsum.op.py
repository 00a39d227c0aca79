"""Op descriptor of the gate activation + chunk-local cumsum kernel (stage 1 of chunked KDA / Gated
DeltaNet): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "GateChunkCumsum",
    "doc": """gate activation + chunk-local cumsum (stage 1 of chunked KDA / Gated DeltaNet)

  g         [B, T, H, D] (KDA, D = K) or [B, T, H] (GDN, D = 1); fp32, fp16 or bf16; contiguous.
  a_log     [H] fp32 contiguous, or NULL (required by gate_form 1; optional for 2; unused by 0).
  dt_bias   [H * D] fp32 contiguous (any shape with H * D elements), or NULL.
  cu_seqlens  NULL for dense input; varlen: [N + 1] int32, with B == 1 ...
  chunk_indices  ... and [NC, 2] int32 rows (sequence, chunk of the sequence), one per chunk of
            every sequence (FLA's chunk_indices); sequences of length 0 have none.
  chunk_size  power of two <= 128.
  gate_form 0: y = g + dt_bias; 1: y = -exp(A_log) * softplus(g + dt_bias);
            2: y = lower_bound * sigmoid(exp(A_log) * (g + dt_bias))  (no exp(A_log) when a_log is NULL).
  scale     the chunk-local cumsum of y is multiplied by it (1: natural-log units, what the chunk kernels
            read; 1/ln 2: log2 units).
  out       fp32, shape and element count of g, contiguous; every token row is written.

Workspace: none (0 bytes) in the sim flavour; NPU flavours: what the operator package asks for.
NPU flavours forward to aclnnFlaNpuGateChunkCumsum[GetWorkspaceSize](g, aLogOptional,
dtBiasOptional, cuSeqlensOptional, chunkIndicesOptional, chunkSize, gateForm, lowerBound, scale,
out): an optional input the kernel does not use (a_log with gate_form 0) is passed as NULL; nothing
is called when there is no token.""",
    "args": [("g", "in", "T"), ("a_log", "in?", "float32"), ("dt_bias", "in?", "float32"),
             ("cu_seqlens", "in?", "int32"), ("chunk_indices", "in?", "int32"),
             ("chunk_size", "int32"), ("gate_form", "int32"), ("lower_bound", "float"), ("scale", "float"),
             ("out", "out", "float32", "g")],
    "dtypes": {"T": ["float32", "float16", "bfloat16"]},
    "tiling": ("gate_cumsum_tiling.h", "fla_npu::gate::GateCumsumTiling"),
    "body": ("gate_cumsum_kernel.h", "fla_npu::gate::RunGateChunkCumsum"),
    "kernels": {"float32": "fla_gate_chunk_cumsum_f32", "float16": "fla_gate_chunk_cumsum_f16",
                "bfloat16": "fla_gate_chunk_cumsum_bf16"},
    "kernel_type": "vector",
}
