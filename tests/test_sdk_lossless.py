"""Lossless: every JSON file in the shared corpus, decoded into a view and
encoded again, is the same JSON value, and byte-identical for the SDK's own
compact files (events, base_state.json, meta.json)."""

from __future__ import annotations

from pathlib import Path

import orjson

from trajkit.formats.openhands_sdk import find_sessions, read
from trajkit.formats.openhands_sdk.views import ObjectView, StateView, encode, view


def _views_of(value):
    if isinstance(value, dict) and isinstance(value.get("kind"), str):
        return view(value)
    return ObjectView(value)


def test_every_corpus_json_file_round_trips(corpus: Path):
    files = sorted(corpus.rglob("*.json"))
    assert len(files) > 200
    compact = 0
    for f in files:
        data = f.read_bytes()
        value = orjson.loads(data)
        out = encode(_views_of(value))
        assert orjson.loads(out) == value, f
        sdk_file = "openhands_v1" in f.parts and (f.parent.name == "events" or f.name in ("base_state.json", "meta.json")) and "certifier_fixtures" not in f.parts
        if sdk_file:
            assert out == data, f"{f}: not byte-identical"
            compact += 1
    assert compact >= 80


def test_reader_keeps_every_event_and_state_untouched(corpus: Path):
    for conv in find_sessions(corpus / "openhands_v1"):
        s = read(conv)
        for sess in s.walk():
            for e in sess.events:
                assert encode(e.raw) == Path(e.ref.path).read_bytes() or orjson.loads(Path(e.ref.path).read_bytes()) == e.raw
            state = Path(sess.source_path) / "base_state.json"
            assert orjson.loads(state.read_bytes()) == sess.metadata["state"]
            assert StateView(sess.metadata["state"]).raw is sess.metadata["state"]
