"""The NPU flavours' libfla_npu_kernels.so: a thin bridge from the C entry points to the operator
package's aclnn functions. Built here with cmake (FLA_NPU_TARGET=a2: plain C++, no CANN) and run
against a fake operator package library (fake_aclnn.c, compiled with the host C compiler: it records
every tensor description, attribute, workspace, executor and stream it receives, and returns the
workspace size and statuses a test asks for), through fla_npu.runtime's ctypes declarations, with
CPU tensors as data (the fake never reads them)."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
import torch

from fla_npu.runtime import _native as N, aclnn, kernels, op_calls

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
GATE = "aclnnFlaNpuGateChunkCumsum"
PSA = "aclnnFlaNpuPrefixSharedAttention"
ACL_DTYPES = {torch.float32: 0, torch.float16: 1, torch.int32: 3, torch.int64: 9, torch.bfloat16: 27}
ACL_FORMAT_ND = 2
STREAM = 0x5EA0


class FakeTensor(ctypes.Structure):
    _fields_ = [("view_dims", ctypes.c_int64 * 8), ("strides", ctypes.c_int64 * 8), ("storage_dims", ctypes.c_int64 * 8),
                ("view_ndim", ctypes.c_uint64), ("storage_ndim", ctypes.c_uint64), ("offset", ctypes.c_int64),
                ("dtype", ctypes.c_int32), ("format", ctypes.c_int32), ("data", ctypes.c_void_p),
                ("destroyed", ctypes.c_int32), ("id", ctypes.c_int32)]


class FakeCall(ctypes.Structure):
    _fields_ = [("function", ctypes.c_char * 96), ("tensors", ctypes.POINTER(FakeTensor) * 16),
                ("num_tensors", ctypes.c_int32), ("num_ints", ctypes.c_int32), ("ints", ctypes.c_int64 * 4),
                ("num_floats", ctypes.c_int32), ("status", ctypes.c_int32), ("floats", ctypes.c_double * 4),
                ("workspace", ctypes.c_void_p), ("workspace_size", ctypes.c_uint64), ("executor", ctypes.c_void_p),
                ("stream", ctypes.c_void_p)]


class Fake:
    """One loaded build of fake_aclnn.c and what it recorded."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = lib = ctypes.CDLL(str(path))
        lib.fake_call.restype = ctypes.POINTER(FakeCall)
        lib.fake_call.argtypes = [ctypes.c_int32]
        lib.fake_set_workspace_size.argtypes = [ctypes.c_uint64]
        lib.fake_set_vector_cores.argtypes = [ctypes.c_int64]
        lib.fake_set_status.argtypes = [ctypes.c_char_p, ctypes.c_int32]
        assert lib.fake_sizeof_call() == ctypes.sizeof(FakeCall) and lib.fake_sizeof_tensor() == ctypes.sizeof(FakeTensor)

    def reset(self, workspace_size=0, vector_cores=48):
        self.lib.fake_reset()
        self.lib.fake_set_workspace_size(workspace_size)
        self.lib.fake_set_vector_cores(vector_cores)

    def calls(self) -> list:
        return [self.lib.fake_call(i).contents for i in range(self.lib.fake_call_count())]

    # The fake's counters, read afresh on each access: fake.created is fake_tensors_created(), ...
    COUNTERS = {"created": "fake_tensors_created", "destroyed": "fake_tensors_destroyed", "bad_destroys": "fake_bad_destroys",
                "executors_alive": "fake_executors_alive", "executors_destroyed": "fake_executors_destroyed",
                "executor_bad_calls": "fake_executor_bad_calls"}

    def __getattr__(self, name: str) -> int:
        if name not in Fake.COUNTERS:
            raise AttributeError(name)
        return getattr(self.lib, Fake.COUNTERS[name])()

    def fail(self, function: str, status: int) -> None:
        self.lib.fake_set_status(function.encode(), status)


def _cc(src: Path, out: Path, *defines) -> Path:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-Wl,-Bsymbolic", *defines, "-o", str(out), str(src)],
                   check=True, capture_output=True, text=True)
    return out


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """The a2 flavour of the library (cmake, tests off) and three builds of the fake package."""
    if shutil.which("cmake") is None or (shutil.which("c++") is None and shutil.which("g++") is None):
        pytest.skip("cmake and a C++ compiler are needed to build the a2 flavour")
    d = tmp_path_factory.mktemp("aclnn-bridge")
    for cmd in (["cmake", "-S", ROOT / "csrc", "-B", d / "build", "-DFLA_NPU_TARGET=a2", "-DFLA_NPU_BUILD_TESTS=OFF",
                 "-DCMAKE_BUILD_TYPE=Release"], ["cmake", "--build", d / "build", "-j", str(os.cpu_count() or 2)]):
        res = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
    src = HERE / "fake_aclnn.c"
    return {"lib": d / "build" / N.LIBRARY_NAME, "dir": d,
            "fake": _cc(src, d / "fake" / "op_api" / "lib" / "libcust_opapi.so"),
            "no_psa": _cc(src, d / "no_psa" / "libcust_opapi.so", "-DFAKE_ACLNN_OMIT_PSA"),
            "no_create": _cc(src, d / "no_create" / "libcust_opapi.so", "-DFAKE_ACLNN_OMIT_CREATE_TENSOR"),
            "no_init": _cc(src, d / "no_init" / "libcust_opapi.so", "-DFAKE_ACLNN_OMIT_INIT"),
            "init_fails": _cc(src, d / "init_fails" / "libcust_opapi.so")}


_copies = [0]


def fresh_bridge(build) -> ctypes.CDLL:
    """A separately loaded instance of the a2 library (a copy: its own operator package state)."""
    _copies[0] += 1
    path = build["dir"] / f"copy{_copies[0]}" / N.LIBRARY_NAME
    path.parent.mkdir()
    shutil.copy2(build["lib"], path)
    lib = ctypes.CDLL(str(path))
    N._declare(lib)
    return lib


@pytest.fixture(scope="module")
def fake(build):
    return Fake(build["fake"])


@pytest.fixture(scope="module")
def bridge_lib(build, fake):
    lib = fresh_bridge(build)
    assert lib.flaNpuSetOperatorPackage(str(build["fake"]).encode()) == 0, lib.flaNpuGetLastErrorMessage()
    return lib


@pytest.fixture
def bridge(bridge_lib, fake):
    fake.reset()
    yield bridge_lib
    assert fake.bad_destroys == 0, "an aclTensor was destroyed twice, or one the fake never made"
    assert fake.executor_bad_calls == 0, "an executor destroyed without being made repeatable, or twice"
    assert fake.executors_alive == 0, "an aclOpExecutor was leaked"


