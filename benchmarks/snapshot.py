"""Before/after check: trajkit's outputs over the shared corpus, byte for byte.

A refactor must leave what trajkit prints and writes unchanged. This script
runs the CLI verbs (in process, through click's test runner) over every run
found in ``../shared/corpus``, ``examples/`` and ``tests/fixtures/`` and
stores each output; ``--compare`` diffs two snapshots.

    python benchmarks/snapshot.py take  /tmp/snap-before      # on the old commit
    python benchmarks/snapshot.py take  /tmp/snap-after --runs /tmp/snap-before/runs.json
    python benchmarks/snapshot.py compare /tmp/snap-before /tmp/snap-after

The run list is discovered once (``take`` without ``--runs``) and reused, so
a change in detection shows as a changed ``detect`` output, not as a
different set of runs. Temporary output paths are replaced by ``<OUT>``.
Exit status of ``compare``: 0 identical, 1 differences (listed).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = Path(os.environ.get("TRAJKIT_SHARED", REPO.parent / "shared"))
ROOTS = [SHARED / "corpus", REPO / "examples", REPO / "tests" / "fixtures"]


def _rel(p: Path) -> str:
    p = Path(p).resolve()
    for base, tag in ((SHARED, "$SHARED"), (REPO, "$REPO")):
        try:
            return f"{tag}/{p.relative_to(base.resolve())}"
        except ValueError:
            pass
    return str(p)


def _abs(s: str) -> Path:
    if s.startswith("$SHARED/"):
        return SHARED / s[len("$SHARED/"):]
    if s.startswith("$REPO/"):
        return REPO / s[len("$REPO/"):]
    return Path(s)


def discover() -> list[dict]:
    from trajkit import registry

    seen: dict[tuple[str, str], dict] = {}
    for base in ROOTS:
        if not base.exists():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in [None, *sorted(filenames)]:
                p = Path(dirpath) if name is None else Path(dirpath) / name
                try:
                    d = registry.detect(p).to_dict()
                except Exception:
                    continue
                if d["format"] is None or d["root"] is None:
                    continue
                key = (d["format"], str(Path(d["root"]).resolve()))
                seen.setdefault(key, {"format": d["format"], "root": _rel(Path(d["root"]))})
    return sorted(seen.values(), key=lambda r: (r["format"], r["root"]))


def _invoke(args: list[str]) -> tuple[int, str]:
    from click.testing import CliRunner

    from trajkit.cli.app import main

    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2
        runner = CliRunner()
    res = runner.invoke(main, args, catch_exceptions=True, env={"COLUMNS": "100"})
    out = res.stdout
    if res.exception and not isinstance(res.exception, SystemExit):
        out += f"\n<EXCEPTION {type(res.exception).__name__}: {res.exception}>"
    return res.exit_code, out


_STAMP = re.compile(r'"(created_at|certified_at)": "[^"]*"')


def _stable(text: str) -> str:
    """Blank the wall-clock stamps a certificate carries."""
    return _STAMP.sub(lambda m: f'"{m.group(1)}": "<TIME>"', text)


def _files(d: Path) -> dict[str, str]:
    out = {}
    for p in sorted(d.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(d))] = _stable(p.read_text("utf-8", "replace"))
    return out


def take(dest: Path, runs_file: Path | None) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    runs = json.loads(runs_file.read_text()) if runs_file else discover()
    (dest / "runs.json").write_text(json.dumps(runs, indent=1))
    for i, run in enumerate(runs):
        root = str(_abs(run["root"]))
        key = hashlib.sha1(f"{run['format']}|{run['root']}".encode()).hexdigest()[:12]
        rec: dict[str, object] = {"run": run}
        verbs = {
            "detect": ["detect", root, "--json"],
            "steps": ["steps", root, "--json"],
            "steps_all": ["steps", root, "--all-views"],
            "show": ["show", root, "--width", "100"],
            "context": ["context", root, "--json"],
            "certify": ["certify", root, "--json"],
        }
        for name, args in verbs.items():
            code, out = _invoke(args)
            rec[name] = {"exit": code, "out": _stable(out.replace(root, "<RUN>"))}
        for to in ("asf", "atif"):
            tmp = Path(tempfile.mkdtemp(prefix="trajkit-snap-"))
            try:
                code, out = _invoke(["convert", root, "--to", to, "--out", str(tmp / "out"),
                                     "--report", str(tmp / "loss.json")])
                files = _files(tmp)
                files = {k: v.replace(str(tmp), "<OUT>").replace(root, "<RUN>") for k, v in files.items()}
                rec[f"convert_{to}"] = {"exit": code, "out": out.replace(str(tmp), "<OUT>").replace(root, "<RUN>"),
                                        "files": files}
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix="trajkit-snap-"))
        try:
            code, out = _invoke(["normalize", root, "--out", str(tmp)])
            rec["normalize"] = {"exit": code, "out": out.replace(str(tmp), "<OUT>"),
                                "files": {k: v.replace(root, "<RUN>") for k, v in _files(tmp).items()}}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        (dest / f"{key}.json").write_text(json.dumps(rec, indent=1, sort_keys=True, ensure_ascii=False))
        print(f"[{i + 1}/{len(runs)}] {run['format']} {run['root']}", file=sys.stderr)


def compare(a: Path, b: Path) -> int:
    bad = 0
    names = sorted({p.name for p in a.glob("*.json")} | {p.name for p in b.glob("*.json")})
    for name in names:
        pa, pb = a / name, b / name
        if not pa.exists() or not pb.exists():
            print(f"only in one snapshot: {name}")
            bad += 1
            continue
        ta, tb = pa.read_text(), pb.read_text()
        if ta != tb:
            bad += 1
            print(f"--- differs: {name}")
            for line in list(difflib.unified_diff(ta.splitlines(), tb.splitlines(), lineterm="", n=1))[:40]:
                print(line[:300])
    print(f"{len(names)} snapshots compared, {bad} differ", file=sys.stderr)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("take")
    t.add_argument("dest", type=Path)
    t.add_argument("--runs", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    ns = ap.parse_args()
    if ns.cmd == "take":
        take(ns.dest, ns.runs)
        return 0
    return compare(ns.a, ns.b)


if __name__ == "__main__":
    sys.exit(main())
