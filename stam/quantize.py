"""The quantised set Q of eq. (eq01) and the projection onto it, eq. (0411)-(0412).

Q is a product over blocks (layers): on block i every coordinate is ``s_i * (+-1)`` with one
scale ``s_i >= 0``.  The exact projection (eq. (0412), Rastegari et al.) is
``s_i = ||U_i||_1 / n_i`` and ``Z_ij = +1 if U_ij >= 0 else -1`` (so sign(0) = +1).

Blocks are given by a :class:`Blocks` (or, equivalently but rebuilt on every call, a
``LongTensor`` of block ids, one per coordinate, values 0..B-1), shared by all R runs; tensors
are ``(R, n)``.  :class:`Blocks` keeps what depends only on the partition (the block sizes, and
whether the blocks are contiguous runs of coordinates) so that a projection costs a few passes
over ``v`` and nothing else:

- contiguous blocks, at most ``SPLIT_MAX_BLOCKS`` of them (every problem of ``stam.synthetic``):
  block sums and ``copysign`` on views of one output buffer (no gather, no scatter, no other
  temporary: four passes over ``v`` in all);
- any other partition: one ``index_add_`` for the block sums and one ``index_select`` to expand
  the scales, vectorised over all blocks (no loop over blocks).

``block_ids=None`` means one block per run: the whole of ``v[r]`` (any shape ``(R, ...)``, any
strides, e.g. one channels-last layer weight).  This path is a plain reduction, so it stays
layout-preserving and ``torch.compile``-friendly (``stam.dnn`` projects one layer at a time).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from stam.compiling import is_compiling

#: the per-block loop of the contiguous path is used up to this many blocks (each block costs a
#: few tensor calls; beyond this the vectorised index path is cheaper)
SPLIT_MAX_BLOCKS = 64


def block_ids_from_sizes(sizes, device=None) -> Tensor:
    """Block ids ``[0]*sizes[0] + [1]*sizes[1] + ...`` as a LongTensor."""
    sizes_t = torch.as_tensor(list(sizes), dtype=torch.long, device=device)
    return torch.repeat_interleave(torch.arange(len(sizes_t), device=device), sizes_t)


@dataclass(frozen=True, eq=False)
class Blocks:
    """A partition of the ``n`` coordinates into ``num_blocks`` blocks (build with :meth:`of`).

    ``ids`` ``(n,)`` block of each coordinate; ``counts`` ``(B,)`` block sizes (a block may be empty
    only in the index path); ``sizes`` the block sizes as ints when block ``k`` is the k-th
    contiguous run of coordinates, else ``None``."""

    ids: Tensor
    num_blocks: int
    counts: Tensor
    sizes: tuple[int, ...] | None

    @classmethod
    def of(cls, block_ids: "Tensor | Blocks", num_blocks: int | None = None) -> "Blocks":
        """The :class:`Blocks` of a block-id tensor (returned unchanged if already one)."""
        if isinstance(block_ids, Blocks):
            return block_ids
        ids = block_ids.reshape(-1)
        if num_blocks is None:
            num_blocks = int(ids.max().item()) + 1 if ids.numel() else 1
        counts = torch.bincount(ids, minlength=num_blocks)
        contiguous = bool((counts > 0).all()) and bool((ids[1:] >= ids[:-1]).all()) if ids.numel() else False
        return cls(ids, num_blocks, counts, tuple(counts.tolist()) if contiguous else None)

    @property
    def split(self) -> bool:
        """Whether the per-block view path is used (contiguous, at most ``SPLIT_MAX_BLOCKS``)."""
        return self.sizes is not None and self.num_blocks <= SPLIT_MAX_BLOCKS

    def sums(self, w: Tensor) -> Tensor:
        """Per-block sums of ``w`` ``(R, n)``: shape ``(R, B)``."""
        if self.split:
            return torch.stack([c.sum(dim=1) for c in w.split(self.sizes, dim=1)], dim=1)
        # index_add_ along dim 0 of a (B, R) buffer (rows of w^T) is 2-3x faster than along dim 1
        # for batched runs (R > 1) and the same for R = 1
        return w.new_zeros(self.num_blocks, w.shape[0]).index_add_(0, self.ids, w.T.contiguous()).T

    def expand(self, s: Tensor) -> Tensor:
        """Per-block values ``s`` ``(R, B)`` spread over the coordinates: ``(R, n)``."""
        return s.index_select(1, self.ids)

    def to(self, device) -> "Blocks":
        return Blocks(self.ids.to(device), self.num_blocks, self.counts.to(device), self.sizes)


def block_scales(v: Tensor, block_ids: "Tensor | Blocks | None", num_blocks: int | None = None) -> Tensor:
    """Per-block optimal scales ``s = mean |v|`` over each block: shape ``(R, B)`` (``(R, 1)`` for
    ``block_ids=None``)."""
    if block_ids is None:
        return v.abs().mean(dim=tuple(range(1, v.dim()))).unsqueeze(1)
    blocks = Blocks.of(block_ids, num_blocks)
    flat = v.reshape(v.shape[0], -1)
    return blocks.sums(flat.abs()) / blocks.counts.to(flat.dtype)


def scaled_signs(v: Tensor, s: Tensor) -> Tensor:
    """``s sign(v)`` for one block per run (``block_ids=None``): :func:`project_Q` of ``v`` given its scales
    ``s = block_scales(v, None)`` (``(R, 1)``), sign(0) = +1 (``copysign(s, v + 0.0)``: adding +0.0 turns
    -0.0 into +0.0).  The projection's one elementwise pass once its one reduction is known (the
    ``torch.optim`` form takes the two in separate passes, :func:`stam.dnn.optim_common.staged_kernels`)."""
    return torch.copysign(s.view(-1, *([1] * (v.dim() - 1))).expand_as(v), v + 0.0)


def project_Q(v: Tensor, block_ids: "Tensor | Blocks | None", num_blocks: int | None = None) -> Tensor:
    """Euclidean projection of each run's ``v`` (shape ``(R, n)``) onto Q (eq. (0411)).

    The signs are ``copysign(s, v + 0.0)``: adding +0.0 turns -0.0 into +0.0, so sign(0) = +1
    exactly as ``v >= 0`` would give, at a fraction of the cost of ``torch.where`` on CPU."""
    if block_ids is None:
        return scaled_signs(v, block_scales(v, None))
    blocks = Blocks.of(block_ids, num_blocks)
    flat = v.reshape(v.shape[0], -1)
    if blocks.split and is_compiling():
        # under torch.compile: one reduction per block and one pass writing every block (inductor
        # fuses these; the in-place form below it turns into copies, twice as slow)
        parts = flat.split(blocks.sizes, dim=1)
        s = torch.stack([part.abs().sum(dim=1) for part in parts], dim=1) / blocks.counts.to(flat.dtype)
        return torch.cat([torch.copysign(s[:, k : k + 1].expand_as(part), part + 0.0) for k, part in enumerate(parts)],
                         dim=1).reshape(v.shape)
    if blocks.split:
        # one buffer, no other temporary: |v| -> block sums -> v + 0.0 -> copysign in place, block by block
        out = torch.abs(flat)
        parts = out.split(blocks.sizes, dim=1)
        scales = [part.sum(dim=1, keepdim=True) for part in parts]  # (R, 1) each
        torch._foreach_div_(scales, [float(n) for n in blocks.sizes])  # the means, bit for bit as ``mean``, in one call
        torch.add(flat, 0.0, out=out)
        for s, part in zip(scales, parts):
            torch.copysign(s, part, out=part)
        return out.reshape(v.shape)
    s = block_scales(flat, blocks)
    return torch.copysign(blocks.expand(s), flat + 0.0).reshape(v.shape)


def signs(w: Tensor) -> Tensor:
    """The signs of ``w`` as a boolean tensor (True = +1), with sign(0) = +1 as in
    :func:`project_Q`: what the sign-flip diagnostics compare."""
    return w.detach() >= 0


def sign_changes(a: Tensor, b: Tensor) -> Tensor:
    """Where two sign tensors of :func:`signs` differ (bool tensor)."""
    return a != b


__all__ = ["signs", "sign_changes", "SPLIT_MAX_BLOCKS", "Blocks", "block_ids_from_sizes", "block_scales", "scaled_signs", "project_Q"]
