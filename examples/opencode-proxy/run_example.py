"""Run a real, untouched opencode headless through the trajkit capture proxy
against a local vLLM-like stub, then derive the training turns.

    python examples/opencode-proxy/run_example.py --out /tmp/oc-run

Steps (each is printed as it happens):

1. find opencode: ``--opencode BIN``, ``$OPENCODE_BIN``, or ``npm install
   opencode-ai`` into ``--npm-prefix`` (the npm package pulls a prebuilt
   binary through its optional dependencies);
2. start ``stub_vllm.py`` (stands in for ``vllm serve``) and
   ``trajkit proxy --upstream <stub> --out OUT/rollout``;
3. in a fresh git work dir, write ``opencode.json`` whose only provider points
   at the proxy, isolate opencode's state (HOME, XDG_*), and run
   ``opencode run --format json --auto "<prompt>"`` (its event stream goes to
   ``OUT/rollout/opencode.jsonl``, as OpenEnv keeps it);
4. stop the proxy and the stub, write ``OUT/rollout/task.json``;
5. ``trajkit turns OUT/rollout --out OUT/turns.jsonl --json`` and print the
   summary.

Exit status 0 when opencode finished, the task file exists, and at least one
trained turn was derived; otherwise 1 (2 when opencode cannot be found).
With a real server, replace the stub: ``--upstream http://127.0.0.1:8000/v1
--model Qwen3-4B-Instruct-2507 --tokenizer /path/to/tokenizer``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROMPT = "Create hello.txt containing hello-from-trajkit using bash."


def say(msg: str) -> None:
    print(f"[example] {msg}", file=sys.stderr, flush=True)


def find_opencode(args) -> str | None:
    """The opencode binary: given, from the environment, or npm-installed."""
    for cand in (args.opencode, os.environ.get("OPENCODE_BIN")):
        if cand and Path(cand).exists():
            return cand
    prefix = Path(args.npm_prefix).expanduser()
    found = _installed(prefix)
    if found:
        return found
    if not shutil.which("npm"):
        say("npm is not installed, and no --opencode / $OPENCODE_BIN was given")
        return None
    prefix.mkdir(parents=True, exist_ok=True)
    say(f"npm install opencode-ai@{args.opencode_version} into {prefix} (a ~185 MB prebuilt binary)")
    r = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), f"opencode-ai@{args.opencode_version}"],
        capture_output=True, text=True, timeout=900,
    )
    if r.returncode != 0:
        say(f"npm install failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
        return None
    return _installed(prefix)


def _installed(prefix: Path) -> str | None:
    # the platform package's binary runs directly; the wrapper's bin needs its postinstall
    for pattern in ("node_modules/opencode-linux-*/bin/opencode", "node_modules/opencode-darwin-*/bin/opencode",
                    "node_modules/opencode-ai/bin/opencode.exe", "node_modules/.bin/opencode"):
        for p in sorted(glob.glob(str(prefix / pattern))):
            if os.access(p, os.X_OK):
                return p
    return None


def wait_for_file(path: Path, proc: subprocess.Popen, what: str, timeout: float = 60) -> str:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited ({proc.returncode}) before it was ready")
        time.sleep(0.05)
    raise SystemExit(f"{what} not ready after {timeout}s")


def stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="opencode through the trajkit capture proxy")
    ap.add_argument("--out", required=True, help="directory for the rollout, the work dir and opencode's state")
    ap.add_argument("--opencode", default=None, help="the opencode binary (default: $OPENCODE_BIN, else npm install)")
    ap.add_argument("--npm-prefix", default="~/.cache/trajkit/opencode-npm", help="where npm installs opencode-ai")
    ap.add_argument("--opencode-version", default="1.18.33")
    ap.add_argument("--upstream", default=None, help="a real OpenAI-compatible server instead of the stub")
    ap.add_argument("--model", default="stub-model", help="model id the upstream serves")
    ap.add_argument("--tokenizer", default=None, help="tokenizer dir for `trajkit turns` (not needed with the stub)")
    ap.add_argument("--prompt", default=PROMPT)
    ap.add_argument("--timeout", type=float, default=300, help="seconds opencode may run")
    args = ap.parse_args(argv)

    out = Path(args.out).resolve()
    rollout, work, home = out / "rollout", out / "work", out / "home"
    for d in (rollout, work, home):
        d.mkdir(parents=True, exist_ok=True)
    opencode = find_opencode(args)
    if not opencode:
        return 2
    say(f"opencode: {opencode}")
    stub = proxy = None
    try:
        upstream = args.upstream
        if upstream is None:
            port_file = out / "stub.port"
            port_file.unlink(missing_ok=True)
            stub = subprocess.Popen(
                [sys.executable, str(HERE / "stub_vllm.py"), "--port-file", str(port_file),
                 "--log", str(out / "stub_requests.jsonl"), "--max-seconds", str(args.timeout + 120)],
                stdout=subprocess.DEVNULL,
            )
            upstream = f"http://127.0.0.1:{wait_for_file(port_file, stub, 'the stub').strip()}/v1"
            say(f"stub upstream: {upstream}")
        (rollout / "proxy.json").unlink(missing_ok=True)
        proxy_log = open(out / "proxy.log", "w")
        proxy = subprocess.Popen(
            [sys.executable, "-m", "trajkit", "proxy", "--upstream", upstream, "--out", str(rollout), "--port", "0",
             "--max-runtime", str(args.timeout + 60)],
            stderr=proxy_log, stdout=subprocess.DEVNULL,
        )
        meta = json.loads(wait_for_file(rollout / "proxy.json", proxy, "the proxy"))
        say(f"capture proxy: {meta['url']} -> {upstream}; trace {meta['trace']}")

        if not (work / ".git").exists():
            subprocess.run(["git", "init", "-q", str(work)], check=True)
        config = {
            "$schema": "https://opencode.ai/config.json",
            "model": f"trajkit/{args.model}",
            "small_model": f"trajkit/{args.model}",
            "autoupdate": False,
            "share": "disabled",
            "provider": {"trajkit": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "trajkit capture proxy",
                "options": {"baseURL": meta["url"], "apiKey": "dummy"},
                "models": {args.model: {"name": args.model, "tool_call": True}},
            }},
            "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"},
        }
        (work / "opencode.json").write_text(json.dumps(config, indent=2) + "\n")
        env = dict(
            os.environ,
            PWD=str(work),  # opencode takes its project directory from $PWD, not the process cwd
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_DATA_HOME=str(home / ".local/share"),
            XDG_CACHE_HOME=str(home / ".cache"),
            XDG_STATE_HOME=str(home / ".local/state"),
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_SHARE="1",
            OPENCODE_DISABLE_LSP_DOWNLOAD="1",
            OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        )
        say(f"opencode run --format json --auto {args.prompt!r}  (in {work})")
        t0 = time.time()
        with open(rollout / "opencode.jsonl", "w") as events, open(out / "opencode.stderr", "w") as err:
            try:
                r = subprocess.run([opencode, "run", "--format", "json", "--auto", args.prompt],
                                   cwd=work, env=env, stdout=events, stderr=err, timeout=args.timeout)
                code = r.returncode
            except subprocess.TimeoutExpired:
                code = None
        say(f"opencode exited {code} after {time.time() - t0:.1f}s")
    finally:
        stop(proxy)
        stop(stub)
    (rollout / "task.json").write_text(json.dumps({"instruction": args.prompt}, indent=2) + "\n")

    cmd = [sys.executable, "-m", "trajkit", "turns", str(rollout), "--out", str(out / "turns.jsonl"), "--json"]
    if args.tokenizer:
        cmd += ["--tokenizer", args.tokenizer]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        say(f"trajkit turns failed ({r.returncode}): {r.stderr.strip()}")
        return 1
    doc = json.loads(r.stdout)
    (out / "turns_report.json").write_text(json.dumps(doc, indent=2) + "\n")
    s = doc["summary"]
    say(f"calls {s['raw_turns']}, kept {s['kept_turns']}, trained {s['trained_turns']}, "
        f"tool calls {s['tool_calls_by_tool']}, dropped {[d['purpose'] for d in doc['dropped']]}")
    for d in doc["diagnostics"]:
        say(f"  {d['severity']}[{d['code']}] {d.get('event_id') or ''} {d['message']}")
    hello = work / "hello.txt"
    say(f"hello.txt: {hello.read_text().strip()!r}" if hello.exists() else "hello.txt was not created")
    print(json.dumps({"summary": s, "turns": str(out / "turns.jsonl"), "rollout": str(rollout),
                      "opencode_exit": code, "hello_txt": hello.read_text() if hello.exists() else None}, indent=2))
    return 0 if code == 0 and s["trained_turns"] >= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
