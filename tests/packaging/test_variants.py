"""WheelNext variant wheels (./build_wheel --variant / --make-variant; ci/WHEELS.md "Wheel variants"):
the a2 and a5 flavours around fake operator packages, each also written as a variant wheel of the
umbrella distribution fla-npu (labels 910b, 950; property `ascend :: npu_type`), the index-level
fla_npu-<version>-variants.json listing both; the format as variantlib reads and writes it; plain pip
refusing the variant file name but installing the per-SoC wheel, and the variant's content installed
working. No NPU, no CANN, no variant-aware installer here."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import make_venv, pip_install, run_build_wheel, venv_run, wheel_from_output
from fake_opp import make_fake_opp

# PEP 825 draft (python/peps 2026-08-13): {name}-{version}-{python}-{abi}-{platform}-{label}.whl,
# label ^[0-9a-z_.]+$ ; variant.json as variantlib 0.2.2 writes it (format 0.2.0, with providers).
VARIANT_NAME_RE = re.compile(r"^fla_npu-0\.1\.0-py3-none-(?P<plat>[^-]+)-(?P<label>[0-9a-z_.]+)\.whl$")


def expected_variant_json(*labels: str) -> dict:
    return {
        "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
        "default-priorities": {"namespace": ["ascend"]},
        "providers": {"ascend": {"plugin-api": "huawei_ascend_variant_provider.plugin:AscendVariantPlugin",
                                 "requires": ["huawei-ascend-variant-provider>=0.0.2,<0.0.3"]}},
        "variants": {label: {"ascend": {"npu_type": [label]}} for label in labels},
    }


@pytest.fixture(scope="module")
def variant_build(a2_wheel, tmp_path_factory, wheel_dir):
    """The variants of a2 and a5 in one directory by both routes: a5 built with --variant (the a5
    package: kernels for ascend950, CANN 9.1.0), a2 made with --make-variant from the session's a2
    wheel (the cibuildwheel route; not built a second time)."""
    out = wheel_dir / "variants"
    res_a2 = run_build_wheel("--make-variant", a2_wheel[0], "--out", out)
    opp5 = make_fake_opp(tmp_path_factory.mktemp("fake-opp-a5") / "opp", unit="ascend950", version="9.1.0")
    res_a5 = run_build_wheel("--soc", "a5", "--prebuilt-opp", opp5, "--out", out, "--variant")

    def variant_of(stdout):
        return Path(next(ln for ln in stdout.splitlines() if ln.startswith("variant wheel: ")).split(": ", 1)[1])

    return {"out": out, "a2": a2_wheel[0], "a5": wheel_from_output(res_a5.stdout),
            "a2_variant": variant_of(res_a2.stdout), "a5_variant": variant_of(res_a5.stdout), "stdout": res_a2.stdout}


def zip_files(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        return {n: z.read(n) for n in z.namelist() if not n.endswith("/")}


def test_variant_wheel_name_and_variant_json(variant_build):
    for soc, label in (("a2", "910b"), ("a5", "950")):
        v, plain = variant_build[f"{soc}_variant"], variant_build[soc]
        m = VARIANT_NAME_RE.match(v.name)
        assert m and m["label"] == label, v.name
        assert m["plat"] == plain.name[:-4].split("-")[-1]  # the per-SoC wheel's platform tag
        files = zip_files(v)
        assert [n for n in files if n.endswith("variant.json")] == ["fla_npu-0.1.0.dist-info/variant.json"]
        assert json.loads(files["fla_npu-0.1.0.dist-info/variant.json"]) == expected_variant_json(label)
    assert "property ascend :: npu_type :: 910b" in variant_build["stdout"]


def test_variant_wheel_is_the_npu_wheel_republished_as_fla_npu(variant_build):
    plain, variant = zip_files(variant_build["a2"]), zip_files(variant_build["a2_variant"])
    assert not [n for n in plain if n.endswith("variant.json")], "the per-SoC wheel stays a plain wheel"
    renamed = {n.replace("fla_npu_a2-0.1.0.dist-info/", "fla_npu-0.1.0.dist-info/"): d for n, d in plain.items()}
    assert set(variant) - set(renamed) == {"fla_npu-0.1.0.dist-info/variant.json"} and set(renamed) <= set(variant)
    changed = {n for n in renamed if renamed[n] != variant[n]}
    assert changed == {"fla_npu-0.1.0.dist-info/METADATA", "fla_npu-0.1.0.dist-info/RECORD",
                       "fla_npu/_build_info.json", "fla_npu/_flavours/a2.json"}
    meta = variant["fla_npu-0.1.0.dist-info/METADATA"].decode()
    assert "\nName: fla-npu\n" in meta and "Summary: [a2] Atlas A2" in meta
    assert meta.replace("Name: fla-npu\n", "Name: fla-npu-a2\n", 1) == renamed["fla_npu-0.1.0.dist-info/METADATA"].decode()
    for f in ("fla_npu/_build_info.json", "fla_npu/_flavours/a2.json"):
        before, after = json.loads(renamed[f]), json.loads(variant[f])
        assert after.pop("distribution") == "fla-npu" and before.pop("distribution") == "fla-npu-a2"
        assert after.pop("variant_label") == "910b" and after.pop("variant_properties") == ["ascend :: npu_type :: 910b"]
        assert after == before and after["flavour"] == "a2"
    # RECORD: every file with its hash and size, RECORD itself without.
    rows = list(csv.reader(io.StringIO(variant["fla_npu-0.1.0.dist-info/RECORD"].decode())))
    assert {r[0] for r in rows} == set(variant)
    for name, digest, size in rows:
        if name.endswith("/RECORD"):
            assert digest == size == ""
            continue
        data = variant[name]
        assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert int(size) == len(data)


def test_variants_index_lists_every_label(variant_build):
    index = variant_build["out"] / "fla_npu-0.1.0-variants.json"
    assert json.loads(index.read_text()) == expected_variant_json("910b", "950")


def test_variant_metadata_as_variantlib_reads_and_writes_it(variant_build):
    """variantlib (the WheelNext reference library) parses our variant.json and index, and serialises
    them byte for byte as we wrote them."""
    pytest.importorskip("variantlib", reason="variantlib not installed (ci/test.sh installs it)")
    from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX
    from variantlib.variant_dist_info import VariantDistInfo
    from variantlib.variants_json import VariantsJson

    v = variant_build["a2_variant"]
    m = VALIDATION_WHEEL_NAME_REGEX.fullmatch(v.name)
    assert m and m.group("variant_label") == "910b" and m.group("name") == "fla_npu"
    raw = zip_files(v)["fla_npu-0.1.0.dist-info/variant.json"].decode()
    info = VariantDistInfo(raw, "910b")
    assert {p.to_str() for p in info.variant_desc.properties} == {"ascend :: npu_type :: 910b"}
    assert info.namespace_priorities == ["ascend"] and set(info.providers) == {"ascend"}
    assert info.to_str() == raw
    index_raw = (variant_build["out"] / "fla_npu-0.1.0-variants.json").read_text()
    index = VariantsJson(json.loads(index_raw))
    assert sorted(index.variants) == ["910b", "950"] and index.to_str() == index_raw


def test_plain_pip_installs_the_soc_wheel_and_refuses_the_variant_name(variant_build, torch_site, tmp_path):
    py = make_venv(tmp_path / "venv", torch_site)
    res = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps",
                          "--disable-pip-version-check", "-q", str(variant_build["a2_variant"])],
                         capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert res.returncode != 0 and "is not a valid wheel filename" in res.stdout + res.stderr
    pip_install(py, variant_build["a2"])
    res = venv_run(py, "import json, fla_npu; from fla_npu.runtime import flavour as F; "
                       "print(json.dumps([F.build_info()['distribution'], [f['distribution'] for f in F.installed_flavours()]]))")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout.strip().splitlines()[-1]) == ["fla-npu-a2", ["fla-npu-a2"]]


def test_variant_content_installs_and_reports_fla_npu(variant_build, torch_site, tmp_path):
    """What a variant-aware installer would install: the variant wheel's content, given to pip under
    the name without the label; fla-npu info reports distribution fla-npu, flavour a2, the label."""
    v = variant_build["a2_variant"]
    plain_name = tmp_path / (v.name[:-4].rsplit("-", 1)[0] + ".whl")
    plain_name.write_bytes(v.read_bytes())
    py = make_venv(tmp_path / "venv", torch_site)
    pip_install(py, plain_name)
    code = """
