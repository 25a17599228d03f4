"""Build OpenHands evaluation outputs (``output.jsonl``) and Cloud exports
from the shared corpus, with plain ``json`` (no trajkit code), and lay the
same events out as a trial or conversation directory.

Used by ``tests/test_openhands_eval.py`` (in a temporary directory) and, once,
to write the package fixtures::

    python tests/openhands_eval_build.py src/trajkit/formats/fixtures

which writes ``openhands-eval/v0/output.jsonl`` (the four V0 flat exports and
the ``events/`` stream of the killed-run reconstructed trial, one record
each; the tests use all three trials), ``openhands-eval/sdk/output.jsonl`` (every SDK
conversation of ``openhands_v1/``: its events in index order and its agent
metrics) and two ``openhands-cloud`` exports. ``test_result`` blocks are
made up (SWE-bench's report shape, ``resolved`` alternating), the events and
metrics are the corpus's own.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

CORPUS = Path(os.environ.get("TRAJKIT_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "corpus"
V0_DIR = CORPUS / "openhands_v0"
SDK_DIR = CORPUS / "openhands_v1"

_EVENT = re.compile(r"^event-(\d{5,})-([0-9a-fA-F\-]{8,})\.json$")


def _load(p: Path):
    return json.loads(p.read_text(encoding="utf-8"))


def v0_samples() -> list[tuple[str, list]]:
    """(name, events) of every V0 stream in the corpus: the flat exports, and
    each reconstructed trial's complete stream (events/, else event_cache/)."""
    out = []
    for p in sorted((V0_DIR / "flat_exports").glob("*.json")):
        out.append((p.stem, _load(p)))
    for trial in sorted((V0_DIR / "reconstructed_trials").iterdir()):
        if not trial.is_dir():
            continue
        for sd in sorted((trial / "sessions" / "sessions").iterdir()):
            ev = sd / "events"
            if ev.is_dir() and any(ev.iterdir()):
                events = [_load(f) for f in sorted(ev.glob("*.json"), key=lambda f: int(f.stem))]
            else:
                events = []
                for f in sorted((sd / "event_cache").glob("*.json"), key=lambda f: int(f.stem.split("-")[0])):
                    events.extend(_load(f))
            out.append((trial.name.split(".")[0], events))
            break
    return out


def sdk_conversations() -> list[Path]:
    out = []
    for root, dirs, files in os.walk(SDK_DIR):
        dirs[:] = sorted(d for d in dirs if d not in ("events", "observations", "subagents"))
        if "base_state.json" in files and os.path.isdir(os.path.join(root, "events")):
            out.append(Path(root))
    return sorted(out)


def sdk_samples() -> list[tuple[str, list, dict | None]]:
    """(name, events in index order, the agent's metrics) of every SDK conversation."""
    out = []
    for conv in sdk_conversations():
        files = []
        for f in (conv / "events").iterdir():
            m = _EVENT.match(f.name)
            if m:
                files.append((int(m.group(1)), f))
        events = [_load(f) for _, f in sorted(files)]
        state = _load(conv / "base_state.json")
        metrics = ((state.get("stats") or {}).get("usage_to_metrics") or {}).get("agent")
        out.append((conv.name, events, metrics))
    return out


def first_user_text(events: list) -> str | None:
    for e in events:
        if not isinstance(e, dict) or e.get("source") != "user":
            continue
        if e.get("action") == "message" and isinstance((e.get("args") or {}).get("content"), str):
            return e["args"]["content"]
        if e.get("kind") == "MessageEvent":
            parts = ((e.get("llm_message") or {}).get("content")) or []
            text = "\n".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text")
            if text:
                return text
    return None


def test_result(k: int) -> dict:
    resolved = k % 2 == 0
    return {"git_patch": "diff --git a/x b/x\n" if resolved else "",
            "report": {"empty_generation": not resolved, "resolved": resolved, "failed_apply_patch": False,
                       "error_eval": False, "test_timeout": False}}


def v0_metrics(events: list) -> dict | None:
    last = None
    for e in events:
        if isinstance(e, dict) and isinstance(e.get("llm_metrics"), dict):
            last = e["llm_metrics"]
    return last


def v0_record(k: int, name: str, events: list) -> dict:
    """An EvalOutput as OpenHands V0's evaluation harness writes it."""
    return {"instance_id": name, "test_result": test_result(k), "instruction": first_user_text(events) or "",
            "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": "claude-3-5-sonnet-20241022"},
                         "max_iterations": 30, "dataset": "corpus-v0", "data_split": "test"},
            "history": events, "metrics": v0_metrics(events), "error": None, "instance": {"instance_id": name}}


