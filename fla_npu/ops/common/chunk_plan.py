"""Where every token of a (possibly variable-length) batch sits in the chunk grid.

The chunked reference works on tensors laid out as ``[NC, H, BT, D]``: ``NC`` chunks of ``BT``
rows, heads before rows so that the intra-chunk matrices are batched matmuls. Dense input
``[B, T, ...]`` has ``NC = B * ceil(T / BT)``; varlen input (``B == 1`` with ``cu_seqlens``) has one
run of chunks per sequence, in sequence order (the order of FLA's ``prepare_chunk_indices``). The
last chunk of a sequence is padded with zero rows, which leave the state unchanged (zero key, zero
gate) and are dropped when results go back to the token layout.

The inter-chunk recurrence is the only sequential part: ``steps`` lists, for each chunk position
``s``, the chunks at that position and the sequences they belong to, so that one step advances all
sequences at once.
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
    steps: tuple                  # ((chunk ids, seq ids), ...) per chunk position
    chunk_counts: tuple           # chunks of each sequence

    @staticmethod
    def build(B: int, T: int, chunk_size: int, cu_seqlens: torch.Tensor | None, device) -> "ChunkPlan":
        BT = chunk_size
        if cu_seqlens is None:
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
                         tuple(steps), tuple(counts))

    def to_chunks(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, T, H, *D]`` -> ``[NC, H, BT, *D]``, padding rows zero."""
        flat = x.reshape(self.B * self.T, *x.shape[2:])
        flat = torch.cat([flat, flat.new_zeros(1, *flat.shape[1:])])
        xc = flat.index_select(0, self.slot_token).view(self.num_chunks, self.BT, *x.shape[2:])
        return xc.transpose(1, 2).contiguous()

    def from_chunks(self, xc: torch.Tensor) -> torch.Tensor:
        """``[NC, H, BT, *D]`` -> ``[B, T, H, *D]`` (padding rows dropped)."""
        rows = xc.transpose(1, 2).reshape(self.num_chunks * self.BT, xc.shape[1], *xc.shape[3:])
        return rows.index_select(0, self.token_slot).view(self.B, self.T, *rows.shape[1:])

    def chunk_grid(self, xc: torch.Tensor) -> torch.Tensor:
        """Per-chunk tensor ``[NC, ...]`` -> FLA's ``[B, NT, ...]`` (varlen: ``[1, NC, ...]``)."""
        if len(set(self.chunk_counts)) <= 1 and self.num_seqs == self.B:
            return xc.view(self.B, -1, *xc.shape[1:])
        return xc.unsqueeze(0)
