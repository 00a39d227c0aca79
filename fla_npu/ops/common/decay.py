"""Decayed lower-triangular products inside one chunk, exact for any gate values.

Within a chunk the intra-chunk matrices are

    A[i, j] = sum_d x[i, d] * y[j, d] * 2 ** (G[i, d] - G[j, d])      (j < i, or j <= i)

with ``G`` the chunk-local cumulative log2 decay. For a scalar gate (``G`` of width 1, Gated
DeltaNet) the ``BT x BT`` decay matrix is formed directly. For KDA's per-key gate the exponent is
factored through a reference row ``r``: ``2**(G[i]-G[r]) * 2**(G[r]-G[j])``, which turns ``A`` into
one matmul but overflows once a block decays by more than the float range (FLA's tests mask gates
to -1000). :class:`ChunkDecay` therefore picks, once per gate tensor, the largest block size ``s``
(``BT``, ``BT/2``, ...) over which ``G`` varies by at most :func:`safe_span` and:

- inside each ``s``-block factors through the block's middle row (factors within ``2**±safe_span``);
- between the two halves of every larger block (levels ``BT/2 .. s``) meets through the first row
  ``r`` of the lower half: for decaying gates both ``2**(G[i]-G[r])`` (``i >= r``) and
  ``2**(G[r]-G[j])`` (``j < r``) are at most 1, so nothing overflows and an underflow happens only
  where the exact product is itself below the smallest float.

With mild gates ``s == BT`` and a product costs one matmul plus two element-wise passes; each
halving adds one level, which costs about as much as the leaf product. The
factors are computed once and shared by every product of the forward and backward pass.

Shapes: ``x, y`` ``[..., BT, K]``, ``G`` ``[..., BT, K]`` or ``[..., BT, 1]``, ``M``/``A`` ``[..., BT, BT]``;
``BT`` a power of two.
"""

from __future__ import annotations

import math
from functools import cached_property

import torch

LN2 = math.log(2.0)
RCP_LN2 = 1.0 / LN2  # log2(e)


