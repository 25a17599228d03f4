"""ASF 0.11 conformance over the shared corpus: ids, reading, writing,
verification, the context algorithm and request hashes."""

from __future__ import annotations

import json

import pytest

from trajkit.spec import asf

from conftest import CORPUS, run_cli

TESTDATA = CORPUS / "asf" / "agentsession" / "testdata"
SESSIONS = TESTDATA / "sessions"
AGENTEVAL = CORPUS / "asf" / "agenteval" / "testdata" / "sessions"

POSITIVE = [
    "basic", "branch", "compaction", "converge", "extensions", "fork", "instructions", "interleaved",
    "normalised", "omitted", "parts", "pinned", "queued", "replay", "resume", "runs",
    "empty-resume", "handback", "judged", "omit", "omit-absent", "omit-folded",
]
LEGACY_POSITIVE = ["basic", "branch", "compaction", "extensions", "instructions"]

#: Each negative fixture and the one diagnostic code it must fail with.
NEGATIVE = {
    "bad-base-parent": "asf.bad-base",
    "bad-base-prefix": "asf.bad-base",
    "bad-base-root": "asf.bad-base",
    "bad-first-kept": "asf.bad-first-kept",
    "bad-handback": "asf.unresolved-omitted",
    "bad-handback-folded": "asf.unresolved-omitted",
    "bad-omit": "asf.bad-request-hash",
    "bad-parent": "asf.bad-parent",
    "bad-parents": "asf.bad-parents",
    "bad-records": "asf.bad-records",
    "bad-resume": "asf.bad-run",
    "corrupt-middle": "asf.corrupt-line",
    "duplicate-id": "asf.duplicate-id",
    "missing-id": "asf.missing-member",
    "truncated": "asf.truncated-final-line",
    "unsupported-format": "asf.unsupported-format",
}
LEGACY_NEGATIVE = {
    "bad-first-kept": "asf.bad-first-kept",
    "bad-parent": "asf.bad-parent",
    "bad-parents": "asf.bad-parents",
    "missing-id": "asf.missing-member",
}


def errors(diags):
    return [d for d in diags if d.severity == "error"]


def all_session_files():
    return sorted(SESSIONS.glob("*.jsonl")) + sorted((SESSIONS / "v0.4").glob("*.jsonl")) + sorted(AGENTEVAL.glob("*.jsonl"))


def test_fixture_lists_cover_the_corpus(corpus):
    names = {p.stem for p in SESSIONS.glob("*.jsonl")}
    assert names == set(POSITIVE) | set(NEGATIVE), names ^ (set(POSITIVE) | set(NEGATIVE))


@pytest.mark.parametrize("name", POSITIVE)
def test_positive_fixture_verifies(corpus, name):
    f = asf.read_asf(SESSIONS / f"{name}.jsonl")
    diags = asf.verify(f)
    assert errors(diags) == [], [str(d) for d in errors(diags)]
    assert f.entries


@pytest.mark.parametrize("name", LEGACY_POSITIVE)
def test_legacy_fixture_migrates_to_the_same_ids(corpus, name):
    legacy = asf.read_asf(SESSIONS / "v0.4" / f"{name}.jsonl")
    current = asf.read_asf(SESSIONS / f"{name}.jsonl")
    assert legacy.migrated and not current.migrated
    assert errors(asf.verify(legacy)) == []
    assert [e.id for e in legacy.entries] == [e.id for e in current.entries]
    assert any(d.code == "asf.legacy-migrated" for d in legacy.diagnostics)


@pytest.mark.parametrize("name,code", sorted(NEGATIVE.items()))
def test_negative_fixture_fails_for_its_reason(corpus, name, code):
    f = asf.read_asf(SESSIONS / f"{name}.jsonl")
    errs = errors(asf.verify(f))
    assert errs, f"{name} verified clean"
    assert errs[0].code == code, [str(d) for d in errs]


@pytest.mark.parametrize("name,code", sorted(LEGACY_NEGATIVE.items()))
def test_legacy_negative_fixture_fails_for_its_reason(corpus, name, code):
    f = asf.read_asf(SESSIONS / "v0.4" / f"{name}.jsonl")
    errs = errors(asf.verify(f))
    assert errs and errs[0].code == code, [str(d) for d in errs]


