"""Loading ``libfla_npu_kernels.so`` (built from ``csrc/``) with ctypes, and the C types of its
interface (``csrc/include/fla_npu/kernels.h`` and, for the sim flavour, ``csrc/sim/sim_api.h``).

In an NPU flavour the library is a bridge to the operator package embedded in the wheel: on load it
is given the package's ``op_api/lib/libcust_opapi.so`` (``flaNpuSetOperatorPackage``), whose aclnn
functions run the kernels."""

from __future__ import annotations

import ctypes
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import torch

from .aclnn import AclnnError, describe

LIBRARY_NAME = "libfla_npu_kernels.so"
OPAPI_LIBRARY = ("op_api", "lib", "libcust_opapi.so")  # in an operator package's vendor directory
MAX_DIMS = 8
ERR_ACLNN = 4  # FLA_NPU_ERR_ACLNN: an aclnn function of the operator package failed

# FlaNpuDtype
_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.int32: 3, torch.int64: 4}


class NativeLibraryError(RuntimeError):
    """The native library is missing or cannot be loaded."""


class KernelError(RuntimeError):
    """A native entry point returned an error (message from ``flaNpuGetLastErrorMessage``)."""


class AclnnKernelError(KernelError, AclnnError):
    """NPU flavours: an aclnn function of the operator package returned a non-zero status; the
    message names the function, the status and its likely cause (:func:`fla_npu.runtime.aclnn.describe`)."""

    def __init__(self, status: int, function: str, caller: str, detail: str = ""):
        self.caller = caller
        AclnnError.__init__(self, status, function, f"Called by {caller}" + (f": {detail}" if detail else ""))


class FlaNpuTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS)]


class FlaSimCounters(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "gm_to_local_bytes", "local_to_gm_bytes", "vector_elem_ops", "cube_macs", "peak_ub_bytes",
        "peak_l1_bytes", "peak_l0a_bytes", "peak_l0b_bytes", "peak_l0c_bytes")]


class FlaSimCoreInfo(ctypes.Structure):
    _fields_ = [("core_type", ctypes.c_int32), ("block_idx", ctypes.c_int32), ("sub_block_idx", ctypes.c_int32),
                ("reserved", ctypes.c_int32)]


def library_path() -> Path:
    """Where the library is looked for: ``$FLA_NPU_KERNEL_LIB`` if set, else ``fla_npu/lib/`` of the
    installed package."""
    env = os.environ.get("FLA_NPU_KERNEL_LIB")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "lib" / LIBRARY_NAME


_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def _declare(lib: ctypes.CDLL) -> None:
    P = ctypes.POINTER
    T = P(FlaNpuTensor)
    lib.flaNpuGetLastErrorMessage.restype = ctypes.c_char_p
    lib.flaNpuGetLastErrorMessage.argtypes = []
    lib.flaNpuDestroyExecutor.argtypes = [ctypes.c_void_p]
    lib.flaNpuTarget.restype = ctypes.c_char_p
    lib.flaNpuVectorCoreNum.restype = ctypes.c_int32
    lib.flaNpuSetOperatorPackage.restype = ctypes.c_int
    lib.flaNpuSetOperatorPackage.argtypes = [ctypes.c_char_p]
    lib.flaNpuGetLastAclnnStatus.restype = ctypes.c_int32
    lib.flaNpuGetLastAclnnStatus.argtypes = [P(ctypes.c_char_p)]
    # Each op: <op>GetWorkspaceSize(<op arguments>, workspace_size*, executor**), <op>(workspace, size,
    # executor, stream) and <op>LastTiling(words, capacity).
    ops = {
        "flaNpuGateChunkCumsum": [T, T, T, T, T, ctypes.c_int32, ctypes.c_int32, ctypes.c_float, ctypes.c_float, T],
        "flaNpuPrefixSharedAttention": [T, T, T, ctypes.c_float, T],
        "flaNpuChunkOutput": [T, T, T, T, T, T],
        "flaNpuWyFast": [T, T, T, T, T, T, T, T, T],
    }
    for op, op_args in ops.items():
        getattr(lib, op + "GetWorkspaceSize").restype = ctypes.c_int
        getattr(lib, op + "GetWorkspaceSize").argtypes = op_args + [P(ctypes.c_uint64), P(ctypes.c_void_p)]
        getattr(lib, op).restype = ctypes.c_int
        getattr(lib, op).argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]
        getattr(lib, op + "LastTiling").restype = ctypes.c_int32
        getattr(lib, op + "LastTiling").argtypes = [P(ctypes.c_uint32), ctypes.c_int32]
    if hasattr(lib, "fla_sim_last_launch_ok"):
        lib.fla_sim_last_launch_ok.restype = ctypes.c_int
        lib.fla_sim_last_error.restype = ctypes.c_char_p
        lib.fla_sim_last_kernel.restype = ctypes.c_char_p
        lib.fla_sim_last_core_count.restype = ctypes.c_int
        lib.fla_sim_last_core_counters.restype = ctypes.c_int
        lib.fla_sim_last_core_counters.argtypes = [ctypes.c_int, P(FlaSimCounters), P(FlaSimCoreInfo)]
        lib.fla_sim_last_total_counters.restype = ctypes.c_int
        lib.fla_sim_last_total_counters.argtypes = [P(FlaSimCounters)]


