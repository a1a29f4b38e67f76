"""The machine a result is made on, as every result file records it (:func:`stam.io.provenance`):
the processor's model and instruction set, and, where the process has imported torch, torch's CPU
capability, its oneDNN version, its thread count and the GPU.  Nothing here imports torch: a
theory command's result records the processor only."""

from __future__ import annotations

import functools
import os
import platform
import sys


@functools.lru_cache(maxsize=None)
def _cpuinfo() -> dict:
    """``model name`` and ``flags`` of the first processor in ``/proc/cpuinfo`` (Linux), else {}."""
    found = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                key = key.strip()
                if sep and key in ("model name", "flags") and key not in found:
                    found[key] = value.strip()
                if len(found) == 2:
                    break
    except OSError:
        pass
    return found


def cpu_model() -> str:
    """The processor's model name (``Intel(R) Xeon(R) Processor``; elsewhere ``platform.processor()``
    or the architecture)."""
    return _cpuinfo().get("model name") or platform.processor() or platform.machine() or "unknown"


def cpu_flags() -> frozenset:
    """The processor's feature flags (``avx2``, ``avx512f``, ...; empty where they cannot be read)."""
    return frozenset(_cpuinfo().get("flags", "").split())


def cpu_isa() -> str:
    """The widest x86 vector instruction set the processor has: ``AVX512``, ``AVX2``, ``AVX`` or
    ``other`` (not x86, or flags unreadable)."""
    flags = cpu_flags()
    for name, flag in (("AVX512", "avx512f"), ("AVX2", "avx2"), ("AVX", "avx")):
        if flag in flags:
            return name
    return "other"


def onednn_version(torch) -> str | None:
    """The oneDNN version ``torch`` (the module) was built with (``"3.12.0"``), or None."""
    for line in torch.__config__.show().splitlines():
        if "MKL-DNN" in line or "oneDNN" in line:
            for word in line.split():
                if word.startswith("v") and word[1:2].isdigit():
                    return word[1:]
    return None


def facts() -> dict:
    """What a result file records of the machine: ``cpu`` (model), ``cpu_isa`` (:func:`cpu_isa`),
    ``cpus`` (visible), and where torch is imported ``cpu_capability`` (torch's,
    ``torch.backends.cpu.get_cpu_capability()``), ``onednn`` (version), ``threads``
    (``torch.get_num_threads()``), ``onednn_max_isa`` (``ONEDNN_MAX_CPU_ISA`` where set) and ``gpu``
    (the first CUDA device's name, where CUDA is initialised)."""
    out = {"cpu": cpu_model(), "cpu_isa": cpu_isa(), "cpus": os.cpu_count() or 0}
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "backends"):
        try:
            out["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
            out["onednn"] = onednn_version(torch) or "none"
            out["threads"] = int(torch.get_num_threads())
            cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")
            if cap:
                out["onednn_max_isa"] = cap
            if torch.cuda.is_initialized():
                out["gpu"] = torch.cuda.get_device_name(0)
        except (AttributeError, RuntimeError):  # a torch without these parts: what could be read
            pass
    return out


__all__ = ["cpu_model", "cpu_flags", "cpu_isa", "onednn_version", "facts"]