def sim_library():
    """The installed sim flavour's library, to compare with (None if not installed)."""
    try:
        lib = N.load_library()
    except N.NativeLibraryError:
        return None
    return lib if lib.flaNpuTarget().decode().startswith("sim") else None


def err(lib) -> str:
    return lib.flaNpuGetLastErrorMessage().decode()


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def entry_ws(lib, entry: str, tensors, *attrs):
    """``<entry>GetWorkspaceSize`` with ``tensors`` and ``attrs`` (each in order) put in the entry point's
    argument order (the op table): (status, workspace size, executor, the tensors kept alive)."""
    d = [N.tensor_desc(t) for t in tensors]
    refs, values = iter([N.ref(x) for x in d]), iter(attrs)
    args = [next(refs) if a["kind"] in ("in", "in?", "out") else next(values) for a in N.op_table()[entry]["args"]]
    ws, ex = ctypes.c_uint64(0), ctypes.c_void_p()
    st = getattr(lib, entry + "GetWorkspaceSize")(*args, ctypes.byref(ws), ctypes.byref(ex))
    return st, ws.value, ex, (tensors, d)


def gate_ws(lib, g, a_log=None, dt_bias=None, cu=None, chunks=None, chunk_size=64, form=1, lower_bound=0.0, scale=1.0,
            out="like"):
    """flaNpuGateChunkCumsumGetWorkspaceSize (``out`` by default float32 of ``g``'s shape)."""
    if isinstance(out, str):
        out = torch.empty(g.shape, dtype=torch.float32)
    return entry_ws(lib, "flaNpuGateChunkCumsum", (g, a_log, dt_bias, cu, chunks, out), chunk_size, form, lower_bound, scale)


def psa_ws(lib, q, k, v, scale=0.125, out="like"):
    """flaNpuPrefixSharedAttentionGetWorkspaceSize (``out`` by default like ``q``)."""
    if isinstance(out, str):
        out = torch.empty(q.shape, dtype=q.dtype)
    return entry_ws(lib, "flaNpuPrefixSharedAttention", (q, k, v, out), scale)


def row_major(shape) -> list:
    out, s = [], 1
    for n in reversed(shape):
        out.insert(0, s)
        s *= n
    return out


def assert_describes(ft: FakeTensor, t: torch.Tensor):
    """The aclTensor the fake received describes `t` exactly: view shape, row-major strides, offset 0,
    ND, storage shape = view shape, aclDataType, data pointer."""
    nd = t.dim()
    assert (ft.view_ndim, ft.storage_ndim) == (nd, nd)
    assert list(ft.view_dims)[:nd] == list(t.shape) == list(ft.storage_dims)[:nd]
    assert list(ft.strides)[:nd] == row_major(t.shape) == list(t.stride())
    assert (ft.offset, ft.format, ft.dtype) == (0, ACL_FORMAT_ND, ACL_DTYPES[t.dtype])
    assert ft.data == t.data_ptr()


def tensors_of(call: FakeCall) -> list:
    return [call.tensors[i].contents if call.tensors[i] else None for i in range(call.num_tensors)]


def check_forwarded_exactly(bridge, fake, entry: str, tensors, *attrs, ints=(), floats=(), workspace_size=4096) -> FakeCall:
    """A valid call of ``entry`` reaches the operator package's aclnn pair as made: every tensor described
    exactly (NULL for an absent one), the int attributes ``ints`` and float ones ``floats``, the workspace size the
    package asks for; the launch gets the workspace, the package's executor and the stream, and every
    aclTensor is destroyed after it. Returns the GetWorkspaceSize call the fake recorded."""
    aclnn = "aclnnF" + entry[1:]  # flaNpuX -> aclnnFlaNpuX
    fake.reset(workspace_size=workspace_size)
    st, ws, ex, _ = entry_ws(bridge, entry, tensors, *attrs)
    assert st == 0 and ws == workspace_size, err(bridge)
    [call] = fake.calls()
    assert call.function == f"{aclnn}GetWorkspaceSize".encode()
    assert call.num_tensors == len(tensors)
    for ft, tensor in zip(tensors_of(call), tensors):
        if tensor is None:
            assert ft is None  # an absent optional input: passed as NULL
        else:
            assert_describes(ft, tensor)
    assert list(call.ints)[:call.num_ints] == list(ints) and list(call.floats)[:call.num_floats] == list(floats)
    workspace = torch.empty(ws, dtype=torch.uint8)
    assert getattr(bridge, entry)(workspace.data_ptr(), ws, ex, ctypes.c_void_p(STREAM)) == 0, err(bridge)
    launch = fake.calls()[-1]
    assert (launch.function, launch.workspace, launch.workspace_size, launch.stream) == (
        aclnn.encode(), workspace.data_ptr(), workspace_size, STREAM)
    given = sum(t is not None for t in tensors)
    assert launch.executor == call.executor and fake.created == fake.destroyed == given
    return call


def check_refused_before_aclnn(bridge, fake, entry: str, message: str, tensors, *attrs) -> None:
    """A call of ``entry`` refused with ``message`` before any aclnn call or aclTensor."""
    fake.reset()
    assert entry_ws(bridge, entry, tensors, *attrs)[0] == 1 and message in err(bridge)
    assert len(fake.calls()) == 0 and fake.created == 0


def last_tiling(lib, entry: str) -> list:
    fn = getattr(lib, entry)
    n = fn(None, 0)
    words = (ctypes.c_uint32 * n)()
    fn(words, n)
    return list(words)


# ---- the library itself --------------------------------------------------------------------------

def test_bridge_needs_no_cann_library(build):
    lib = fresh_bridge(build)
    assert lib.flaNpuTarget() == b"a2"
    if shutil.which("readelf"):
        dyn = subprocess.run(["readelf", "-d", str(build["lib"])], capture_output=True, text=True, check=True).stdout
        needed = [ln.split("[")[1].rstrip("]") for ln in dyn.splitlines() if "(NEEDED)" in ln]
        assert needed and not [n for n in needed if not n.startswith(("libstdc++", "libgcc_s", "libc.", "libm.", "libdl.",
                                                                      "ld-linux", "libpthread"))], needed
    if shutil.which("nm"):
        undefined = subprocess.run(["nm", "-D", "--undefined-only", str(build["lib"])], capture_output=True, text=True,
                                   check=True).stdout
        assert "acl" not in undefined.lower(), undefined  # every CANN function goes through dlsym
        assert "getenv" not in undefined, undefined  # no ASCEND_CUSTOM_OPP_PATH read (cached) at load
    assert lib.flaNpuVectorCoreNum() == 1  # no operator package (hence no ACL runtime) yet