def sdk_record(k: int, name: str, events: list, metrics: dict | None) -> dict:
    """An EvalOutput as the SDK-based benchmarks harness writes it."""
    return {"instance_id": name, "attempt": 1, "test_result": test_result(k), "instruction": first_user_text(events),
            "metadata": {"llm": {"model": (metrics or {}).get("model_name") or "openai/stub-model"}, "dataset": "corpus-sdk",
                         "dataset_split": "test", "max_iterations": 50, "eval_output_dir": "/tmp/eval"},
            "history": events, "metrics": metrics, "error": None, "instance": {"instance_id": name}}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n")
    return path


def v0_output(path: Path) -> list[dict]:
    recs = [v0_record(k, name, events) for k, (name, events) in enumerate(v0_samples())]
    write_jsonl(path, recs)
    return recs


def sdk_output(path: Path) -> list[dict]:
    recs = [sdk_record(k, name, events, metrics) for k, (name, events, metrics) in enumerate(sdk_samples())]
    write_jsonl(path, recs)
    return recs


def v0_trial(root: Path, sid: str, events: list) -> Path:
    """The events laid out as a terminal-bench trial: sessions/sessions/<sid>/events/<id>.json."""
    d = root / "sessions" / "sessions" / sid / "events"
    d.mkdir(parents=True, exist_ok=True)
    for e in events:
        (d / f"{e['id']}.json").write_text(json.dumps(e), encoding="utf-8")
    return root


def sdk_conversation(root: Path, events: list, metrics: dict | None) -> Path:
    """The events laid out as an SDK conversation directory (base_state.json
    holding only the metrics, events/event-<idx>-<id>.json)."""
    (root / "events").mkdir(parents=True, exist_ok=True)
    state = {"id": "00000000-0000-0000-0000-000000000000"}
    if metrics is not None:
        state["stats"] = {"usage_to_metrics": {"agent": metrics}}
    (root / "base_state.json").write_text(json.dumps(state), encoding="utf-8")
    for i, e in enumerate(events):
        (root / "events" / f"event-{i:05d}-{e['id']}.json").write_text(json.dumps(e, separators=(",", ":")), encoding="utf-8")
    return root


def cloud_export(path: Path, conversation: dict, events: list) -> Path:
    """An OpenHands Cloud export as ``export_conversation.py``-style scripts write it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"exported_at": "2026-01-01T00:00:00+00:00", "base_url": "https://app.all-hands.dev",
           "conversation": conversation, "events": events}
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def cloud_exports(out: Path) -> list[Path]:
    sdk = dict((n, (e, m)) for n, e, m in sdk_samples())
    name = "cd94562403b9487ebdd4018e3f531dfd"
    events, metrics = sdk[name]
    a = cloud_export(out / "sdk-conversation.json",
                     {"conversation_id": name, "title": "Hello", "status": "STOPPED", "runtime_status": None,
                      "llm_model": (metrics or {}).get("model_name"), "metrics": metrics,
                      "created_at": events[0]["timestamp"] + "Z", "last_updated_at": events[-1]["timestamp"] + "Z",
                      "conversation_version": "V1"}, events)
    v0 = dict(v0_samples())
    b = cloud_export(out / "v0-conversation.json",
                     {"conversation_id": "basic", "title": "Create a hello world script", "status": "STOPPED",
                      "created_at": "2025-01-01T00:00:00Z", "last_updated_at": "2025-01-01T00:05:00Z",
                      "conversation_version": "V0"}, v0["basic"])
    return [a, b]


def main(dest: str) -> None:
    base = Path(dest)
    write_jsonl(base / "openhands-eval" / "v0" / "output.jsonl",
                [v0_record(k, n, e) for k, (n, e) in enumerate(v0_samples()) if n != "game-2048-session" and n != "todo-and-2048-session"])
    recs = [sdk_record(k, n, e, m) for k, (n, e, m) in enumerate(sdk_samples())
            if n in ("cd94562403b9487ebdd4018e3f531dfd", "0123456789abcdef0123456789abcdef", "3fdb316098bb48e1aa029ce56805792a",
                     "aaaaaaaabbbbccccddddeeeeeeeeeeee")]
    write_jsonl(base / "openhands-eval" / "sdk" / "output.jsonl", recs)
    cloud_exports(base / "openhands-cloud")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "src/trajkit/formats/fixtures")
