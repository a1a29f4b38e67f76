"""Multi-process training through ``torchrun`` (or any launcher that sets ``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``): one process per GPU with NCCL, or CPU
processes with gloo.  A single process needs none of it."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from stam.errors import UsageError


@dataclass
class Context:
    rank: int
    world: int
    device: torch.device
    owns_group: bool  # True when :func:`setup` created the process group (and must destroy it)

    @property
    def main(self) -> bool:
        return self.rank == 0


def pick_device(requested: str, local_rank: int = 0) -> torch.device:
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda":
        if not torch.cuda.is_available():
            raise UsageError("--device cuda: no CUDA device is available here; use --device cpu or auto")
        return torch.device("cuda", local_rank)
    return torch.device(requested)


def setup(requested_device: str = "auto") -> Context:
    """Join the process group described by the environment (if ``WORLD_SIZE`` > 1)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")))
    device = pick_device(requested_device, local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if world <= 1:
        return Context(0, 1, device, False)
    owns = not dist.is_initialized()
    if owns:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Context(dist.get_rank(), dist.get_world_size(), device, owns)


def all_reduce_sum(t: torch.Tensor, ctx: Context) -> torch.Tensor:
    if ctx.world > 1:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def average_buffers(model: torch.nn.Module, ctx: Context) -> None:
    """Average the floating-point buffers (BatchNorm running statistics) over the processes, so
    every rank evaluates, and ends with, the same model (DDP syncs parameters, not these)."""
    if ctx.world == 1:
        return
    for b in model.buffers():
        if b.is_floating_point():
            dist.all_reduce(b, op=dist.ReduceOp.SUM)
            b.div_(ctx.world)


def barrier(ctx: Context) -> None:
    if ctx.world > 1:
        dist.barrier()


def teardown(ctx: Context) -> None:
    if ctx.owns_group and dist.is_initialized():
        dist.destroy_process_group()


__all__ = ["Context", "setup", "teardown", "all_reduce_sum", "average_buffers", "barrier", "pick_device"]