def test_sim_flavour_has_no_operator_package():
    lib = sim_library()
    if lib is None:
        pytest.skip("the sim flavour is not installed")
    assert lib.flaNpuSetOperatorPackage(b"/x/libcust_opapi.so") == 1
    assert "the sim flavour has no operator package" in err(lib)
    function = ctypes.c_char_p()
    assert lib.flaNpuGetLastAclnnStatus(ctypes.byref(function)) == 0 and function.value == b""


def test_an_op_before_the_operator_package_is_set(build, fake):
    lib = fresh_bridge(build)
    fake.reset()
    g, A = torch.randn(1, 20, 2, 16), torch.randn(2)
    st, ws, ex, _ = gate_ws(lib, g, A)
    assert st == 3 and not ex.value and ws == 0
    assert err(lib).startswith("flaNpuGateChunkCumsum: the operator package is not loaded: call flaNpuSetOperatorPackage(")
    st, _, ex, _ = psa_ws(lib, torch.randn(1, 2, 3, 64).half(), torch.randn(1, 5, 64).half(), torch.randn(1, 5, 64).half())
    assert st == 3 and "flaNpuPrefixSharedAttention: the operator package is not loaded" in err(lib)
    # Validation comes first, with its own message, in every flavour.
    assert gate_ws(lib, g, torch.randn(7))[0] == 1 and "`a_log` must have H elements" in err(lib)
    with pytest.raises(N.KernelError, match="operator package is not loaded"):
        N.check(gate_ws(lib, g, A)[0], "flaNpuGateChunkCumsumGetWorkspaceSize", lib)
    assert fake.calls() == [] and fake.created == 0


def test_set_operator_package_errors(build):
    lib = fresh_bridge(build)
    assert lib.flaNpuSetOperatorPackage(None) == 1 and "null or empty" in err(lib)
    missing = build["dir"] / "nowhere" / "libcust_opapi.so"
    assert lib.flaNpuSetOperatorPackage(str(missing).encode()) == 3
    assert f"{missing}: no such file" in err(lib) and "op_api/lib/libcust_opapi.so" in err(lib)
    not_elf = build["dir"] / "not_elf" / "libcust_opapi.so"
    not_elf.parent.mkdir()
    not_elf.write_text("not a library\n")
    assert lib.flaNpuSetOperatorPackage(str(not_elf).encode()) == 3
    assert f"cannot load {not_elf}" in err(lib) and "set_env.sh" in err(lib)
    assert lib.flaNpuSetOperatorPackage(str(build["no_psa"]).encode()) == 3
    assert err(lib) == (f"flaNpuSetOperatorPackage: {build['no_psa']} has no symbol {PSA}GetWorkspaceSize (not fla-npu's "
                        "operator package, or one built without this op)")
    assert lib.flaNpuSetOperatorPackage(str(build["no_create"]).encode()) == 3
    assert f"{build['no_create']} has no symbol aclCreateTensor (CANN's libnnopbase.so provides it" in err(lib)
    # Nothing was set by the failures.
    assert gate_ws(lib, torch.randn(1, 4, 2), torch.randn(2))[0] == 3 and "not loaded" in err(lib)
    # The Python runtime turns a failure into NativeLibraryError with the library's message.
    with pytest.raises(N.NativeLibraryError, match=f"operator package could not be loaded: .*{missing}: no such file"):
        N.set_operator_package(lib, missing)


# ---- forwarding -------------------------------------------------------------------------------------

def test_gate_arguments_forwarded_exactly(bridge, fake):
    fake.reset(workspace_size=4096, vector_cores=6)
    assert bridge.flaNpuVectorCoreNum() == 6  # the device's AIV count, through the ACL runtime
    g = torch.randn(2, 70, 3, 16).bfloat16()
    A, dt_bias = torch.randn(3), torch.randn(3 * 16)
    out = torch.empty(g.shape, dtype=torch.float32)
    st, ws, ex, _ = gate_ws(bridge, g, A, dt_bias, chunk_size=64, form=2, lower_bound=-5.1, scale=1.4426950408889634,
                            out=out)
    assert st == 0, err(bridge)
    assert ws == 4096 and ex.value  # the operator package's workspace size
    [call] = fake.calls()
    assert call.function == f"{GATE}GetWorkspaceSize".encode() and call.status == 0
    t = tensors_of(call)
    assert len(t) == 6 and t[3] is None and t[4] is None  # dense: no cu_seqlens, no chunk_indices
    for ft, tensor in zip((t[0], t[1], t[2], t[5]), (g, A, dt_bias, out)):
        assert_describes(ft, tensor)
    assert list(call.ints)[:call.num_ints] == [64, 2]
    assert list(call.floats)[:call.num_floats] == [f32(-5.1), f32(1.4426950408889634)]
    assert fake.created == 4 and fake.destroyed == 0  # alive until the launch
    gws, gex = call.workspace_size, call.executor  # what the fake returned (CANN's executor: ours wraps it)
    assert gws == 4096 and gex and gex != ex.value

    workspace = torch.empty(ws, dtype=torch.uint8)
    assert bridge.flaNpuGateChunkCumsum(workspace.data_ptr(), ws, ex, ctypes.c_void_p(STREAM)) == 0, err(bridge)
    launch = fake.calls()[1]
    assert launch.function == GATE.encode()
    assert (launch.workspace, launch.workspace_size, launch.executor, launch.stream) == (workspace.data_ptr(), 4096, gex, STREAM)
    assert fake.created == fake.destroyed == 4  # every aclTensor destroyed after the launch

    # The tiling is computed as in the sim flavour, with the device's core count.
    tiling = N.tiling_fields("flaNpuGateChunkCumsum")
    words = last_tiling(bridge, "flaNpuGateChunkCumsumLastTiling")
    assert words[tiling.index("block_dim")] <= 6 and words[tiling.index("has_a_log")] == 1


def test_gate_varlen_and_inputs_the_kernel_does_not_use(bridge, fake):
    fake.reset()
    cu = torch.tensor([0, 5, 5, 70], dtype=torch.int32)
    chunks = op_calls.chunk_list(cu, 32)
    g = torch.randn(1, 70, 4)  # GDN: [B, T, H]
    out = torch.empty(g.shape, dtype=torch.float32)
    st, ws, ex, _ = gate_ws(bridge, g, torch.randn(4), None, cu, chunks, chunk_size=32, form=0, out=out)
    assert st == 0, err(bridge)
    [call] = fake.calls()
    t = tensors_of(call)
    assert t[1] is None and t[2] is None  # gate form 0 does not use a_log: passed as NULL; no dt_bias
    assert_describes(t[0], g)
    assert_describes(t[3], cu)
    assert_describes(t[4], chunks)
    assert_describes(t[5], out)
    assert list(call.ints)[:2] == [32, 0] and ws == 0
    assert bridge.flaNpuGateChunkCumsum(None, 0, ex, None) == 0, err(bridge)
    assert fake.calls()[1].stream is None and fake.calls()[1].workspace is None
    assert fake.created == fake.destroyed == 4