def test_truncated_final_line_keeps_the_prefix(corpus):
    f = asf.read_asf(SESSIONS / "truncated.jsonl")
    basic = asf.read_asf(SESSIONS / "basic.jsonl")
    d = [x for x in f.diagnostics if x.code == "asf.truncated-final-line"]
    assert len(d) == 1 and d[0].line == 10
    # The eight entries before the cut are read, and their ids are basic's.
    assert [e.id for e in f.entries] == [e.id for e in basic.entries[:8]]
    assert f.trailing == b'{"id":"sha256:7b2c1e\n'


def test_corrupt_middle_line_is_an_error_not_a_truncation(corpus):
    f = asf.read_asf(SESSIONS / "corrupt-middle.jsonl")
    codes = [d.code for d in f.diagnostics]
    assert "asf.corrupt-line" in codes and "asf.truncated-final-line" not in codes


@pytest.mark.parametrize("path", all_session_files(), ids=lambda p: str(p.relative_to(CORPUS)))
def test_read_then_write_is_byte_identical(corpus, path):
    f = asf.read_asf(path)
    assert asf.write_asf(f) == path.read_bytes()


def test_every_sha256_id_recomputes(corpus):
    checked = 0
    for path in sorted(SESSIONS.glob("*.jsonl")):
        f = asf.read_asf(path)
        if f.migrated:
            continue
        for e in f.entries:
            if e.raw.get("_unparsed") or not str(e.raw.get("id", "")).startswith("sha256:"):
                continue
            if path.stem == "duplicate-id" and e is f.entries[-1]:
                continue
            assert asf.entry_id(e.raw) == e.raw["id"], (path.name, e.line)
            checked += 1
    assert checked > 300


def test_unknown_entry_types_and_members_are_preserved(corpus):
    path = SESSIONS / "extensions.jsonl"
    f = asf.read_asf(path)
    assert f.header["acme:workspace"] == "ws-1"
    note = [e for e in f.entries if e.type == "agentturn:note"]
    assert len(note) == 1 and note[0].raw["nested"] == {"a": [1, 2, {"y": True}], "z": 1}
    assert asf.write_asf(f) == path.read_bytes()
    # An entry type that is neither core nor namespaced is kept and warned about.
    data = path.read_bytes().rstrip(b"\n").split(b"\n")
    last = json.loads(data[-1])
    odd = asf.make_entry("oddball", last["id"], "2026-09-17T15:00:09Z", {"payload": {"x": 1}})
    blob = b"\n".join(data) + b"\n" + asf.entry_line(odd) + b"\n"
    g = asf.read_asf(blob)
    assert asf.write_asf(g) == blob
    diags = asf.verify(g)
    assert errors(diags) == []
    assert any(d.code == "asf.unknown-entry-type" for d in diags)
    assert g.entries[-1].raw["payload"] == {"x": 1}


def _context_cases():
    for path in sorted((TESTDATA / "context").glob("*.json")):
        for leaf in json.loads(path.read_text()):
            yield pytest.param(path.stem, leaf, id=f"{path.stem}:{leaf[:14]}")


@pytest.mark.parametrize("name,leaf", list(_context_cases()))
def test_context_at_each_leaf_equals_the_expected_fixture(corpus, name, leaf):
    expected = json.loads((TESTDATA / "context" / f"{name}.json").read_text())[leaf]
    f = asf.read_asf(SESSIONS / f"{name}.jsonl")
    legacy = f.legacy_index()

    def resolve(x: str) -> str:  # some fixtures are keyed by legacy ids
        return x if x.startswith("sha256:") else legacy[x].id

    ctx = asf.build_context(f, resolve(leaf))
    assert ctx.items == expected["items"]
    assert ctx.entries == [resolve(x) for x in expected["entries"]]
    if "item_entries" in expected:
        assert ctx.item_entries == [resolve(x) for x in expected["item_entries"]]
    assert ctx.omitted == expected.get("omitted", [])
    got = dict(ctx.settings)
    if name == "instructions":
        # context/instructions.json predates settings carrying the omitted list
        # (see corpus/asf/README.md, version skew); it is the config's own list.
        config = [e for e in f.entries if e.type == "config"][-1]
        assert got.pop("instructions_omitted") == config.raw["instructions_omitted"]
    assert got == expected["settings"]


def test_request_hashes_recompute(corpus):
    checked = 0
    for name in POSITIVE:
        f = asf.read_asf(SESSIONS / f"{name}.jsonl")
        for e in f.entries:
            if e.type == "response" and "request_hash" in e.obj:
                ctx = asf.request_context(f, e)
                assert asf.request_hash(ctx.request()) == e.obj["request_hash"], (name, e.line)
                checked += 1
    assert checked >= 40


