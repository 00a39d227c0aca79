"""Where every token of a (possibly variable-length) batch sits in the chunk grid.

The chunked reference works on tensors laid out as ``[NC, H, BT, D]``: ``NC`` chunks of ``BT``
rows, heads before rows so that the intra-chunk matrices are batched matmuls. Dense input
``[B, T, ...]`` has ``NC = B * ceil(T / BT)``; varlen input (``B == 1`` with ``cu_seqlens``) has one
run of chunks per sequence, in sequence order (the order of FLA's ``prepare_chunk_indices``). The
last chunk of a sequence is padded with zero rows, which leave the state unchanged (zero key, zero
gate) and are dropped when results go back to the token layout.

The inter-chunk recurrence is the only sequential part: step ``s`` advances every sequence that
has an ``s``-th chunk at once (:meth:`take`/:meth:`put` for chunk tensors, :meth:`take_seq`/
:meth:`put_seq` for per-sequence states). Dense batches use strided views; varlen batches gather.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch


def chunk_list(cu_seqlens_cpu: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """FLA's ``chunk_indices`` for ``cu_seqlens``: ``[NC, 2]`` int32 rows (sequence, chunk of the
    sequence), in sequence order; zero-length sequences have no row."""
    cu = cu_seqlens_cpu.to(torch.int64)
    counts = (cu[1:] - cu[:-1] + chunk_size - 1) // chunk_size
    seq = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    first = torch.cumsum(counts, 0) - counts
    within = torch.arange(seq.numel()) - first[seq]
    return torch.stack([seq, within], 1).to(torch.int32).contiguous()


@dataclass(frozen=True)
class ChunkPlan:
    B: int
    T: int
    BT: int
    num_seqs: int
    num_chunks: int               # on_device: an upper bound (the chunks past the last one are empty)
    slot_token: torch.Tensor      # [NC * BT] token index of each chunk row; B*T marks a padding row
    token_slot: torch.Tensor      # [B * T] chunk row of each token
    steps: tuple                  # varlen: ((chunk ids, seq ids), ...) per chunk position; dense, on_device: ()
    chunk_counts: tuple | None    # chunks of each sequence; on_device: None (not read on the host)
    dense: bool                   # B sequences of T tokens: chunk n * NT + s is step s of sequence n
    cu_seqlens_cpu: torch.Tensor | None
    offsets: torch.Tensor         # [N + 1] int32 on the device: sequence n's chunks are [offsets[n], offsets[n + 1])
    chunk_list: torch.Tensor | None = None   # varlen: [NC, 2] int32 (sequence, chunk of it), the gate kernel's rows
    cu_seqlens: torch.Tensor | None = None   # varlen: [N + 1] int32 on the device, as the tables read it
    on_device: bool = False       # varlen tables built on the device from cu_seqlens (nothing read on the host)

    @staticmethod
    def build(B: int, T: int, chunk_size: int, cu_seqlens: torch.Tensor | None, device) -> "ChunkPlan":
        """The plan from the host: ``cu_seqlens`` is a validated CPU copy (or ``None``: dense)."""
        BT = chunk_size
        if cu_seqlens is None:
            NT = -(-T // BT)
            offsets = (torch.arange(B + 1, dtype=torch.int32) * NT).to(device)
            return ChunkPlan(B, T, BT, B, B * NT, None, None, (), (NT,) * B, True, None, offsets)
        cu = [int(x) for x in cu_seqlens.tolist()]
        starts, lengths = cu[:-1], [e - s for s, e in zip(cu[:-1], cu[1:])]
        counts = [-(-length // BT) for length in lengths]
        total = B * T

        slot_token, seq_of_chunk, pos_of_chunk = [], [], []
        for n, (start, length, nt) in enumerate(zip(starts, lengths, counts)):
            for s in range(nt):
                first = start + s * BT
                rows = min(BT, length - s * BT)
                slot_token.extend(range(first, first + rows))
                slot_token.extend([total] * (BT - rows))
                seq_of_chunk.append(n)
                pos_of_chunk.append(s)
        slot = torch.tensor(slot_token, dtype=torch.long)
        token_slot = torch.empty(total, dtype=torch.long)
        valid = slot < total
        token_slot[slot[valid]] = torch.nonzero(valid).squeeze(1)

        seq_t = torch.tensor(seq_of_chunk, dtype=torch.long)
        pos_t = torch.tensor(pos_of_chunk, dtype=torch.long)
        steps = []
        for s in range(max(counts, default=0)):
            ids = torch.nonzero(pos_t == s).squeeze(1)
            steps.append((ids.to(device), seq_t[ids].to(device)))
        offsets = torch.tensor((0, *counts), dtype=torch.int64).cumsum(0).to(device=device, dtype=torch.int32)
        return ChunkPlan(B, T, BT, len(lengths), len(seq_of_chunk), slot.to(device), token_slot.to(device),
                         tuple(steps), tuple(counts), False, cu_seqlens, offsets, chunk_list(cu_seqlens, BT).to(device),
                         cu_seqlens.to(device=device, dtype=torch.int32))

    @staticmethod
    def build_on_device(T: int, chunk_size: int, cu_seqlens: torch.Tensor) -> "ChunkPlan":
        """The varlen plan (``B == 1``) built where ``cu_seqlens`` is, with no host read of it: the
        chunk count is bounded from the shapes alone, ``NC = min(T, (T + N (BT - 1)) // BT)`` (every
        sequence wastes less than one chunk), and the chunks past the sequences' own are empty chunks
        appended to the last sequence: zero rows, which leave its state as it is and are dropped on
        the way back to the token layout. Offsets out of order or range are not reported (that
        would read them): they are clamped into ``[0, T]``, made non-decreasing, first 0, last T."""
        BT, N, total = chunk_size, cu_seqlens.numel() - 1, T
        device = cu_seqlens.device
        cu = cu_seqlens.to(torch.int64).clamp(0, T)
        cu = torch.cat([cu.new_zeros(1), cu[1:-1], cu.new_full((1,), T)]).cummax(0).values
        counts = (cu[1:] - cu[:-1] + BT - 1) // BT
        offsets = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
        NC = 0 if T == 0 else min(T, (T + N * (BT - 1)) // BT)
        offsets[-1] = NC                              # the empty chunks belong to the last sequence
        chunk = torch.arange(NC, device=device)
        seq = torch.searchsorted(offsets[1:], chunk, right=True).clamp_(max=N - 1)
        within = chunk - offsets[seq]
        start = cu[seq] + within * BT
        rows = (cu[seq + 1] - start).clamp(0, BT)
        r = torch.arange(BT, device=device)
        slot = torch.where(r < rows[:, None], start[:, None] + r, total).reshape(-1)
        token = torch.arange(total, device=device)
        seq_t = torch.searchsorted(cu[1:], token, right=True).clamp_(max=N - 1)
        pos = token - cu[seq_t]
        token_slot = ((offsets[seq_t] + pos // BT) * BT + pos % BT).clamp_(0, max(NC * BT - 1, 0))
        return ChunkPlan(1, T, BT, N, NC, slot, token_slot, (), None, False, None, offsets.to(torch.int32),
                         torch.stack([seq, within], 1).to(torch.int32), cu.to(torch.int32), True)

    @staticmethod
    def of_call(B: int, T: int, chunk_size: int, cu_seqlens: torch.Tensor | None, cu_seqlens_cpu: torch.Tensor | None,
                device) -> "ChunkPlan":
        """The plan of an op call: from the host when the offsets are known there (``cu_seqlens_cpu``,
        or dense), else built on the device (:meth:`build_on_device`)."""
        if cu_seqlens is None or cu_seqlens_cpu is not None:
            return ChunkPlan.build(B, T, chunk_size, cu_seqlens_cpu, device)
        return ChunkPlan.build_on_device(T, chunk_size, cu_seqlens)

    @cached_property
    def host_plan(self) -> "ChunkPlan":
        """The plan with exact chunk counts and the reference's steps: itself, or for a plan built on
        the device the same chunks without the empty ones past them (reads ``cu_seqlens``: one
        device-to-host copy). Its chunks are the first ``num_chunks`` of this plan's."""
        if not self.on_device:
            return self
        cpu = self.cu_seqlens.cpu()
        return ChunkPlan.build(self.B, self.T, self.BT, cpu, self.slot_token.device)

    @property
    def num_steps(self) -> int:
        return max(self.chunk_counts, default=0)

    def take(self, xc: torch.Tensor, s: int) -> torch.Tensor:
        """The chunks at position ``s`` of every sequence that has one."""
        if self.dense:
            return xc.view(self.B, -1, *xc.shape[1:])[:, s]
        return xc.index_select(0, self.steps[s][0])

    def put(self, xc: torch.Tensor, s: int, value: torch.Tensor) -> None:
        if self.dense:
            xc.view(self.B, -1, *xc.shape[1:])[:, s] = value
        else:
            xc.index_copy_(0, self.steps[s][0], value)

    def take_seq(self, S: torch.Tensor, s: int) -> torch.Tensor:
        """The per-sequence rows of ``S`` that take part in step ``s``."""
        return S if self.dense else S.index_select(0, self.steps[s][1])

    def put_seq(self, S: torch.Tensor, s: int, value: torch.Tensor) -> torch.Tensor:
        if self.dense:
            return value
        return S.index_copy_(0, self.steps[s][1], value)

    def to_chunks(self, x: torch.Tensor, token_major: bool = False) -> torch.Tensor:
        """``[B, T, H, *D]`` -> ``[NC, H, BT, *D]``, padding rows zero. ``token_major``: ``[NC, BT, H,
        *D]`` (row r of chunk c, head h), which for B sequences of whole chunks is ``x`` itself (a view)."""
        if self.dense:
            NT = self.num_chunks // max(self.B, 1)
            pad = NT * self.BT - self.T
            if pad:
                x = torch.cat([x, x.new_zeros(self.B, pad, *x.shape[2:])], 1)
            xc = x.reshape(self.B * NT, self.BT, *x.shape[2:])
        else:
            flat = x.reshape(self.B * self.T, *x.shape[2:])
            flat = torch.cat([flat, flat.new_zeros(1, *flat.shape[1:])])
            xc = flat.index_select(0, self.slot_token).view(self.num_chunks, self.BT, *x.shape[2:])
        return xc if token_major else xc.transpose(1, 2).contiguous()

    def from_chunks(self, xc: torch.Tensor) -> torch.Tensor:
        """``[NC, H, BT, *D]`` -> ``[B, T, H, *D]`` (padding rows dropped)."""
        if self.dense:
            rows = xc.transpose(1, 2).reshape(self.B, -1, xc.shape[1], *xc.shape[3:])
            return rows[:, :self.T].contiguous()
        rows = xc.transpose(1, 2).reshape(self.num_chunks * self.BT, xc.shape[1], *xc.shape[3:])
        return rows.index_select(0, self.token_slot).view(self.B, self.T, *rows.shape[1:])

    def fill_padding(self, xc: torch.Tensor, token_major: bool = False) -> torch.Tensor:
        """Give every padding row of ``xc`` ``[NC, H, BT, *D]`` (``token_major``: ``[NC, BT, H, *D]``) the
        value of its chunk's last token row (what a cumulative quantity such as the gate cumsum holds
        there). Dense: in place, on the last chunk of each sequence only (nothing when T is a multiple
        of BT)."""
        rows = 1 if token_major else 2   # the dimension of a chunk's rows
        if self.dense:
            tail = self.T - (self.num_chunks // max(self.B, 1) - 1) * self.BT   # rows of a sequence's last chunk
            if self.num_chunks and tail < self.BT:
                last = xc.view(self.B, -1, *xc.shape[1:])[:, -1]                # [B, H, BT, *D] / [B, BT, H, *D]
                last.narrow(rows, tail, self.BT - tail).copy_(last.narrow(rows, tail - 1, 1))
            return xc
        row = torch.arange(self.BT, device=xc.device)
        valid = (self.slot_token < self.B * self.T).view(self.num_chunks, self.BT)
        last = (valid.sum(1) - 1).clamp_(min=0)  # an empty chunk (on_device plans) takes row 0
        src = torch.minimum(row[None, :], last[:, None])                      # [NC, BT]
        shape = [self.num_chunks, 1, 1] + [1] * (xc.dim() - 3)
        shape[rows] = self.BT
        return xc.gather(rows, src.view(shape).expand_as(xc))

    def chunk_lengths(self) -> torch.Tensor:
        """The valid rows of each chunk, ``[NC]`` int32 on the plan's device (no host read: what the
        intra-chunk kernel with the gate in its launch takes as ``chunk_len``)."""
        if self.dense:  # from the shapes: one copy to the device, no computation there
            NT = self.num_chunks // max(self.B, 1)
            per_seq = [self.BT] * (NT - 1) + [self.T - (NT - 1) * self.BT] if NT else []
            return torch.tensor(per_seq * self.B, dtype=torch.int32, device=self.offsets.device)
        return (self.slot_token < self.B * self.T).view(self.num_chunks, self.BT).sum(1, dtype=torch.int32)

    def chunk_grid(self, xc: torch.Tensor) -> torch.Tensor:
        """Per-chunk tensor ``[NC, ...]`` -> FLA's ``[B, NT, ...]`` (varlen: ``[1, NC, ...]``; a plan built
        on the device drops its empty chunks, which needs the exact count: :attr:`host_plan`)."""
        if self.on_device:
            exact = self.host_plan
            return exact.chunk_grid(xc[:exact.num_chunks])
        if len(set(self.chunk_counts)) <= 1 and self.num_seqs == self.B:
            return xc.view(self.B, -1, *xc.shape[1:])
        return xc.unsqueeze(0)
