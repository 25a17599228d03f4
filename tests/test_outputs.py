"""Outputs are atomic and stay where they belong; secrets are flagged; the
CLI's progress, checks and width are honest (issue 16 items 17-20, 27;
issue 14 items 3-5).

Every test drives the real CLI in a subprocess (or the library where the CLI
has no seam) over copies of the shared corpus. Expected values come from the
raw files, read here with ``json`` alone.
"""

from __future__ import annotations

import json
import os
import pty
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CORPUS, REPO, run_cli

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "rl"))
import tiny_tokenizer  # noqa: E402

V0_FLAT = CORPUS / "openhands_v0" / "flat_exports" / "basic_gui_mode.json"
V0_OTHER = CORPUS / "openhands_v0" / "flat_exports" / "wrong_initial_state.json"
SUBAGENT = CORPUS / "openhands_v1" / "generated" / "localconv_subagent_confirm" / "fedcba9876543210fedcba9876543210"
TRACE = CORPUS / "opencode" / "proxy_trace_synthetic.jsonl"

VICTIM_TEXT = "the symlink's target: it must stay exactly as it is\n"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(extra)
    return env


def _cli(*args, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trajkit", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env=env or _env(), timeout=timeout)


def _answered_actions(events: list[dict]) -> int:
    """CodeTraceBench's step count, straight from a V0 flat export: actions
    that some observation names as its cause."""
    actions = {e["id"] for e in events if "action" in e}
    return len({e["cause"] for e in events if "observation" in e and e.get("cause") in actions})


def _victim(tmp_path: Path, name: str = "victim.txt") -> Path:
    v = tmp_path / name
    v.write_text(VICTIM_TEXT)
    return v


# ---------------------------------------------------------------- 17: planted symlinks

def test_normalize_never_writes_through_a_planted_symlink(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    victims = {name: _victim(tmp_path, f"victim-{name}") for name in ("steps.json", "task.md")}
    for name, v in victims.items():
        (out / name).symlink_to(v)
    r = _cli("normalize", V0_FLAT, "--out", out)
    assert r.returncode == 0, r.stderr
    for name, v in victims.items():
        assert v.read_text() == VICTIM_TEXT, f"{name}: the symlink's target was written"
        assert not (out / name).is_symlink() and (out / name).is_file()
    rows = json.loads((out / "steps.json").read_text())
    assert len(rows) == _answered_actions(json.loads(V0_FLAT.read_text()))
    assert sorted(p.name for p in out.iterdir()) == ["steps.json", "task.md"], "a temporary file was left behind"


def test_convert_never_writes_through_planted_symlinks(tmp_path):
    first = tmp_path / "first"
    r = _cli("convert", SUBAGENT, "--to", "asf", "--out", first, "--json")
    assert r.returncode == 0, r.stderr
    names = [Path(p).name for p in json.loads(r.stdout)["outputs"]]
    assert len(names) == 2
    out = tmp_path / "out"
    out.mkdir()
    planted = {}
    for name in names:
        # at the predictable temporary name and at the output itself
        for link in (f"{name}.tmp", name):
            v = _victim(tmp_path, f"victim-{link}")
            (out / link).symlink_to(v)
            planted[link] = v
    report = out / "report.json"
    v = _victim(tmp_path, "victim-report")
    report.symlink_to(v)
    planted["report.json"] = v
    (out / "report.json.tmp").symlink_to(_victim(tmp_path, "victim-report-tmp"))
    planted["report.json.tmp"] = tmp_path / "victim-report-tmp"
    r = _cli("convert", SUBAGENT, "--to", "asf", "--out", out, "--report", report)
    assert r.returncode == 0, r.stderr
    for link, v in planted.items():
        assert v.read_text() == VICTIM_TEXT, f"{link}: the symlink's target was written"
    for name in names:
        assert not (out / name).is_symlink()
        assert (out / name).read_bytes() == (first / name).read_bytes()
    assert not report.is_symlink() and json.loads(report.read_text())["summary"]["sessions"] == 2
    r = _cli("verify", *[out / n for n in names])
    assert r.returncode == 0, r.stdout + r.stderr


def test_turns_and_certify_outputs_never_follow_planted_symlinks(tmp_path):
    tok = tiny_tokenizer.build(tmp_path / "tok")
    out = tmp_path / "turns.jsonl"
    v1, v2 = _victim(tmp_path, "v1"), _victim(tmp_path, "v2")
    out.symlink_to(v1)
    (tmp_path / "turns.jsonl.tmp").symlink_to(v2)
    r = _cli("turns", TRACE, "--tokenizer", tok, "--out", out, env=_env(HF_HUB_OFFLINE="1"))
    assert r.returncode in (0, 1), r.stderr
    assert v1.read_text() == VICTIM_TEXT and v2.read_text() == VICTIM_TEXT
    assert not out.is_symlink() and all(json.loads(line) for line in out.read_text().splitlines())

    # A certificate written by the library, with links at the target and at
    # the temporary name the old code used (<name>.tmp<pid>).
    from trajkit.certify.certificate import Certificate

    target = tmp_path / "c.certificate.json"
    v3, v4 = _victim(tmp_path, "v3"), _victim(tmp_path, "v4")
    target.symlink_to(v3)
    (tmp_path / f"c.certificate.json.tmp{os.getpid()}").symlink_to(v4)
    Certificate(state="Succeeded", reason="test", run={"path": "x"}).write(target)
    assert v3.read_text() == VICTIM_TEXT and v4.read_text() == VICTIM_TEXT
    assert json.loads(target.read_text())["state"] == "Succeeded"

    # certify --out through the CLI
    cert = tmp_path / "run.certificate.json"
    v5 = _victim(tmp_path, "v5")
    cert.symlink_to(v5)
    run = CORPUS / "openhands_v1" / "certifier_fixtures" / "conversations" / "finished"
    r = _cli("certify", run, "--out", cert)
    assert r.returncode == 0, r.stderr
    assert v5.read_text() == VICTIM_TEXT and not cert.is_symlink()
    assert json.loads(cert.read_text())["state"]


def test_atomic_write_refuses_a_folder_and_cleans_up(tmp_path):
    from trajkit.atomic import OutputError, atomic_open, write_atomic

    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError):
        write_atomic(tmp_path / "d", b"x")
    target = tmp_path / "t.json"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write(b"half")
            raise RuntimeError("stop")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "t.json"]
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


