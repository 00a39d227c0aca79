"""fla_npu.runtime's bootstrap pieces in process, with simulated device names and CANN states (no NPU)."""

from __future__ import annotations

import pytest

import fla_npu_autoload as A
from fla_npu.runtime import aclnn, bootstrap as B, cann as C, flavour as F

A2 = {"flavour": "a2", "distribution": "fla-npu-a2", "version": "0.1.0", "soc": "a2", "cann_floor": "9.0.0"}


@pytest.mark.parametrize("name,family", [("Ascend910B3", "a2"), ("Ascend910B4-1", "a2"), (223, "a2"),
                                         ("Ascend910_9391", "a3"), (253, "a3"), ("Ascend950PR_9599", "a5"),
                                         (260, "a5"), ("Ascend310P3", None), ("Ascend910A", None)])
def test_soc_family(name, family):
    assert B.soc_family(name) == family


def test_device_checks():
    B.check_device(A2, "Ascend910B2", "torch_npu")
    with pytest.raises(B.NpuUnavailableError, match="no usable NPU"):
        B.check_device(A2, None, "torch_npu not usable")
    with pytest.raises(B.SocMismatchError, match=r"Ascend950DT.*pip install fla-npu-a5"):
        B.check_device(A2, "Ascend950DT", "torch_npu")
    with pytest.raises(B.SocMismatchError, match="no kernels for this SoC"):
        B.check_device(A2, "Ascend310P3", "driver (DSMI)")
    B.check_cann(A2, "9.1.0-beta.1", "x")
    B.check_cann(A2, None, "x")  # unknown: not refused
    with pytest.raises(B.CannVersionError, match=r"needs CANN >= 9.0.0.*8.5.RC1"):
        B.check_cann(A2, "8.5.RC1", "x")


def test_cann_versions(tmp_path):
    assert C.parse_version("8.0.RC2.alpha003") == (8, 0, 0) and C.parse_version("9.1") == (9, 1, 0)
    assert C.version_at_least("9.1.0", "9.1.0") and C.version_at_least("9.0.1", "9.1.0") is False
    (tmp_path / "version.info").write_text("Version=9.0.0\n")
    home, version, _ = C.find_cann(str(tmp_path), environ={})
    assert home == str(tmp_path.resolve()) and version == "9.0.0"
    assert C.find_cann(str(tmp_path / "missing"), environ={})[0] is None


def test_opp_registration_timing(tmp_path):
    v = [str(tmp_path / "opp" / "vendors" / "fla_npu")]
    ran_in_time = {"ran": True, "vendor_dirs": v, "cann_initialised_before": False, "already_set": False}
    B.check_opp_registration(v, ran_in_time, True, environ={A.ENV: v[0]})
    late = dict(ran_in_time, cann_initialised_before=True)
    with pytest.raises(B.OppRegistrationError, match="CANN initialised before ASCEND_CUSTOM_OPP_PATH"):
        B.check_opp_registration(v, late, True, environ={A.ENV: v[0]})
    no_autoload = {"ran": False, "vendor_dirs": []}
    env = {A.ENV: "/other"}
    B.check_opp_registration(v, no_autoload, False, environ=env)  # not initialised yet: set now
    assert env[A.ENV] == v[0] + ":/other"
    with pytest.raises(B.OppRegistrationError, match="autoload did not run"):
        B.check_opp_registration(v, no_autoload, True, environ={})
    B.check_opp_registration(v, no_autoload, True, environ={A.ENV: v[0]})  # exported by the user


def test_autoload_without_fla_npu_opp_is_a_noop(monkeypatch):
    monkeypatch.setenv(A.ENV, "/x")
    A.autoload()
    assert A.STATE["ran"] and A.STATE["error"] is None
    import os
    assert os.environ[A.ENV] == "/x"  # a source tree / the sim flavour embeds no operator package


def test_flavour_conflict(tmp_path):
    (tmp_path / "_flavours").mkdir()
    (tmp_path / "_flavours" / "sim.json").write_text('{"distribution": "fla-npu", "version": "0.1.0", "flavour": "sim"}')
    F.check_single_flavour(tmp_path)
    (tmp_path / "_flavours" / "a3.json").write_text('{"distribution": "fla-npu-a3", "version": "0.1.0", "flavour": "a3"}')
    with pytest.raises(F.FlavourConflictError, match=r"fla-npu-a3 0.1.0.*fla-npu 0.1.0"):
        F.check_single_flavour(tmp_path)


def test_aclnn_messages():
    assert "chunk_kda" in aclnn.describe(561103, "chunk_kda") and "ASCEND_CUSTOM_OPP_PATH" in aclnn.describe(561103, "x")
    assert "ACLNN_ERR_PARAM_INVALID" in aclnn.describe(161002, "x")
    assert "parameter error" in aclnn.describe(169999, "x") and aclnn.describe(7, "op") == "op failed with status 7"
    with pytest.raises(aclnn.AclnnError, match="aclnnFoo failed with aclnn status 561003"):
        aclnn.check(561003, "aclnnFoo")
    aclnn.check(0, "aclnnFoo")
