"""Decayed lower-triangular products inside one chunk, exact for any gate values.

Within a chunk the intra-chunk matrices are

    A[i, j] = sum_d x[i, d] * y[j, d] * 2 ** (G[i, d] - G[j, d])      (j < i, or j <= i)

with ``G`` the chunk-local cumulative log2 decay, non-increasing for decaying gates. Factoring the
exponent as ``2**G[i] * 2**-G[j]`` overflows as soon as a chunk decays by more than 2**127 (gates
near FLA's -1000 test mask do); evaluating every ``(i, j, d)`` triple exactly costs ``BT`` times the
memory. Instead the chunk is split recursively in halves: rows of the lower half ``I`` and columns
of the upper half ``J`` of a block meet through the first row ``r`` of ``I``,

    2 ** (G[i] - G[j]) = 2 ** (G[i] - G[r]) * 2 ** (G[r] - G[j]),   j < r <= i,

and both factors are at most 1 for decaying gates, so nothing overflows and an underflow only
happens where the exact product is itself below the smallest float. Every level is one batched
matmul; all levels together cost as much as one dense ``BT x BT`` product. The diagonal has no
decay. A scalar gate (``G`` of width 1, Gated DeltaNet) needs no such care: its ``BT x BT`` decay
matrix is formed directly.

Shapes: ``x, y`` ``[..., BT, K]``, ``G`` ``[..., BT, K]`` or ``[..., BT, 1]``, ``M``/``A`` ``[..., BT, BT]``;
``BT`` a power of two.
"""

from __future__ import annotations

import torch


def _scalar_decay(G: torch.Tensor, diagonal: bool) -> torch.Tensor:
    """``2 ** (G[i] - G[j])`` on the (strictly) lower triangle, zero above it."""
    g = G[..., 0]
    BT = g.shape[-1]
    mask = torch.ones(BT, BT, dtype=torch.bool, device=G.device).tril(0 if diagonal else -1)
    diff = (g[..., :, None] - g[..., None, :]).masked_fill(~mask, float("-inf"))
    return torch.exp2(diff)


def _levels(BT: int):
    b = BT // 2
    while b >= 1:
        yield BT // (2 * b), b
        b //= 2


def _halves(t: torch.Tensor, n: int, b: int):
    """Split the row axis (-2) into ``n`` blocks of two halves of ``b`` rows: (upper, lower)."""
    tv = t.reshape(*t.shape[:-2], n, 2, b, t.shape[-1])
    return tv[..., 0, :, :], tv[..., 1, :, :]


def _block_view(A: torch.Tensor, n: int, b: int) -> torch.Tensor:
    """View of the (lower half, upper half) blocks of ``A``: ``[..., n, b, b]`` (writable)."""
    Av = A.view(*A.shape[:-2], n, 2, b, n, 2, b)[..., :, 1, :, :, 0, :]
    return torch.diagonal(Av, dim1=-4, dim2=-2).movedim(-1, -3)


def decay_tril(x: torch.Tensor, y: torch.Tensor, G: torch.Tensor, diagonal: bool) -> torch.Tensor:
    """``A[i, j] = sum_d x[i,d] y[j,d] 2**(G[i,d]-G[j,d])`` for ``j < i`` (``j <= i`` if ``diagonal``)."""
    if G.shape[-1] == 1:
        return (x @ y.transpose(-1, -2)) * _scalar_decay(G, diagonal)
    BT = x.shape[-2]
    A = x.new_zeros(*x.shape[:-2], BT, BT)
    if diagonal:
        A.diagonal(dim1=-2, dim2=-1).copy_((x * y).sum(-1))
    for n, b in _levels(BT):
        (_, x_lo), (y_up, _), (G_up, G_lo) = _halves(x, n, b), _halves(y, n, b), _halves(G, n, b)
        G_ref = G_lo[..., :1, :]
        xi = x_lo * torch.exp2(G_lo - G_ref)
        yj = y_up * torch.exp2(G_ref - G_up)
        _block_view(A, n, b).copy_(xi @ yj.transpose(-1, -2))
    return A


def decay_tril_left(M: torch.Tensor, y: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``out[i, d] = sum_{j<=i} M[i,j] y[j,d] 2**(G[i,d]-G[j,d])`` (gradient of ``decay_tril`` for ``x``)."""
    if G.shape[-1] == 1:
        return (M * _scalar_decay(G, True)) @ y
    M = M.contiguous()
    out = (M.diagonal(dim1=-2, dim2=-1).unsqueeze(-1) * y).contiguous()
    BT = y.shape[-2]
    for n, b in _levels(BT):
        (y_up, _), (G_up, G_lo) = _halves(y, n, b), _halves(G, n, b)
        _, out_lo = _halves(out, n, b)
        G_ref = G_lo[..., :1, :]
        out_lo += torch.exp2(G_lo - G_ref) * (_block_view(M, n, b) @ (y_up * torch.exp2(G_ref - G_up)))
    return out


def decay_tril_right(M: torch.Tensor, x: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``out[j, d] = sum_{i>=j} M[i,j] x[i,d] 2**(G[i,d]-G[j,d])`` (gradient of ``decay_tril`` for ``y``)."""
    if G.shape[-1] == 1:
        return (M * _scalar_decay(G, True)).transpose(-1, -2) @ x
    M = M.contiguous()
    out = (M.diagonal(dim1=-2, dim2=-1).unsqueeze(-1) * x).contiguous()
    BT = x.shape[-2]
    for n, b in _levels(BT):
        (_, x_lo), (G_up, G_lo) = _halves(x, n, b), _halves(G, n, b)
        out_up, _ = _halves(out, n, b)
        G_ref = G_lo[..., :1, :]
        blk = _block_view(M, n, b).transpose(-1, -2)
        out_up += torch.exp2(G_ref - G_up) * (blk @ (x_lo * torch.exp2(G_lo - G_ref)))
    return out