def test_prefix_shared_attention_forwarded_exactly(bridge, fake):
    fake.reset(workspace_size=123456)
    q, k, v = torch.randn(2, 4, 3, 128).half(), torch.randn(2, 9, 128).half(), torch.randn(2, 9, 128).half()
    out = torch.empty(q.shape, dtype=q.dtype)
    st, ws, ex, _ = psa_ws(bridge, q, k, v, scale=0.08838834764831845, out=out)
    assert st == 0 and ws == 123456, err(bridge)
    [call] = fake.calls()
    assert call.function == f"{PSA}GetWorkspaceSize".encode()
    for ft, tensor in zip(tensors_of(call), (q, k, v, out)):
        assert_describes(ft, tensor)
    assert call.num_ints == 0 and list(call.floats)[:call.num_floats] == [f32(0.08838834764831845)]
    # The workspace must be as large as the operator package asked for (checked before its launch).
    small = torch.empty(100, dtype=torch.uint8)
    assert bridge.flaNpuPrefixSharedAttention(small.data_ptr(), 100, ex, None) == 1
    assert "smaller than GetWorkspaceSize asked for" in err(bridge)
    assert len(fake.calls()) == 1 and fake.created == fake.destroyed == 4
    st, ws, ex, _ = psa_ws(bridge, q, k, v, out=out)
    workspace = torch.empty(ws, dtype=torch.uint8)
    assert bridge.flaNpuPrefixSharedAttention(workspace.data_ptr(), ws, ex, ctypes.c_void_p(STREAM)) == 0, err(bridge)
    launch = fake.calls()[-1]
    assert (launch.function, launch.workspace, launch.workspace_size, launch.stream) == (
        PSA.encode(), workspace.data_ptr(), 123456, STREAM)
    assert launch.executor == fake.calls()[-2].executor
    assert fake.created == fake.destroyed == 8


def test_chunk_output_forwarded_exactly(bridge, fake):
    NC, HV, BT, K, V = 3, 2, 64, 128, 96
    tensors = (torch.randn(NC, BT, HV, K).bfloat16(), torch.rand(NC, HV, BT, 1), torch.randn(NC, HV, K, V).bfloat16(),
               torch.randn(NC, HV, BT, BT).bfloat16(), torch.randn(NC, HV, BT, V).bfloat16(),
               torch.empty(NC, BT, HV, V))  # o token-major
    check_forwarded_exactly(bridge, fake, "flaNpuChunkOutput", tensors)
    check_forwarded_exactly(bridge, fake, "flaNpuChunkOutput", (*tensors[:5], tensors[5].bfloat16()))  # o in the Cube type
    # Refused before any aclnn call: fp32 Cube inputs.
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkOutput", "float32 Cube inputs are not supported",
                               tuple(t.float() for t in tensors))


def test_wy_fast_forwarded_exactly(bridge, fake):
    NC, HV, BT, K, V = 3, 2, 64, 128, 96
    tensors = (torch.randn(NC, BT, HV, K).half(), torch.randn(NC, BT, HV, V).half(), torch.rand(NC, HV, BT),
               torch.randn(NC, HV, BT, BT).half(), -torch.rand(NC, BT, HV, K), torch.empty(NC, HV, BT, K),
               torch.empty(NC, HV, BT, V), torch.empty(NC, HV, BT, K))
    check_forwarded_exactly(bridge, fake, "flaNpuWyFast", tensors, workspace_size=8192)
    # Refused before any aclnn call: fp32 Cube inputs.
    check_refused_before_aclnn(bridge, fake, "flaNpuWyFast", "float32 Cube inputs are not supported",
                               tuple(t.float() for t in tensors))


def test_chunk_state_forwarded_exactly(bridge, fake):
    NC, HV, BT, K, V, N_ = 3, 2, 32, 64, 80, 2
    offsets = torch.tensor([0, 1, 3], dtype=torch.int32)
    tensors = (torch.randn(NC, HV, BT, K).bfloat16(), torch.randn(NC, HV, BT, V), torch.randn(NC, HV, BT, K).bfloat16(),
               torch.rand(NC, HV, 1), offsets, None, torch.empty(NC, HV, K, V).bfloat16(), torch.empty(NC, HV, BT, V),
               torch.empty(N_, HV, V, K))
    call = check_forwarded_exactly(bridge, fake, "flaNpuChunkState", tensors, 1, ints=[1])  # state_v_first
    assert tensors_of(call)[5] is None  # no h0: passed as NULL
    # Refused before any aclnn call: fp32 Cube inputs, an attribute other than 0 / 1.
    as_fp32 = (tensors[0].float(), tensors[1], tensors[2].float(), *tensors[3:])
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkState", "float32 `w` and `kg` are not supported", as_fp32, 1)
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkState", "`state_v_first` must be 0 or 1", tensors, 2)


def test_chunk_state_output_forwarded_exactly(bridge, fake):
    NC, HV, HQ, BT, K, V, N_ = 3, 4, 2, 32, 64, 80, 2
    offsets = torch.tensor([0, 1, 3], dtype=torch.int32)
    qk = lambda: torch.randn(NC, BT, HQ, K).bfloat16()  # noqa: E731
    tensors = (qk(), qk(), torch.randn(NC, BT, HV, V).bfloat16(), -torch.rand(NC, BT, HV, K),
               torch.randn(NC, HV, BT, BT).bfloat16(), torch.randn(NC, HV, BT, BT).bfloat16(), torch.rand(NC, HV, K), offsets,
               torch.randn(N_, HV, K, V), None, None, torch.empty(NC, BT, HV, V).bfloat16(), torch.empty(N_, HV, K, V))
    call = check_forwarded_exactly(bridge, fake, "flaNpuChunkStateOutput", tensors, 0, ints=[0])  # state_v_first
    assert tensors_of(call)[9:11] == [None, None]  # no row factors: NULL
    scaled = (*tensors[:9], torch.rand(NC, HQ, BT), torch.rand(NC, HQ, BT), *tensors[11:])
    check_forwarded_exactly(bridge, fake, "flaNpuChunkStateOutput", scaled, 0, ints=[0])
    # Refused before any aclnn call: fp32 Cube inputs, k with a head count that does not divide HV.
    as_fp32 = tuple(t.float() if t is not None and t.dtype == torch.bfloat16 else t for t in tensors)
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkStateOutput", "float32 Cube inputs are not supported", as_fp32, 0)
    k3 = torch.randn(NC, BT, 3, K).bfloat16()
    bad_k = (k3, k3, *tensors[2:])
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkStateOutput", "`k` must be [NC, BT, HQ, K]", bad_k, 0)


