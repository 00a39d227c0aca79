"""Op descriptor of the triangular-inverse kernel (second half of stage 2 of chunked KDA / Gated
DeltaNet, mixed Cube + vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "SolveTril",
    "args": [("l", "in"), ("akk", "out")],
    "tiling": ("solve_tril_tiling.h", "fla_npu::solve_tril::SolveTrilTiling"),
    "kernels": {"float32": "fla_solve_tril_f32"},
    "kernel_type": "mix",
    "workspace": True,
}