# ---------------------------------------------------------------- 18: kill -9

def _big_v0_run(path: Path, pairs: int) -> Path:
    """A V0 flat export of ``pairs`` command/answer pairs, cut from the real
    events of the corpus run (their ids renumbered)."""
    events = json.loads(V0_FLAT.read_text())
    user = next(e for e in events if e.get("source") == "user" and e.get("action") == "message")
    act = next(e for e in events if e.get("action") == "run")
    obs = next(e for e in events if e.get("observation") == "run" and e.get("cause") == act["id"])
    out = [dict(user, id=0)]
    filler = "output line with some width to it, as a build log has\n" * 40
    for i in range(pairs):
        a = json.loads(json.dumps(act))
        o = json.loads(json.dumps(obs))
        a["id"], o["id"], o["cause"] = 2 * i + 1, 2 * i + 2, 2 * i + 1
        a["args"]["command"] = f"echo step {i}"
        o["content"] = f"step {i}\n" + filler
        out += [a, o]
    path.write_text(json.dumps(out))
    return path


def test_kill_9_during_normalize_leaves_the_old_file_or_the_new_one(tmp_path):
    big = _big_v0_run(tmp_path / "big.json", 1500)
    ref = tmp_path / "ref"
    t0 = time.monotonic()
    r = _cli("normalize", big, "--out", ref)
    full = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    new = {n: (ref / n).read_bytes() for n in ("steps.json", "task.md")}
    assert len(json.loads(new["steps.json"])) == 1500

    out = tmp_path / "out"
    r = _cli("normalize", V0_OTHER, "--out", out)
    assert r.returncode == 0, r.stderr
    old = {n: (out / n).read_bytes() for n in ("steps.json", "task.md")}
    assert old["steps.json"] != new["steps.json"]

    def state():
        try:
            st = os.stat(out / "steps.json")
            return sorted(os.listdir(out)), st.st_size, st.st_mtime_ns, st.st_ino
        except OSError:
            return None

    rng = random.Random(18)
    killed = 0
    for attempt in range(6):
        before = state()
        proc = subprocess.Popen([sys.executable, "-m", "trajkit", "normalize", str(big), "--out", str(out)],
                                cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if attempt % 3 != 2:
            # kill the moment the output folder or steps.json starts to change: mid-write
            while proc.poll() is None and state() == before:
                time.sleep(0.0002)
        else:
            time.sleep(rng.uniform(0.3, 1.0) * full)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed += 1
        proc.wait()
        for name in ("steps.json", "task.md"):
            got = (out / name).read_bytes()
            assert got in (old[name], new[name]), f"try {attempt}: {name} is neither the old file nor the new one ({len(got)} bytes)"
            if name == "steps.json":
                json.loads(got)  # parses
        if (out / "steps.json").read_bytes() == new["steps.json"]:
            # write the old run back, so the next kill again lands on a change
            r = _cli("normalize", V0_OTHER, "--out", out)
            assert r.returncode == 0, r.stderr
        # a kill may leave a temporary file beside the outputs, never in their place
        for p in out.iterdir():
            assert p.name in ("steps.json", "task.md") or (p.name.startswith(".") and p.name.endswith(".tmp")), p
    assert killed >= 4, "too few runs were killed: the test did not exercise anything"


# ---------------------------------------------------------------- 19: colliding ids

def test_convert_dir_keeps_both_runs_that_share_a_native_id(tmp_path):
    src = tmp_path / "runs"
    for sub in ("a", "b"):
        (src / sub).mkdir(parents=True)
    shutil.copy(V0_FLAT, src / "a" / V0_FLAT.name)
    events = json.loads(V0_FLAT.read_text())
    first_user = next(e for e in events if e.get("source") == "user")
    first_user["message"] = first_user["message"] + " (the second run)"
    (src / "b" / V0_FLAT.name).write_text(json.dumps(events))
    for target, ext in (("asf", ".jsonl"), ("atif", ".json")):
        out = tmp_path / f"out-{target}"
        report = tmp_path / f"{target}-report.json"
        r = _cli("convert", src, "--to", target, "--out", out, "--report", report, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        files = sorted(out.iterdir())
        assert len(files) == 2 and len(doc["outputs"]) == 2, files
        texts = {f.name: f.read_text() for f in files}
        assert sum("(the second run)" in t for t in texts.values()) == 1
        assert [c["name"] for c in doc["clashes"]] == [files[0].name] or [c["name"] for c in doc["clashes"]] == [files[1].name]
        clash = doc["clashes"][0]
        assert clash["written_as"] != clash["name"] and clash["written_as"].endswith(ext)
        assert {clash["name"], clash["written_as"]} == {f.name for f in files}
        rep = json.loads(report.read_text())
        assert rep["clashes"] == doc["clashes"] and rep["summary"]["clashes"] == 1
        assert "export.id-clash" in r.stderr or "clash" in r.stderr.lower() or doc["clashes"]
        if target == "asf":
            r2 = _cli("verify", *files)
            assert r2.returncode == 0, r2.stdout
        # the text summary says so too
        r3 = _cli("convert", src, "--to", target, "--out", tmp_path / f"again-{target}")
        assert r3.returncode == 0 and "export.id-clash" in r3.stderr and clash["written_as"] in r3.stderr


# ---------------------------------------------------------------- 20: unwritable outputs

@pytest.mark.parametrize("verb", ["normalize", "convert"])
def test_unwritable_out_exits_2_with_a_message(tmp_path, verb):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    extra = ["--to", "asf"] if verb == "convert" else []
    for out in (a_file, a_file / "sub"):
        r = _cli(verb, V0_FLAT, "--out", out, *extra)
        assert r.returncode == 2, (out, r.returncode, r.stderr)
        assert "Traceback" not in r.stderr and str(out) in r.stderr, r.stderr
        # click's own check (a file given for a folder) or trajkit's
        assert r.stderr.startswith("trajkit: cannot write") or "is a file" in r.stderr, r.stderr
    assert a_file.read_text() == "x"


def test_unwritable_report_exits_2_with_a_message(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    (tmp_path / "a-dir").mkdir()
    for report in (a_file / "report.json", tmp_path / "a-dir"):
        for src in (V0_FLAT, CORPUS / "openhands_v1"):
            r = _cli("convert", src, "--to", "asf", "--out", tmp_path / "out", "--report", report)
            assert r.returncode == 2, (report, src, r.returncode, r.stderr)
            assert "Traceback" not in r.stderr and str(report) in r.stderr, r.stderr
            assert "trajkit: cannot write" in r.stderr or "is a directory" in r.stderr, r.stderr


# ---------------------------------------------------------------- 27: secrets

def _k(*parts: str) -> str:
    """A fake credential, assembled so no scanner mistakes this file for a leak."""
    return "".join(parts)


SECRETS = {
    "openai-api-key": _k("sk-proj-", "Tq3v" * 8),
    "anthropic-api-key": _k("sk-ant-", "api03-", "Zx9Q" * 10),
    "aws-access-key-id": _k("AKIA", "IOSFODNN7TESTKEY"),
    "github-token": _k("ghp_", "aB3d" * 9),
    "bearer-token": _k("eyJhbGciOiJIUzI1NiJ9", ".payload1234"),
    "private-key": _k("-----BEGIN RSA PRIVATE KEY-----\n", "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n",
                      "-----END RSA PRIVATE KEY-----"),
}
GITHUB_PAT = _k("github_pat_", "11ABCDEFG0", "abcdefghij" * 4)


def _run_with_secrets(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """basic_gui_mode.json with credentials planted in a command, its output,
    a header map and a message. Returns the file and, per kind, the native
    event id that holds it."""
    events = json.loads(V0_FLAT.read_text())
    act = next(e for e in events if e.get("action") == "run")
    obs = next(e for e in events if e.get("observation") == "run" and e.get("cause") == act["id"])
    msg = next(e for e in events if e.get("action") == "message" and e.get("source") == "agent")
    act["args"]["command"] = f"curl -H 'Authorization: Bearer {SECRETS['bearer-token']}' https://api.example.test"
    obs["content"] = (f"OPENAI_API_KEY={SECRETS['openai-api-key']}\nAWS_ACCESS_KEY_ID={SECRETS['aws-access-key-id']}\n"
                      f"{SECRETS['private-key']}\n")
    obs["extras"]["request_headers"] = {"Authorization": f"Bearer {SECRETS['bearer-token']}"}
    msg["args"]["content"] = f"use {SECRETS['anthropic-api-key']} or {SECRETS['github-token']} or {GITHUB_PAT}"
    msg["message"] = msg["args"]["content"]
    p = tmp_path / "run" / "secrets.json"
    p.parent.mkdir()
    p.write_text(json.dumps(events, indent=2))
    where = {"bearer-token": act["id"], "openai-api-key": obs["id"], "aws-access-key-id": obs["id"],
             "private-key": obs["id"], "anthropic-api-key": msg["id"], "github-token": msg["id"]}
    return p, where


def _no_values(text: str) -> None:
    for kind, value in list(SECRETS.items()) + [("github-pat", GITHUB_PAT)]:
        probe = value.splitlines()[1] if kind == "private-key" else value
        assert probe not in text, f"the {kind} value leaked"


@pytest.mark.parametrize("target", ["asf", "atif"])
def test_secrets_are_detected_and_reported_by_kind_and_place(tmp_path, target):
    run, where = _run_with_secrets(tmp_path)
    out, report = tmp_path / "out", tmp_path / "report.json"
    r = _cli("convert", run, "--to", target, "--out", out, "--report", report)
    assert r.returncode == 0, r.stderr
    assert "secret.detected" in r.stderr and "--redact-secrets" in r.stderr
    rep = json.loads(report.read_text())
    found = rep["secrets"]
    assert {f["kind"] for f in found} == set(SECRETS), found
    assert all(f["code"] == "secret.detected" and f["file"].startswith(str(out)) for f in found)
    assert rep["summary"]["by_code"]["secret.detected"] == len(found)
    if target == "asf":
        for kind, eid in where.items():
            assert any(f["kind"] == kind and f.get("event_id") == eid and f["entry"] and f["line"] > 1 and f["pointer"]
                       for f in found), (kind, eid)
    else:
        assert all(f.get("pointer", "").startswith("/") for f in found)
        assert any(f.get("step") is not None for f in found)
    # the header map (Authorization: Bearer ...) is found by its key
    assert any(f["pointer"].endswith("/request_headers/Authorization") for f in found if "pointer" in f)
    # the output itself still holds them (detection is not redaction); the report and stderr never do
    assert SECRETS["openai-api-key"] in "".join(p.read_text() for p in out.iterdir())
    _no_values(report.read_text())
    _no_values(r.stderr)
    r = _cli("convert", run, "--to", target, "--out", tmp_path / "j", "--json")
    _no_values(r.stdout)
    assert {f["kind"] for f in json.loads(r.stdout)["secrets"]} == set(SECRETS)


def test_redact_secrets_replaces_them_and_the_asf_still_verifies(tmp_path):
    run, _ = _run_with_secrets(tmp_path)
    out, report = tmp_path / "out", tmp_path / "report.json"
    r = _cli("convert", run, "--to", "asf", "--out", out, "--report", report, "--redact-secrets", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["secrets"] == [] and "secret.detected" not in r.stderr
    files = [Path(p) for p in doc["outputs"]]
    text = "".join(p.read_text() for p in files)
    _no_values(text)
    for kind in SECRETS:
        assert f"[REDACTED:{kind}]" in text
    assert "Authorization: Bearer [REDACTED:bearer-token]" in text
    rep = json.loads(report.read_text())
    assert rep["redactions"] >= 8
    # ids and hashes are consistent: the file verifies, request hashes included
    r = _cli("verify", *files, "--json")
    assert r.returncode == 0, r.stdout
    # the header says so
    assert json.loads(files[0].read_text().splitlines()[0])["redacted"] is True
    # ATIF from the same redaction holds no value either
    r = _cli("convert", run, "--to", "atif", "--out", tmp_path / "atif", "--redact-secrets", "--json")
    assert r.returncode == 0, r.stderr
    _no_values("".join(Path(p).read_text() for p in json.loads(r.stdout)["outputs"]))
    # --redact-secret VALUE and --redact-home still work beside it
    r = _cli("convert", run, "--to", "asf", "--out", tmp_path / "v", "--redact-secret", "todo-app", "--redact-home", "--json")
    assert r.returncode == 0 and "todo-app" not in "".join(Path(p).read_text() for p in json.loads(r.stdout)["outputs"])


def test_normalize_flags_and_redacts_secrets(tmp_path):
    run, where = _run_with_secrets(tmp_path)
    out = tmp_path / "out"
    r = _cli("normalize", run, "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert "secret.detected" in r.stderr
    _no_values(r.stderr)
    _no_values(r.stdout)
    found = doc["secrets"]
    rows = json.loads((out / "steps.json").read_text())
    assert {f["kind"] for f in found} == set(SECRETS) - {"anthropic-api-key", "github-token"} or \
        {f["kind"] for f in found} == set(SECRETS)
    for f in found:
        assert f["file"] == str(out / "steps.json") or f["file"] == str(out / "task.md")
        if f["file"].endswith("steps.json"):
            idx = int(f["pointer"].split("/")[1])
            assert f["step"] == rows[idx]["step_id"]
    r = _cli("normalize", run, "--out", tmp_path / "red", "--redact-secrets", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["secrets"] == []
    text = (tmp_path / "red" / "steps.json").read_text() + (tmp_path / "red" / "task.md").read_text()
    _no_values(text)
    assert "[REDACTED:openai-api-key]" in text
    assert len(json.loads((tmp_path / "red" / "steps.json").read_text())) == len(rows)


def test_secret_patterns_never_backtrack_catastrophically():
    """Each hostile input is 2 million characters: a linear scan takes well
    under a second, a quadratic one hours. A generous bound in a subprocess
    tells them apart on any machine, loaded or not, without timing ratios
    (those live in benchmarks/)."""
    hostile = [
        '"-----BEGIN PRIVATE KEY-----" * (N // 27)',
        '"-----BEGIN RSA PRIVATE KEY-----" + "A-" * (N // 2)',
        '"sk-" + "a" * N + "-"',
        '"Bearer " + "a." * (N // 2)',
        '("Authorization: Bearer " + "x" * 30 + " ") * (N // 52)',
        '"AKIA" * (N // 4)',
        '"ghp_" + "a" * N',
    ]
    code = ("import sys\nfrom trajkit.export import secrets\nN = 2_000_000\n"
            "for make in sys.argv[1:]:\n    text = eval(make)\n    list(secrets.find(text))\n    secrets.redact(text)\n"
            "print('ok')\n")
    p = subprocess.run([sys.executable, "-c", code, *hostile], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_secret_patterns_leave_ordinary_text_alone():
    from trajkit.export import secrets

    ordinary = ("task-assessment-for-everything-in-this-repository risk-management Bearer authentication "
                "disk-usage AKIAB ghp_short sk-learn -----BEGIN CERTIFICATE----- Authorization: Basic")
    assert list(secrets.find(ordinary)) == []


# ---------------------------------------------------------------- issue 14 item 3: progress

def _with_stderr_tty(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "trajkit", *map(str, args)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            # drain what is left
            try:
                while select.select([master], [], [], 0.05)[0]:
                    data = os.read(master, 65536)
                    if not data:
                        break
                    chunks.append(data)
            except OSError:
                pass
            break
    out = proc.stdout.read().decode()
    proc.wait()
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode(errors="replace")


def test_convert_progress_goes_to_stderr_and_stdout_holds_data_only(tmp_path):
    out = tmp_path / "out"
    code, stdout, tty = _with_stderr_tty(["convert", CORPUS / "openhands_v1", "--to", "asf", "--out", out],
                                         _env(COLUMNS="100", TERM="xterm"))
    assert code == 0, tty
    lines = stdout.splitlines()
    assert lines and all(Path(line).is_file() and line.endswith(".jsonl") for line in lines), stdout[:500]
    assert "\x1b" not in stdout
    assert "finding runs" in tty and "converting to asf" in tty, tty[:500]


# ---------------------------------------------------------------- issue 14 item 4: a missing checker

def test_missing_atif_package_is_not_a_pass(tmp_path):
    shadow = tmp_path / "shadow"
    (shadow / "atif").mkdir(parents=True)
    (shadow / "atif" / "__init__.py").write_text("raise ImportError('atif is shadowed by the test')\n")
    env = _env(PYTHONPATH=os.pathsep.join([str(shadow), str(REPO / "src")]))
    r = _cli("convert", V0_FLAT, "--to", "atif", "--out", tmp_path / "out", "--json", "--report", tmp_path / "r.json", env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["validated"] is False and "atif package is not installed" in doc["validation"]
    assert json.loads((tmp_path / "r.json").read_text())["validated"] is False
    r = _cli("convert", V0_FLAT, "--to", "atif", "--out", tmp_path / "out2", env=env)
    assert r.returncode == 0 and "not validated" in r.stderr
    # with the package importable the same run is validated
    r = _cli("convert", V0_FLAT, "--to", "atif", "--out", tmp_path / "out3", "--json")
    assert json.loads(r.stdout)["validated"] is True
    # many runs: the combined report says it too
    r = _cli("convert", CORPUS / "openhands_v0" / "flat_exports", "--to", "atif", "--out", tmp_path / "many", "--json",
             env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["validated"] is False


# ---------------------------------------------------------------- issue 14 item 5: width

def _widest(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.splitlines()), default=0)


def test_piped_width_follows_columns_or_80(tmp_path):
    run = CORPUS / "openhands_v1" / "certifier_fixtures" / "conversations" / "finished"
    for args in (["steps", V0_FLAT], ["show", V0_FLAT], ["certify", run]):
        r = _cli(*args)
        assert r.returncode == 0, r.stderr
        assert _widest(r.stdout) <= 80, (args, _widest(r.stdout))
        r = _cli(*args, env=_env(COLUMNS="120"))
        assert 80 < _widest(r.stdout) <= 120, (args, _widest(r.stdout))
        r = _cli(*args, env=_env(COLUMNS="50"))
        assert _widest(r.stdout) <= 50, (args, _widest(r.stdout))


def test_show_width_60_draws_nothing_wider(tmp_path):
    r = _cli("show", V0_FLAT, "--width", "60", env=_env(COLUMNS="200"))
    assert r.returncode == 0, r.stderr
    assert _widest(r.stdout) <= 60, _widest(r.stdout)
    assert "─" * 60 in r.stdout or "━" * 60 in r.stdout  # the rule is still drawn, 60 wide


def test_fcr_progress_goes_to_stderr_and_stdout_holds_data_only(tmp_path):
    runs = CORPUS / "openhands_v1" / "certifier_fixtures" / "conversations"
    code, stdout, tty = _with_stderr_tty(["fcr", runs, "--json"], _env(COLUMNS="100", TERM="xterm"))
    assert code == 0, tty
    doc = json.loads(stdout)  # nothing but the document
    assert doc["runs"] == len([p for p in runs.iterdir() if p.is_dir()])
    assert "finding runs" in tty and "certifying" in tty, tty[:500]