def test_chunk_forward_forwarded_exactly(bridge, fake):
    NC, HV, HQ, BT, K, V, N_ = 3, 4, 2, 32, 64, 80, 2
    offsets = torch.tensor([0, 1, 3], dtype=torch.int32)
    qk = lambda: torch.randn(NC, BT, HQ, K).bfloat16()  # noqa: E731
    tensors = (qk(), qk(), torch.randn(NC, BT, HV, V).bfloat16(), -torch.rand(NC, HV, BT, 1), torch.rand(NC, HV, BT),
               torch.rand(NC, HV, 1), offsets, None, torch.empty(NC, BT, HV, V).bfloat16(), torch.empty(N_, HV, V, K))
    call = check_forwarded_exactly(bridge, fake, "flaNpuChunkForward", tensors, 1, 0.125, 1, ints=[1, 1],
                                   floats=[0.125])  # qk_l2norm, scale, state_v_first
    assert tensors_of(call)[7] is None  # no h0: passed as NULL
    per_key = (*tensors[:3], -torch.rand(NC, BT, HV, K), tensors[4], torch.rand(NC, HV, K), *tensors[6:])  # KDA
    call = check_forwarded_exactly(bridge, fake, "flaNpuChunkForward", per_key, 0, 0.5, 1, ints=[0, 1], floats=[0.5])
    assert list(tensors_of(call)[3].view_dims)[:4] == [NC, BT, HV, K]
    # Refused before any aclnn call: fp32 Cube inputs, a per-key gate with one e_last per row, qk_l2norm 2.
    as_fp32 = tuple(t.float() if t is not None and t.dtype == torch.bfloat16 else t for t in tensors)
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkForward", "float32 Cube inputs are not supported", as_fp32, 1,
                               0.125, 1)
    mixed = (*per_key[:5], tensors[5], *per_key[6:])
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkForward", "`e_last`", mixed, 1, 0.125, 1)
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkForward", "`qk_l2norm` must be 0 or 1", tensors, 2, 0.125, 1)


def test_chunk_gate_forward_forwarded_exactly(bridge, fake):
    NC, HV, HQ, BT, K, V, N_ = 3, 4, 2, 32, 64, 80, 2
    offsets = torch.tensor([0, 1, 3], dtype=torch.int32)
    qk = lambda: torch.randn(NC, BT, HQ, K).bfloat16()  # noqa: E731
    # q, k, v, g (raw, per key), beta, a_log, dt_bias, chunk_len, chunk_offsets, h0, o, final
    tensors = (qk(), qk(), torch.randn(NC, BT, HV, V).bfloat16(), torch.randn(NC, BT, HV, K), torch.rand(NC, HV, BT),
               torch.randn(HV), torch.randn(HV * K), torch.tensor([32, 32, 5], dtype=torch.int32), offsets,
               torch.randn(N_, HV, K, V), torch.empty(NC, BT, HV, V).bfloat16(), torch.empty(N_, HV, K, V))
    # gate_form, lower_bound, qk_l2norm, scale, state_v_first
    check_forwarded_exactly(bridge, fake, "flaNpuChunkGateForward", tensors, 2, -5.0, 1, 0.125, 0, ints=[2, 1, 0],
                            floats=[-5.0, 0.125])
    # no dt_bias and no h0: NULL; the form none reads no A_log: a given one is passed as NULL
    bare = (*tensors[:6], None, *tensors[7:9], None, *tensors[10:])
    check_forwarded_exactly(bridge, fake, "flaNpuChunkGateForward", bare, 2, -5.0, 1, 0.125, 0, ints=[2, 1, 0],
                            floats=[-5.0, 0.125])
    fake.reset()
    st, _, ex, _ = entry_ws(bridge, "flaNpuChunkGateForward", bare, 0, 0.0, 1, 0.125, 0)
    assert st == 0, err(bridge)
    [call] = fake.calls()
    assert tensors_of(call)[5:7] == [None, None] and list(call.ints)[:1] == [0]
    bridge.flaNpuDestroyExecutor(ex)
    # Refused before any aclnn call: softplus without A_log, Gated DeltaNet's gate, a 16-bit gate of another dtype.
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkGateForward", "needs `a_log`", (*tensors[:5], None, *tensors[6:]),
                               1, 0.0, 1, 0.125, 0)
    gdn = (*tensors[:3], torch.randn(NC, HV, BT, 1), *tensors[4:])
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkGateForward", "`g`", gdn, 2, -5.0, 1, 0.125, 0)
    half = (*tensors[:3], tensors[3].half(), *tensors[4:])
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkGateForward", "`g` must be float32 or the dtype of `k`", half, 2,
                               -5.0, 1, 0.125, 0)


def test_chunk_intra_forwarded_exactly(bridge, fake):
    NC, HV, BT, K = 3, 2, 64, 128
    tensors = (torch.randn(NC, BT, HV, K).bfloat16(), torch.randn(NC, BT, HV, K).bfloat16(), torch.rand(NC, HV, BT),
               -torch.rand(NC, BT, HV, K), torch.empty(NC, HV, BT, BT).bfloat16(), torch.empty(NC, HV, BT, BT).bfloat16(),
               torch.empty(NC, HV, BT), torch.empty(NC, HV, BT))   # q, k, beta, g; aqk, akk, q_scale, k_scale
    check_forwarded_exactly(bridge, fake, "flaNpuChunkIntra", tensors, 1, 0.125, 1, ints=[1, 1],
                            floats=[0.125])  # qk_l2norm, scale, akk_beta
    # Refused before any aclnn call: fp32 Cube inputs, an output dtype neither float32 nor q's, qk_l2norm 2.
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkIntra", "float32 Cube inputs are not supported",
                               tuple(t.float() for t in tensors), 1, 0.125, 0)
    half_out = tensors[:4] + tuple(t.half() for t in tensors[4:6]) + tensors[6:]
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkIntra", "float32 or the dtype of `q`", half_out, 1, 0.125, 0)
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkIntra", "`qk_l2norm` must be 0 or 1", tensors, 2, 0.125, 0)
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkIntra", "`akk_beta` must be 0 or 1", tensors, 1, 0.125, 2)