import json, importlib.metadata as md
import fla_npu
from fla_npu.runtime import flavour as F
vj = json.loads(md.distribution("fla-npu").read_text("variant.json"))
print(json.dumps({"info": F.build_info(), "installed": F.installed_flavours(), "labels": sorted(vj["variants"])}))
"""
    res = venv_run(py, code)
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout.strip().splitlines()[-1])
    assert (r["info"]["distribution"], r["info"]["flavour"], r["info"]["variant_label"]) == ("fla-npu", "a2", "910b")
    assert [f["distribution"] for f in r["installed"]] == ["fla-npu"] and r["labels"] == ["910b"]
    res = subprocess.run([str(py.parent / "fla-npu"), "info", "--json"], capture_output=True, text=True,
                         env={"PATH": str(py.parent) + ":/usr/bin:/bin", "HOME": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert (info["distribution"], info["flavour"], info["installed_flavours"]) == ("fla-npu", "a2", ["fla-npu"])


def test_make_variant_of_a_finished_wheel_is_the_same(variant_build, tmp_path):
    """The cibuildwheel route, --make-variant on the per-SoC wheel a job produced, writes the variant
    that --variant wrote in the build, byte for byte."""
    res = run_build_wheel("--make-variant", variant_build["a5"], "--out", tmp_path)
    v = tmp_path / variant_build["a5_variant"].name
    assert v.read_bytes() == variant_build["a5_variant"].read_bytes()
    assert json.loads((tmp_path / "fla_npu-0.1.0-variants.json").read_text()) == expected_variant_json("950")
    assert "labels 950" in res.stdout


def test_variant_refusals(variant_build, sim_wheel, tmp_path):
    res = run_build_wheel("--soc", "sim", "--variant", "--out", tmp_path / "x", check=False)
    assert res.returncode == 2 and "--variant is for an NPU SoC" in res.stderr and not (tmp_path / "x").exists()
    res = run_build_wheel("--make-variant", sim_wheel[0], "--out", tmp_path, check=False)
    assert res.returncode != 0 and "this one is flavour sim" in res.stderr
    res = run_build_wheel("--make-variant", variant_build["a2"], "--soc", "a3", "--out", tmp_path, check=False)
    assert res.returncode != 0 and "of --soc a3" in res.stderr
    res = run_build_wheel("--make-variant", variant_build["a2_variant"], "--out", tmp_path, check=False)
    assert res.returncode != 0 and "no label" in res.stderr
    # An index where the label already means something else is not overwritten.
    index = tmp_path / "fla_npu-0.1.0-variants.json"
    other = expected_variant_json("910b")
    other["variants"]["910b"]["ascend"]["npu_type"] = ["a2"]
    index.write_text(json.dumps(other))
    res = run_build_wheel("--make-variant", variant_build["a2"], "--out", tmp_path, check=False)
    assert res.returncode != 0 and "variant label 910b already stands for" in res.stderr
    assert json.loads(index.read_text()) == other
    res = run_build_wheel("--help")
    assert "--variant" in res.stdout and "--make-variant" in res.stdout
