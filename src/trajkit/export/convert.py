"""Convert a normalized session to ASF or ATIF files, check them, and report losses."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..atomic import ensure_dir, write_atomic
from ..jsonio import dumps
from ..model import Session
from ..spec import asf
from . import loss, secrets as secret_scan, to_atif
from .to_asf import NATIVE, AsfExport, Redactor, session_to_asf


@dataclass
class ConvertResult:
    """What a conversion wrote, the loss report, and any check that failed."""

    target: str
    outputs: list[Path] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    export: AsfExport | None = None
    docs: list[dict[str, Any]] = field(default_factory=list)
    #: True when every output was checked by its format's validator; False
    #: (with ``validation`` saying why) when a check could not run.
    validated: bool = True
    validation: str | None = None
    #: secrets found in the outputs: ``{code, kind, file, ...place}``, never the value
    secrets: list[dict[str, Any]] = field(default_factory=list)
    #: outputs whose name another run of the same batch had taken: ``{name, written_as, session}``
    clashes: list[dict[str, Any]] = field(default_factory=list)
    #: binary attachments written beside the documents (``media/<sha256>.<ext>``)
    media: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> dict[str, Any]:
        d = {
            "target": self.target,
            "ok": self.ok,
            "validated": self.validated,
        }
        if self.validation:
            d["validation"] = self.validation
        d.update({
            "outputs": [str(p) for p in self.outputs],
            "problems": self.problems,
            "summary": self.report.get("summary"),
            "unaccounted": self.report.get("unaccounted"),
            "secrets": self.secrets,
        })
        if self.clashes:
            d["clashes"] = self.clashes
        return d


#: why ATIF documents were not validated when the ``atif`` package is missing
ATIF_NOT_INSTALLED = "the atif package is not installed (pip install 'trajkit[atif]'); the ATIF documents were not validated"


def atif_validator() -> Callable[[dict[str, Any]], str | None] | None:
    """Harbor's schema check (PyPI ``atif``), or None when the ``atif``
    extra cannot be imported. The check returns None when a document is
    valid, else the error."""
    try:
        from atif import Trajectory
    except ImportError:  # the [atif] extra is optional
        return None

    def check(doc: dict[str, Any]) -> str | None:
        try:
            Trajectory.model_validate(doc)
        except Exception as e:  # pydantic.ValidationError
            return str(e)
        return None

    return check


def _claim(out_dir: Path, name: str, taken: set[str] | None) -> str:
    """``name``, or ``name`` with a ``-2``, ``-3`` ... suffix before its
    extension when an earlier run of the same batch wrote it."""
    if taken is None:
        return name
    if name not in taken:
        taken.add(name)
        return name
    stem, dot, ext = name.partition(".")
    n = 2
    while f"{stem}-{n}{dot}{ext}" in taken:
        n += 1
    new = f"{stem}-{n}{dot}{ext}"
    taken.add(new)
    return new


def _secret_records(path: Path, found: list[dict[str, Any]], extra: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    out = []
    for f in found:
        rec = {"code": "secret.detected", "severity": "warning", "kind": f["kind"], "file": str(path)}
        rec.update({k: v for k, v in f.items() if k != "kind"})
        if extra is not None:
            rec.update(extra(f))
        out.append(rec)
    return out


def _asf_places(f: asf.AsfFile) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """For a secret found on line N of an ASF file: the entry and native event."""
    def place(found: dict[str, Any]) -> dict[str, Any]:
        line = found.get("line")
        # line 1 is the header; entry k sits on line k + 2
        if not isinstance(line, int) or line < 2 or line - 2 >= len(f.entries):
            return {"entry": None} if line != 1 else {"entry": "header"}
        e = f.entries[line - 2]
        native = e.obj.get(NATIVE) if isinstance(e.obj, dict) else None
        d: dict[str, Any] = {"entry": e.id}
        if isinstance(native, dict) and "event_id" in native:
            d["event_id"] = native["event_id"]
        return d

    return place


def _atif_places(doc: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """For a secret found in an ATIF document: the step it sits in."""
    steps = doc.get("steps") if isinstance(doc.get("steps"), list) else []

    def place(found: dict[str, Any]) -> dict[str, Any]:
        parts = str(found.get("pointer") or "").split("/")
        if len(parts) > 2 and parts[1] == "steps" and parts[2].isdigit() and int(parts[2]) < len(steps):
            st = steps[int(parts[2])]
            return {"step": st.get("step_id") if isinstance(st, dict) else None}
        return {}

    return place


def convert(
    session: Session,
    target: str,
    out_dir: Path,
    passthrough: bool = True,
    secrets: list[str] | None = None,
    redact_home: bool = False,
    report_path: Path | None = None,
    redact_secrets: bool = False,
    taken: set[str] | None = None,
) -> ConvertResult:
    """Write ``session`` as ``target`` (``asf`` or ``atif``) into ``out_dir``.

    Every file is written atomically (:mod:`trajkit.atomic`); a file that
    cannot be written raises :class:`~trajkit.atomic.OutputError`. Secrets
    are looked for in every output (``secret.detected`` in the report);
    ``redact_secrets`` replaces them by pattern before hashing. ``taken``
    holds the output names earlier runs of a batch wrote: a name already in
    it gets a suffix, and the clash is reported."""
    if target not in ("asf", "atif"):
        raise ValueError(f"unknown target {target!r}")
    ensure_dir(out_dir)
    res = ConvertResult(target=target)
    redactor = Redactor(secrets=list(secrets or []), home=redact_home, patterns=redact_secrets)
    export = session_to_asf(session, passthrough=passthrough, redactor=redactor)
    res.export = export

    def name_for(name: str, sid: Any) -> Path:
        got = _claim(out_dir, name, taken)
        if got != name:
            res.clashes.append({"code": "export.id-clash", "name": name, "written_as": got, "session": sid,
                                "source": session.source_path})
        return out_dir / got

    for rel, blob in sorted(export.media.items()):
        # binary attachments the entries reference (export/media.py): beside the documents
        mp = out_dir / rel
        ensure_dir(mp.parent)
        write_atomic(mp, blob, make_parents=False)
        res.media.append(mp)
    if target == "asf":
        for f in export.files:
            data = asf.write_asf(f)
            p = name_for(f"{f.header['id']}.jsonl", f.header["id"])
            write_atomic(p, data, make_parents=False)
            res.outputs.append(p)
            back = asf.read_asf(p)
            for d in asf.verify(back):
                if d.severity == "error":
                    res.problems.append(f"{p.name}: {d}")
            if asf.write_asf(back) != data:
                res.problems.append(f"{p.name}: reading back and writing again is not byte-identical")
            res.secrets.extend(_secret_records(p, secret_scan.scan_jsonl_bytes(data), _asf_places(f)))
    else:
        by_id = {f.header["id"]: f for f in export.files}
        check = atif_validator()
        if check is None:
            res.validated = False
            res.validation = ATIF_NOT_INSTALLED
        for name, doc in to_atif.project_session(export.root, by_id.get, passthrough=passthrough):
            data = dumps(doc, indent=True) + b"\n"
            p = name_for(name, doc.get("session_id"))
            write_atomic(p, data, make_parents=False)
            res.outputs.append(p)
            res.docs.append(doc)
            if check is not None:
                err = check(doc)
                if err:
                    res.problems.append(f"{p.name}: not valid ATIF: {err}")
            res.secrets.extend(_secret_records(p, secret_scan.scan_json_bytes(data, doc), _atif_places(doc)))
    res.report = loss.build_report(session, export, target, [str(p) for p in res.outputs], res.docs if target == "atif" else None, passthrough)
    res.report["validated"] = res.validated
    if res.validation:
        res.report["validation"] = res.validation
    res.report["secrets"] = res.secrets
    if res.clashes:
        res.report["clashes"] = res.clashes
    by_code = res.report["summary"]["by_code"]
    for rec in res.secrets + res.clashes:
        by_code[rec["code"]] = by_code.get(rec["code"], 0) + 1
    res.report["summary"]["by_code"] = dict(sorted(by_code.items()))
    for u in res.report["unaccounted"]:
        res.problems.append(f"unaccounted: {u}")
    if report_path is not None:
        write_atomic(report_path, dumps(res.report, indent=True) + b"\n")
    return res


class _ConvertOne:
    """Read one run and convert it (the task :func:`convert_many` gives the engine)."""

    def __init__(self, target: str, out_dir: Path, read_options: Any, taken: set[str], kw: dict[str, Any],
                 on_progress: Callable[[int, int, Path], None] | None, total: int) -> None:
        self.target, self.out_dir, self.read_options, self.taken, self.kw = target, out_dir, read_options, taken, kw
        self.on_progress, self.total, self.done = on_progress, total, 0
        self.raised: BaseException | None = None

    def __call__(self, src: Path) -> tuple[ConvertResult | None, str | None]:
        from ..model import DetectionError, TrajkitError
        from ..registry import read

        if self.on_progress is not None:
            self.on_progress(self.done, self.total, src)
        self.done += 1
        try:
            session = read(src, options=self.read_options)
        except (DetectionError, TrajkitError) as e:
            return None, str(e)
        try:
            return convert(session, self.target, self.out_dir, taken=self.taken, **self.kw), None
        except BaseException as e:
            self.raised = e
            raise


def convert_many(
    runs: list[Path],
    target: str,
    out_dir: Path,
    read_options: Any = None,
    report_path: Path | None = None,
    on_progress: Callable[[int, int, Path], None] | None = None,
    **kw: Any,
) -> tuple[list[ConvertResult], dict[str, Any], list[str]]:
    """Convert every run in ``runs``; one combined report. A run that cannot
    be read is reported (``export.run-unreadable``) and the rest go on.
    Two runs whose outputs would share a name (the same native id) are both
    kept: the later one's files get a ``-2`` suffix, and the clash is in the
    report's ``clashes`` (``export.id-clash``). ``on_progress(done, total,
    run)`` is called before each run and once at the end."""
    from ..atomic import OutputError
    from ..corpus.run import SERIAL, Failed, run

    results: list[ConvertResult] = []
    reports: list[dict[str, Any]] = []
    problems: list[str] = []
    taken: set[str] = set()
    task = _ConvertOne(target, out_dir, read_options, taken, kw, on_progress, len(runs))
    # The one batch engine, serially: a run's output names depend on the names
    # the runs before it took (``taken``), so conversions keep the input order.
    for batch in run(task, runs, engine=SERIAL, batch_size=1):
        for src, got in zip(batch.items, batch.results):
            if isinstance(got, Failed):
                if isinstance(task.raised, OutputError):  # an output that cannot be written stops the batch
                    raise task.raised
                problems.append(f"{src}: export.run-unreadable: {got.error}")
                reports.append({"source": str(src), "code": "export.run-unreadable", "why": got.error})
                continue
            res, why = got
            if res is None:
                problems.append(f"{src}: export.run-unreadable: {why}")
                reports.append({"source": str(src), "code": "export.run-unreadable", "why": why})
                continue
            results.append(res)
            reports.append(res.report)
            problems.extend(f"{src}: {p}" for p in res.problems)
    if on_progress is not None and runs:
        on_progress(len(runs), len(runs), runs[-1])
    totals: dict[str, int] = {}
    for r in reports:
        for k, v in (r.get("summary") or {}).items():
            if isinstance(v, int):
                totals[k] = totals.get(k, 0) + v
    clashes = [c for r in results for c in r.clashes]
    secrets_found = [s for r in results for s in r.secrets]
    if clashes:
        totals["clashes"] = len(clashes)
    combined: dict[str, Any] = {"target": target, "runs": len(runs), "summary": totals, "problems": problems}
    validated = all(r.validated for r in results)
    combined["validated"] = validated
    if not validated:
        combined["validation"] = next(r.validation for r in results if not r.validated)
    combined["secrets"] = secrets_found
    if clashes:
        combined["clashes"] = clashes
    combined["reports"] = reports
    if report_path is not None:
        write_atomic(report_path, dumps(combined, indent=True) + b"\n")
    return results, combined, problems