def test_chunk_gate_intra_forwarded_exactly(bridge, fake):
    NC, HV, BT, K = 3, 2, 64, 128
    qk = lambda: torch.randn(NC, BT, HV, K).bfloat16()  # noqa: E731
    tensors = (qk(), qk(), torch.rand(NC, HV, BT), torch.randn(NC, BT, HV, K), torch.randn(HV), torch.randn(HV * K),
               torch.tensor([64, 64, 5], dtype=torch.int32), torch.empty(NC, HV, BT, BT).bfloat16(),
               torch.empty(NC, HV, BT, BT).bfloat16(), torch.empty(NC, HV, BT), torch.empty(NC, HV, BT),
               torch.empty(NC, BT, HV, K), torch.empty(NC, HV, K))
    # gate_form, lower_bound, qk_l2norm, scale, akk_beta
    check_forwarded_exactly(bridge, fake, "flaNpuChunkGateIntra", tensors, 2, -5.0, 1, 0.125, 1, ints=[2, 1, 1],
                            floats=[-5.0, 0.125])
    # no dt_bias: NULL; the form none reads no A_log: a given one is passed as NULL
    no_bias = (*tensors[:5], None, *tensors[6:])
    check_forwarded_exactly(bridge, fake, "flaNpuChunkGateIntra", no_bias, 2, -5.0, 1, 0.125, 1, ints=[2, 1, 1],
                            floats=[-5.0, 0.125])
    fake.reset()
    st, _, ex, _ = entry_ws(bridge, "flaNpuChunkGateIntra", no_bias, 0, 0.0, 1, 0.125, 1)
    assert st == 0, err(bridge)
    [call] = fake.calls()
    assert tensors_of(call)[4:6] == [None, None] and list(call.ints)[:1] == [0]
    bridge.flaNpuDestroyExecutor(ex)
    # Refused before any aclnn call: softplus without A_log, K over 128, a 16-bit gate of another dtype.
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkGateIntra", "needs `a_log`", (*tensors[:4], None, *tensors[5:]),
                               1, 0.0, 1, 0.125, 1)
    wide = tuple(torch.cat([t] * 2, -1) if i in (0, 1, 3, 11) else t for i, t in enumerate(tensors))
    wide = (*wide[:5], torch.randn(HV * 2 * K), *wide[6:12], torch.empty(NC, HV, 2 * K))
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkGateIntra", "K up to 128", wide, 2, -5.0, 1, 0.125, 1)
    check_refused_before_aclnn(bridge, fake, "flaNpuChunkGateIntra", "`g` must be float32 or the dtype of `q`",
                               (*tensors[:3], tensors[3].half(), *tensors[4:]), 2, -5.0, 1, 0.125, 1)


def test_destroy_executor_destroys_the_tensors(bridge, fake):
    fake.reset()
    st, _, ex, _ = gate_ws(bridge, torch.randn(1, 20, 2, 8), torch.randn(2), torch.randn(16))
    assert st == 0 and fake.created == 4 and fake.destroyed == 0
    bridge.flaNpuDestroyExecutor(ex)
    assert fake.destroyed == 4 and len(fake.calls()) == 1  # never launched


def test_an_executor_never_launched_is_released(bridge, fake):
    """CANN frees a (non-repeatable) executor in phase two; one whose phase two never runs is made
    repeatable and destroyed by the bridge, and a launched one is left to CANN."""
    fake.reset(workspace_size=256)
    st, _, ex, _ = gate_ws(bridge, torch.randn(1, 20, 2, 8), torch.randn(2))
    assert st == 0 and fake.executors_alive == 1
    bridge.flaNpuDestroyExecutor(ex)
    assert fake.executors_alive == 0 and fake.executors_destroyed == 1 and fake.executor_bad_calls == 0
    # Refused before the launch (workspace too small): released all the same.
    st, ws, ex, _ = gate_ws(bridge, torch.randn(1, 20, 2, 8), torch.randn(2))
    assert st == 0 and ws == 256
    small = torch.empty(16, dtype=torch.uint8)
    assert bridge.flaNpuGateChunkCumsum(small.data_ptr(), 16, ex, ctypes.c_void_p(STREAM)) != 0
    assert fake.executors_alive == 0 and fake.executors_destroyed == 2
    # Launched: CANN's to free, never destroyed by the bridge.
    st, ws, ex, _ = gate_ws(bridge, torch.randn(1, 20, 2, 8), torch.randn(2))
    workspace = torch.empty(ws, dtype=torch.uint8)
    assert bridge.flaNpuGateChunkCumsum(workspace.data_ptr(), ws, ex, ctypes.c_void_p(STREAM)) == 0, err(bridge)
    assert fake.executors_alive == 0 and fake.executors_destroyed == 2


def test_aclnn_is_initialised_once_per_process(build, tmp_path):
    """flaNpuSetOperatorPackage calls aclnnInit(NULL) before any aclnn call, once per process (a
    second package does not repeat it); a failing or missing aclnnInit leaves no package set."""
    lib = fresh_bridge(build)
    probe = Fake(build["init_fails"])
    probe.lib.fake_set_init_status(561000)
    assert lib.flaNpuSetOperatorPackage(str(build["init_fails"]).encode()) == 4
    assert "aclnnInit failed with aclnn status 561000" in err(lib)
    function = ctypes.c_char_p()
    assert lib.flaNpuGetLastAclnnStatus(ctypes.byref(function)) == 561000 and function.value == b"aclnnInit"
    assert gate_ws(lib, torch.randn(1, 4, 2), torch.randn(2))[0] == 3 and "not loaded" in err(lib)
    assert probe.lib.fake_init_calls() == 1
    assert lib.flaNpuSetOperatorPackage(str(build["no_init"]).encode()) == 3
    assert "has no symbol aclnnInit" in err(lib)
    probe.lib.fake_set_init_status(0)
    for _ in range(2):
        assert lib.flaNpuSetOperatorPackage(str(build["init_fails"]).encode()) == 0, err(lib)
    assert probe.lib.fake_init_calls() == 2  # the failed call, then once


def test_nothing_to_compute_calls_nothing(bridge, fake):
    fake.reset(workspace_size=777)
    q, k = torch.randn(0, 2, 3, 64).half(), torch.randn(0, 5, 64).half()
    st, ws, ex, _ = psa_ws(bridge, q, k, k.clone())
    assert st == 0 and ws == 0 and ex.value
    assert bridge.flaNpuPrefixSharedAttention(None, 0, ex, None) == 0
    st, ws, ex, _ = gate_ws(bridge, torch.randn(1, 0, 2), torch.randn(2))
    assert st == 0 and ws == 0
    assert bridge.flaNpuGateChunkCumsum(None, 0, ex, None) == 0
    assert fake.calls() == [] and fake.created == 0


