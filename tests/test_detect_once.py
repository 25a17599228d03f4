"""A verb detects a run once: ``members_detected`` hands the detection it
made to ``read(..., detection=...)``, which reads exactly what a read that
detects again reads (every example of every format, containers included);
a detection made for another path is not used."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from trajkit import registry
from trajkit.cli import run as cli_run

REPO = Path(__file__).resolve().parents[1]
V0 = REPO / "examples" / "openhands-v0-trial"

CASES = [pytest.param(path, id=f"{fmt.name}:{path.name}") for fmt in registry.formats() for path in fmt.example_paths()]


@pytest.mark.parametrize("run", CASES)
def test_reading_with_the_members_detection_is_reading_afresh(run):
    addresses, det = registry.members_detected(run)
    assert addresses == registry.members(run)
    assert det is not None and det.format is not None
    fresh = registry.detect(run, decide_only=True)
    assert (det.format.name, str(det.match.root), det.ambiguous) == (fresh.format.name, str(fresh.match.root), fresh.ambiguous)
    for address in addresses:
        reused = registry.read(address, detection=det).to_dict()
        again = registry.read(address).to_dict()
        assert reused == again


def test_named_format_or_member_gives_no_detection():
    assert registry.members_detected(V0, format="openhands-v0")[1] is None
    assert registry.members_detected(f"{V0}#x")[1] is None


def test_a_detection_of_another_path_is_ignored(monkeypatch):
    other = next(p for f in registry.formats() if f.name == "openhands-sdk" for p in f.example_paths())
    wrong = registry.detect(other, decide_only=True)
    assert registry.read(V0, detection=wrong).to_dict() == registry.read(V0).to_dict()


def test_steps_detects_once(monkeypatch):
    calls = []
    real = registry.detect

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(registry, "detect", counting)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as e:
        cli_run(["steps", str(V0)])
    assert e.value.code == 0 and out.getvalue()
    assert len(calls) == 1


def test_the_hint_is_set_as_dataclasses_replace_sets_it():
    import dataclasses

    from trajkit.model import ReadOptions

    names = [f.name for f in dataclasses.fields(ReadOptions)]
    # registry._with_hint names every field: one added to ReadOptions must be added there too
    assert names == ["max_file_bytes", "view", "tz", "steps", "hint", "member"]
    given = ReadOptions(max_file_bytes=7, view="events", tz="UTC", steps=False, hint="old", member="m")
    for options in (ReadOptions(), given):
        got = registry._with_hint(options, {"layout": 1})
        assert got == dataclasses.replace(options, hint={"layout": 1}) and got is not options
    assert options.hint == "old"  # the options given are left as they were

    class More(ReadOptions):
        pass

    sub = More()
    got = registry._with_hint(sub, 3)
    assert type(got) is More and got.hint == 3
