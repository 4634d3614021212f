"""The cluster recipes (cluster/): pinned, restartable, validated against their formats' own schemas.

No container engine or Kubernetes runs here, so the recipes are checked against the schemas their tools use:
the compose file against the Compose Specification's JSON schema (as vendored by check-jsonschema), the
DaskCluster resource against the CustomResourceDefinition that dask-kubernetes ships for its operator.  The
SLURM/PBS script's ``--dry-run`` prints a job script without starting a scheduler.  A client refuses a cluster
whose versions differ from its own (one line).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

import engine
from engine.distributed.client import MATCHED_PACKAGES, check_versions, version_mismatches
from engine.errors import VotebenchError

CLUSTER = REPO / "cluster"
VERSION = engine.__version__


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# ---------------------------------------------------------------------------------------------
# pinned versions: one constraints file for the image, the client and the workers
# ---------------------------------------------------------------------------------------------
def _constraints() -> dict[str, str]:
    pins = {}
    for line in (CLUSTER / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_constraints_pin_every_runtime_dependency_exactly():
    """Every dependency pyproject.toml declares (and the dashboard's bokeh) has one exact version in constraints.txt."""
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower().replace("_", "-") for d in deps} | {"bokeh"}
    pins = _constraints()
    assert names <= set(pins), f"not pinned: {sorted(names - set(pins))}"
    assert "votebench" not in pins  # the project itself comes from the checkout


def test_dockerfile_installs_with_the_constraints():
    text = (CLUSTER / "Dockerfile").read_text()
    assert re.search(r"COPY [^\n]*cluster/constraints\.txt", text)
    assert re.search(r"pip install -c constraints\.txt \.", text)


def test_images_are_tagged_with_the_version_never_latest():
    compose = yaml.safe_load((CLUSTER / "docker-compose.yml").read_text())
    k8s = _docs(CLUSTER / "kubernetes.yaml")
    images = [compose["x-image"]["image"]]
    for doc in k8s:
        if doc["kind"] == "DaskCluster":
            for part in ("worker", "scheduler"):
                images += [c["image"] for c in doc["spec"][part]["spec"]["containers"]]
    assert len(images) == 3
    assert set(images) == {f"votebench:{VERSION}"}


# ---------------------------------------------------------------------------------------------
# the compose file against the Compose Specification
# ---------------------------------------------------------------------------------------------
def _compose_schema() -> dict:
    pytest.importorskip("check_jsonschema", reason="the test extra installs check-jsonschema (its vendored compose-spec)")
    path = importlib.resources.files("check_jsonschema").joinpath("builtin_schemas/vendor/compose-spec.json")
    return json.loads(path.read_text())


def test_compose_file_is_valid_against_the_compose_specification():
    import jsonschema

    schema = _compose_schema()
    compose = yaml.safe_load((CLUSTER / "docker-compose.yml").read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(compose)


def test_the_compose_schema_catches_a_broken_file():
    """The check can fail: a misspelt key and a wrong restart value are refused by the same schema."""
    import jsonschema

    schema = _compose_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    compose = yaml.safe_load((CLUSTER / "docker-compose.yml").read_text())
    broken = json.loads(json.dumps(compose))
    broken["services"]["worker"]["comand"] = broken["services"]["worker"].pop("command")
    assert not validator.is_valid(broken)
    bad_restart = json.loads(json.dumps(compose))
    bad_restart["services"]["worker"]["restart"] = 5
    assert not validator.is_valid(bad_restart)


def test_scheduler_and_workers_restart_after_a_failure():
    services = yaml.safe_load((CLUSTER / "docker-compose.yml").read_text())["services"]
    for name in ("scheduler", "worker"):
        assert services[name].get("restart") in ("always", "unless-stopped", "on-failure"), name


# ---------------------------------------------------------------------------------------------
# the Kubernetes manifest against dask-kubernetes' DaskCluster resource definition
# ---------------------------------------------------------------------------------------------
def _daskcluster_schema() -> dict:
    pytest.importorskip("dask_kubernetes", reason="the test extra installs dask-kubernetes (its DaskCluster CRD)")
    crd_path = importlib.resources.files("dask_kubernetes").joinpath(
        "operator/deployment/helm/dask-kubernetes-operator/crds/daskcluster.yaml")
    crd = yaml.safe_load(crd_path.read_text())
    assert crd["spec"]["names"]["kind"] == "DaskCluster"
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]


