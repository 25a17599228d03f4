"""The export verbs: ``trajkit convert`` (a run to ASF or ATIF, with a loss
report) and ``trajkit verify`` (check an ASF session file)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._common import EXIT_CANNOT_RUN, EXIT_CHECK_FAILED, EXIT_OK, echo_json, fail, load_session


@click.command("verify")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON document per file: ok, counts, diagnostics.")
@click.option("--no-request-hashes", is_flag=True, help="Skip rebuilding requests to check request_hash.")
@click.option("--context", "context_leaf", default=None, help="Also print the context built at this leaf id ('main' for the live leaf).")
def verify_cmd(files: tuple[str, ...], as_json: bool, no_request_hashes: bool, context_leaf: str | None) -> None:
    """Check ASF session FILES: every id and parent, request hashes, base and
    compaction references, instruction parts, promised records, run sources,
    and a cut-off final line. Exit 0 when every file conforms, 1 when one does
    not, 2 when a file cannot be read."""
    from ..spec import asf

    worst = EXIT_OK
    docs = []
    for name in files:
        p = Path(name)
        if not p.is_file():
            fail(f"{name}: no such file", EXIT_CANNOT_RUN)
        f = asf.read_asf(p)
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
            click.echo(
                f"{p}: {status} ({doc['format']}, {doc['entries']} entries, {doc['leaves']} leaves, "
                f"{doc['request_hashes']} request hashes checked{', migrated from legacy ids' if f.migrated else ''})"
            )
            for d in diags:
                if d.severity != "info":
                    click.echo(f"  {d}")
            if context_leaf is not None:
                click.echo(echo_text(doc["context"]))
    if as_json:
        echo_json(docs[0] if len(docs) == 1 else docs)
    sys.exit(worst)


def echo_text(obj) -> str:
    from ..jsonio import dumps

    return dumps(obj, indent=True).decode()


@click.command("convert")
@click.argument("src", type=click.Path(exists=True))
@click.option("--to", "target", type=click.Choice(["asf", "atif"]), required=True, help="Output format.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Directory to write into (created).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None, help="Write the loss report (JSON) here.")
@click.option("--redact-secret", "secrets", multiple=True, help="Replace this value with [REDACTED] everywhere (repeatable).")
@click.option("--redact-home", is_flag=True, help="Replace home directories (/home/<user>, /Users/<user>, /root) with ~.")
@click.option("--no-passthrough", is_flag=True, help="Leave raw native events out of the output (the report lists their members).")
@click.option("--format", "format_name", default=None, help="Read as this format instead of detecting it.")
@click.option("--max-file-bytes", type=int, default=1 << 30, show_default=True, help="Files larger than this are reported, not read.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary (outputs, counts, checks) on stdout.")
def convert_cmd(src, target, out_dir, report_path, secrets, redact_home, no_passthrough, format_name, max_file_bytes, as_json):
    """Convert the run at SRC to ASF 0.11 sessions or ATIF v1.8 documents.

    SRC may also be a directory holding many runs: each is converted into OUT
    (progress on stderr) and the report covers them all.

    Every output is checked before the verb returns: ASF files are read back
    and verified, ATIF documents validated with the ``atif`` package when it
    is installed. Exit 0 done, 1 written but a check failed or an event went
    unaccounted, 2 nothing readable at SRC.
    """
    from ..export.convert import convert, convert_many, find_runs
    from ..model import ReadOptions

    if format_name is None and Path(src).is_dir():
        runs = find_runs(Path(src))
        if len(runs) != 1 or runs[0] != Path(src):
            # A directory holding many runs: convert each, one combined report.
            if not runs:
                fail(f"{src}: no known format matches, and no run was found under it")
            results, combined, problems = convert_many(
                runs, target, Path(out_dir), read_options=ReadOptions(max_file_bytes=max_file_bytes),
                report_path=Path(report_path) if report_path else None, progress=not as_json,
                passthrough=not no_passthrough, secrets=list(secrets), redact_home=redact_home,
            )
            outputs = [str(p) for r in results for p in r.outputs]
            if as_json:
                echo_json({"target": target, "ok": not problems, "runs": len(runs), "outputs": outputs,
                           "problems": problems, "summary": combined["summary"]})
            else:
                for o in outputs:
                    click.echo(o)
                t = combined["summary"]
                click.echo(
                    f"{len(runs)} runs: {t.get('events', 0)} events in {t.get('files', 0)} files, "
                    f"{t.get('events_placed', 0)} placed, {t.get('events_dropped', 0)} dropped; "
                    f"{len(problems)} problem(s)" + (f"; report: {report_path}" if report_path else ""),
                    err=True,
                )
                for prob in problems:
                    click.echo(f"  {prob}", err=True)
            sys.exit(EXIT_OK if not problems else EXIT_CHECK_FAILED)

    session = load_session(src, format_name, max_file_bytes)
    result = convert(
        session,
        target,
        Path(out_dir),
        passthrough=not no_passthrough,
        secrets=list(secrets),
        redact_home=redact_home,
        report_path=Path(report_path) if report_path else None,
        progress=not as_json,
    )
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
        for prob in result.problems:
            click.echo(f"  {prob}", err=True)
    sys.exit(EXIT_OK if result.ok else EXIT_CHECK_FAILED)
