"""The Ray engine (Ray Data, local ``ray.init(num_cpus=2)``, started once for
this module) gives the same tables as the process engine, and the engine
runs any picklable task in input order."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import ray  # the [ray] extra is part of the dev install: a missing Ray fails this module, it is not skipped

from trajkit.corpus import run
from trajkit.corpus.index import build, live_files
from trajkit.corpus.tables import TABLES


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    from trajkit.corpus.run import ray_init

    ray_init(2)
    yield
    ray.shutdown()


def rows(out: Path) -> dict[str, list[str]]:
    got = {}
    for t in TABLES:
        rs: list[dict] = []
        for f in live_files(out)[t]:
            rs.extend(pq.read_table(f).to_pylist())
        got[t] = sorted(json.dumps({k: v for k, v in r.items() if k != "mtime"}, sort_keys=True, default=str) for r in rs)
    return got


def test_ray_tables_equal_process_tables(corpus, tmp_path):
    a = build([str(corpus)], tmp_path / "process", engine="process", jobs=2, batch_size=3)
    b = build([str(corpus)], tmp_path / "ray", engine="ray", jobs=2, batch_size=3)
    assert a.indexed == b.indexed == a.found > 0 and a.batches == b.batches
    pa, pb = rows(tmp_path / "process"), rows(tmp_path / "ray")
    assert pa == pb
    assert len(pa["runs"]) == a.found and pa["steps"]


def test_every_engine_returns_batches_in_order_and_catches_task_bugs():
    """A builtin task (Ray workers import it without this test module): ``int``
    raises on the one item that is no number; that item alone is a Failed."""
    items = [str(i) for i in range(23)]
    items[7] = "seven"
    for engine in ("serial", "process", "ray"):
        batches = list(run(int, items, engine=engine, jobs=2, batch_size=5))
        assert [b.number for b in batches] == list(range(5))
        flat = [r for b in batches for r in b.results]
        assert [it for b in batches for it in b.items] == items
        assert flat[7].error.startswith("ValueError: invalid literal") and flat[7].item == "seven"
        assert [r for i, r in enumerate(flat) if i != 7] == [i for i in range(23) if i != 7]
