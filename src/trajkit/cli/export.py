"""The export verbs: ``trajkit convert`` (a run to ASF or ATIF, with a loss
report) and ``trajkit verify`` (check an ASF session file)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..view.safe import printable
from ._common import (
    EXIT_CANNOT_RUN,
    EXIT_CHECK_FAILED,
    EXIT_OK,
    LiveProgress,
    echo_json,
    fail,
    load_session,
    warn_secrets,
)
from ._options import format_option, member_option, redaction_options


@click.command("verify")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON document per file: ok, counts, diagnostics.")
@click.option("--no-request-hashes", is_flag=True, help="Skip rebuilding requests to check request_hash.")
@click.option("--context", "context_leaf", default=None, help="Also print the context built at this leaf id ('main' for the live leaf).")
def verify_cmd(files: tuple[str, ...], as_json: bool, no_request_hashes: bool, context_leaf: str | None) -> None:
    """Check ASF session FILES (or every *.jsonl under a folder): every id and parent, request hashes, base and
    compaction references, instruction parts, promised records, run sources,
    and a cut-off final line. Exit 0 when every file conforms, 1 when one does
    not, 2 when a file cannot be read."""
    from ..spec import asf

    worst = EXIT_OK
    docs = []
    paths: list[Path] = []
    for name in files:
        p = Path(name)
        if p.is_dir():
            found = sorted(x for x in p.rglob("*.jsonl") if x.is_file())
            if not found:
                fail(f"{printable(name)}: a folder with no ASF session files (*.jsonl) in it; verify takes ASF files or folders of them")
            paths.extend(found)
        elif p.is_file():
            paths.append(p)
        else:
            fail(f"{printable(name)}: no such file or directory", EXIT_CANNOT_RUN)
    for p in paths:
        f = asf.read_asf(p)
        not_asf = _not_asf(p, f)
        if not_asf is not None:
            worst = max(worst, EXIT_CHECK_FAILED)
            docs.append({"file": str(p), "ok": False, "asf": False, "looks_like": not_asf})
            if not as_json:
                click.echo(printable(f"{p}: FAILED, not ASF JSON Lines: {not_asf}"))
            continue
        diags = asf.verify(f, check_requests=not no_request_hashes)
        errors = [d for d in diags if d.severity == "error"]
        ok = not errors
        if not ok:
            worst = max(worst, EXIT_CHECK_FAILED)
        doc = {
            "file": str(p),
            "ok": ok,
            "format": f.header.get("format"),
            "session": f.header.get("id"),
            "entries": len(f.entries),
            "leaves": len(f.leaves()),
            "responses": sum(1 for e in f.entries if e.type == "response"),
            "request_hashes": sum(1 for e in f.entries if e.type == "response" and "request_hash" in e.obj),
            "migrated": f.migrated,
            "diagnostics": [d.to_dict() for d in diags],
        }
        if context_leaf is not None:
            leaf = f.main_leaf() if context_leaf == "main" else context_leaf
            doc["context"] = asf.build_context(f, leaf).to_dict() if leaf in f.by_id else None
        docs.append(doc)
        if not as_json:
            status = "ok" if ok else "FAILED"
            click.echo(printable(
                f"{p}: {status} ({doc['format']}, {doc['entries']} entries, {doc['leaves']} leaves, "
                f"{doc['request_hashes']} request hashes checked{', migrated from legacy ids' if f.migrated else ''})"
            ))
            for d in diags:
                if d.severity != "info":
                    click.echo(printable(f"  {d}"))
            if context_leaf is not None:
                click.echo(echo_text(doc["context"]))
    if as_json:
        echo_json(docs[0] if len(docs) == 1 else docs)
    sys.exit(worst)


_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\x1f\x8b", "a gzip file"),
    (b"PAR1", "a Parquet file"),
)


def _not_asf(p: Path, f) -> str | None:
    """What ``p`` looks like when it is not ASF JSON Lines at all (None when
    it is ASF, however broken): nothing in it read as a session header or an
    entry, or its first line is a JSON object that is no session header."""
    h = f.header
    if h and (h.get("type") == "session" or str(h.get("format", "")).startswith("agentsession/")):
        return None
    if any(not e.obj.get("_unparsed") for e in f.entries) and not h:
        return None
    try:
        with open(p, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    if not head.strip():
        return "an empty file"
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    if b"\x00" in head:
        return "a binary file"
    if h:
        kind = f"type {h['type']!r}" if "type" in h else "no type member"
        return f"JSON Lines whose first object is not a session header ({kind}){_looks_like(p)}"
    from ..jsonio import MISSING
    from ..reading.io import load_json

    doc, _ = load_json(p, 256 << 20)
    if doc is MISSING:
        return "neither JSON Lines nor a JSON document"
    if isinstance(doc, dict) and str(doc.get("schema_version", "")).startswith("ATIF"):
        return f"a JSON document (looks like ATIF, {doc['schema_version']})"
    return f"a JSON document (a {'list' if isinstance(doc, list) else type(doc).__name__}{_looks_like(p, ', ')})"


def _looks_like(p: Path, sep: str = "; ") -> str:
    from ..registry import detect

    det = detect(p)
    return f"{sep}looks like {det.format.name}" if det.format is not None else ""


def echo_text(obj) -> str:
    from ..jsonio import dumps

    return dumps(obj, indent=True).decode()


def _container_members(src: str, format_name: str | None, max_file_bytes: int) -> list[Path] | None:
    """The sessions of ``src`` when it is a file holding several (an
    evaluation output.jsonl; ``FILE#ID`` names one), else None."""
    from ..model import ReadOptions, TrajkitError
    from ..registry import members

    if "#" not in src and Path(src).is_dir():
        return None
    try:
        addresses = members(src, format=format_name, options=ReadOptions(max_file_bytes=max_file_bytes))
    except TrajkitError:
        return None  # the single-run path says what is wrong
    if len(addresses) <= 1:  # one session (read() takes a container's only one): the single-run report
        return None
    return [Path(a) for a in addresses]


@click.command("convert")
@click.argument("src", type=click.Path(exists=False))
@member_option
@click.option("--to", "target", type=click.Choice(["asf", "atif"]), required=True, help="Output format.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Directory to write into (created).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None, help="Write the loss report (JSON) here.")
@redaction_options
@click.option("--no-passthrough", is_flag=True, help="Leave raw native events out of the output (the report lists their members).")
@format_option
@click.option("--max-file-bytes", type=int, default=1 << 30, show_default=True, help="Files larger than this are reported, not read.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary (outputs, counts, checks) on stdout.")
def convert_cmd(src, target, out_dir, report_path, redact_secrets, secrets, redact_home, no_passthrough, format_name,
                max_file_bytes, as_json, member):
    """Convert the run at SRC to ASF 0.11 sessions or ATIF v1.8 documents.

    SRC may also be a directory holding many runs: each is converted into OUT
    (progress on stderr) and the report covers them all; two runs with the
    same id are both kept (the later one's files get a -2 suffix; the clash is
    reported as export.id-clash). Entries directly under SRC that hold no
    run (formats trajkit does not read, symlinked folders) are listed as
    skipped, with the reason, on stderr and in --json ("skipped").

    Every output is written atomically and checked before the verb returns:
    ASF files are read back and verified, ATIF documents validated with the
    ``atif`` package ("validated": false, and why, when it is not installed).
    Credentials found by pattern are reported (secret.detected: kind and
    place, never the value) unless --redact-secrets replaces them. Exit 0
    done, 1 written but a check failed or an event went unaccounted, 2 nothing
    readable at SRC or an output that cannot be written.
    """
    from ..atomic import OutputError
    from ..corpus import discover
    from ..export.convert import convert, convert_many
    from ..model import ReadOptions

    from ..registry import split_member

    if member is not None:
        src = f"{src}#{member}"
    if not os.path.exists(split_member(src)[0]):
        fail(f"{src}: no such file or directory")
    kw = dict(passthrough=not no_passthrough, secrets=list(secrets), redact_home=redact_home, redact_secrets=redact_secrets)
    report = Path(report_path) if report_path else None
    container = _container_members(src, format_name, max_file_bytes) if "#" not in src else None
    if container is not None or (format_name is None and Path(src).is_dir()):
        with LiveProgress() as bar:
            bar.status(f"finding runs under {src}")
            skipped: list[dict[str, str]] = []
            if container is not None:  # a file holding many sessions: each member is a run
                runs = container
            else:
                runs = [r.path for r in discover([src], on_skip=lambda p, why: skipped.append({"path": str(p), "reason": why}))]
            if len(runs) != 1 or runs[0] != Path(src):
                # A directory holding many runs: convert each, one combined report.
                if not runs:
                    fail(f"{src}: no known format matches, and no run was found under it")
                bar.start(len(runs), f"converting to {target}")

                def step(done: int, total: int, run: Path) -> None:
                    bar.update(done, total, f"converting to {target}: {run.name}" if done < total else f"converting to {target}")

                try:
                    results, combined, problems = convert_many(
                        runs, target, Path(out_dir), read_options=ReadOptions(max_file_bytes=max_file_bytes),
                        report_path=report, on_progress=step, **kw)
                except OutputError as e:
                    fail(str(e))
                    raise  # unreachable
        if len(runs) != 1 or runs[0] != Path(src):
            outputs = [str(p) for r in results for p in r.outputs]
            clashes = combined.get("clashes", [])
            if as_json:
                doc = {"target": target, "ok": not problems, "validated": combined["validated"]}
                if "validation" in combined:
                    doc["validation"] = combined["validation"]
                doc.update({"runs": len(runs), "outputs": outputs, "problems": problems, "summary": combined["summary"],
                            "secrets": combined["secrets"], "skipped": skipped})
                if clashes:
                    doc["clashes"] = clashes
                echo_json(doc)
            else:
                for o in outputs:
                    click.echo(o)
                t = combined["summary"]
                click.echo(
                    f"{len(runs)} runs: {t.get('events', 0)} events in {t.get('files', 0)} files, "
                    f"{t.get('events_placed', 0)} placed, {t.get('events_dropped', 0)} dropped; "
                    f"{len(problems)} problem(s); {len(skipped)} skipped"
                    + (f"; report: {report_path}" if report_path else ""),
                    err=True,
                )
                for sk in skipped:
                    click.echo(f"  skipped {sk['path']}: {sk['reason']}", err=True)
                if not combined["validated"]:
                    click.echo(f"  not validated: {combined['validation']}", err=True)
                for prob in problems:
                    click.echo(f"  {prob}", err=True)
            _warn_clashes(clashes)
            warn_secrets(combined["secrets"])
            sys.exit(EXIT_OK if not problems else EXIT_CHECK_FAILED)

    with LiveProgress() as bar:
        bar.status(f"reading {src}")
        session = load_session(src, format_name, max_file_bytes)
        bar.status(f"converting {Path(src).name} to {target}")
        try:
            result = convert(session, target, Path(out_dir), report_path=report, **kw)
        except OutputError as e:
            fail(str(e))
            raise  # unreachable
    summary = result.summary()
    if as_json:
        echo_json(summary)
    else:
        for p in result.outputs:
            click.echo(str(p))
        s = result.report["summary"]
        click.echo(
            f"{s['events']} events in {s['files']} files from {s['sessions']} session(s): "
            f"{s['events_placed']} placed, {s['events_dropped']} dropped; "
            f"{len(result.problems)} check problem(s)"
            + (f"; report: {report_path}" if report_path else ""),
            err=True,
        )
        if not result.validated:
            click.echo(f"  not validated: {result.validation}", err=True)
        for prob in result.problems:
            click.echo(f"  {prob}", err=True)
    warn_secrets(result.secrets)
    sys.exit(EXIT_OK if result.ok else EXIT_CHECK_FAILED)


def _warn_clashes(clashes: list[dict]) -> None:
    for c in clashes:
        click.echo(f"trajkit: warning[export.id-clash] {c['source']}: another run of this batch has session id "
                   f"{c['session']}; written as {c['written_as']} (not {c['name']})", err=True)