# ---- errors -----------------------------------------------------------------------------------------

INVALID_GATE = [
    (dict(a_log=torch.randn(7)), "`a_log` must have H elements"),
    (dict(a_log=None, form=1), "needs `a_log`"),
    (dict(dt_bias=torch.randn(5)), "`dt_bias` must have H * K elements"),
    (dict(chunk_size=256), "power of two <= 128"),
    (dict(form=3), "`gate_form` must be 0"),
    (dict(out=torch.empty(2, 20, 3, 8, dtype=torch.float16)), "`out` must be float32"),
    (dict(out=torch.empty(2, 20, 3, 4)), "`out` must have the shape of `g`"),
    (dict(g=torch.randn(2, 3, 20, 8).transpose(1, 2)), "`g` must be contiguous"),
    (dict(cu=torch.tensor([0, 20], dtype=torch.int32)), "`cu_seqlens` and `chunk_indices` go together"),
]


@pytest.mark.parametrize("kwargs,message", INVALID_GATE, ids=[m for _, m in INVALID_GATE])
def test_invalid_arguments_rejected_before_any_aclnn_call(bridge, fake, kwargs, message):
    args = dict(g=torch.randn(2, 20, 3, 8), a_log=torch.randn(3), chunk_size=16, form=1)
    args.update(kwargs)
    g = args.pop("g")
    if "out" not in args:
        args["out"] = torch.empty(g.shape, dtype=torch.float32)
    st, ws, ex, _ = gate_ws(bridge, g, **args)
    assert st == 1 and not ex.value and message in err(bridge)
    assert fake.calls() == [] and fake.created == 0
    sim = sim_library()
    if sim is not None:  # the same check and message in every flavour
        assert gate_ws(sim, g, **args)[0] == 1 and err(sim) == err(bridge)


def test_invalid_prefix_shared_attention_rejected_before_any_aclnn_call(bridge, fake):
    q, k = torch.randn(1, 2, 3, 96).half(), torch.randn(1, 5, 96).half()
    assert psa_ws(bridge, q, k, k.clone())[0] == 1 and "64 or 128" in err(bridge)
    q, k = torch.randn(1, 2, 3, 64).half(), torch.randn(1, 5, 64).half()
    assert psa_ws(bridge, q, k, torch.randn(1, 4, 64).half())[0] == 1 and "different lengths" in err(bridge)
    assert fake.calls() == [] and fake.created == 0


def test_failing_aclnn_status_is_reported_with_the_function_and_its_meaning(bridge, fake):
    fake.reset()
    fake.fail(f"{GATE}GetWorkspaceSize", 561103)
    st, ws, ex, _ = gate_ws(bridge, torch.randn(1, 20, 2, 8), torch.randn(2))
    assert st == 4 and not ex.value and ws == 0
    assert err(bridge).startswith(f"flaNpuGateChunkCumsum: {GATE}GetWorkspaceSize failed with aclnn status 561103")
    function = ctypes.c_char_p()
    assert bridge.flaNpuGetLastAclnnStatus(ctypes.byref(function)) == 561103
    assert function.value == f"{GATE}GetWorkspaceSize".encode()
    assert fake.created == fake.destroyed == 3  # g, a_log, out: destroyed on the failure
    with pytest.raises(N.AclnnKernelError) as e:
        N.check(st, "flaNpuGateChunkCumsumGetWorkspaceSize", bridge)
    assert isinstance(e.value, N.KernelError) and isinstance(e.value, aclnn.AclnnError)
    assert (e.value.status, e.value.op, e.value.caller) == (561103, f"{GATE}GetWorkspaceSize",
                                                           "flaNpuGateChunkCumsumGetWorkspaceSize")
    msg = str(e.value)
    assert msg.startswith(aclnn.describe(561103, f"{GATE}GetWorkspaceSize"))
    assert "ACLNN_ERR_INNER_NULLPTR" in msg and "Cannot find bin of op" in msg and "ASCEND_CUSTOM_OPP_PATH" in msg

    # A failing launch: reported the same way; the tensors are destroyed all the same.
    fake.reset(workspace_size=64)
    fake.fail(PSA, 361001)
    q, k = torch.randn(1, 2, 3, 64).bfloat16(), torch.randn(1, 5, 64).bfloat16()
    st, ws, ex, _ = psa_ws(bridge, q, k, k.clone())
    assert st == 0, err(bridge)
    assert bridge.flaNpuGetLastAclnnStatus(None) == 0  # a success clears it
    workspace = torch.empty(ws, dtype=torch.uint8)
    st = bridge.flaNpuPrefixSharedAttention(workspace.data_ptr(), ws, ex, ctypes.c_void_p(STREAM))
    assert st == 4 and f"{PSA} failed with aclnn status 361001" in err(bridge)
    assert fake.created == fake.destroyed == 4
    with pytest.raises(N.AclnnKernelError, match=r"aclnnFlaNpuPrefixSharedAttention failed with aclnn status 361001 "
                                                 r"\(ACLNN_ERR_RUNTIME_ERROR"):
        N.check(st, "flaNpuPrefixSharedAttention", bridge)


def test_a_failing_aclcreatetensor_is_reported_and_cleaned_up(bridge, fake):
    fake.reset()
    fake.lib.fake_set_create_limit(2)
    st, _, ex, _ = gate_ws(bridge, torch.randn(1, 20, 2, 8), torch.randn(2), torch.randn(16))
    assert st == 3 and not ex.value and "flaNpuGateChunkCumsum: aclCreateTensor failed for `dt_bias`" in err(bridge)
    assert fake.created == fake.destroyed == 2 and fake.calls() == []


# ---- the Python runtime ------------------------------------------------------------------------------