def test_bad_omit_is_the_response_whose_request_ignores_omit(corpus):
    f = asf.read_asf(SESSIONS / "bad-omit.jsonl")
    errs = errors(asf.verify(f))
    assert len(errs) == 1
    bad = f.by_id[errs[0].event_id]
    assert bad.raw["response_id"] == "resp_3"


def test_ts_spelling():
    assert asf.normalize_ts("2026-09-17T12:00:02.500Z") == "2026-09-17T12:00:02.5Z"
    assert asf.normalize_ts("2026-09-17T12:00:02.000000Z") == "2026-09-17T12:00:02Z"
    assert asf.normalize_ts("2026-09-17T14:00:02+02:00") == "2026-09-17T12:00:02Z"
    assert asf.normalize_ts("2026-09-17T12:00:02.123456789123Z") == "2026-09-17T12:00:02.123456789Z"
    assert asf.normalize_ts("2016-12-31T23:59:60Z") == "2016-12-31T23:59:59Z"
    assert asf.normalize_ts("2026-09-17 12:00:02.25") == "2026-09-17T12:00:02.25Z"
    assert asf.normalize_ts(1758110402) == "2025-09-17T12:00:02Z"
    assert asf.normalize_ts("yesterday") is None
    f = asf.read_asf(SESSIONS / "basic.jsonl")
    for e in f.entries:
        assert asf.normalize_ts(e.raw["ts"]) == e.raw["ts"]


def test_ijson_normalisation_records_what_changed():
    value = {"big": 9007199254740993, "s": "cut \ud83d", "ok": [1, "x"]}
    fixed, rec = asf.normalise_ijson(value)
    assert fixed == {"big": 9007199254740992, "s": "cut \ufffd", "ok": [1, "x"]}
    assert rec == [{"at": "/big", "was": "9007199254740993"}, {"at": "/s", "was": '"cut \\ud83d"'}]
    # The normalised fixture's records have exactly this shape.
    f = asf.read_asf(SESSIONS / "normalised.jsonl")
    custom = [e for e in f.entries if e.type == "custom"][0]
    assert custom.raw["normalised"] == [{"at": "/data/text", "was": '"cut \\ud83d"'}]
    entry = asf.make_entry("custom", None, "2026-01-01T00:00:00Z", {"ns": "acme", "data": fixed, "normalised": rec})
    assert asf.entry_id(entry) == entry["id"]


