#!/usr/bin/env python3
"""FLA's own KDA and GDN tests through fla_npu, on the CPU (conformance runner; not part of CI).

    python ci/fla_conformance.py --fla PATH [--venv DIR] [--json OUT.json] [-k EXPR]
                                 [--timeout SECONDS] [--reuse-venv] [-- extra pytest args]

PATH is a checkout of https://github.com/fla-org/flash-linear-attention (FLA's tests are not in its
PyPI packages, and CI cannot download them: CI runs our own tests in tests/adapter instead). The
runner

1. creates a scratch virtual environment (default: ``<PATH>/../fla-conformance-venv``). PyTorch is
   not downloaded: the site-packages of the interpreter running this script are appended to the
   venv's path (a ``.pth`` file), so that interpreter must have torch, triton, pytest, einops and
   FLA's dependencies (e.g. the project venv); ``--install-torch`` installs torch==2.13.0 instead;
2. installs into it, without dependencies, that FLA checkout (so FLA's code and tests match),
   fla-npu (this repository) and fla-npu-adapter (./adapter), plus pytest-timeout;
3. runs ``tests/ops/test_kda.py`` and ``tests/ops/test_gdn.py`` of the checkout (and its
   ``tests/context_parallel/test_cp_kda.py`` / ``test_cp_gdn.py`` when present) with
   ``FLA_ASCENDC=1`` (``FLA_CI_ENV``, ``FLA_DISABLE_BACKEND_DISPATCH`` and ``TRITON_INTERPRET`` removed)
   through ``ci/fla_conformance_plugin.py`` (``-p``), which redirects FLA's device to the CPU,
   makes the conftest's device synchronisation the CPU's, and records per test which calls the
   adapter routed to fla_npu and the verifier's reason for each rejected call. FLA's assertions,
   tolerances, shapes, skips and NaN poisoning are untouched. One process (no xdist), a time budget
   per test (``--timeout``, pytest-timeout);
4. classifies every collected case, prints a table (counts per test function and totals) and
   writes a JSON summary with the FLA commit.

Classes:
  routed+passed     at least one call served by fla_npu and the test passed
  routed+failed     at least one call served by fla_npu and the test failed (not a Triton launch)
  not routed        the test ran without fla_npu serving a call: the adapter's verifier rejected
                    (reason recorded), or no dispatched function fla_npu implements was called
                    (e.g. pure-PyTorch tests, or errors FLA raises before dispatch)
  not applicable    needs what a CPU does not have: the test launches a Triton kernel that fla_npu
                    does not serve (no Triton driver on the CPU; the FLA function is recorded)
  skipped by FLA    FLA's own skip condition (GPU/NPU-only features such as FlashKDA, FlashQLA,
                    vLLM decode, the Triton-Ascend routing test; FLA's GDN HV != H skip off NPU)
  timeout           exceeded --timeout
  out of memory     an allocation failed under --memory-limit-gb (where: fla_npu or FLA's reference)
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_FILES = ("tests/ops/test_kda.py", "tests/ops/test_gdn.py")
# FLA's context-parallel tests, run when the checkout has them. At bc3b101d every case spawns NCCL
# ranks on `cuda:{rank}` and skips below 2/4/8 GPUs, so on the CPU all are "skipped by FLA"; the
# same scenarios run on gloo in tests/ops/test_context_parallel.py.
CP_TEST_FILES = ("tests/context_parallel/test_cp_kda.py", "tests/context_parallel/test_cp_gdn.py")
FALLBACK_TRITON = "3.8.0"
# distributions of the current interpreter not exposed to the scratch venv
EXCLUDED = re.compile(r"^(fla|fla_core|flash_linear_attention|fla_npu|fla_npu_adapter|fla_npu_adapter_autoload)"
                      r"([-.].*)?$", re.IGNORECASE)
CLASSES = ("routed+passed", "routed+failed", "not routed", "not applicable", "skipped by FLA", "timeout",
           "out of memory")


def run(cmd, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(list(map(str, cmd)), check=True, **kw)


def git(fla: Path, *args) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(fla), *args], check=True, capture_output=True,
                              text=True).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def make_venv(venv: Path, fla: Path, install_torch: bool, reuse: bool, triton: str | None) -> Path:
    python = venv / "bin" / "python"
    if reuse and python.exists():
        return python
    if venv.exists():
        shutil.rmtree(venv)
    run([sys.executable, "-m", "venv", venv])
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    if install_torch:
        run([python, "-m", "pip", "install", "-q", "torch==2.13.0", "triton", "pytest", "einops",
             "transformers", "setuptools", "wheel"])
    else:
        # The current interpreter's packages (torch, triton, pytest, FLA's dependencies) after the
        # venv's own, through a folder of links that leaves out any FLA, fla-npu and adapter there:
        # FLA's `fla` package extends its __path__ (pkgutil.extend_path), so another FLA anywhere
        # on sys.path would mix its modules into the checkout's.
        linked = venv / "parent-site-packages"
        linked.mkdir()
        for parent in sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}):
            for entry in sorted(Path(parent).iterdir()):
                if EXCLUDED.match(entry.name) or entry.suffix == ".pth" or (linked / entry.name).exists():
                    continue
                (linked / entry.name).symlink_to(entry)
        (site / "zz_fla_conformance_parent.pth").write_text(f"{linked}\n")
    pip = [python, "-m", "pip", "install", "-q", "--no-deps"]
    run(pip + [fla])          # FLA's code from the same checkout as its tests
    run(pip + [REPO])                                  # fla-npu (this repository's work tree)
    (venv / "fla_npu_source.json").write_text(json.dumps({
        "commit": git(REPO, "rev-parse", "HEAD"),
        "modified": (git(REPO, "status", "--porcelain", "--untracked-files=no") or "").splitlines()}))
    run(pip + [REPO / "adapter"])
    run([python, "-m", "pip", "install", "-q", "pytest-timeout"])
    if triton:
        run([python, "-m", "pip", "install", "-q", "--no-deps", f"triton=={triton}"])
    else:
        probe = subprocess.run([python, "-c", "import fla.ops.kda, fla.ops.gated_delta_rule"],
                               capture_output=True, text=True, cwd="/")
        if probe.returncode != 0:
            # e.g. Triton 3.9 rejects autotune keys that are not kernel arguments, which older
            # FLA commits have (fla/ops/cp/chunk_delta_h.py key 'BT'): the newest Triton without it
            print(f"FLA does not import with this Triton ({probe.stderr.strip().splitlines()[-1]}); "
                  f"installing triton=={FALLBACK_TRITON} into the scratch venv", flush=True)
            run([python, "-m", "pip", "install", "-q", "--no-deps", f"triton=={FALLBACK_TRITON}"])
    return python


def classify(rec: dict) -> tuple[str, str]:
    """(class, reason) of one test record written by the plugin."""
    routed = sum(rec["calls"].values())
    rejections = rec["rejections"]
    outcome = rec["outcome"]
    if outcome == "skipped":
        return "skipped by FLA", str(rec.get("skip_reason"))
    if outcome == "failed" and rec.get("timeout"):
        return "timeout", f"routed {routed} call(s)" if routed else "no call routed yet"
    exception = rec.get("exception") or ""
    if outcome == "failed" and ("can't allocate memory" in exception or "MemoryError" in exception):
        where = re.findall(r"^(\S+\.py):(\d+): \w+", rec.get("longrepr") or "", re.MULTILINE)
        where = f"{where[-1][0].rsplit('site-packages/', 1)[-1]}:{where[-1][1]}" if where else "?"
        return "out of memory", (f"allocation failed in {where} under --memory-limit-gb "
                                 f"({'after ' + str(routed) + ' routed call(s)' if routed else 'before any routed call'})")
    if outcome == "failed" and rec.get("triton_launch"):
        extra = f"; {routed} call(s) routed to fla_npu before" if routed else ""
        rej = f"; verifier rejected: {'; '.join(rejections)}" if rejections else ""
        if rejections and not routed:
            return "not routed", f"{'; '.join(rejections)} -> FLA's Triton path: {rec['triton_launch']}"
        return "not applicable", f"Triton kernel not served by fla_npu: {rec['triton_launch']}{extra}{rej}"
    if routed:
        if outcome == "passed":
            return "routed+passed", ", ".join(f"{k} x{n}" for k, n in sorted(rec["calls"].items()))
        return "routed+failed", exception or (rec.get("longrepr") or "")[-300:]
    if rejections:
        return "not routed", "; ".join(rejections) + f" (test {outcome})"
    return "not routed", f"no call to a function fla_npu serves (test {outcome})"


def summarize(records: dict, setup: dict, fla: Path, args, elapsed: float, source: dict | None) -> dict:
    cases = []
    for nodeid in setup.get("collected", []):
        rec = records.get(nodeid) or {"calls": {}, "rejections": {}, "outcome": None}
        cls, reason = classify(rec) if rec.get("outcome") else ("not applicable", "did not run")
        cases.append({"nodeid": nodeid, "class": cls, "reason": reason, "outcome": rec.get("outcome"),
                      "routed_calls": rec.get("calls", {}), "rejections": rec.get("rejections", {}),
                      "impl_errors": rec.get("impl_errors", []), "duration_s": round(rec.get("duration", 0.0), 2),
                      "exception": rec.get("exception")})
    per_function = collections.OrderedDict()
    for case in cases:
        path, _, name = case["nodeid"].partition("::")
        func = f"{Path(path).name}::{name.split('[')[0]}"
        per_function.setdefault(func, collections.Counter())[case["class"]] += 1
    totals = collections.Counter(c["class"] for c in cases)
    return {
        "fla": {"path": str(fla), "commit": git(fla, "rev-parse", "HEAD"),
                "describe": git(fla, "describe", "--tags", "--always"),
                "dirty": bool(git(fla, "status", "--porcelain", "--untracked-files=no")),
                "version": setup.get("fla_version"), "imported_from": setup.get("fla_file")},
        "versions": setup.get("versions"),
        "fla_npu_installed_from": source,
        "adapter": {"registered": setup.get("registered"), "status": setup.get("adapter_status"),
                    "imported_by_torch_autoload": setup.get("adapter_imported_by_torch_autoload")},
        "env": setup.get("env"), "timeout_s": args.timeout, "k": args.k,
        "memory_limit_gb": args.memory_limit_gb,
        "elapsed_s": round(elapsed, 1) if elapsed is not None else None,
        "collected": len(cases), "totals": {c: totals.get(c, 0) for c in CLASSES},
        "per_function": {f: {c: n.get(c, 0) for c in CLASSES} for f, n in per_function.items()},
        "cases": cases,
    }


def print_table(summary: dict) -> None:
    short = ("pass", "FAIL", "not-rt", "n/a", "skip", "t/o", "oom")
    width = max([len(f) for f in summary["per_function"]] + [10])
    print(f"\nFLA {summary['fla']['commit']} ({summary['fla']['describe']}), version {summary['fla']['version']}")
    print(f"{'test function':<{width}} " + " ".join(f"{s:>6}" for s in short) + "  total")
    for func, counts in summary["per_function"].items():
        print(f"{func:<{width}} " + " ".join(f"{counts[c]:>6}" for c in CLASSES) + f"  {sum(counts.values()):>5}")
    t = summary["totals"]
    print(f"{'TOTAL':<{width}} " + " ".join(f"{t[c]:>6}" for c in CLASSES) + f"  {summary['collected']:>5}")
    print("columns: routed+passed, routed+failed, not routed, not applicable on CPU, skipped by FLA, timeout, "
          "out of memory")
    reasons = collections.Counter((c["class"], c["reason"]) for c in summary["cases"]
                                  if c["class"] not in ("routed+passed",))
    if reasons:
        print("\nreasons (class: count x reason):")
        for (cls, reason), n in sorted(reasons.items()):
            print(f"  {cls}: {n} x {reason[:400]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fla", required=True, type=Path, help="checkout of FLA's repository")
    ap.add_argument("--venv", type=Path, help="scratch venv (default: <fla>/../fla-conformance-venv)")
    ap.add_argument("--json", type=Path, help="write the JSON summary here")
    ap.add_argument("-k", help="pytest -k expression")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per test (pytest-timeout)")
    ap.add_argument("--reuse-venv", action="store_true", help="reuse an existing scratch venv as is")
    ap.add_argument("--install-torch", action="store_true", help="install torch==2.13.0 instead of reusing this interpreter's")
    ap.add_argument("--triton", help="install this Triton version into the scratch venv (default: the "
                    f"interpreter's, or {FALLBACK_TRITON} if FLA does not import with it)")
    ap.add_argument("--memory-limit-gb", type=float, default=16,
                    help="address-space limit of the pytest process (0: none); past it a test fails "
                         "with an allocation error instead of the kernel's OOM killer ending the run")
    ap.add_argument("--summarize-only", action="store_true",
                    help="no run: classify the records of the last run in the scratch venv again")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args()

    fla = args.fla.resolve()
    for test in TEST_FILES:
        if not (fla / test).is_file():
            ap.error(f"{fla} is not a checkout of FLA's repository ({test} missing)")
    venv = (args.venv or fla.parent / "fla-conformance-venv").resolve()
    if REPO in venv.parents or venv == REPO:
        ap.error("the scratch venv must be outside this repository")
    records_path = venv / "fla_conformance_records.jsonl"
    if args.summarize_only:
        return report(args, fla, venv, records_path, rc=None, elapsed=None)
    python = make_venv(venv, fla, args.install_torch, args.reuse_venv, args.triton)
    for p in (records_path, Path(str(records_path) + ".setup.json")):
        p.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("FLA_CI_ENV", "FLA_DISABLE_BACKEND_DISPATCH", "TRITON_INTERPRET", "FLA_NPU_AUTOLOAD",
                        "PYTHONPATH")}
    env.update(FLA_ASCENDC="1", FLA_CONFORMANCE_RECORDS=str(records_path), PYTHONPATH=str(REPO / "ci"))
    cmd = [python, "-m", "pytest", "-p", "fla_conformance_plugin", "-p", "no:cacheprovider",
           f"--timeout={args.timeout}", "-q", "-rN", "--no-header", *TEST_FILES,
           *(test for test in CP_TEST_FILES if (fla / test).is_file())]
    if args.k:
        cmd += ["-k", args.k]
    cmd += args.pytest_args
    started = time.time()
    print("+", " ".join(map(str, cmd)), flush=True)
    limit = int(args.memory_limit_gb * 2**30)

    def limit_memory():  # an allocation past the limit fails in the test instead of OOM-killing pytest
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    rc = subprocess.run(list(map(str, cmd)), cwd=fla, env=env,
                        preexec_fn=limit_memory if limit > 0 else None).returncode
    elapsed = time.time() - started
    return report(args, fla, venv, records_path, rc, elapsed)


def report(args, fla: Path, venv: Path, records_path: Path, rc: int | None, elapsed: float | None) -> int:
    setup_path = Path(str(records_path) + ".setup.json")
    if not setup_path.exists():
        print(f"pytest exited {rc} before collection finished", file=sys.stderr)
        return rc or 1
    setup = json.loads(setup_path.read_text())
    records = {}
    if records_path.exists():
        for line in records_path.read_text().splitlines():
            rec = json.loads(line)
            records[rec["nodeid"]] = rec
    source_path = venv / "fla_npu_source.json"
    source = json.loads(source_path.read_text()) if source_path.exists() else None
    summary = summarize(records, setup, fla, args, elapsed, source)
    if rc is not None:
        summary["pytest_exit_code"] = rc
    print_table(summary)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
        print(f"\nJSON summary: {args.json}")
    # A case fla_npu served and FLA's test failed is a conformance failure; the other classes are reported.
    return 1 if summary["totals"]["routed+failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
