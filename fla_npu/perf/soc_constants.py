"""Every per-SoC constant of the timing model, in one table, each with its source.

Figures marked ``assumption`` are not published by Huawei in a form we could cite; they are our
estimates, to be replaced by the calibration against the hardware job (``fla-npu bench`` on an NPU,
then :mod:`fla_npu.perf.calibrate`). Every time the model outputs is labelled ``model``.

Sources (public):
  [HC19]   Huawei, "DaVinci: A Scalable Architecture for Neural Network Computing", Hot Chips 31
           (2019): the Cube does a 16 x 16 x 16 fp16 matrix product (4096 multiply-adds) per cycle;
           the vector unit works on 2048-bit (256-byte) operands.
  [ASC]    asc-devkit documentation, NPU架构版本2201.md (local notes: shared/reference/ascendc.md §1.8):
           L1 -> L0A 256 B/cycle, L1 -> L0B 128 B/cycle on 2201; one vector repeat is 256 bytes.
  [910B]   Huawei Atlas 800T A2 / Ascend 910B product figures as widely reported: 910B3 with 20 AI
           cores (20 AIC + 40 AIV, as listed by the independent kda-ascendc benchmark on a 910B3),
           about 313 TFLOPS fp16 dense, 64 GB HBM2e at about 1.6 TB/s.
  [CM384]  Huawei, "Serving Large Language Models on Huawei CloudMatrix384" (arXiv 2506.12708, 2025):
           the Ascend 910C (a3) is two dies; per die 24 AIC + 48 AIV, about 376 TFLOPS dense
           fp16/bf16 and 64 GB HBM at 1.6 TB/s (752 TFLOPS and 3.2 TB/s per package). One torch
           device is one die, so one launch runs on one die.
  [L2]     asc-devkit documentation, guide/算子实践参考/SIMD算子性能优化/内存访问/L2-Cache切分.md: "suppose
           the L2 Cache is 192 MB with a mixed read/write bandwidth of about 7 TB/s, GM about 1.6 TB/s"
           (an example of the guide, not a datasheet: used for the workspace, see the model).
  [HC25]   Huawei Connect 2025 roadmap: Ascend 950PR, 1 PFLOPS FP8 (2 PFLOPS FP4), 128 GB
           in-house HBM (HiBL 1.0) at 1.6 TB/s. No fp16 rate or core count published.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class SocPerf:
    """Timing constants of one SoC (times in seconds, rates per second unless named per cycle)."""
    name: str
    part: str                      # the part the figures describe
    ai_cores: int                  # AIC count (= AI cores); the AIVs are twice that
    clock_hz: float
    cube_macs_per_cycle: int       # fp16/bf16 multiply-adds per AIC per cycle (fp32: half, via C0 = 8)
    hbm_bytes_per_s: float         # peak GM (HBM) bandwidth of the device a launch runs on
    hbm_efficiency: float          # achieved fraction of the peak for streaming copies
    l2_bytes_per_s: float          # L2 read/write bandwidth: the launch's workspace (hand-offs) is served there
    gm_port_bytes_per_cycle: int   # most one core's MTE2/MTE3 can move per cycle (when few cores run)
    l0a_bytes_per_cycle: int       # MTE1: L1 -> L0A
    l0b_bytes_per_cycle: int       # MTE1: L1 -> L0B
    onchip_bytes_per_cycle: int    # Fixpipe L0C -> L1, L1 fills
    vector_passes_per_cycle: float  # 256-byte vector repeats per AIV per cycle
    latency_cycles: dict           # fixed cost of one instruction per pipe (issue + pipeline fill)
    gm_latency_cycles: int         # extra fixed cost of an MTE2/MTE3/Fixpipe access to GM
    barrier_drain_cycles: int      # PipeBarrier<one pipe>: the pipe drains before the next instruction
    flag_latency_cycles: int       # SetFlag -> WaitFlag on one core
    cross_core_latency_s: float    # CrossCoreSetFlag -> CrossCoreWaitFlag between cores
    sync_all_s: float              # SyncAll across cores
    launch_overhead_s: float       # one kernel launch (host + scheduler), added once per launch
    sources: dict                  # field -> source tag or "assumption: why"

    @property
    def aiv_cores(self) -> int:
        return 2 * self.ai_cores

    @property
    def cube_flops(self) -> float:
        """Peak dense fp16/bf16 FLOP/s of the device (2 per multiply-add)."""
        return 2.0 * self.ai_cores * self.cube_macs_per_cycle * self.clock_hz

    def cycles(self, n: float) -> float:
        return n / self.clock_hz


_LAT = {"S": 10, "V": 8, "M": 8, "MTE1": 20, "MTE2": 20, "MTE3": 20, "FIX": 20}
_COMMON_SOURCES = {
    "cube_macs_per_cycle": "[HC19] 16 x 16 x 16 fp16 per cycle",
    "hbm_efficiency": "assumption: 80 % of peak for long streaming copies (typical of HBM2e)",
    "l2_bytes_per_s": "[L2] about 7 TB/s read/write; assumption: a launch's workspace (a few MB, rewritten "
                      "and read back within a chunk) stays in the 192 MB L2, so its moves are charged there",
    "gm_port_bytes_per_cycle": "assumption: 128 B/cycle per core (only binds when few cores run)",
    "l0a_bytes_per_cycle": "[ASC] 256 B/cycle (2201)",
    "l0b_bytes_per_cycle": "[ASC] 128 B/cycle (2201)",
    "onchip_bytes_per_cycle": "assumption: 128 B/cycle for Fixpipe L0C -> L1 and L1 fills",
    "vector_passes_per_cycle": "[HC19]/[ASC] one 256-byte repeat per cycle; assumption: every vector "
                               "instruction at that rate (Exp, Div, reductions are slower on hardware)",
    "latency_cycles": "assumption: per-instruction issue + pipeline fill",
    "gm_latency_cycles": "assumption: 300 cycles of GM access latency per MTE2/MTE3/Fixpipe-to-GM instruction",
    "barrier_drain_cycles": "assumption: 16 cycles",
    "flag_latency_cycles": "assumption: 10 cycles",
    "cross_core_latency_s": "assumption: 0.5 us per cross-core flag hand-off",
    "sync_all_s": "assumption: 2 us",
    "launch_overhead_s": "assumption: 10 us per kernel launch",
}

# What every SoC shares (the a5 values are assumptions until published: see its sources).
_SHARED = dict(clock_hz=1.91e9, cube_macs_per_cycle=4096, hbm_bytes_per_s=1.6e12, hbm_efficiency=0.8, l2_bytes_per_s=7e12,
               gm_port_bytes_per_cycle=128, l0a_bytes_per_cycle=256, l0b_bytes_per_cycle=128,
               onchip_bytes_per_cycle=128, vector_passes_per_cycle=1.0, latency_cycles=_LAT, gm_latency_cycles=300,
               barrier_drain_cycles=16, flag_latency_cycles=10, cross_core_latency_s=0.5e-6, sync_all_s=2e-6,
               launch_overhead_s=10e-6)

SOCS: dict[str, SocPerf] = {
    "a2": SocPerf(
        name="a2", part="Ascend 910B3", ai_cores=20, **_SHARED,
        sources={**_COMMON_SOURCES, "ai_cores": "[910B] 20 AIC / 40 AIV (910B3)",
                 "clock_hz": "derived: [910B] 313 TFLOPS = 2 x 20 cores x 4096 MAC/cycle x f -> f = 1.91 GHz",
                 "hbm_bytes_per_s": "[910B] about 1.6 TB/s"}),
    "a3": SocPerf(
        name="a3", part="Ascend 910C, one die", ai_cores=24, **_SHARED,
        sources={**_COMMON_SOURCES, "ai_cores": "[CM384] 24 AIC / 48 AIV per die",
                 "clock_hz": "derived: [CM384] 376 TFLOPS per die = 2 x 24 x 4096 x f -> f = 1.91 GHz",
                 "hbm_bytes_per_s": "[CM384] 1.6 TB/s per die"}),
    "a5": SocPerf(
        name="a5", part="Ascend 950PR", ai_cores=32, **_SHARED,
        sources={**_COMMON_SOURCES,
                 "ai_cores": "assumption: 32 AIC / 64 AIV (not published)",
                 "clock_hz": "assumption: as 2201 (not published)",
                 "cube_macs_per_cycle": "assumption: 4096 fp16 MAC/cycle; [HC25] 1 PFLOPS FP8 suggests "
                                        "about 500 TFLOPS fp16 at 32 cores x 4096 x 1.91 GHz ~ 0.5 PFLOPS",
                 "hbm_bytes_per_s": "[HC25] 1.6 TB/s (950PR; the 950DT has 4 TB/s)",
                 "l2_bytes_per_s": "assumption: as [L2] (no 950 figure published)",
                 "l0a_bytes_per_cycle": "assumption: as 2201",
                 "l0b_bytes_per_cycle": "assumption: as 2201"}),
}


# __NPU_ARCH__ of each SoC (asc-devkit: a2 and a3 are 2201, a5 is 3510): a trace taken on one
# architecture's simulation carries that architecture's tiling and instruction choices.
ARCH = {"a2": 2201, "a3": 2201, "a5": 3510}


def soc(name: str) -> SocPerf:
    """The constants of SoC ``name`` (``a2``, ``a3``, ``a5``)."""
    try:
        return SOCS[name]
    except KeyError:
        raise ValueError(f"unknown SoC {name!r}; known: {', '.join(SOCS)}") from None


def assumptions(name: str) -> dict:
    """The constants of SoC ``name`` that are assumptions, with why."""
    return {k: v for k, v in soc(name).sources.items() if v.startswith("assumption")}


def describe(name: str) -> list[tuple[str, object, str]]:
    """``(field, value, source)`` rows of SoC ``name`` (for documentation and the bench header)."""
    s = soc(name)
    return [(f.name, getattr(s, f.name), s.sources.get(f.name, "")) for f in fields(s) if f.name not in ("sources",)]