def safe_span(dtype: torch.dtype) -> float:
    """Largest exponent (log2) a factor may reach: well inside the dtype's range (fp32: 60)."""
    return float(int(math.log2(torch.finfo(dtype).max)) // 2 - 4)


def _blocks(t: torch.Tensor, n: int, s: int) -> torch.Tensor:
    return t.reshape(*t.shape[:-2], n, s, t.shape[-1])


def _block_diag_view(A: torch.Tensor, n: int, s: int) -> torch.Tensor:
    """Writable view of the ``n`` diagonal ``s x s`` blocks of ``A``: ``[..., n, s, s]``."""
    Av = A.view(*A.shape[:-2], n, s, n, s)
    return torch.diagonal(Av, dim1=-4, dim2=-2).movedim(-1, -3)


def _off_block_view(A: torch.Tensor, n: int, b: int) -> torch.Tensor:
    """Writable view of the (lower half, upper half) blocks of each ``2b`` block: ``[..., n, b, b]``."""
    Av = A.view(*A.shape[:-2], n, 2, b, n, 2, b)[..., :, 1, :, :, 0, :]
    return torch.diagonal(Av, dim1=-4, dim2=-2).movedim(-1, -3)


class ChunkDecay:
    """Decay factors of one gate tensor ``G`` ``[..., BT, Kg]`` (log2 units): the pairwise products
    :meth:`tril`, :meth:`left`, :meth:`right`, and the per-row factors every stage uses, each
    computed once: ``e_row = 2**G`` (from the chunk start), ``e_tail = 2**(G_last - G)`` (to the
    chunk end) and ``e_last = 2**G_last`` ``[..., Kg]``. With ``natural``, ``G`` is given in
    natural-log units (the stage-1 kernel's output on the kernel route, the units the chunk kernels
    read: :attr:`G_nat`); the log2 ``G`` is then formed only if a reference stage asks for it."""

    def __init__(self, G: torch.Tensor, dtype: torch.dtype, natural: bool = False):
        # Differences of G are formed from G as given (pass the cumsum in float64: with strongly
        # decaying gates |G| reaches 1e4, where float32 would lose the small differences that
        # matter); the differences, then the factors, are in the compute dtype ``dtype``. The pairwise
        # factors are formed on first use: the kernels need only the per-row factors, and choosing
        # the block size reads G's range on the host (a device synchronisation on an NPU).
        self._given, self._natural = G, natural
        self.dtype = dtype
        self.BT = G.shape[-2]
        self.scalar = G.shape[-1] == 1

    @cached_property
    def _G(self) -> torch.Tensor:
        """``G`` in log2 units, at the precision it was given in."""
        return self._given * RCP_LN2 if self._natural else self._given

    @cached_property
    def G(self) -> torch.Tensor:
        """``G`` in log2 units, in the compute dtype."""
        return self._G.to(self.dtype)

    @cached_property
    def G_nat(self) -> torch.Tensor:
        """``G`` in natural-log units, float32, as the chunk kernels read it (the given tensor itself
        when it came so: no copy)."""
        return self._given.float() if self._natural else (self._given * LN2).float()

    @cached_property
    def D(self) -> torch.Tensor:
        """Scalar gate: the decay matrix ``2**(G_i - G_j)`` (``j <= i``, 0 above) ``[..., BT, BT]``."""
        g = self._G[..., 0]
        mask = torch.ones(self.BT, self.BT, dtype=torch.bool, device=g.device).tril()
        return self._exp2((g[..., :, None] - g[..., None, :]).masked_fill(~mask, float("-inf")))

    @cached_property
    def _factors(self):
        """Per-key gate: ``(leaf, Ea, Eb, levels)`` of the block factorisation (module docstring)."""
        G, BT = self._G, self.BT
        s = BT
        while s > 1:  # the largest blocks whose range of G stays within the span (a cheap, safe bound)
            Gb = _blocks(self.G, BT // s, s)
            if float((Gb.amax(-2) - Gb.amin(-2)).amax()) <= safe_span(self.dtype):
                break
            s //= 2
        Gb = _blocks(G, BT // s, s)
        rel = (Gb - Gb[..., s // 2:s // 2 + 1, :]).to(self.dtype)
        Ea = torch.exp2(rel).reshape(G.shape)       # row factor   2**(G[i] - G[mid])
        Eb = torch.exp2(-rel).reshape(G.shape)      # column factor 2**(G[mid] - G[j])
        levels = []                                 # (n, b, row factor of lower half, column factor of upper half)
        b = BT // 2
        while b >= s:
            n = BT // (2 * b)
            Gv = G.reshape(*G.shape[:-2], n, 2, b, G.shape[-1])
            G_up, G_lo = Gv[..., 0, :, :], Gv[..., 1, :, :]
            G_ref = G_lo[..., :1, :]
            levels.append((n, b, self._exp2(G_lo - G_ref), self._exp2(G_ref - G_up)))
            b //= 2
        return s, Ea, Eb, levels

    @property
    def leaf(self) -> int:
        return self._factors[0]

    def _exp2(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp2(x.to(self.dtype))

    @cached_property
    def e_row(self) -> torch.Tensor:
        # 2**G loses relative accuracy only in proportion to |G|, i.e. where it is vanishingly small.
        return torch.exp2(self.G)

    @cached_property
    def e_tail(self) -> torch.Tensor:
        return self._exp2(self._G[..., -1:, :] - self._G)

    @cached_property
    def e_last(self) -> torch.Tensor:
        if self._natural:
            return torch.exp(self._given[..., -1, :].to(self.dtype))
        return torch.exp2(self.G[..., -1, :])

    def _leaf_mask(self, diagonal: bool) -> torch.Tensor:
        s = self.leaf
        return torch.ones(s, s, dtype=torch.bool, device=self.G.device).tril(0 if diagonal else -1)

    def tril(self, x: torch.Tensor, y: torch.Tensor, diagonal: bool) -> torch.Tensor:
        """``A[i, j] = sum_d x[i,d] y[j,d] 2**(G[i,d]-G[j,d])`` for ``j < i`` (``j <= i`` if ``diagonal``)."""
        if self.scalar:
            D = self.D if diagonal else self.D.tril(-1)
            return (x @ y.transpose(-1, -2)) * D
        BT, (s, Ea, Eb, levels) = self.BT, self._factors
        n = BT // s
        leaf = (_blocks(x * Ea, n, s) @ _blocks(y * Eb, n, s).transpose(-1, -2))
        leaf = leaf.masked_fill_(~self._leaf_mask(diagonal), 0)
        if s == BT:
            return leaf.reshape(*x.shape[:-2], BT, BT)
        A = x.new_zeros(*x.shape[:-2], BT, BT)
        _block_diag_view(A, n, s).copy_(leaf)
        for nl, b, E_lo, E_up in levels:
            x_lo = x.reshape(*x.shape[:-2], nl, 2, b, x.shape[-1])[..., 1, :, :]
            y_up = y.reshape(*y.shape[:-2], nl, 2, b, y.shape[-1])[..., 0, :, :]
            _off_block_view(A, nl, b).copy_((x_lo * E_lo) @ (y_up * E_up).transpose(-1, -2))
        return A

    def left(self, M: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """``out[i, d] = sum_{j<=i} M[i,j] y[j,d] 2**(G[i,d]-G[j,d])`` (``M`` lower triangular)."""
        if self.scalar:
            return (M * self.D) @ y
        BT, (s, Ea, Eb, levels) = self.BT, self._factors
        n = BT // s
        M = M.contiguous()
        if s == BT:
            return Ea * (M @ (y * Eb))
        out = Ea * (_block_diag_view(M, n, s) @ _blocks(y * Eb, n, s)).reshape(y.shape)
        for nl, b, E_lo, E_up in levels:
            y_up = y.reshape(*y.shape[:-2], nl, 2, b, y.shape[-1])[..., 0, :, :]
            out_lo = out.view(*out.shape[:-2], nl, 2, b, out.shape[-1])[..., 1, :, :]
            out_lo += E_lo * (_off_block_view(M, nl, b) @ (y_up * E_up))
        return out

    def right(self, M: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``out[j, d] = sum_{i>=j} M[i,j] x[i,d] 2**(G[i,d]-G[j,d])`` (``M`` lower triangular)."""
        if self.scalar:
            return (M * self.D).transpose(-1, -2) @ x
        BT, (s, Ea, Eb, levels) = self.BT, self._factors
        n = BT // s
        M = M.contiguous()
        if s == BT:
            return Eb * (M.transpose(-1, -2) @ (x * Ea))
        out = Eb * (_block_diag_view(M, n, s).transpose(-1, -2) @ _blocks(x * Ea, n, s)).reshape(x.shape)
        for nl, b, E_lo, E_up in levels:
            x_lo = x.reshape(*x.shape[:-2], nl, 2, b, x.shape[-1])[..., 1, :, :]
            out_up = out.view(*out.shape[:-2], nl, 2, b, out.shape[-1])[..., 0, :, :]
            out_up += E_up * (_off_block_view(M, nl, b).transpose(-1, -2) @ (x_lo * E_lo))
        return out