def load_library() -> ctypes.CDLL:
    """The loaded native library (loaded once per process). Raises :class:`NativeLibraryError` with
    what to do when it is missing."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        # An NPU flavour: is there an NPU of the wheel's SoC, a recent enough CANN, and does CANN see
        # the embedded operator package (bootstrap.py; nothing for the sim flavour).
        from .bootstrap import ensure_ready
        ensure_ready()
        path = library_path()
        if not path.is_file():
            raise NativeLibraryError(
                f"fla_npu native library not found at {path}. The kernels (sim flavour included) come with "
                "a built installation of fla-npu: reinstall from the source tree with `pip install .` "
                "(needs cmake and a C++17 compiler; no CANN for the sim flavour), or point "
                "FLA_NPU_KERNEL_LIB at a built libfla_npu_kernels.so.")
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as e:
            raise NativeLibraryError(f"fla_npu native library {path} could not be loaded: {e}") from e
        _declare(lib)
        from .flavour import NPU_FLAVOURS, build_info
        if build_info().get("flavour") in NPU_FLAVOURS:
            set_operator_package(lib, operator_package_library())
        _lib = lib
        return lib


def operator_package_library(package_dir: Path | None = None) -> Path:
    """The aclnn library of the operator package embedded in the installed NPU wheel: the first vendor
    directory (``fla_npu/opp/vendors/config.ini`` order) that has ``op_api/lib/libcust_opapi.so``.
    Raises :class:`NativeLibraryError` when the wheel has none."""
    try:
        import fla_npu_autoload as A  # top level of the wheel, stdlib only
    except ImportError as e:
        raise NativeLibraryError(f"fla_npu: the wheel's top-level module fla_npu_autoload is missing ({e}); "
                                 "reinstall the wheel") from e

    from .flavour import PACKAGE_DIR
    root = package_dir or PACKAGE_DIR
    vendors = A.embedded_vendor_dirs(str(root))
    for v in vendors:
        lib = Path(v).joinpath(*OPAPI_LIBRARY)
        if lib.is_file():
            return lib
    raise NativeLibraryError(
        f"fla_npu: this NPU wheel has no operator package with {'/'.join(OPAPI_LIBRARY)} under "
        f"{root / 'opp' / 'vendors'} (vendors found: {', '.join(Path(v).name for v in vendors) or 'none'}); "
        "its kernels live there. Reinstall the wheel, or rebuild it with ./build_wheel.")


def set_operator_package(lib: ctypes.CDLL, path: Path) -> None:
    """Give an NPU flavour's library the operator package's aclnn library (the path as it is: the
    library reads no environment). Raises :class:`NativeLibraryError` with the library's message."""
    if lib.flaNpuSetOperatorPackage(os.fsencode(str(path))) != 0:
        msg = lib.flaNpuGetLastErrorMessage().decode(errors="replace")
        raise NativeLibraryError(f"fla_npu: the operator package could not be loaded: {msg}")


def library_available() -> bool:
    try:
        load_library()
        return True
    except NativeLibraryError:
        return False


def target() -> str:
    """The flavour of the loaded library: ``sim-a2``/``sim-a3``/``sim-a5`` or ``a2``/``a3``/``a5``."""
    return load_library().flaNpuTarget().decode()


def tensor_desc(t: torch.Tensor | None):
    """A ``FlaNpuTensor`` describing ``t`` (pointer, dtype, shape, strides in elements), or ``None``."""
    if t is None:
        return None
    if t.dim() > MAX_DIMS:
        raise ValueError(f"tensors of at most {MAX_DIMS} dimensions can be passed to the kernels")
    if t.dtype not in _DTYPES:
        raise ValueError(f"dtype {t.dtype} cannot be passed to the kernels")
    d = FlaNpuTensor()
    d.data = t.data_ptr() if t.numel() else None
    d.dtype = _DTYPES[t.dtype]
    d.ndim = t.dim()
    for i, (n, s) in enumerate(zip(t.shape, t.stride())):
        d.shape[i], d.strides[i] = n, s
    return d


def ref(desc):
    return None if desc is None else ctypes.byref(desc)


def check(status: int, what: str, lib: ctypes.CDLL | None = None) -> None:
    """Raise for a non-zero ``status`` of the entry point ``what``: :class:`AclnnKernelError` when an
    aclnn function of the operator package failed (its status described), else :class:`KernelError`."""
    if status != 0:
        lib = lib or load_library()
        msg = lib.flaNpuGetLastErrorMessage().decode(errors="replace")
        if status == ERR_ACLNN:
            function = ctypes.c_char_p()
            aclnn_status = lib.flaNpuGetLastAclnnStatus(ctypes.byref(function))
            if aclnn_status != 0:
                raise AclnnKernelError(aclnn_status, (function.value or b"").decode(errors="replace"), what, msg)
        raise KernelError(f"{describe(status, what)}: {msg}")


