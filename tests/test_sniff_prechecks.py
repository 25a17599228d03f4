"""The byte-level prechecks of the sniffs say "no" only where the full sniff says no.

Codex (:func:`~trajkit.formats.codex.detect.may_have_shape`), Gemini CLI
(``_may_match``) and the OpenHands Cloud sniff (``_may_be_cloud``) turn most
files of other harnesses away with a few searches of the head's bytes instead
of decoding its lines. Each precheck must be a necessary condition: with it
forced to "maybe" (the sniff then decodes as it did before the precheck), every
file of the shared corpus, the format fixtures and a set of hand-made hard cases
(keys spelled with ``\\u`` escapes, odd spacing, cut heads, binary, empty,
a BOM, a file that looks like two formats) gets the same Match or Reject, with
the same reason.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from conftest import CORPUS, REPO
from trajkit.formats.codex import detect as codex_detect
from trajkit.formats.gemini_cli import detect as gemini_detect
from trajkit.formats.opencode import layout as opencode_layout
from trajkit.formats.opencode import sniff as opencode_sniff
from trajkit.formats.openhands_eval import detect as eval_detect
from trajkit.reading.probe import NOT_DECODED, HeadLines, Probe, has_u_escape
from trajkit.registry import Match, Reject

SUFFIXES = (".json", ".jsonl", ".txt", ".log", ".traj")


def _files() -> list[Path]:
    out = []
    for base in (CORPUS, REPO / "src" / "trajkit" / "formats" / "fixtures", REPO / "tests" / "fixtures", REPO / "examples"):
        for d, _dirs, files in os.walk(base):
            out += [Path(d) / f for f in sorted(files) if f.endswith(SUFFIXES)]
    return sorted(out)


def _line(obj: object) -> bytes:
    return orjson.dumps(obj)


#: name -> bytes: files that stress each precheck (what each must still find, or still turn away).
HARD: dict[str, bytes] = {
    # codex: every shape, plain, with spaces, with \u-spelled keys and values, and lines that only look close
    "rollout.jsonl": _line({"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}) + b"\n",
    "rollout-spaced.jsonl": b'{"timestamp": "t",  "type" :\t"response_item", "payload": {}}\n',
    "rollout-escaped-type.jsonl": b'{"timestamp": "t", "type": "sessi\\u006fn_meta", "payload": {}}\n',
    "rollout-escaped-key.jsonl": b'{"timestamp": "t", "t\\u0079pe": "turn_context", "payload": {}}\n',
    "rollout-late.jsonl": b"".join(_line({"type": "session", "n": i}) + b"\n" for i in range(30))
    + _line({"type": "event_msg", "payload": {}}) + b"\n",
    "exec.jsonl": b'{"type":"thread.started","thread_id":"a"}\n{"type":"turn.started"}\n',
    "exec-error.jsonl": b'{"type": "error", "message": "boom"}\n',
    "exec-legacy.jsonl": b'{"id": "0", "msg": {"type": "task_started"}}\n',
    "exec-legacy-escaped.jsonl": b'{"id": "0", "\\u006dsg": {"type": "task_started"}}\n',
    "state.jsonl": b'{"record_type": "state", "x": 1}\n',
    "payload-only.jsonl": b'{"type": "session", "payload": "openresponses/x", "format": "agentsession/0.11"}\n',
    "error-value.jsonl": b'{"type": "message", "status": "error"}\n{"note": "msg"}\n',
    "cut-rollout.jsonl": b'{"type": "session_meta", "payload": {"id": "x"',
    # gemini: a session object, a JSONL log, messages only, escaped keys, another harness's user lines
    "session-g.json": _line({"sessionId": "s", "projectHash": "h", "messages": [{"type": "user", "content": "hi"}]}),
    "session-g.jsonl": _line({"sessionId": "s", "projectHash": "h", "startTime": "t"}) + b"\n"
    + _line({"id": "1", "type": "user", "content": [{"text": "hi"}]}) + b"\n",
    "gemini-damaged-first.jsonl": b"{not json\n" + _line({"id": "1", "type": "gemini", "content": "x"}) + b"\n",
    "gemini-user-only.jsonl": b'{bad\n{"id": "1", "type" :  "user", "content": "x"}\n',
    "gemini-escaped-hash.jsonl": b'{"sessionId": "s", "projectH\\u0061sh": "h"}\n',
    "gemini-messages.json": b'{"messages": [{"type":"gemini","content":"x"}]}',
    "claude-like.jsonl": _line({"type": "user", "sessionId": "s", "uuid": "u", "message": {"role": "user", "content": "x"}}) + b"\n",
    "user-not-type.jsonl": b'{"role": "user", "content": "x", "id": "1"}\n',
    # OpenHands Cloud: small and large exports, escaped keys, one key only
    "cloud.json": _line({"conversation": {"id": "c"}, "events": []}),
    "cloud-escaped.json": b'{"c\\u006fnversation": {"id": "c"}, "events": []}',
    "cloud-big.json": b'{"conversation": {"id": "c"}, "events": [' + b",".join([b'{"x": "' + b"a" * 200 + b'"}'] * 400) + b"]}",
    "cloud-events-only.json": _line({"events": [], "title": "conversation"}),
    # opencode: an event stream, an export, an export after the CLI's "Exporting session" line; near misses
    "opencode-events.jsonl": b'{"type":"step_start","timestamp":1,"sessionID":"ses_1","part":{"id":"p"}}\n',
    "opencode-export.json": b'{"info": {"id": "ses_1"}, "messages": [{"info": {"role": "user"}, "parts": []}]}',
    "opencode-export-captured.txt": b'Exporting session: ses_1\n{"info": {}, "messages": [{"info": {"role": "user"}, "parts": [{"type": "text"}]}]}',
    "opencode-near.json": b'{"info": {}, "messages": [], "partial": true, "role": "user"}',
    "opencode-events-late.jsonl": b'{"type":"text","sessionID":"s"' + b' ' * 5000 + b',"part":{}}\n',
    # no JSON at all, or nothing
    "binary.jsonl": bytes(range(256)) * 4,
    "empty.jsonl": b"",
    "blank.jsonl": b" \n\t\n",
    "bom.jsonl": b"\xef\xbb\xbf" + _line({"type": "session_meta", "payload": {}}) + b"\n",
    "bom-gemini.json": b"\xef\xbb\xbf" + _line({"sessionId": "s", "projectHash": "h", "messages": []}),
    "backslash-no-u.jsonl": b'{"type": "message", "text": "a\\nb\\\\c"}\n',
    "two-formats.jsonl": _line({"type": "response_item", "payload": {}, "sessionId": "s", "projectHash": "h"}) + b"\n",
}


def _outcome(m: Match | Reject | None) -> tuple:
    if isinstance(m, Match):
        return ("match", str(m.root), m.fingerprint, m.strength, m.reason)
    return ("reject", m.reason if m is not None else None)


CASES = [
    (codex_detect, "may_have_shape", codex_detect.sniff, "*.jsonl"),
    (gemini_detect, "_may_match", gemini_detect.sniff, "*.json"),
    (eval_detect, "_may_be_cloud", eval_detect.sniff_cloud, "*.json"),
    (opencode_layout, "_may_be_opencode", opencode_sniff, "*.json"),
]


def _paths(tmp: Path) -> list[Path]:
    for name, data in HARD.items():
        (tmp / name).write_bytes(data)
    return _files() + [tmp / n for n in HARD]


@pytest.mark.parametrize("module,precheck,sniff,fp", CASES, ids=[c[1] for c in CASES])
def test_precheck_never_changes_the_answer(tmp_path, monkeypatch, corpus, module, precheck, sniff, fp):
    paths = _paths(tmp_path)
    fast = [_outcome(sniff(Probe(), p, fp)) for p in paths]
    monkeypatch.setattr(module, precheck, lambda head: True)
    slow = [_outcome(sniff(Probe(), p, fp)) for p in paths]
    assert len(paths) > 600
    diff = [(str(p), f, s) for p, f, s in zip(paths, fast, slow) if f != s]
    assert diff == []
    # the hard cases meant to match still do, through the precheck
    hard = dict(zip([p.name for p in paths[-len(HARD):]], fast[-len(HARD):]))
    expect = {
        "may_have_shape": ["rollout.jsonl", "rollout-spaced.jsonl", "rollout-escaped-type.jsonl", "rollout-escaped-key.jsonl",
                           "rollout-late.jsonl", "exec.jsonl", "exec-error.jsonl", "exec-legacy.jsonl",
                           "exec-legacy-escaped.jsonl", "state.jsonl", "two-formats.jsonl"],  # a BOM hides a line from codex
        "_may_match": ["session-g.json", "session-g.jsonl", "gemini-damaged-first.jsonl", "gemini-user-only.jsonl",
                       "gemini-escaped-hash.jsonl", "gemini-messages.json", "bom-gemini.json", "two-formats.jsonl"],
        "_may_be_cloud": ["cloud.json", "cloud-escaped.json", "cloud-big.json"],
        "_may_be_opencode": ["opencode-events.jsonl", "opencode-export.json", "opencode-export-captured.txt"],
    }[precheck]
    assert sorted(n for n, o in hard.items() if o[0] == "match") == sorted(expect)


@pytest.mark.parametrize("module,precheck,sniff,fp", CASES, ids=[c[1] for c in CASES])
def test_precheck_turns_most_other_files_away(tmp_path, corpus, module, precheck, sniff, fp):
    """The precheck is what makes the sniff cheap: on the files it rejects it
    must say no by itself, for most of the corpus files the sniff rejects."""
    paths = _paths(tmp_path)
    rejected = [p for p in paths if _outcome(sniff(Probe(), p, fp))[0] == "reject"]
    heads = [Probe().head(p, 1 << 16) for p in rejected]
    said_no = sum(1 for h in heads if not getattr(module, precheck)(h.removeprefix(b"\xef\xbb\xbf")))
    assert said_no > len(rejected) // 2


def test_codex_precheck_agrees_with_the_line_decode(tmp_path, corpus):
    """Where ``may_have_shape`` says no, decoding the lines finds no shape either (the reverse need not hold)."""
    for p in _paths(tmp_path):
        head = Probe().head(p, 1 << 16)
        if not codex_detect.may_have_shape(head):
            assert codex_detect.shape_of(HeadLines(head)) is None, p


def test_has_u_escape_is_the_byte_test():
    samples = [b"", b"\\", b"u", b"\\u", b"a\\u0041", b"\\\\u", b"\\n\\t", b"abc\\", b"\\x\\u", b"x" * 100 + b"\\" + b"u"]
    samples += [bytes([b]) + bytes([c]) for b in range(256) for c in (0x5C, 0x75)]
    for f in _files()[:200]:
        samples.append(f.read_bytes()[: 1 << 16])
    for s in samples:
        assert has_u_escape(s) == (b"\\u" in s), s[:40]


def _heads() -> list[bytes]:
    """Heads of every shape the line rules care about: no newline, a trailing one, a cut last line,
    blank and whitespace lines, exactly 63/64/65 lines, more than 64, a long single line, CRs."""
    row = b'{"type": "user", "message": {"content": "x"}}'
    out = [b"", b"\n", b"\n\n", row, row + b"\n", row + b"\n" + row[:10], b"  \n" + row + b"\r\n", b"x" * 70000]
    for n in (1, 2, 39, 40, 41, 63, 64, 65, 66, 200):
        lines = [row if i % 3 else b"garbage" for i in range(n)]
        body = b"\n".join(lines)
        out += [body, body + b"\n", body + b"\n" + b'{"cut', b"\n" + body]
    return out + [f.read_bytes()[: 1 << 16] for f in _files()[:150]]


def test_lines_found_lazily_are_the_split_lines():
    for data in _heads():
        parts = data.split(b"\n", 64)
        head = HeadLines(data)
        for i in range(64):
            got = head.span(i)
            if i >= len(parts) or (i == 64):
                assert got is None, (data[:30], i)
                continue
            start, end, last = got
            assert data[start:end] == parts[i]
            assert last == (i == len(parts) - 1), (data[:30], i)
        # values match a decode of the split line, whichever is asked first
        fresh = HeadLines(data)
        for i in reversed(range(min(len(parts), 64))):
            line = parts[i].strip()
            try:
                want = orjson.loads(line) if line[:1] == b"{" else "NOT"
            except orjson.JSONDecodeError:
                want = "NOT"
            v = fresh.value(i)
            assert (v if v is not NOT_DECODED else "NOT") == want
        assert fresh.parts == parts and fresh.complete == (len(parts) <= 64)


def _old_kind_of_head_rows(head: HeadLines) -> list[int]:
    """The line numbers the session-12 rule looked at (from ``parts``): the reference for the lazy loops."""
    n = len(head.parts)
    if head.complete and not head.data.endswith(b"\n") and n > 1:
        n -= 1
    return list(range(min(n, 64)))


def _old_shape_rows(head: HeadLines) -> list[int]:
    n = len(head.parts)
    if head.complete and n > 1 and len(head.data) >= 1 << 16:
        n -= 1
    return list(range(min(n, 40)))


def test_lazy_loops_look_at_the_same_lines():
    from trajkit.formats.claude_code import layout

    full = [b'{"a": 1}\n' * 8000, (b"y" * 30000 + b"\n") * 2 + b"z" * 5536, (b"y" * 30000 + b"\n") * 2 + b"z" * 5535 + b"\n"]
    assert {len(d[: 1 << 16]) for d in full[1:]} == {1 << 16}
    for data in _heads() + full:
        assert _rows_looked_at(layout.kind_of_head, data) == _old_kind_of_head_rows(HeadLines(data)), data[:40]
        assert _rows_looked_at(codex_detect.shape_of, data) == _old_shape_rows(HeadLines(data)), data[:40]


def _rows_looked_at(fn, data: bytes) -> list[int]:
    """The line numbers ``fn`` asks ``value`` for when no line decides (each answers NOT_DECODED)."""

    class Spy(HeadLines):
        __slots__ = ("asked",)

        def value(self, i):
            self.asked.append(i)
            return NOT_DECODED

    spy = Spy(data)
    spy.asked = []
    fn(spy)
    return spy.asked


def _token_soups(n: int) -> list[bytes]:
    """Byte strings made of the pieces the two regexes care about (keys, values, every kind of
    spacing, runs of it longer than a look-back window, quotes that start or end a key early)."""
    import random

    rng = random.Random(1214)
    pieces = [b'"type"', b"type", b'"user"', b"user", b'"', b":", b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b" " * 40,
              b"\t" * 33, b'"session_meta', b'"error"', b'"thread.', b"turn.", b'"item.x"', b'"event_msg"', b"x", b"{", b"}",
              b'"typ', b'e"', b'"use', b'r"', b"\\u0074", b'"content"', b'"inter_agent_communication_metadata"', b","]
    return [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(n)]


def test_the_regex_free_searches_agree_with_the_regexes(tmp_path):
    """``gemini_cli.detect._has_user_type`` and ``codex.detect._has_shape_type`` replace a regex
    search each (for speed): the same answer on random soups of the pieces the patterns are made of,
    on the hard cases and on every corpus head."""
    samples = _token_soups(30000) + list(HARD.values())
    samples += [b'"type"' + ws + b":" + ws2 + b'"user"' for ws in (b"", b" ", b" " * 31, b" " * 32, b" " * 33, b"\n" * 70)
                for ws2 in (b"", b"\t", b" " * 32, b" " * 40)]
    samples += [b"x" * k + b'"type" : "user"' for k in range(40)]
    samples += [Probe().head(p, 1 << 16) for p in _paths(tmp_path)]
    for s in samples:
        assert gemini_detect._has_user_type(s) == (gemini_detect._USER_TYPE.search(s) is not None), s[:80]
        assert codex_detect._has_shape_type(s) == (codex_detect._SHAPE_TYPE.search(s) is not None), s[:80]
    # both answers occur (the soups are not all one way)
    assert {gemini_detect._has_user_type(s) for s in samples} == {True, False}
    assert {codex_detect._has_shape_type(s) for s in samples} == {True, False}
