"""Hostile input that is valid enough to be read: deep nesting, huge integers,
duplicate keys, terminal escapes, bad Unicode, non-finite numbers in ASF, an
unreadable parent shared by thousands of events (issue 16 items 10, 11, 21-25),
and the ``verify``/``detect``/``make demo`` defects of issue 14 (items 2, 6, 8).

Every case builds its input from a shipped example or the shared corpus,
runs the real CLI in a subprocess, and checks the outcome against the raw
files (never against trajkit's own reader): no traceback, a located
diagnostic with a stable code, and output that keeps the data.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from trajkit import jsonio
from trajkit.formats import openhands_sdk
from trajkit.reading import io as read_io

from conftest import REPO, run_cli

SDK_EXAMPLE = REPO / "examples" / "openhands-sdk-conversation"
V0_EXAMPLE = REPO / "examples" / "openhands-v0-trial"
EDGE = REPO / "tests" / "fixtures" / "export" / "v0_edge_cases.json"


def _sdk_copy(tmp_path: Path, name: str = "conv") -> Path:
    dst = tmp_path / name
    shutil.copytree(SDK_EXAMPLE, dst)
    return dst


def _event_file(conv: Path, index: int) -> Path:
    return next((conv / "events").glob(f"event-{index:05d}-*.json"))


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "Error:" not in proc.stderr.replace("error[", ""), proc.stderr[-3000:]


# ---------------------------------------------------------------- item 10: deep nesting


DEPTH = 1000


def _deep_conversation(tmp_path: Path) -> tuple[Path, Path]:
    conv = _sdk_copy(tmp_path)
    f = _event_file(conv, 1)
    text = f.read_text()
    assert text.endswith("}")
    f.write_text(text[:-1] + ',"deep":' + "[" * DEPTH + "]" * DEPTH + "}")
    return conv, f


def test_event_nested_1000_levels_is_read_exported_and_verified(tmp_path):
    conv, f = _deep_conversation(tmp_path)
    steps = run_cli("steps", "--json", conv)
    assert steps.returncode == 0, steps.stderr
    doc = json.loads(steps.stdout)
    deep = [d for d in doc["diagnostics"] if d["code"] == "json.too-deep"]
    assert len(deep) == 1 and deep[0]["file"] == str(f)
    for args in (["steps", conv], ["show", conv], ["context", conv], ["normalize", conv, "--out", tmp_path / "norm"]):
        proc = run_cli(*args)
        assert proc.returncode == 0, (args, proc.stderr[-2000:])
        _no_traceback(proc)
    cert = run_cli("certify", conv, "--json")
    assert cert.returncode in (0, 1) and json.loads(cert.stdout)["state"], cert.stderr[-2000:]
    for target in ("asf", "atif"):
        out = tmp_path / target
        proc = run_cli("convert", conv, "--to", target, "--out", out)
        assert proc.returncode == 0, proc.stderr[-2000:]
        _no_traceback(proc)
    ver = run_cli("verify", tmp_path / "asf")
    assert ver.returncode == 0, ver.stdout + ver.stderr


def test_deep_value_below_the_limit_is_kept_as_its_exact_json_text():
    data = b'{"a":' + b"[" * DEPTH + b"1" + b"]" * DEPTH + b"}"
    value, d = jsonio.loads(data, "x.json")
    assert d is not None and d.code == "json.too-deep" and d.file == "x.json"
    node = value["a"]
    for _ in range(jsonio.MAX_DEPTH - 1):
        assert isinstance(node, list) and len(node) == 1
        node = node[0]
    # level MAX_DEPTH holds the rest as text, exactly the bytes that were there
    rest = DEPTH - (jsonio.MAX_DEPTH - 1)
    assert node == "[" * rest + "1" + "]" * rest
    assert jsonio.dumps(value)  # and it writes back


def test_asf_line_nested_too_deep_is_a_located_error(tmp_path):
    out = tmp_path / "asf"
    run_cli("convert", SDK_EXAMPLE, "--to", "asf", "--out", out, check=True)
    src = sorted(out.glob("*.jsonl"))[0]
    lines = src.read_text().splitlines()
    obj = json.loads(lines[2])
    obj["x-deep"] = "@@"
    lines[2] = json.dumps(obj).replace('"@@"', "[" * DEPTH + "]" * DEPTH)
    bad = tmp_path / "deep.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    proc = run_cli("verify", bad, "--json")
    assert proc.returncode == 1, proc.stderr[-2000:]
    _no_traceback(proc)
    diags = json.loads(proc.stdout)["diagnostics"]
    assert any(d["code"] == "asf.too-deep" and d["line"] == 3 for d in diags)


# ---------------------------------------------------------------- item 11a: unreadable parent


def test_events_sharing_an_unreadable_parent_link_to_the_event_read_before_it(tmp_path):
    conv = _sdk_copy(tmp_path)
    template = json.loads(_event_file(conv, 1).read_text())
    names = sorted(p.name for p in (conv / "events").glob("event-*.json"))
    lost_name = names[3]
    lost_id = lost_name.split("-", 2)[2][:-5]
    before_id = names[2].split("-", 2)[2][:-5]
    (conv / "events" / lost_name).write_text('{"id": "cut')  # unreadable
    # 300 more events, each naming the lost event as parent
    n0 = len(names)
    added = []
    for k in range(300):
        eid = str(uuid.UUID(int=k + 1))
        ev = dict(template, id=eid, parent_id=lost_id)
        (conv / "events" / f"event-{n0 + k:05d}-{eid}.json").write_text(json.dumps(ev))
        added.append(eid)
    state = json.loads((conv / "base_state.json").read_text())
    state.pop("leaf_event_id", None)
    (conv / "base_state.json").write_text(json.dumps(state))
    s = openhands_sdk.read(conv)
    by_id = {e.id: e for e in s.events}
    for eid in added:
        assert by_id[eid].extra.get("effective_parent_id") == before_id
    assert sum(d.code == "sdk.parent-unreadable" for d in s.diagnostics) >= 300


# ---------------------------------------------------------------- item 21: terminal escapes

OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
C1 = "\x9b31m"


def _escaped_conversation(tmp_path: Path) -> Path:
    conv = _sdk_copy(tmp_path)
    f = _event_file(conv, 1)
    ev = json.loads(f.read_text())
    ev["llm_message"]["content"][0]["text"] = f"Create hello.txt{OSC52}{TITLE}{CLEAR}{C1} done\rspoof"
    f.write_text(json.dumps(ev))
    state = json.loads((conv / "base_state.json").read_text())
    state["agent"]["llm"]["model"] = f"model{OSC52}{CLEAR}"
    (conv / "base_state.json").write_text(json.dumps(state))
    return conv


@pytest.mark.parametrize("verb", ["show", "steps", "ls"])
def test_terminal_escapes_in_run_data_are_printed_escaped(tmp_path, verb):
    conv = _escaped_conversation(tmp_path)
    # piped output is COLUMNS wide: wide enough that no cell is cut
    proc = subprocess.run([*_py(), verb, str(conv)], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env=dict(os.environ, COLUMNS="400"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    # no control character but newline and tab reaches the terminal
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out), repr(out[:2000])
    if verb == "ls":
        assert "model\\x1b]52;c;" in out
    else:
        assert "\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07" in out and "\\x1b[2J" in out
        if verb == "show":
            # a lone CR is a visible escape or a line break, never a jump back over "done"
            assert "\\x9b31m done" in out and ("\\rspoof" in out or "done\n" in out)


def test_json_output_keeps_the_control_characters_exactly(tmp_path):
    conv = _escaped_conversation(tmp_path)
    proc = run_cli("steps", "--json", conv)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["task"].startswith(f"Create hello.txt{OSC52}{TITLE}{CLEAR}{C1}")


# ---------------------------------------------------------------- item 22: bad Unicode


def test_lone_surrogates_in_a_run_do_not_crash_any_verb(tmp_path):
    raw = EDGE.read_text()
    assert "\\ud83d" in raw  # a lone high surrogate, written as a JSON escape
    proc = run_cli("steps", "--json", EDGE)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)  # valid JSON; the surrogate comes back as written
    assert any(d["code"] == "json.nonstandard" and "surrogate" in d["message"] for d in doc["diagnostics"])
    want = [e for e in json.loads(raw) if isinstance(e, dict)]
    assert len(doc["steps"]) == 2 and want
    for args in (["show", EDGE], ["steps", EDGE], ["normalize", EDGE, "--out", tmp_path / "n"], ["certify", EDGE, "--json"], ["detect", "--json", EDGE]):
        p = run_cli(*args)
        assert p.returncode in (0, 1), (args, p.stderr[-2000:])
        _no_traceback(p)
    steps = json.loads((tmp_path / "n" / "steps.json").read_text())
    assert len(steps) == 2


def test_non_utf8_file_names_are_output_escaped_with_a_diagnostic(tmp_path):
    base = os.fsencode(tmp_path)
    conv = os.fsdecode(base + b"/conv\xfe")
    shutil.copytree(SDK_EXAMPLE, conv)
    trial = os.fsdecode(base + b"/tr\xffial")
    shutil.copytree(V0_EXAMPLE, trial)
    for run in (conv, trial):
        proc = subprocess.run([*_py(), "steps", "--json", run], capture_output=True, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
        proc.stdout.decode("utf-8")  # strict: valid UTF-8
        doc = json.loads(proc.stdout)
        assert doc["source_path"] == run  # \udcXX escape decodes back to the same name
        bad = [d for d in doc["diagnostics"] if d["code"] == "path.not-utf8"]
        assert len(bad) == 1 and bad[0]["file"] == run
        for args in (["show", run], ["steps", run], ["detect", run], ["detect", "--json", run], ["certify", "--json", run],
                     ["normalize", run, "--out", os.path.join(tmp_path, "out-" + str(len(run)))]):
            p = subprocess.run([*_py(), *args], capture_output=True, timeout=300)
            assert p.returncode in (0, 1), (args, p.stderr.decode(errors="replace")[-2000:])
            assert b"Traceback" not in p.stderr
            p.stdout.decode("utf-8")
            if "--json" in args:
                json.loads(p.stdout)


def _py() -> list[str]:
    import sys

    return [sys.executable, "-m", "trajkit"]


# ---------------------------------------------------------------- item 23: huge integers

BIG = "123456789012345678901234567890"


def test_huge_integer_is_kept_exact_and_flagged_through_to_the_exports(tmp_path):
    conv = _sdk_copy(tmp_path)
    f = _event_file(conv, 1)
    text = f.read_text()
    f.write_text(text[:-1] + f',"x_count":{BIG},"x_neg":-{BIG}' + "}")
    s = openhands_sdk.read(conv)
    ev = next(e for e in s.events if e.raw.get("x_count") is not None)
    assert ev.raw["x_count"] == int(BIG) and type(ev.raw["x_count"]) is int and ev.raw["x_neg"] == -int(BIG)
    flagged = [d for d in s.diagnostics if d.code == "json.big-integer"]
    assert len(flagged) == 1 and flagged[0].file == str(f) and BIG in flagged[0].message
    # --json output keeps the digits
    proc = run_cli("steps", "--json", conv)
    assert proc.returncode == 0 and BIG in proc.stdout
    # ATIF and ASF: the exact value survives (ASF records the I-JSON rounding with the value it was)
    run_cli("convert", conv, "--to", "atif", "--out", tmp_path / "atif", check=True)
    run_cli("convert", conv, "--to", "asf", "--out", tmp_path / "asf", check=True)
    atif = "".join(p.read_text() for p in (tmp_path / "atif").glob("*.json"))
    asf = "".join(p.read_text() for p in (tmp_path / "asf").glob("*.jsonl"))
    # ASF keeps the native event (I-JSON rounds it; `normalised` records what it was)
    assert f'"was":"{BIG}"' in asf, "ASF lost the exact integer"
    # elsewhere the rounded float is never passed off as the value
    for text in (atif, proc.stdout):
        assert "1.2345678901234568e" not in text and "1.2345678901234568E" not in text
    assert run_cli("verify", tmp_path / "asf").returncode == 0


def test_integers_orjson_keeps_are_not_flagged():
    for text in (b'{"a":18446744073709551615}', b'{"a":-9223372036854775808}'):
        value, d = jsonio.loads(text)
        assert d is None and value["a"] == int(text[5:-1]), (text, d)
    value, d = jsonio.loads(b'{"a":18446744073709551616}')
    assert value == {"a": 18446744073709551616} and d is not None and d.code == "json.big-integer"
    # a string of digits is not an integer: suspicion, then nothing found
    value, d = jsonio.loads(b'{"a":"123456789012345678901234567890"}')
    assert value == {"a": BIG} and d is None


# ---------------------------------------------------------------- item 24: duplicate keys


def test_duplicate_command_members_are_flagged_with_a_location(tmp_path):
    conv = _sdk_copy(tmp_path)
    # the first action event: two different `command` members in its action
    f = next(p for p in sorted((conv / "events").iterdir()) if '"kind":"ActionEvent"' in p.read_text())
    text = f.read_text()
    i = text.index('"command":')
    dup = '"command":"rm -rf / --no-preserve-root",'
    f.write_text(text[:i] + dup + text[i:])
    second = text[:i].encode().__len__() + len(dup.encode())
    s = openhands_sdk.read(conv)
    flagged = [d for d in s.diagnostics if d.code == "json.duplicate-key"]
    assert len(flagged) == 1, [str(d) for d in s.diagnostics]
    d = flagged[0]
    assert d.file == str(f) and "'command'" in d.message and d.offset == second
    assert d.severity == "warning"


def test_duplicate_keys_in_json_lines_and_flat_exports_are_located(tmp_path):
    lines = b'{"a":1}\n{"b":2,"x":{"b":3},"b":4}\n'
    diags: list = []
    got = [jl.value for jl in read_io.iter_jsonl(lines, "t.jsonl", diags)]
    assert got == [{"a": 1}, {"b": 4, "x": {"b": 3}}]
    assert [(d.code, d.line, d.offset) for d in diags] == [("json.duplicate-key", 2, 8 + lines[8:].index(b'"b":4'))]
    # spaced-out or escaped spellings of the same key are still caught
    for text in (b'{"cmd":"ls","x":{"cmd":1},"c\\u006dd" : "rm"}', b'{"cmd":"ls","x":"a\\u003ab","cmd" : "rm"}',
                 b'{\n  "cmd": "ls",\n  "cmd": "rm"\n}'):
        value, d = jsonio.loads(text)
        assert d is not None and d.code == "json.duplicate-key", text


def test_the_duplicate_key_check_passes_clean_input_without_a_second_decode(corpus):
    # Every JSON file of the shared corpus: the cheap check says "nothing odd"
    # for each file the standard library decodes to the same value with no
    # duplicate key, no integer beyond 64 bits and no deep nesting.
    seen = 0
    for p in sorted(corpus.rglob("*.json")):
        data = p.read_bytes()
        try:
            import orjson

            value = orjson.loads(data)
        except ValueError:
            continue
        pairs_dup = []

        def hook(items, pairs_dup=pairs_dup):
            if len({k for k, _ in items}) != len(items):
                pairs_dup.append(items)
            return dict(items)

        std = json.loads(data, object_pairs_hook=hook)
        if not pairs_dup and std == value:
            got, d = jsonio.loads(data, str(p))
            assert d is None or d.code == "json.big-integer", (p, d)
            seen += 1
    assert seen > 50


# ---------------------------------------------------------------- item 25: Infinity in ASF


@pytest.mark.parametrize("number", ["1e999999", "-1e999999", "NaN", "Infinity"])
def test_non_finite_number_in_an_asf_line_is_a_located_error(tmp_path, number):
    out = tmp_path / "asf"
    run_cli("convert", SDK_EXAMPLE, "--to", "asf", "--out", out, check=True)
    src = sorted(out.glob("*.jsonl"))[0]
    lines = src.read_bytes().split(b"\n")
    lines[3] = lines[3][:-1] + b',"x-inf":' + number.encode() + b"}"
    bad = tmp_path / "inf.jsonl"
    bad.write_bytes(b"\n".join(lines))
    proc = run_cli("verify", bad, "--json")
    assert proc.returncode == 1, proc.stderr[-2000:]
    _no_traceback(proc)
    diags = json.loads(proc.stdout)["diagnostics"]
    hit = [d for d in diags if d["code"] == "asf.non-finite-number"]
    assert len(hit) == 1 and hit[0]["line"] == 4 and number in hit[0]["message"]


# ---------------------------------------------------------------- issue 14 item 2: verify


def test_verify_a_folder_verifies_every_asf_file_in_it(tmp_path):
    out = tmp_path / "asf"
    run_cli("convert", SDK_EXAMPLE, "--to", "asf", "--out", out, check=True)
    files = sorted(out.glob("*.jsonl"))
    assert len(files) == 2
    proc = run_cli("verify", out, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    docs = json.loads(proc.stdout)
    assert [d["file"] for d in docs] == [str(f) for f in files] and all(d["ok"] for d in docs)
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli("verify", empty)
    assert proc.returncode == 2 and "no ASF session files" in proc.stderr and "no such file" not in proc.stderr
    proc = run_cli("verify", tmp_path / "absent")
    assert proc.returncode == 2 and "no such file or directory" in proc.stderr


def test_verify_says_in_one_line_what_a_non_asf_file_is(tmp_path):
    png = tmp_path / "img.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    run_cli("convert", V0_EXAMPLE, "--to", "atif", "--out", tmp_path / "atif", check=True)
    atif = next((tmp_path / "atif").glob("*.json"))
    assert len(atif.read_text().splitlines()) > 20  # pretty-printed
    flat = next((V0_EXAMPLE / "sessions").glob("*.json"))
    trace = tmp_path / "trace.jsonl"  # a rollout trace in JSON Lines: one record per line
    trace.write_text("".join(json.dumps(r) + "\n" for r in json.loads((REPO / "examples" / "rollout" / "trace.json").read_text())))
    cases = {png: "a PNG image", atif: "a JSON document (looks like ATIF", flat: "looks like openhands-v0",
             trace: "JSON Lines whose first object is not a session header"}
    for f, want in cases.items():
        proc = run_cli("verify", f)
        assert proc.returncode == 1, (f, proc.stderr)
        lines = proc.stdout.splitlines()
        assert len(lines) == 1 and "not ASF JSON Lines" in lines[0] and want in lines[0], (f, proc.stdout)
        assert "None" not in lines[0]
        doc = json.loads(run_cli("verify", f, "--json").stdout)
        assert doc["ok"] is False and doc["asf"] is False and want in doc["looks_like"]


# ---------------------------------------------------------------- issue 14 item 6: detect


def test_detect_nonexistent_says_no_such_file():
    proc = run_cli("detect", "/nonexistent/trajkit-path")
    assert proc.returncode == 2 and "no such file or directory" in proc.stderr and "no known format" not in proc.stdout + proc.stderr


def test_detect_why_stops_after_the_strong_match_and_says_why_sniffs_reject(tmp_path):
    trial = tmp_path / "t"
    shutil.copytree(V0_EXAMPLE, trial)
    proc = run_cli("detect", "--why", trial)
    assert proc.returncode == 0
    considered = [ln for ln in proc.stdout.splitlines() if ln.startswith("  considered")]
    # nothing above the trial once it matched strongly
    assert considered and all(f" at {trial}" in ln for ln in considered), proc.stdout
    other = tmp_path / "x" / "notes.json"
    other.parent.mkdir()
    other.write_text('{"a": 1}')
    proc = run_cli("detect", "--why", other)
    assert proc.returncode == 2
    rejected = [ln for ln in proc.stdout.splitlines() if "sniff-rejected" in ln]
    assert rejected and all(re.search(r"sniff-rejected \(.+\)$", ln) for ln in rejected), proc.stdout


def test_detection_does_not_climb_to_an_unrelated_stray_base_state(tmp_path):
    climb = tmp_path / "climb"
    (climb / "deep" / "er" / "path").mkdir(parents=True)
    shutil.copy(SDK_EXAMPLE / "base_state.json", climb / "base_state.json")
    data = climb / "deep" / "er" / "path" / "data.json"
    data.write_text('{"a": 1}')
    proc = run_cli("detect", "--why", data)
    assert proc.returncode == 2 and "no known format" in proc.stdout, proc.stdout
    assert re.search(rf"openhands-sdk .* at {re.escape(str(climb))}: fingerprint 'base_state.json' unrelated", proc.stdout)
    assert run_cli("steps", data).returncode == 2
    # a file of the conversation itself, or an events/ path, still finds it
    (climb / "events").mkdir()
    for ev in (SDK_EXAMPLE / "events").iterdir():
        shutil.copy(ev, climb / "events" / ev.name)
    for p in (climb / "TASKS.json", climb / "events"):
        if p.suffix:
            p.write_text('{"tasks": []}')
        det = json.loads(run_cli("detect", "--json", p).stdout)
        assert det["format"] == "openhands-sdk" and det["root"] == str(climb)


# ---------------------------------------------------------------- issue 14 item 8: make demo


def test_make_demo_installs_the_core_only_and_make_test_the_dev_extras(tmp_path):
    env = dict(os.environ, VENV=str(tmp_path / "venv"))
    demo = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], capture_output=True, text=True, cwd=REPO, env=env)
    assert demo.returncode == 0, demo.stderr
    installs = [ln for ln in demo.stdout.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]
    assert installs == [f"{tmp_path / 'venv'}/bin/pip install -q -e ."], demo.stdout
    assert "trajkit detect examples/openhands-v0-trial" in demo.stdout
    test = subprocess.run(["make", "-n", "test", f"VENV={tmp_path / 'venv'}"], capture_output=True, text=True, cwd=REPO, env=env)
    installs = [ln for ln in test.stdout.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]
    assert installs == [f"{tmp_path / 'venv'}/bin/pip install -q -e '.[dev]'"], test.stdout
    assert "pytest" in test.stdout


def test_the_codes_these_checks_emit_are_documented():
    src = REPO / "src" / "trajkit"
    used: set[str] = set()
    for f in (src / "jsonio.py", src / "registry.py", *sorted((src / "spec" / "asf").glob("*.py"))):
        used |= set(re.findall(r'"((?:json|jsonl|file|path|detect|asf)\.[a-z0-9-]+)"', f.read_text()))
    doc = (REPO / "docs" / "diagnostics.md").read_text() + (REPO / "docs" / "export.md").read_text()
    documented = set(re.findall(r"^\| `([a-z]+\.[a-z0-9-]+)` \|", doc, re.M))
    assert {"json.big-integer", "json.duplicate-key", "json.too-deep", "path.not-utf8", "asf.non-finite-number", "asf.too-deep"} <= used
    assert used - documented == set()
