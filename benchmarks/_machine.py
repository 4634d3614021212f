"""Shared helpers of the benchmark scripts: the machine description and /proc memory figures."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def machine_info(**extra: Any) -> dict[str, Any]:
    """Date, CPU, cores, memory, Python and library versions; ``extra`` entries are added (script-specific)."""
    import dask
    import numpy as np
    import pandas
    import scipy
    import xarray as xr

    import engine

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    return {
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu_model": cpu,
        "nproc": usable,
        "cpu_count": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "xarray": xr.__version__,
        "dask": dask.__version__,
        "pandas": pandas.__version__,
        "votebench": getattr(engine, "__version__", "?"),
        **extra,
        "loadavg_start": os.getloadavg(),
    }


def proc_status_mb(key: str) -> float | None:
    """A memory line of /proc/self/status (e.g. ``VmHWM``, ``VmRSS``) in MB; None where unavailable."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark (``VmHWM``) of this process (Linux >= 4.0)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def run_child(argv: list[str], label: str) -> tuple[str, float]:
    """Run ``argv`` in a fresh process: its standard output and wall time (RuntimeError naming ``label`` and the
    end of its standard error when it fails)."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{label} failed ({proc.returncode}): {proc.stderr.decode()[-3000:]}")
    return proc.stdout.decode(), wall


def best_of(f: Callable[[], Any], runs: int = 3, *, warm: bool = False,
            clock: Callable[[], float] = time.perf_counter) -> float:
    """The least time of ``runs`` calls of ``f`` by ``clock`` (wall time by default; ``time.process_time`` for the
    process's CPU time), after one untimed call when ``warm`` (numba compiles or loads its cache on the first call)."""
    if warm:
        f()
    times = []
    for _ in range(runs):
        t = clock()
        f()
        times.append(clock() - t)
    return min(times)