def _daskcluster() -> dict:
    (doc,) = [d for d in _docs(CLUSTER / "kubernetes.yaml") if d["kind"] == "DaskCluster"]
    return doc


def test_kubernetes_manifest_is_a_valid_daskcluster():
    import jsonschema

    doc = _daskcluster()
    assert doc["apiVersion"] == "kubernetes.dask.org/v1"
    jsonschema.Draft4Validator(_daskcluster_schema()).validate(doc)


def test_the_daskcluster_schema_catches_a_broken_manifest():
    import jsonschema

    validator = jsonschema.Draft4Validator(_daskcluster_schema())
    doc = _daskcluster()
    broken = json.loads(json.dumps(doc))
    broken["spec"]["worker"]["replicas"] = "two"
    assert not validator.is_valid(broken)
    missing = json.loads(json.dumps(doc))
    del missing["spec"]["scheduler"]["service"]
    assert not validator.is_valid(missing)


# ---------------------------------------------------------------------------------------------
# cluster/slurm.py --dry-run: a job script without a scheduler
# ---------------------------------------------------------------------------------------------
def _slurm_module():
    pytest.importorskip("dask_jobqueue", reason="the test extra installs dask-jobqueue")
    spec = importlib.util.spec_from_file_location("votebench_slurm_recipe", CLUSTER / "slurm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _NoCluster:
    def __init__(self, *args, **kwargs):
        raise AssertionError("--dry-run started a cluster (and with it a scheduler)")


@pytest.mark.parametrize("pbs", [False, True])
def test_slurm_dry_run_starts_nothing_and_prints_the_job_script(monkeypatch, capsys, pbs):
    import dask_jobqueue

    slurm = _slurm_module()
    monkeypatch.setattr(dask_jobqueue, "SLURMCluster", _NoCluster)
    monkeypatch.setattr(dask_jobqueue, "PBSCluster", _NoCluster)
    sweep = REPO / "experiments" / "sweeps" / "glue_robustness.toml"
    argv = [str(sweep), "--dry-run", "--cores", "4", "--memory", "8GB", "--interface", "lo"] + (["--pbs"] if pbs else [])
    assert slurm.main(argv) == 0
    script = capsys.readouterr().out
    assert script.startswith("#!/usr/bin/env bash")
    assert ("#PBS" in script) if pbs else ("#SBATCH" in script)
    assert "tcp://SCHEDULER:8786" in script
    assert "--interface lo" in script
    assert "--nworkers 4" in script and "--nthreads 1" in script


def test_slurm_dry_run_refuses_a_bad_sweep_file_in_one_line(tmp_path, capsys):
    slurm = _slurm_module()
    bad = tmp_path / "bad.toml"
    bad.write_text("rules = 3\n")
    assert slurm.main([str(bad), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("slurm.py: error:")


# ---------------------------------------------------------------------------------------------
# one environment for client and workers: a version mismatch is refused in one line
# ---------------------------------------------------------------------------------------------
def _versions(**workers: dict[str, str]) -> dict:
    here = {"python": "3.11.7.final.0", "dask": "2026.8.0", "distributed": "2026.8.0", "cloudpickle": "3.1.3",
            "msgpack": "1.2.4", "numpy": "2.4.6", "votebench": VERSION}
    out = {"client": {"packages": dict(here)}, "scheduler": {"packages": dict(here)}, "workers": {}}
    for addr, diff in workers.items():
        out["workers"][addr] = {"packages": {**here, **diff}}
    return out


def test_version_mismatches_compares_every_matched_package_with_plain_loops():
    assert version_mismatches(_versions(w1={}, w2={})) == []
    assert version_mismatches(_versions(w1={"python": "3.11.9.final.0"})) == []  # same minor version
    for name in MATCHED_PACKAGES:
        other = "3.12.1.final.0" if name == "python" else "0.0.1"
        found = version_mismatches(_versions(w1={}, w2={name: other}))
        assert len(found) == 1 and found[0].startswith(f"{name} ") and found[0].endswith("on worker w2"), found
    missing = version_mismatches(_versions(w1={"votebench": None}))
    assert missing == [f"votebench {VERSION} here, not installed on worker w1"]


class _FakeClient:
    def __init__(self, versions: dict) -> None:
        self.versions = versions

    def get_versions(self, packages=()):
        return self.versions


def test_a_cluster_with_other_versions_is_refused_in_one_line():
    with pytest.raises(VotebenchError) as info:
        check_versions(_FakeClient(_versions(**{"tcp://10.0.0.5:4001": {"dask": "2026.3.0"}})), "tcp://sched:8786")
    message = str(info.value)
    assert "\n" not in message
    assert "dask 2026.8.0 here, 2026.3.0 on worker tcp://10.0.0.5:4001" in message
    assert "cluster/constraints.txt" in message


def test_a_real_cluster_with_the_same_versions_passes():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster, Client(cluster) as client:
        check_versions(client, cluster.scheduler_address)  # same process: same versions


@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
def test_a_worker_process_with_another_votebench_version_is_refused(monkeypatch):
    """Workers in their own processes report the installed version; the client pretends to be another one."""
    import distributed.versions as dv
    from distributed import Client, LocalCluster

    real = dv.get_versions

    def client_side(packages=None):
        out = real(packages)
        out["packages"]["votebench"] = "0.0.0-other"
        return out

    with LocalCluster(n_workers=1, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            monkeypatch.setattr(dv, "get_versions", client_side)
            monkeypatch.setattr("distributed.client.get_versions", client_side, raising=False)
            with pytest.raises(VotebenchError, match=r"votebench 0\.0\.0-other here, [^ ]+ on (the scheduler|worker )"):
                check_versions(client, cluster.scheduler_address)


# ---------------------------------------------------------------------------------------------
# what counts as a lost cluster (the end-to-end case is tests/distributed/test_cluster.py::test_lost_scheduler_...)
# ---------------------------------------------------------------------------------------------
class _Status:
    def __init__(self, status: str) -> None:
        self.status = status
        self.scheduler = type("S", (), {"address": "tcp://h:8786"})()


def test_lost_cluster_names_the_loss_and_nothing_else():
    import asyncio
    from concurrent.futures import CancelledError

    from distributed import KilledWorker
    from distributed.comm import CommClosedError

    from engine.distributed.cluster import lost_cluster

    gone, fine = _Status("connecting"), _Status("running")
    for exc in (CancelledError("x cancelled for reason: scheduler-connection-lost"), asyncio.CancelledError(),
                CommClosedError("in <TCP>: Stream is closed"), ConnectionRefusedError(111, "refused"), TimeoutError()):
        assert lost_cluster(gone, exc) == "lost the dask scheduler tcp://h:8786", exc
    assert lost_cluster(fine, CommClosedError("connection closed")) == "lost the dask scheduler tcp://h:8786"
    assert lost_cluster(fine, CancelledError("cancelled by the user")) is None  # the cluster is still there
    assert lost_cluster(gone, KeyboardInterrupt()) is None
    assert lost_cluster(gone, ValueError("a bug")) is None
    worker = type("W", (), {"address": "tcp://w:1"})()
    killed = lost_cluster(fine, KilledWorker("run_task-1", worker, 5))
    assert killed is not None and killed.startswith("every worker that ran a block died") and "lower `block`" in killed


def test_cli_drops_only_the_dask_clients_connection_tracebacks():
    import asyncio
    import logging

    from engine.app.cli import quiet_connection_errors

    def record(exc):
        return logging.LogRecord("distributed.client", logging.ERROR, __file__, 1, "", (), (type(exc), exc, None) if exc else None)

    assert not quiet_connection_errors(record(asyncio.CancelledError()))
    assert not quiet_connection_errors(record(ConnectionRefusedError(111, "refused")))
    assert quiet_connection_errors(record(ValueError("a real problem")))
    assert quiet_connection_errors(record(None))
    reconnect = logging.LogRecord("distributed.client", logging.ERROR, __file__, 1,
                                  "Failed to reconnect to scheduler after %s seconds, closing client", (30.0,), None)
    assert not quiet_connection_errors(reconnect)


def test_cluster_lost_exit_code_is_tempfail():
    from engine.errors import ClusterLost

    assert ClusterLost("x").exit_code == 75 and VotebenchError("x").exit_code == 2
    assert issubclass(ClusterLost, VotebenchError)
