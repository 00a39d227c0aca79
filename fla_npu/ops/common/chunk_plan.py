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

import torch


@dataclass(frozen=True)
class ChunkPlan:
    B: int
    T: int
    BT: int
    num_seqs: int
    num_chunks: int
    slot_token: torch.Tensor      # [NC * BT] token index of each chunk row; B*T marks a padding row
    token_slot: torch.Tensor      # [B * T] chunk row of each token
    steps: tuple                  # varlen: ((chunk ids, seq ids), ...) per chunk position; dense: ()
    chunk_counts: tuple           # chunks of each sequence
    dense: bool                   # B sequences of T tokens: chunk n * NT + s is step s of sequence n
    cu_seqlens_cpu: torch.Tensor | None

    @staticmethod
    def build(B: int, T: int, chunk_size: int, cu_seqlens: torch.Tensor | None, device) -> "ChunkPlan":
        BT = chunk_size
        if cu_seqlens is None:
            NT = -(-T // BT)
            return ChunkPlan(B, T, BT, B, B * NT, None, None, (), (NT,) * B, True, None)
            starts, lengths = [n * T for n in range(B)], [T] * B
        else:
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
        return ChunkPlan(B, T, BT, len(lengths), len(seq_of_chunk), slot.to(device), token_slot.to(device),
                         tuple(steps), tuple(counts), False, cu_seqlens)

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

    def to_chunks(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, T, H, *D]`` -> ``[NC, H, BT, *D]``, padding rows zero."""
        if self.dense:
            NT = self.num_chunks // max(self.B, 1)
            pad = NT * self.BT - self.T
            if pad:
                x = torch.cat([x, x.new_zeros(self.B, pad, *x.shape[2:])], 1)
            xc = x.reshape(self.B * NT, self.BT, *x.shape[2:])
            return xc.transpose(1, 2).contiguous()
        flat = x.reshape(self.B * self.T, *x.shape[2:])
        flat = torch.cat([flat, flat.new_zeros(1, *flat.shape[1:])])
        xc = flat.index_select(0, self.slot_token).view(self.num_chunks, self.BT, *x.shape[2:])
        return xc.transpose(1, 2).contiguous()

    def from_chunks(self, xc: torch.Tensor) -> torch.Tensor:
        """``[NC, H, BT, *D]`` -> ``[B, T, H, *D]`` (padding rows dropped)."""
        if self.dense:
            rows = xc.transpose(1, 2).reshape(self.B, -1, xc.shape[1], *xc.shape[3:])
            return rows[:, :self.T].contiguous()
        rows = xc.transpose(1, 2).reshape(self.num_chunks * self.BT, xc.shape[1], *xc.shape[3:])
        return rows.index_select(0, self.token_slot).view(self.B, self.T, *rows.shape[1:])

    def fill_padding(self, xc: torch.Tensor) -> torch.Tensor:
        """Give every padding row of ``xc`` ``[NC, H, BT, *D]`` the value of its chunk's last token
        row (what a cumulative quantity such as the gate cumsum holds there)."""
        row = torch.arange(self.BT, device=xc.device)
        last = torch.full((self.num_chunks,), self.BT - 1, dtype=torch.long, device=xc.device)
        if self.dense:
            tail = self.T - (self.num_chunks // max(self.B, 1) - 1) * self.BT
            last.view(self.B, -1)[:, -1] = tail - 1
        else:
            valid = (self.slot_token < self.B * self.T).view(self.num_chunks, self.BT)
            last = valid.sum(1) - 1
        src = torch.minimum(row[None, :], last[:, None])                      # [NC, BT]
        src = src.view(self.num_chunks, 1, self.BT, *([1] * (xc.dim() - 3))).expand_as(xc)
        return xc.gather(2, src)

    def chunk_grid(self, xc: torch.Tensor) -> torch.Tensor:
        """Per-chunk tensor ``[NC, ...]`` -> FLA's ``[B, NT, ...]`` (varlen: ``[1, NC, ...]``)."""
        if len(set(self.chunk_counts)) <= 1 and self.num_seqs == self.B:
            return xc.view(self.B, -1, *xc.shape[1:])
        return xc.unsqueeze(0)
