"""aclnn-style status codes (returned by the two-phase entry points ``<op>GetWorkspaceSize`` /
``<op>``, CANN's and ours) turned into messages with the op name and the likely cause."""

from __future__ import annotations

# code: (name, meaning, likely cause / what to do)
STATUS = {
    0: ("ACLNN_SUCCESS", "success", ""),
    161001: ("ACLNN_ERR_PARAM_NULLPTR", "a required argument is a null pointer",
             "an input or output tensor was not passed (None where a tensor is required)"),
    161002: ("ACLNN_ERR_PARAM_INVALID", "an argument is invalid",
             "dtype, shape, layout or an attribute outside what the kernel supports"),
    361001: ("ACLNN_ERR_RUNTIME_ERROR", "a call into the NPU runtime failed",
             "device not set or lost, out of device memory, or a stream from another device"),
    561000: ("ACLNN_ERR_INNER", "internal error", "see the CANN log (ASCEND_GLOBAL_LOG_LEVEL=1)"),
    561001: ("ACLNN_ERR_INNER_INFERSHAPE_ERROR", "shape inference failed", "unsupported shape combination"),
    561002: ("ACLNN_ERR_INNER_TILING_ERROR", "tiling failed",
             "the tiling library of the operator package was not found or rejected the shape; check that "
             "ASCEND_CUSTOM_OPP_PATH holds fla_npu's operator package (`fla-npu info`)"),
    561003: ("ACLNN_ERR_INNER_FIND_KERNEL_ERROR", "no kernel binary for this call",
             "the operator package has no kernel for this SoC or dtype: a wheel built for another SoC, "
             "or a CANN older than the wheel's floor"),
    561101: ("ACLNN_ERR_INNER_CREATE_EXECUTOR", "the op executor could not be created",
             "out of host memory or a broken CANN install"),
    561103: ("ACLNN_ERR_INNER_NULLPTR", "internal null pointer",
             "usually `Cannot find bin of op`: CANN initialised before ASCEND_CUSTOM_OPP_PATH held fla_npu's "
             "operator package, so its kernels were never registered. Start the process with "
             "ASCEND_CUSTOM_OPP_PATH set (`fla-npu info` prints the value) or import torch before "
             "anything initialises the NPU (fla_npu sets it from torch's backend autoload)"),
}

_CLASSES = {1: "a parameter error (the call's arguments)", 3: "a runtime error (device, memory, stream)",
            5: "an internal error of the operator or of CANN"}


def describe(status: int, op: str) -> str:
    """One line: ``"<op> failed with aclnn status 561103 (ACLNN_ERR_INNER_NULLPTR: ...). Likely cause: ..."``."""
    entry = STATUS.get(int(status))
    if entry is not None:
        name, meaning, cause = entry
        msg = f"{op} failed with aclnn status {status} ({name}: {meaning})"
        return msg + (f". Likely cause: {cause}" if cause else "")
    cls = _CLASSES.get(int(status) // 100000)
    if cls is not None:
        return f"{op} failed with aclnn status {status} ({cls}; see the CANN log, ASCEND_GLOBAL_LOG_LEVEL=1)"
    return f"{op} failed with status {status}"


class AclnnError(RuntimeError):
    """A two-phase aclnn entry point returned a non-zero status."""

    def __init__(self, status: int, op: str, detail: str = ""):
        self.status = int(status)
        self.op = op
        super().__init__(describe(status, op) + (f". {detail}" if detail else ""))


def check(status: int, op: str, detail: str = "") -> None:
    """Raise :class:`AclnnError` for a non-zero ``status`` of ``op``."""
    if int(status) != 0:
        raise AclnnError(status, op, detail)
