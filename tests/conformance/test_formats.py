"""The conformance suite: every registered format x every example it declares.

Like agentsession's ``storetest`` or msgspec's protocol fixture, nothing here
names a format: the cases come from :func:`trajkit.registry.formats` and each
format's ``Format.examples``. A format added later (built in, or a plugin
through the ``trajkit.formats`` entry points) gets every check below by
declaring its example runs. ``tests/test_format_plugin.py`` runs this module
again with the example plugin installed.

For each example run:

- detection finds the format and the same run root from *any* path inside
  the run (every file and every directory);
- a container (a format declaring ``members``: one file holding many
  sessions, such as an evaluation ``output.jsonl``) is checked session by
  session: every check below runs over each of its members;
- reading gives steps numbered 1..n (sub-sessions too), a session that
  pickles, and only documented diagnostic codes;
- ASF export verifies, ATIF export validates with Harbor's ``atif`` package,
  and the loss report places or explains every native event and file;
- ``certify`` returns one of the terminal states;
- ``trajkit view`` draws it: one step item per step, nothing loaded from
  elsewhere;
- seeded damage to every file of the run (cut short, bytes flipped, a JSON
  member dropped) never raises: the reader still returns a Session, and
  what it reports is documented.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import re
import shutil
import sys
from pathlib import Path

import pytest

from trajkit import registry
from trajkit.certify.pipeline import certify
from trajkit.certify.states import TERMINAL_STATES
from trajkit.export.convert import convert
from trajkit.model import ReadOptions, Session

REPO = Path(__file__).resolve().parents[2]

CASES = [
    pytest.param(fmt, path, id=f"{fmt.name}:{path.name}")
    for fmt in registry.formats()
    for path in fmt.example_paths()
]


def test_every_format_ships_examples():
    """A format without examples would escape every check below."""
    missing = [f.name for f in registry.formats() if not f.examples]
    assert not missing, f"formats declaring no examples: {missing}"
    for f in registry.formats():
        for p in f.example_paths():
            assert p.is_absolute() and p.exists(), f"{f.name}: example {p} does not exist"
    assert not [d for d in registry.load_problems() if d.severity == "error"], registry.load_problems()


# ----------------------------------------------------------- documented codes

_CODE = re.compile(r"`([a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)+)`")


def _documented(fmt: registry.Format) -> set[str]:
    """Codes named in trajkit's docs, plus (for a plugin, which cannot edit
    them) the ones its format module documents in its docstring."""
    codes: set[str] = set()
    for p in (REPO / "docs").rglob("*.md"):
        codes |= set(_CODE.findall(p.read_text(encoding="utf-8")))
    mod = sys.modules.get(fmt.read.__module__)
    if mod is not None and mod.__doc__:
        codes |= set(_CODE.findall(mod.__doc__))
    return codes


def _undocumented(fmt: registry.Format, session: Session) -> set[str]:
    used = {d.code for s in session.walk() for d in s.diagnostics}
    return used - _documented(fmt)


def _sessions(run: Path, **kw) -> list[Session]:
    """Every session of the run: each member of a container, else the one."""
    return list(registry.read_all(run, **kw))


def _addresses(run: Path) -> list[str]:
    return registry.members(run)


# ----------------------------------------------------------------- detection

def _paths_inside(run: Path) -> list[Path]:
    if run.is_file():
        return [run]
    out = [run]
    for dirpath, dirnames, filenames in os.walk(run):
        dirnames.sort()
        out += [Path(dirpath) / d for d in dirnames]
        out += [Path(dirpath) / f for f in sorted(filenames)]
    return out


@pytest.mark.parametrize("fmt,run", CASES)
def test_detected_from_every_path_inside(fmt, run):
    """The run's format, at the run's root, from any path inside it. A format
    may name a file inside the run as its root (a trace file beside its
    sidecars) when reading that root gives the same run."""
    whole = [(s.id, len(s.events), len(s.steps)) for s in _sessions(run)]
    wrong = []
    for p in _paths_inside(run):
        det = registry.detect(p)
        name = det.format.name if det.format else None
        root = Path(det.match.root).resolve() if det.match else None
        ok = name == fmt.name and not det.ambiguous and root is not None
        if ok and root != run.resolve():
            inside = run.is_dir() and run.resolve() in root.parents
            same = inside and [(s.id, len(s.events), len(s.steps)) for s in _sessions(root)] == whole
            ok = inside and same
        if not ok:
            wrong.append(f"{p.relative_to(run.parent)}: {name} at {root}{' (ambiguous)' if det.ambiguous else ''}")
    assert not wrong, "\n".join(wrong)


# --------------------------------------------------------------- one read

def _check_session(fmt: registry.Format, session: Session) -> None:
    assert isinstance(session, Session)
    assert session.format == fmt.name
    crashed = [str(d) for d in session.diagnostics if d.code == "read.format-failed"]
    assert not crashed, f"the reader raised (caught by the registry): {crashed}"
    for s in session.walk():
        assert [st.step_id for st in s.steps] == list(range(1, len(s.steps) + 1)), f"{s.id}: steps not numbered 1..n"
    back = pickle.loads(pickle.dumps(session))
    assert back.to_dict(events=True, raw=True) == session.to_dict(events=True, raw=True)
    assert not _undocumented(fmt, session), f"undocumented diagnostic codes: {sorted(_undocumented(fmt, session))}"


@pytest.mark.parametrize("fmt,run", CASES)
def test_read_steps_pickle_codes(fmt, run):
    for session in _sessions(run):
        _check_session(fmt, session)
    assert any(s.events for s in _sessions(run)), "an example run should hold events"
    assert any(s.steps for s in _sessions(run)), "an example run should hold steps"


@pytest.mark.parametrize("fmt,run", CASES)
def test_asf_verifies_and_every_event_is_accounted_for(fmt, run, tmp_path):
    for k, session in enumerate(_sessions(run)):
        res = convert(session, "asf", tmp_path / str(k))
        assert res.outputs
        assert res.problems == [], res.problems  # verify errors, round-trip differences, unaccounted events/files
        assert res.report["unaccounted"] == []
        placed = {(r["session"], repr(r["event_id"])) for r in res.report["events"]}
        for s in session.walk():
            for e in s.events:
                assert (s.id, repr(e.id)) in placed, f"event {e.id!r} of {s.id} not in the loss report"


@pytest.mark.parametrize("fmt,run", CASES)
def test_atif_validates(fmt, run, tmp_path):
    atif = pytest.importorskip("atif", reason="the atif extra validates ATIF")
    for k, session in enumerate(_sessions(run)):
        res = convert(session, "atif", tmp_path / str(k))
        assert res.outputs and res.problems == [], res.problems
        for p in res.outputs:
            atif.Trajectory.model_validate(json.loads(p.read_text(encoding="utf-8")))


@pytest.mark.parametrize("fmt,run", CASES)
def test_certify_returns_a_state(fmt, run):
    for address in _addresses(run):
        cert = certify(address)
        assert cert.state in TERMINAL_STATES
        assert (cert.run or {}).get("format") == fmt.name


# ------------------------------------------------------------ seeded damage

def _drop_key(data: bytes, rng: random.Random) -> bytes | None:
    """``data`` with one member of one JSON object removed (JSON or JSON Lines); None if there is none."""
    try:
        docs = [json.loads(data)]
        lines = False
    except ValueError:
        try:
            docs = [json.loads(line) for line in data.splitlines() if line.strip()]
            lines = True
        except ValueError:
            return None
    objects = []

    def collect(v):
        if isinstance(v, dict):
            if v:
                objects.append(v)
            for x in v.values():
                collect(x)
        elif isinstance(v, list):
            for x in v:
                collect(x)

    for d in docs:
        collect(d)
    if not objects:
        return None
    obj = rng.choice(objects)
    del obj[rng.choice(sorted(obj))]
    if lines:
        return b"".join(json.dumps(d).encode() + b"\n" for d in docs)
    return json.dumps(docs[0], indent=2).encode()


def _mutations(data: bytes, rng: random.Random) -> list[tuple[str, bytes]]:
    out = [("truncate", data[: rng.randrange(len(data))] if data else b"")]
    if data:
        b = bytearray(data)
        for _ in range(max(1, len(b) // 200)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        out.append(("flip", bytes(b)))
    dropped = _drop_key(data, rng)
    if dropped is not None:
        out.append(("drop-key", dropped))
    return out


@pytest.mark.parametrize("fmt,run", CASES)
def test_seeded_damage_never_raises(fmt, run, tmp_path):
    files = [p for p in _paths_inside(run) if p.is_file()]
    failures = []
    for i, f in enumerate(files):
        rel = f.relative_to(run.parent)
        rng = random.Random(f"{fmt.name}/{rel}")
        for name, data in _mutations(f.read_bytes(), rng):
            copy = tmp_path / f"{i}-{name}"
            if run.is_dir():
                shutil.copytree(run, copy / run.name, symlinks=True)
            else:
                (copy).mkdir()
                shutil.copy2(run, copy / run.name)
            target = copy / rel
            target.chmod(0o644)
            target.write_bytes(data)
            try:
                for k, session in enumerate(_sessions(copy / run.name, format=fmt.name, options=ReadOptions())):
                    _check_session(fmt, session)
                    res = convert(session, "asf", copy / f"asf-out-{k}")
                    assert res.report is not None
            except Exception as e:  # noqa: BLE001 - any exception is the failure being tested
                failures.append(f"{rel} {name}: {type(e).__name__}: {e}")
            shutil.rmtree(copy, ignore_errors=True)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("fmt,run", CASES)
def test_renders_as_a_page(fmt, run):
    """`trajkit view` draws every format: one step item per top-level step, in
    order, and a page that loads nothing from elsewhere (the browser checks
    live in tests/test_view_html.py)."""
    from trajkit.view.html import page_data, render
    from trajkit.view.transcript import transcript

    for session in _sessions(run):
        tree = transcript(session)
        items = page_data(tree, None, None, 1000)["items"]
        assert sum(1 for it in items if it["k"] == "s") == len(session.steps)
        page = render(tree)
        assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html>")
        assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', page), "the page must not load anything from elsewhere"