def read_last_tiling(entry: str, fields: tuple, float_fields: tuple = ()) -> dict:
    """The tiling an op's ``<entry>(words, capacity)`` reports for its last call on this thread
    (32-bit words; ``float_fields`` hold float bit patterns), as a dict keyed by ``fields``."""
    fn = getattr(load_library(), entry)
    n = fn(None, 0)
    words = (ctypes.c_uint32 * n)()
    fn(words, n)
    return {name: (ctypes.c_float.from_buffer_copy(ctypes.c_uint32(words[i])).value if name in float_fields
                   else int(words[i])) for i, name in enumerate(fields)}


def allocate_workspace(size: int, device: torch.device) -> torch.Tensor | None:
    """A workspace of ``size`` bytes on ``device`` (torch's allocator; ``None`` for 0 bytes)."""
    if size == 0:
        return None
    return torch.empty(int(size), dtype=torch.uint8, device=device)


def current_stream(device: torch.device):
    """The stream handle a launch goes on: the current NPU stream, ``None`` on the host."""
    if device.type == "npu":  # pragma: no cover - needs torch_npu
        return ctypes.c_void_p(torch.npu.current_stream(device).npu_stream)
    return None


def run_two_phase(lib: ctypes.CDLL, entry: str, args: tuple, device: torch.device) -> None:
    """Call an op's C entry pair alike for every op: ``<entry>GetWorkspaceSize(*args, &size, &executor)``,
    then ``<entry>(workspace, size, executor, stream)`` with a workspace from torch's allocator."""
    ws_size = ctypes.c_uint64(0)
    executor = ctypes.c_void_p(None)
    check(getattr(lib, entry + "GetWorkspaceSize")(*args, ctypes.byref(ws_size), ctypes.byref(executor)),
          entry + "GetWorkspaceSize")
    workspace = allocate_workspace(ws_size.value, device)
    ws_ptr = None if workspace is None else workspace.data_ptr()
    check(getattr(lib, entry)(ws_ptr, ws_size.value, executor, current_stream(device)), entry)


def chunk_layout_unsupported(dtype: torch.dtype, BT: int, K: int, V: int, kernel_dtypes: tuple, chunk_sizes: tuple,
                             max_head_dim: int) -> str | None:
    """Why a mixed Cube kernel in the chunk layout cannot take a call with these facts (``None`` if it
    can): the limits its C entry point checks, shared by chunk_output and wy_fast."""
    if dtype not in kernel_dtypes:
        return f"the kernel takes float16 / bfloat16 Cube inputs, not {dtype}"
    if BT not in chunk_sizes:
        return f"chunk_size {BT} (the kernel takes {', '.join(map(str, chunk_sizes))})"
    if any(d % 16 or not 16 <= d <= max_head_dim for d in (K, V)):
        return f"head dims K={K}, V={V} (the kernel takes multiples of 16 up to {max_head_dim})"
    return None


# ---- counters of the last simulated launch ------------------------------------------------------

@dataclass(frozen=True)
class SimCounters:
    """Counters of one simulated core or, summed (bytes, ops) and maxed (peaks), of a launch."""
    gm_to_local_bytes: int
    local_to_gm_bytes: int
    vector_elem_ops: int
    cube_macs: int
    peak_ub_bytes: int
    peak_l1_bytes: int
    peak_l0a_bytes: int
    peak_l0b_bytes: int
    peak_l0c_bytes: int

    @staticmethod
    def _from(c: FlaSimCounters) -> "SimCounters":
        return SimCounters(*(int(getattr(c, n)) for n, _ in FlaSimCounters._fields_))


@dataclass(frozen=True)
class SimLaunch:
    """The last simulated launch in this process: kernel name, outcome, totals and per-core counters
    (with each core's ``(core_type, block_idx, sub_block_idx)``, core_type 0 = AIC, 1 = AIV)."""
    kernel: str
    ok: bool
    error: str
    totals: SimCounters
    cores: tuple


def last_sim_launch() -> SimLaunch | None:
    """Counters of the last simulated launch (``None`` before the first one, or for an NPU build)."""
    lib = load_library()
    if not hasattr(lib, "fla_sim_last_launch_ok"):
        return None
    ok = lib.fla_sim_last_launch_ok()
    if ok < 0:
        return None
    tot = FlaSimCounters()
    lib.fla_sim_last_total_counters(ctypes.byref(tot))
    cores = []
    for i in range(lib.fla_sim_last_core_count()):
        c, info = FlaSimCounters(), FlaSimCoreInfo()
        if lib.fla_sim_last_core_counters(i, ctypes.byref(c), ctypes.byref(info)) == 0:
            cores.append(((info.core_type, info.block_idx, info.sub_block_idx), SimCounters._from(c)))
    return SimLaunch(lib.fla_sim_last_kernel().decode(), ok == 1, lib.fla_sim_last_error().decode(errors="replace"),
                     SimCounters._from(tot), tuple(cores))