def test_verify_cli_exit_codes_and_json(corpus):
    ok = run_cli("verify", SESSIONS / "basic.jsonl", "--json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["ok"] is True and doc["request_hashes"] == 2
    bad = run_cli("verify", SESSIONS / "truncated.jsonl")
    assert bad.returncode == 1
    assert "asf.truncated-final-line" in bad.stdout
    # Every negative fixture prints its diagnostics (a file-and-line location) and exits 1.
    for name, code in NEGATIVE.items():
        proc = run_cli("verify", SESSIONS / f"{name}.jsonl")
        assert proc.returncode == 1 and code in proc.stdout, (name, proc.stdout, proc.stderr)
        assert f"{name}.jsonl" in proc.stdout.splitlines()[1]
    missing = run_cli("verify", SESSIONS / "no-such-file.jsonl")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    ctx = run_cli("verify", SESSIONS / "compaction.jsonl", "--json", "--context", "main")
    assert json.loads(ctx.stdout)["context"]["settings"] == {"model": "gpt-5-nano"}


def test_reader_reports_unreadable_and_empty_input(tmp_path):
    f = asf.read_asf(tmp_path / "absent.jsonl")
    assert [d.code for d in f.diagnostics] == ["asf.unreadable"]
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    g = asf.read_asf(empty)
    assert any(d.code == "asf.header-invalid" for d in asf.verify(g))
    assert asf.write_asf(g) == b""


def test_linear_request_walker_agrees_with_the_context_algorithm(corpus):
    """verify's linear request hashing equals the normative rebuild everywhere."""
    compared = 0
    for path in sorted(SESSIONS.glob("*.jsonl")):
        f = asf.read_asf(path)
        if f.version is None or f.version[1] > asf.FORMAT_MINOR:
            continue
        for leaf in f.leaves():
            p = f.path_to(leaf)
            if not p or p[0].parent is not None:
                continue
            walker = asf.RequestWalker()
            for e in p:
                if e.type == "response" and walker.path:
                    fast = walker.hash_for(e.obj.get("response_id"))
                    slow = asf.request_context(f, e)
                    if fast is not None and slow is not None:
                        assert fast == asf.request_hash(slow.request()), (path.name, e.line)
                        compared += 1
                walker.feed(e)
    assert compared >= 40


#: Expected ATIF exports written before total_steps counted model calls (see corpus README, version skew).
_OLD_TOTAL_STEPS = {"basic", "runs"}


@pytest.mark.parametrize("path", sorted((TESTDATA / "export").glob("*.json")), ids=lambda p: p.stem)
def test_atif_projection_matches_the_expected_exports(corpus, path):
    import atif as atif_pkg

    from trajkit.export import to_atif

    name = path.name.split(".")[0]
    expected = json.loads(path.read_text())
    f = asf.read_asf(SESSIONS / f"{name}.jsonl")
    leaf = expected["trajectory_id"]
    if leaf not in f.by_id:
        leaf = f.legacy_index()[leaf].id
    doc = to_atif.project(f, leaf)
    atif_pkg.Trajectory.model_validate(doc)
    assert doc["session_id"] == expected["session_id"]
    assert doc["agent"].get("model_name") == expected["agent"].get("model_name")
    calls = lambda d: [(tc["tool_call_id"], tc["function_name"], tc["arguments"]) for s in d["steps"] for tc in s.get("tool_calls") or []]
    assert calls(doc) == calls(expected)
    results = lambda d: [(r.get("source_call_id"), r.get("content")) for s in d["steps"] for r in (s.get("observation") or {}).get("results", []) if r.get("source_call_id")]
    assert results(doc) == results(expected)
    fm, efm = doc["final_metrics"], expected["final_metrics"]
    for k in ("total_prompt_tokens", "total_completion_tokens", "total_cached_tokens"):
        assert fm.get(k, 0) == efm.get(k, 0), k
    if name not in _OLD_TOTAL_STEPS:
        assert fm["total_steps"] == efm["total_steps"]
    agent = lambda d: [(s.get("message"), s.get("reasoning_content")) for s in d["steps"] if s["source"] == "agent"]
    # trajkit keeps the whole path (the reference shows the context after the
    # last compaction), so the expected agent steps are the tail of ours.
    assert agent(doc)[len(agent(doc)) - len(agent(expected)):] == agent(expected)
    if not any(e.type == "compaction" for e in f.path_to(leaf)):
        assert agent(doc) == agent(expected)


@pytest.mark.parametrize("name", POSITIVE)
def test_every_positive_fixture_projects_to_valid_atif(corpus, name):
    import atif as atif_pkg

    from trajkit.export import to_atif

    f = asf.read_asf(SESSIONS / f"{name}.jsonl")
    for _, doc in to_atif.project_session(f):
        atif_pkg.Trajectory.model_validate(doc)


def test_canonical_equals_rfc8785():
    import random

    import rfc8785

    rng = random.Random(4)
    keys = ["a", "B", "é", "\ue000", "😀", "z", "0", "input", "\u2028"]

    def value(d=0):
        r = rng.random()
        if d > 3 or r < 0.3:
            return rng.choice([0, -7, 2**53 - 1, True, False, None, "x\n\"\\\u0001😀", 1.5, 1e21, -0.0, 1e-7, 100.0])
        if r < 0.65:
            return [value(d + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(keys) + str(rng.randint(0, 3)): value(d + 1) for _ in range(rng.randint(0, 5))}

    for _ in range(2000):
        v = value()
        assert asf.canonical(v) == rfc8785.dumps(v)


@pytest.mark.parametrize("name", ["basic", "legacy"])
def test_agenteval_harness_sessions_verify(corpus, name):
    """Harness-written files (struct key order, escaped <>&) are not canonical
    lines, yet every id recomputes over the canonical form."""
    f = asf.read_asf(AGENTEVAL / f"{name}.jsonl")
    assert errors(asf.verify(f)) == []
    assert asf.write_asf(f) == (AGENTEVAL / f"{name}.jsonl").read_bytes()


def test_fuzz_entry_is_reported_not_raised(corpus):
    """The Go fuzz corpus entry: a header with mis-cased keys, then junk."""
    import ast

    text = (TESTDATA / "fuzz" / "FuzzScanRead" / "b95f73428d24e88f").read_text()
    literal = text.split("[]byte(", 1)[1].rsplit(")", 1)[0]
    data = ast.literal_eval(literal).encode()
    f = asf.read_asf(data)
    codes = {d.code for d in asf.verify(f)}
    # JSON member names are case-sensitive: no format, created_at or payload.
    assert "asf.header-invalid" in codes and "asf.truncated-final-line" in codes
    assert f.entries == [] and f.header["type"] == "session"
    assert asf.write_asf(f) == data
