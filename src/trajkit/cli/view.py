"""``trajkit view``: a run (or every run under a directory) as a static,
self-contained HTML page (see :mod:`trajkit.view.html` and docs/view.md)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from ..model import ReadOptions, TrajkitError
from ._common import EXIT_CHECK_FAILED, ctb_labels, echo_json, fail, load_session
from ._options import format_option, size_option, tz_option, view_option


def _read(path: str, format_name: str | None, max_file_bytes: int, view: str | None, tz: str | None):
    from ..registry import read

    return read(path, format=format_name, options=ReadOptions(max_file_bytes=max_file_bytes, view=view, tz=tz))


def _certificate_for(session, path: str, do_certify: bool, certificate: str | None, format_name: str | None, max_file_bytes: int):
    if certificate:
        from ..certify.certificate import read_certificate

        cert, why = read_certificate(certificate)
        if cert is None:
            fail(f"--certificate {certificate}: {why}")
        return cert
    if do_certify:
        from ..certify import CertifyOptions, certify

        return certify(path, CertifyOptions(format=format_name, max_file_bytes=max_file_bytes), session=session)
    return None


def _write(path: Path, text: str) -> None:
    from ..atomic import OutputError, write_atomic

    try:
        write_atomic(path, text.encode("utf-8", "surrogatepass"))
    except OutputError as e:
        fail(str(e))


def _open(path: Path) -> None:
    import webbrowser

    if not webbrowser.open(path.resolve().as_uri()):
        click.echo(f"trajkit: no browser to open {path}", err=True)


#: How outcomes sort on the index page: certified success first, then the
#: certificate's failure states, then runs with only the harness's word.
_RANK = {"Succeeded": 0, "FailedSafety": 1, "FailedSpecGap": 2, "FailedUnverifiable": 3, "FailedBudget": 4,
         "FailedBlocked": 5, "AbortedByHuman": 6}


def _outcome_word(session, cert) -> tuple[str, int]:
    if cert is not None:
        return cert.state, _RANK.get(cert.state, 7)
    o = session.outcome
    if o is None:
        return "no end signal recorded", 20
    word = o.status or o.signal or ("ended" if o.reached_end else "did not end")
    if o.claimed_success:
        return f"{word} (claimed success)", 10
    return str(word), 11 if o.reached_end else 12


@click.command("view")
@click.argument("run", type=click.Path(exists=False))
@click.option("--out", "out", type=click.Path(), default=None,
              help="The page to write (a directory when RUN is a directory of runs). Default with --open: a temporary file.")
@click.option("--open", "open_", is_flag=True, help="Open the page in the default browser.")
@click.option("--certify", "do_certify", is_flag=True, help="Certify the run and show its state, reason and findings.")
@click.option("--certificate", type=click.Path(exists=True, dir_okay=False), default=None, help="Show this certificate (from `trajkit certify --out`).")
@click.option("--ctb-row", type=click.Path(exists=True), default=None, help="A CodeTraceBench manifest row: show its labels on the steps.")
@click.option("--ctb-id", default=None, help="With a multi-row manifest: the traj_id / trial_name to use.")
@view_option
@click.option("--page-size", type=click.IntRange(1, None), default=1000, show_default=True, help="Timeline items per page of the page.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@format_option
@tz_option
@size_option
def view_cmd(run, out, open_, do_certify, certificate, ctb_row, ctb_id, view, page_size, as_json, format_name, tz, max_file_bytes):
    """Write the run at RUN as one self-contained HTML page (no network, no server).

    When RUN is a directory holding several runs (and is itself no run), write
    one page per run into the --out directory and an index.html listing them,
    sortable by outcome, steps and cost. Exit 0 when written, 1 when some runs
    of a directory could not be read (they are listed as such), 2 when nothing
    could be written.
    """
    from ..registry import detect, list_members, split_member

    if not os.path.exists(split_member(run)[0]):
        fail(f"{run}: no such file or directory")
    det = detect(run)
    is_run = det.format is not None or os.path.isfile(run) or format_name
    if os.path.isdir(run) and det.format is not None and det.match is not None and Path(det.match.root).resolve() != Path(run).resolve():
        is_run = True  # a path inside one run
    if (det.format is not None and det.member is None and det.match is not None and not format_name
            and len(list_members(det.format, Path(det.match.root), ReadOptions(max_file_bytes=max_file_bytes))) > 1):
        is_run = False  # a file holding many sessions: one page each, and an index
    if not is_run:
        if certificate or ctb_row:
            fail("--certificate and --ctb-row name one run; RUN is a directory of runs")
        _view_many(run, out, open_, do_certify, view, page_size, as_json, format_name, tz, max_file_bytes)
        return
    from ..view.html import render
    from ..view.transcript import transcript

    session = load_session(run, format_name, max_file_bytes, view=view, tz=tz)
    row = ctb_labels(session, ctb_row, ctb_id)
    cert = _certificate_for(session, run, do_certify, certificate, format_name, max_file_bytes)
    if out is None:
        if not open_:
            fail("give --out PAGE.html (or --open to view a temporary page)")
        fd, tmp = tempfile.mkstemp(prefix="trajkit-view-", suffix=".html")
        os.close(fd)
        out = tmp
    target = Path(out)
    if target.is_dir():
        fail(f"--out {out} is a directory; give a file name for one run's page")
    _write(target, render(transcript(session), cert, row, page_size))
    pages = max(1, -(-(len(session.steps)) // page_size))
    if as_json:
        echo_json({"out": str(target), "format": session.format, "steps": len(session.steps), "events": len(session.events),
                   "diagnostics": len(session.diagnostics), "certificate": cert.state if cert is not None else None,
                   "timeline_pages": pages})
    else:
        click.echo(f"{target}: {len(session.steps)} steps, {len(session.diagnostics)} diagnostics"
                   + (f", {cert.state}" if cert is not None else ""), err=True)
    if open_:
        _open(target)


def _view_many(root, out, open_, do_certify, view, page_size, as_json, format_name, tz, max_file_bytes) -> None:
    from ..view.html import render, render_index, slug
    from ..view.transcript import transcript

    if out is None:
        fail("RUN is a directory of runs: give --out DIR for the pages")
    dest = Path(out)
    if dest.exists() and not dest.is_dir():
        fail(f"--out {out} exists and is no directory")
    from ..corpus import discover

    items = [str(r.path) for r in discover([root], on_problem=lambda m: click.echo(f"trajkit: {m}", err=True))]
    if not items:
        fail(f"{root}: no runs found")
    rows: list[dict[str, Any]] = []
    used: set[str] = {"index"}
    bad = 0
    for n, item in enumerate(items, 1):
        rel = os.path.relpath(item, root)
        name = slug(rel.replace(os.sep, "__"))
        base, k = name, 2
        while name.lower() in used:
            name, k = f"{base}-{k}", k + 1
        used.add(name.lower())
        click.echo(f"[{n}/{len(items)}] {rel}", err=True)
        row: dict[str, Any] = {"name": rel, "href": None, "format": None, "task": None, "outcome": None, "rank": 99,
                               "steps": None, "cost": None, "diagnostics": None, "error": None}
        try:
            session = _read(item, format_name, max_file_bytes, view, tz)
        except TrajkitError as e:
            row["error"] = str(e)
            rows.append(row)
            bad += 1
            continue
        cert = None
        if do_certify:
            from ..certify import CertifyOptions, certify

            cert = certify(item, CertifyOptions(format=format_name, max_file_bytes=max_file_bytes), session=session)
        tree = transcript(session)
        _write(dest / f"{name}.html", render(tree, cert, None, page_size))
        word, rank = _outcome_word(session, cert)
        cost = tree.header.run_cost if tree.header.run_cost is not None else tree.header.cost
        row.update(href=f"{name}.html", format=session.format, task=session.task, outcome=word, rank=rank,
                   steps=len(session.steps), cost=cost, diagnostics=len(session.diagnostics))
        rows.append(row)
    index = dest / "index.html"
    _write(index, render_index(rows, f"trajkit · {len(rows)} runs under {os.path.basename(os.path.abspath(root))}"))
    if as_json:
        echo_json({"out": str(index), "runs": rows})
    else:
        click.echo(f"{index}: {len(rows)} runs ({bad} unreadable)", err=True)
    if open_:
        _open(index)
    if bad:
        sys.exit(EXIT_CHECK_FAILED)