def test_runtime_gives_an_npu_flavour_its_embedded_operator_package(build, monkeypatch, tmp_path):
    """load_library() of an NPU flavour: after the first-use checks it loads the library and hands it
    the embedded vendor's op_api/lib/libcust_opapi.so; ops then go through it, and aclnn failures
    come back as AclnnKernelError."""
    import fla_npu_autoload  # noqa: F401 - the wheel's top-level module (vendor directories)
    from fla_npu.runtime import bootstrap, flavour

    pkg = tmp_path / "fla_npu"
    vendor = pkg / "opp" / "vendors" / "fla_npu"
    (pkg / "lib").mkdir(parents=True)
    shutil.copy2(build["lib"], pkg / "lib" / N.LIBRARY_NAME)
    (vendor / "op_api" / "lib").mkdir(parents=True)
    (pkg / "opp" / "vendors" / "config.ini").write_text("load_priority=fla_npu\n")
    monkeypatch.setattr(N, "_lib", None)
    monkeypatch.setenv("FLA_NPU_KERNEL_LIB", str(pkg / "lib" / N.LIBRARY_NAME))
    monkeypatch.setattr(flavour, "PACKAGE_DIR", pkg)
    monkeypatch.setattr(flavour, "build_info", lambda package_dir=None: {"flavour": "a2"})
    monkeypatch.setattr(bootstrap, "ensure_ready", lambda: None)
    with pytest.raises(N.NativeLibraryError, match=r"no operator package with op_api/lib/libcust_opapi.so .*vendors found: "
                                                   r"fla_npu"):
        N.load_library()
    shutil.copy2(build["fake"], vendor / "op_api" / "lib" / "libcust_opapi.so")
    assert N.operator_package_library() == vendor / "op_api" / "lib" / "libcust_opapi.so"
    lib = N.load_library()
    assert N.target() == "a2"
    fake = Fake(vendor / "op_api" / "lib" / "libcust_opapi.so")
    fake.reset(vector_cores=4)
    g = torch.randn(1, 40, 2, 16)
    kernels.gate_chunk_cumsum(g, 32, "softplus", torch.randn(2), torch.randn(32), scale=2.0)
    get_ws, launch = fake.calls()
    assert get_ws.function == f"{GATE}GetWorkspaceSize".encode() and launch.function == GATE.encode()
    assert list(get_ws.ints)[:2] == [32, 1] and get_ws.floats[1] == 2.0
    assert launch.executor == get_ws.executor and fake.created == fake.destroyed == 4
    assert kernels.gate_chunk_cumsum.last_tiling()["block_dim"] <= 4 and lib.flaNpuVectorCoreNum() == 4
    fake.fail(f"{GATE}GetWorkspaceSize", 561103)
    with pytest.raises(N.AclnnKernelError, match=r"aclnnFlaNpuGateChunkCumsumGetWorkspaceSize failed with aclnn status "
                                                 r"561103 \(ACLNN_ERR_INNER_NULLPTR.*Called by "
                                                 r"flaNpuGateChunkCumsumGetWorkspaceSize"):
        kernels.gate_chunk_cumsum(g, 32, "softplus", torch.randn(2))


# ---- the chunked forward's kernel chain, as an NPU flavour runs it --------------------------------

@pytest.mark.parametrize("op,varlen", [("kda", False), ("gdn", False), ("kda", True)])
def test_chunk_op_runs_its_kernel_chain_through_the_operator_package(bridge, fake, monkeypatch, op, varlen):
    """The NPU route is the simulation's route with the bridge as the library: the chunk op calls the
    aclnn pair of every stage kernel, in order, each launch on what the previous one wrote (the fake
    computes nothing, so the numbers are not looked at). Varlen as on an NPU without
    ``cu_seqlens_cpu``: the chunk tables built on the device, every chunk-layout kernel given the
    bound on the chunk count, the gate kernel the offsets and the rows of those chunks (KDA: the
    intra-chunk kernel forms G, given each chunk's length, built on the device too)."""
    import fla_npu
    from fla_npu.ops.common import validate
    from fla_npu.runtime import chunk_pipeline

    monkeypatch.setattr(N, "_lib", bridge)
    monkeypatch.setenv("FLA_NPU_CPU_IMPL", "sim")
    cu = torch.tensor([0, 1, 40, 100]) if varlen else None
    if varlen:  # what the check returns for NPU tensors without a CPU copy
        monkeypatch.setattr(validate, "check_cu_seqlens", lambda *a, **kw: None)
    fake.reset()
    B, T, H, K, V = 1, 100, 2, 64, 64
    q, k = torch.randn(B, T, H, K).bfloat16(), torch.randn(B, T, H, K).bfloat16()
    v, beta = torch.randn(B, T, H, V).bfloat16(), torch.rand(B, T, H).bfloat16()
    g = -torch.rand(B, T, H, *((K,) if op == "kda" else ())).bfloat16()
    fn = fla_npu.chunk_kda if op == "kda" else fla_npu.chunk_gated_delta_rule
    with torch.no_grad():
        fn(q, k, v, g, beta, output_final_state=True, cu_seqlens=cu)
    skipped = chunk_pipeline.stage_reasons(torch.bfloat16, 64, K, V)
    entries = ["GateChunkCumsum"] + [name for stage, names in (
        ("stage 2: intra-chunk", ("ChunkIntra",)), ("stage 3: WY factors", ("WyFast",)),
        ("stage 4: state recurrence", ("ChunkState",)), ("stage 5: output", ("ChunkOutput",)))
        if stage not in skipped for name in names]
    if not chunk_pipeline.FUSED_STAGES & skipped.keys():  # one launch for stages 3-5 (with stage 2: 2-5)
        entries[-3:] = ["ChunkStateOutput"]
        if chunk_pipeline.runs_one_launch(skipped, False, op == "kda", K):
            entries[-2:] = ["ChunkForward"]
    gate_in = op == "kda" and chunk_pipeline.gate_in_launch(skipped, False, True, torch.bfloat16, 64, K)
    if gate_in:
        entries[:] = ["ChunkGateForward"]
    calls = fake.calls()
    assert [c.function.decode() for c in calls] == [
        f"aclnnFlaNpu{e}{phase}" for e in entries for phase in ("GetWorkspaceSize", "")]
    assert all(c.stream is None for c in calls[1::2])  # CPU tensors: no stream (an NPU call passes the current one)
    NC = 4 if varlen else 2   # varlen: min(T, (T + N (BT - 1)) // BT) = 4 for 3 exact chunks; dense: 2
    if gate_in:  # q, k, v, g (raw, token-major chunk layout), beta, A_log, dt_bias, chunk_len, chunk_offsets
        intra = tensors_of(calls[0])
        assert list(intra[3].view_dims)[:4] == [NC, 64, H, K] and list(intra[7].view_dims)[:1] == [NC]
    else:
        gate = tensors_of(calls[0])
        assert (gate[3] is None and gate[4] is None) if not varlen else (
            list(gate[3].view_dims)[:1] == [4] and list(gate[4].view_dims)[:2] == [NC, 2])
        intra = tensors_of(calls[2])
    assert list(intra[0].view_dims)[:4] == [NC, 64, H, K]   # q in the token-major chunk layout
    assert fake.created == fake.destroyed
