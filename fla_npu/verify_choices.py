"""The choices of ``fla-npu verify``, torch-free, so that the command parses its arguments and
answers ``--help`` without importing torch. :mod:`fla_npu.verify` defines its cases, dtypes and
implementations with these names."""

OPS = ("kda", "gdn")
DTYPE_NAMES = ("bf16", "fp16", "fp32")
SCALES = ("cpu", "small")
BUILTIN_IMPLEMENTATIONS = ("reference", "sim", "npu")
