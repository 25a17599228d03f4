"""The export verbs: ``trajkit convert`` (a run to ASF or ATIF, with a loss
report) and ``trajkit verify`` (check an ASF session file)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..cli import EXIT_CANNOT_RUN, EXIT_CHECK_FAILED, EXIT_OK, echo_json, fail


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
    from ..export import asf

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
