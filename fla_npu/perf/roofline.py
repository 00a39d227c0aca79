"""Whole-op rooflines: the compulsory GM bytes (inputs read once, outputs written once) and the Cube
multiply-adds of the chunked algorithm, over the SoC's peak HBM bandwidth and peak Cube rate. The
floor is the larger of the two times; any implementation's time over it is its distance from the
hardware's limit."""

from __future__ import annotations

from dataclasses import dataclass

from .soc_constants import SocPerf

DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


@dataclass(frozen=True)
class Roofline:
    bytes: int          # compulsory GM traffic
    macs: int           # multiply-adds of the chunked algorithm (Cube work)
    memory_s: float     # bytes / peak HBM bandwidth
    compute_s: float    # 2 * macs / peak Cube FLOP/s
    label: str = "roofline"

    @property
    def floor_s(self) -> float:
        return max(self.memory_s, self.compute_s)

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s >= self.compute_s else "compute"


def _roof(nbytes: int, macs: int, soc: SocPerf) -> Roofline:
    return Roofline(int(nbytes), int(macs), nbytes / soc.hbm_bytes_per_s, 2.0 * macs / soc.cube_flops)


def delta_rule_macs_per_chunk(BT: int, K: int, V: int) -> int:
    """Multiply-adds of one (chunk, value head) of the chunked delta rule forward (KDA and GDN alike):
    Aqk = q k^T and Akk = k k^T (BT^2 K each), the triangular inverse (BT^3 / 3), w = A (k..) and
    u = A v (BT^2 K + BT^2 V), the state step v_new = u - w h and h += k^T v_new (2 BT K V), the
    output q h + Aqk v_new (BT K V + BT^2 V)."""
    return 2 * BT * BT * K + BT ** 3 // 3 + BT * BT * (K + V) + 3 * BT * K * V + BT * BT * V


def delta_rule_fwd(shape: dict, dtype: str, soc: SocPerf, per_key_gate: bool, BT: int = 64,
                   final_state: bool = False) -> Roofline:
    """KDA (``per_key_gate``: g is [B, T, HV, K]) or Gated DeltaNet (g is [B, T, HV]) forward on
    ``shape`` ``{B, T, H, HV, K, V}``: reads q, k [B, T, H, K], v [B, T, HV, V], g, beta [B, T, HV]
    in ``dtype``; writes o [B, T, HV, V] (and the fp32 final state [B, HV, K, V] if asked)."""
    B, T, H, HV, K, V = (shape[k] for k in ("B", "T", "H", "HV", "K", "V"))
    e = DTYPE_BYTES[dtype]
    g = B * T * HV * (K if per_key_gate else 1)
    nbytes = e * (2 * B * T * H * K + B * T * HV * V + g + B * T * HV + B * T * HV * V)
    if final_state:
        nbytes += 4 * B * HV * K * V
    chunks = B * -(-T // BT)
    return _roof(nbytes, chunks * HV * delta_rule_macs_per_chunk(BT, K, V), soc)


def prefix_shared_attention_fwd(shape: dict, dtype: str, soc: SocPerf) -> Roofline:
    """Prefix-shared attention on ``{bs, G, len_q, len_kv, D}``: reads q [bs, G, len_q, D] and the
    shared k, v [bs, len_kv, D] once, writes out like q; Q K^T and P V are ``bs G len_q len_kv D``
    multiply-adds each."""
    bs, G, lq, lkv, D = (shape[k] for k in ("bs", "G", "len_q", "len_kv", "D"))
    e = DTYPE_BYTES[dtype]
    nbytes = e * (2 * bs * G * lq * D + 2 * bs * lkv * D)
    return _roof(nbytes, 2 * bs * G * lq * lkv * D, soc)
