"""The shipped datasets: every file has a sidecar with provenance, its counts are the file's, data/README.md lists it.

The counts are recomputed here with the ``csv`` module alone (no engine code).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re

import pytest
from conftest import DATA

FILES = sorted(p for p in DATA.iterdir() if p.name.endswith((".csv", ".csv.gz")))


def _rows(path):
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if path.name.endswith(".gz") else raw).decode("utf-8")
    return list(csv.reader(io.StringIO(text)))


def _sidecar(path):
    stem = path.name.removesuffix(".gz").removesuffix(".csv")
    return json.loads((DATA / f"{stem}.meta.json").read_text(encoding="utf-8"))


def test_every_dataset_the_project_uses_is_shipped():
    names = {p.name for p in FILES}
    colombo = {f"colombo_{k}.csv.gz" for k in ("dialog_pc", "dialog_tc", "flickr", "mlqe", "real_sum", "sum_eval", "tac08",
                                                "tac09", "tac11")}
    assert colombo <= names  # the nine instance-level sets of Colombo et al. 2022
    assert {p.name for p in DATA.glob("colombo_*.csv.gz")} == colombo  # the README's glob matches exactly the nine
    assert {"open_llm_leaderboard_v2_2025-03-21.csv.gz", "helm_classic_v0.4.0_qa.csv", "vnr_glue.csv", "vnr_superglue.csv",
            "vnr_value.csv", "esann_automl.csv", "esann_statlog.csv", "esann_artificial.csv", "esann_autodl_auc.csv",
            "esann_autodl_alc.csv", "colombo_glue.csv", "colombo_superglue.csv", "colombo_xtreme.csv"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_sidecar_counts_and_provenance_match_the_file(path):
    meta = _sidecar(path)
    assert meta["file"] == path.name
    assert meta["source"]["repo"] and meta["source"]["path"] and re.fullmatch(r"[0-9a-f]{40}", meta["source"]["commit"])
    assert meta["paper"] and meta["license"]
    rows = _rows(path)
    header, body = rows[0], rows[1:]
    if meta["level"] == "battles":  # battle records derived from an instance-level set (see its sidecar)
        assert header == ["model_a", "model_b", "winner", "task", "instance"]
        assert meta["derived_from"] in {p.name for p in FILES}
        systems = {r[0] for r in body} | {r[1] for r in body}
        tasks = {r[3] for r in body}
        assert len(body) == meta["n_battles"] and meta["n_missing"] == 0
        assert all(r[2] in ("model_a", "model_b", "tie") and r[0] != r[1] for r in body)
        assert {k: sum(r[2] == k for r in body) for k in ("model_a", "model_b", "tie")} == meta["outcomes"]
        assert len({r[4] for r in body}) == meta["n_instances"]
    elif meta["level"] == "instance":
        assert header == ["system", "task", "instance", "score"]
        systems = {r[0] for r in body}
        tasks = {r[1] for r in body}
        per_task = {t: {r[2] for r in body if r[1] == t} for t in tasks}
        assert len(body) == meta["n_scores"] == len(systems) * sum(len(v) for v in per_task.values())  # a full grid
        assert all(r[3] != "" for r in body) and meta["n_missing"] == 0
        assert len({len(v) for v in per_task.values()}) == 1 and len(next(iter(per_task.values()))) == meta["n_instances"]
        float_scores = [float(r[3]) for r in body]
        assert all(v == v for v in float_scores)
    else:
        systems = [r[0] for r in body]
        tasks = header[1:]
        cells = [v for r in body for v in r[1:]]
        assert all(len(r) == len(header) for r in body)
        assert len(set(systems)) == len(systems)
        missing = sum(v.strip() == "" for v in cells)
        assert meta["n_missing"] == missing
        assert meta["n_scores"] == len(cells) - missing
        assert set(meta["higher_is_better"]) == set(tasks)
    assert meta["n_systems"] == len(systems)
    assert meta["n_tasks"] == len(tasks)


def test_data_readme_lists_every_file_with_its_counts():
    text = (DATA / "README.md").read_text(encoding="utf-8")
    table = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 7 and cells[0] in {p.name for p in FILES}:
            table[cells[0]] = cells
    assert set(table) == {p.name for p in FILES}
    for path in FILES:
        meta = _sidecar(path)
        cells = table[path.name]
        num = lambda s: int(s.split()[0].replace(",", "")) if s.strip() not in ("-", "") else None  # noqa: E731
        assert num(cells[2]) == meta["n_systems"] and num(cells[3]) == meta["n_tasks"], path.name
        assert num(cells[4]) == meta.get("n_instances"), path.name
        assert num(cells[5]) == meta.get("n_scores", meta.get("n_battles")) and num(cells[6]) == meta["n_missing"], path.name


def test_every_sidecar_has_its_data_file():
    for side in DATA.glob("*.meta.json"):
        meta = json.loads(side.read_text(encoding="utf-8"))
        assert (DATA / meta["file"]).is_file(), side.name
