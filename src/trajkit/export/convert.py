"""Convert a normalized session to ASF or ATIF files, check them, and report losses."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonio import dumps
from ..model import Session
from ..spec import asf
from . import loss, to_atif
from .to_asf import AsfExport, Redactor, session_to_asf


@dataclass
class ConvertResult:
    """What a conversion wrote, the loss report, and any check that failed."""

    target: str
    outputs: list[Path] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    export: AsfExport | None = None
    docs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": self.ok,
            "outputs": [str(p) for p in self.outputs],
            "problems": self.problems,
            "summary": self.report.get("summary"),
            "unaccounted": self.report.get("unaccounted"),
        }


def validate_atif(doc: dict[str, Any]) -> str | None:
    """Harbor's schema check (PyPI ``atif``): None when valid, else the error.
    Returns None without checking when the ``atif`` extra is not installed."""
    try:
        from atif import Trajectory
    except ImportError:  # the [atif] extra is optional
        return None
    try:
        Trajectory.model_validate(doc)
    except Exception as e:  # pydantic.ValidationError
        return str(e)
    return None


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def convert(
    session: Session,
    target: str,
    out_dir: Path,
    passthrough: bool = True,
    secrets: list[str] | None = None,
    redact_home: bool = False,
    report_path: Path | None = None,
    progress: bool = False,
) -> ConvertResult:
    """Write ``session`` as ``target`` (``asf`` or ``atif``) into ``out_dir``."""
    if target not in ("asf", "atif"):
        raise ValueError(f"unknown target {target!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    if progress and os.isatty(2):
        from rich.console import Console

        with Console(stderr=True).status(f"converting {session.source_path} to {target}"):
            return convert(session, target, out_dir, passthrough, secrets, redact_home, report_path, progress=False)
    res = ConvertResult(target=target)
    export = session_to_asf(session, passthrough=passthrough, redactor=Redactor(secrets=list(secrets or []), home=redact_home))
    res.export = export
    if target == "asf":
        for f in export.files:
            data = asf.write_asf(f)
            p = out_dir / f"{f.header['id']}.jsonl"
            _write(p, data)
            res.outputs.append(p)
            back = asf.read_asf(p)
            for d in asf.verify(back):
                if d.severity == "error":
                    res.problems.append(f"{p.name}: {d}")
            if asf.write_asf(back) != data:
                res.problems.append(f"{p.name}: reading back and writing again is not byte-identical")
    else:
        by_id = {f.header["id"]: f for f in export.files}
        for name, doc in to_atif.project_session(export.root, by_id.get, passthrough=passthrough):
            p = out_dir / name
            _write(p, dumps(doc, indent=True) + b"\n")
            res.outputs.append(p)
            res.docs.append(doc)
            err = validate_atif(doc)
            if err:
                res.problems.append(f"{name}: not valid ATIF: {err}")
    res.report = loss.build_report(session, export, target, [str(p) for p in res.outputs], res.docs if target == "atif" else None, passthrough)
    for u in res.report["unaccounted"]:
        res.problems.append(f"unaccounted: {u}")
    if report_path is not None:
        report_path.parent.mkdir(parents=True, exist_ok=True)
        _write(report_path, dumps(res.report, indent=True) + b"\n")
    return res


def find_runs(path: Path, max_depth: int = 3) -> list[Path]:
    """The runs under a directory that is not itself a run: the sessions a
    format lists (``Format.find_sessions``), else the sub-paths (up to
    ``max_depth`` deep) that detect as the root of a run."""
    from ..registry import detect, formats

    det = detect(path)
    if det.format is not None:
        return [path]
    found: list[Path] = []
    for fmt in formats():
        if fmt.find_sessions is not None:
            try:
                found.extend(Path(p) for p in fmt.find_sessions(path))
            except OSError:
                continue
    seen = {p.resolve() for p in found}

    def walk(d: Path, depth: int) -> None:
        try:
            children = sorted(d.iterdir())
        except OSError:
            return
        for c in children:
            if c.name.startswith(".") or any(str(c.resolve()).startswith(str(s) + os.sep) or c.resolve() == s for s in seen):
                continue
            m = detect(c)
            if m.format is not None and m.match is not None and Path(m.match.root).resolve() == c.resolve():
                found.append(c)
                seen.add(c.resolve())
            elif c.is_dir() and depth < max_depth:
                walk(c, depth + 1)

    if path.is_dir():
        walk(path, 1)
    return sorted(dict.fromkeys(found))


def convert_many(
    runs: list[Path],
    target: str,
    out_dir: Path,
    read_options: Any = None,
    report_path: Path | None = None,
    progress: bool = True,
    **kw: Any,
) -> tuple[list[ConvertResult], dict[str, Any], list[str]]:
    """Convert every run in ``runs``; one combined report. A run that cannot
    be read is reported (``export.run-unreadable``) and the rest go on."""
    from rich.progress import Progress

    from ..model import DetectionError, TrajkitError
    from ..registry import read

    results: list[ConvertResult] = []
    reports: list[dict[str, Any]] = []
    problems: list[str] = []
    with Progress(transient=True, disable=not progress or not os.isatty(2)) as bar:
        task = bar.add_task(f"converting to {target}", total=len(runs))
        for run in runs:
            try:
                session = read(run, options=read_options)
            except (DetectionError, TrajkitError) as e:
                problems.append(f"{run}: export.run-unreadable: {e}")
                reports.append({"source": str(run), "code": "export.run-unreadable", "why": str(e)})
                bar.advance(task)
                continue
            res = convert(session, target, out_dir, **kw)
            results.append(res)
            reports.append(res.report)
            problems.extend(f"{run}: {p}" for p in res.problems)
            bar.advance(task)
    totals: dict[str, int] = {}
    for r in reports:
        for k, v in (r.get("summary") or {}).items():
            if isinstance(v, int):
                totals[k] = totals.get(k, 0) + v
    combined = {"target": target, "runs": len(runs), "summary": totals, "problems": problems, "reports": reports}
    if report_path is not None:
        report_path.parent.mkdir(parents=True, exist_ok=True)
        _write(report_path, dumps(combined, indent=True) + b"\n")
    return results, combined, problems
