"""Convert a normalized session to ASF or ATIF files, check them, and report losses."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonio import dumps
from ..model import Session
from . import asf, atif, loss
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
        for name, doc in atif.project_session(export.root, by_id.get, passthrough=passthrough):
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
