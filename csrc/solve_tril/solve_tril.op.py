"""Op descriptor of the triangular-inverse kernel (second half of stage 2 of chunked KDA / Gated
DeltaNet, mixed Cube + vector): read at build time by csrc/tools/ (format: csrc/tools/op_descriptor.py)."""

OP = {
    "name": "SolveTril",
    "doc": """triangular inverse (second half of stage 2 of chunked KDA / Gated DeltaNet; mixed Cube + vector)

  l    [NC, HV, BT, BT]  float32, strictly lower triangular: only the part below the diagonal is read
                         (the diagonal and the upper triangle are ignored, whatever they hold)
  akk  [NC, HV, BT, BT]  float32, float16 or bfloat16:  akk = (I + l)^-1, unit lower triangular, exact
                         zeros above the diagonal; computed in fp32 and rounded once to akk's dtype
Both contiguous; BT 16, 32 or 64; NC or HV may be 0 (nothing runs). The 16 x 16 diagonal blocks are
inverted by substitution on the vector unit, the blocks below them merged on the Cube (fp32 inputs,
fp32 accumulation).

Workspace: per launched AI core, two slots of BT * BT + BT * 16 + (BT - 16) * 16 float32 elements
(none for BT = 16), through which the vector cores hand the diagonal blocks' inverses to the Cube.
NPU flavours forward to aclnnFlaNpuSolveTril[GetWorkspaceSize](l, akk) and ask for the operator
package's workspace; nothing is called when there is no chunk.""",
    "limits": {"chunk_sizes": [16, 32, 64]},
    "args": [("l", "in", "float32"), ("akk", "out", "O", "l")],
    "dtypes": {"O": ["float32", "float16", "bfloat16"]},
    "dtype_args": {"O": ("out_dtype", "float32")},
    "kernels": {"float32": "fla_solve_tril"},
    "kernel_type": "mix",
}
