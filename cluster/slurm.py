#!/usr/bin/env python
"""Run a votebench sweep on an HPC batch system (SLURM, or PBS with ``--pbs``) with dask-jobqueue.

Run it on a login node (it stays running while the sweep does: use ``tmux``/``screen`` or submit it as a
small job itself).  It starts a dask scheduler here, submits ``--jobs`` batch jobs that each run
``--processes`` dask workers, runs the sweep through the Python API and writes the results store here::

    pip install -e '.[cluster]' -c cluster/constraints.txt   # from a clone: the versions the image pins
    python cluster/slurm.py sweep.toml --jobs 4 --cores 8 --memory 32GB --walltime 02:00:00 \\
        --queue normal --account myproject
    python cluster/slurm.py sweep.toml --pbs --jobs 4 --cores 8 --memory 32GB --queue workq
    python cluster/slurm.py sweep.toml --dry-run          # print the job script; starts and submits nothing
    python cluster/slurm.py sweep.toml --interface ib0    # scheduler and workers on the InfiniBand interface

The workers open the sweep's inputs themselves: the input paths must be on a file system every compute
node mounts (the paths are made absolute here), or fsspec URLs the nodes can reach.  A job killed by its
walltime only costs its running blocks: dask reschedules them on the other jobs' workers and a re-run of
the same command resumes from the store.  Dask settings (memory fractions, retries, timeouts): put
``cluster/dask.yaml`` in ``~/.config/dask/`` (read by the scheduler here and the workers there).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def job_options(args: argparse.Namespace) -> dict[str, Any]:
    """The dask-jobqueue options of one batch job (shared by the cluster and ``--dry-run``'s job script)."""
    kw: dict[str, Any] = dict(
        cores=args.cores,              # cores per job
        processes=args.processes,      # dask worker processes per job (threads per worker = cores / processes)
        memory=args.memory,            # memory per job, shared by its worker processes
        walltime=args.walltime,
        queue=args.queue,
        account=args.account,
        job_name="votebench",
        interface=args.interface,      # network interface of the workers (and of the scheduler here), e.g. ib0
        local_directory=args.local_directory,  # node-local scratch for spilling
        log_directory=args.log_directory,
        # activate the same environment on the compute nodes, e.g. ["source ~/venvs/votebench/bin/activate"]
        job_script_prologue=list(args.prologue),
        job_extra_directives=list(args.directive),
    )
    return {k: v for k, v in kw.items() if v is not None}


def job_classes(args: argparse.Namespace) -> tuple[Any, Any]:
    """dask-jobqueue's (cluster class, job class) for SLURM, or PBS with ``--pbs``."""
    try:
        from dask_jobqueue import PBSCluster, SLURMCluster
        from dask_jobqueue.pbs import PBSJob
        from dask_jobqueue.slurm import SLURMJob
    except ImportError:
        sys.exit("slurm.py: needs dask-jobqueue: pip install -e '.[cluster]'")
    return (PBSCluster, PBSJob) if args.pbs else (SLURMCluster, SLURMJob)


def make_cluster(args: argparse.Namespace) -> Any:
    """A dask-jobqueue ``SLURMCluster`` (or ``PBSCluster``) from the command-line options: starts a scheduler here."""
    cluster_class, _ = job_classes(args)
    return cluster_class(**job_options(args))


def dry_run_script(args: argparse.Namespace) -> str:
    """The job script one batch job would run, built without starting a scheduler or submitting anything.

    The scheduler's address is not known before it starts: the script names it ``tcp://SCHEDULER:8786``, and the
    real jobs receive the address of the scheduler that this script starts on this node.
    """
    _, job_class = job_classes(args)
    return job_class(scheduler="tcp://SCHEDULER:8786", name="votebench-worker", **job_options(args)).job_script()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("config", help="sweep file (.toml, .yaml)")
    p.add_argument("--store", default=None, help="results store (overrides the sweep file's)")
    p.add_argument("--pbs", action="store_true", help="PBS/Torque instead of SLURM")
    p.add_argument("--jobs", type=int, default=2, help="batch jobs to submit (default 2)")
    p.add_argument("--cores", type=int, default=8, help="cores per job (default 8)")
    p.add_argument("--processes", type=int, default=None,
                   help="dask worker processes per job (default: one per core, single-threaded workers)")
    p.add_argument("--memory", default="16GB", help="memory per job (default 16GB)")
    p.add_argument("--walltime", default="01:00:00", help="walltime per job (default 01:00:00)")
    p.add_argument("--queue", default=None, help="partition (SLURM) / queue (PBS)")
    p.add_argument("--account", default=None, help="account / project to charge")
    p.add_argument("--interface", default=None,
                   help="network interface for the scheduler and the workers, e.g. ib0 or eth0 (default: dask's choice)")
    p.add_argument("--local-directory", default=None, help="node-local scratch folder, e.g. $TMPDIR")
    p.add_argument("--log-directory", default="dask-logs", help="folder for the jobs' logs (default dask-logs)")
    p.add_argument("--prologue", action="append", default=[], metavar="LINE",
                   help="shell line run before the workers start (repeatable), e.g. 'source venv/bin/activate'")
    p.add_argument("--directive", action="append", default=[], metavar="TEXT",
                   help="extra scheduler directive (repeatable), e.g. '--gres=gpu:0' or '-l mem=32gb'")
    p.add_argument("--overwrite", action="store_true", help="start from an empty store")
    p.add_argument("--dry-run", action="store_true",
                   help="print the job script and exit (starts no scheduler and submits nothing)")
    args = p.parse_args(argv)
    if args.processes is None:
        args.processes = args.cores

    from distributed import Client

    from engine.errors import VotebenchError
    from engine.sweep import load_config, open_results, run_sweep

    try:
        cfg = load_config(args.config, store=args.store)  # validate before anything is submitted
    except VotebenchError as exc:
        print(f"slurm.py: error: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(dry_run_script(args))
        return 0
    cluster = make_cluster(args)
    try:
        cluster.scale(jobs=args.jobs)
        with Client(cluster) as client:
            print(f"scheduler {client.scheduler.address}; dashboard {client.dashboard_link}; "
                  f"{args.jobs} jobs x {args.processes} workers submitted", file=sys.stderr)
            # no need to wait for every job: blocks start as soon as the first workers arrive
            client.wait_for_workers(1)
            path = run_sweep(cfg, client=client, overwrite=args.overwrite, progress=sys.stderr.isatty())
        for name, ds in open_results(path).items():
            done = ds["done"].values
            print(f"{name}: blocks done {int(done.sum())}/{done.size}")
        print(f"results store {path}")
    except VotebenchError as exc:
        print(f"slurm.py: error: {exc}", file=sys.stderr)
        return 2
    finally:
        cluster.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
