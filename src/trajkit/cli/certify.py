"""``trajkit certify`` and ``trajkit fcr``: post-run certification verbs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ._common import EXIT_CHECK_FAILED, EXIT_OK, LiveProgress, echo_json, fail, out_console, session_addresses
from ._options import format_option, member_option, size_option

_STATE_STYLE = {
    "Succeeded": "bold green",
    "FailedUnverifiable": "bold yellow",
    "FailedBlocked": "bold magenta",
    "FailedBudget": "bold magenta",
    "FailedSafety": "bold red",
    "FailedSpecGap": "bold cyan",
    "AbortedByHuman": "bold blue",
}


def _split_globs(values) -> tuple[str, ...]:
    """--protect values, each possibly a comma-separated list."""
    return tuple(g.strip() for v in values for g in v.split(",") if g.strip())


def _print_certificate(cert) -> None:
    from rich.table import Table

    con = out_console()
    con.print(f"[{_STATE_STYLE.get(cert.state, 'bold')}]{cert.state}[/]  {cert.reason}", markup=True)
    run = cert.run or {}
    con.print(f"run      {run.get('path')}  ({run.get('format')}, {run.get('events', '?')} events, {run.get('steps', '?')} steps)", markup=False)
    e = cert.engine or {}
    if e:
        con.print(f"engine   {e.get('signal') or e.get('status')}  (claimed success: {'yes' if cert.claimed_success else 'no'})", markup=False)
    g = cert.gate or {}
    if g:
        con.print(f"gate     {g.get('verdict')}: {g.get('reason')}", markup=False)
    d = cert.diff or {}
    if d:
        trust = "trustworthy" if d.get("trustworthy") else "NOT trustworthy"
        con.print(f"diff     {d.get('source')}, {len(d.get('files') or [])} file(s), {trust}: {d.get('reason')}", markup=False)
    if cert.findings:
        t = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        t.add_column("severity")
        t.add_column("rule")
        t.add_column("where")
        t.add_column("what", overflow="fold")
        for f in cert.findings:
            ev = (f.get("evidence") or [{}])[0]
            where = []
            if ev.get("step_id") is not None:
                where.append(f"step {ev['step_id']}")
            if ev.get("event_id") is not None:
                where.append(f"event {ev['event_id']}")
            if ev.get("file"):
                shown = os.path.basename(ev["file"]) if os.path.isabs(ev["file"]) else ev["file"]
                where.append(f"{shown}:{ev.get('line') or ''}".rstrip(":"))
            t.add_row(f.get("severity", ""), f.get("rule", ""), ", ".join(where), f.get("message", ""))
        con.print(t)
    else:
        con.print("findings none", markup=False)


@click.command("certify")
@click.argument("run", required=False, type=click.Path(exists=False))
@click.option("--workspace", type=click.Path(file_okay=False), default=None, help="The agent's workspace after the run (git diff, canaries, --before check).")
@click.option("--base", default=None, help="The git revision the run started from (default: HEAD, unless the agent rewrote history).")
@click.option("--visible", multiple=True, type=click.Path(), help="Visible test results: JUnit XML, CTRF, pytest-json-report, harbor verifier/ or result.json, terminal-bench results.json. Repeatable.")
@click.option("--holdout", multiple=True, type=click.Path(), help="Withheld test results (same formats). Repeatable. Default: the trial's own verifier verdict, if any.")
@click.option("--holdout-manifest", type=click.Path(), default=None, help="What the holdout set must contain: a JSON list of test ids, {holdout: [...]}, or {count: N}.")
@click.option("--protect", multiple=True, metavar="GLOB", help="A protected path glob (workspace-relative; ** spans directories). Repeatable; adds to the defaults.")
@click.option("--no-default-protect", is_flag=True, help="Do not protect the default holdout / answer-key globs.")
@click.option("--before", type=click.Path(), default=None, help="A before-run manifest (from --snapshot): any change to a file in it is gate tampering.")
@click.option("--snapshot", "snapshot_out", type=click.Path(dir_okay=False), default=None, help="Write a before-run manifest of --workspace to this file (run it before the agent starts; RUN is then optional).")
@click.option("--criteria", type=click.Path(exists=True, dir_okay=False), default=None, help="A JSON map {criterion: true|false|null}; null means no mapped check (FailedSpecGap).")
@click.option("--patch", type=click.Path(exists=True, dir_okay=False), default=None, help="Use this unified diff as the run's change instead of git / the record.")
@click.option("--agent-workspace", default=None, help="The workspace path as the agent saw it (e.g. /workspace), when the record does not say.")
@click.option("--history", type=click.Choice(["forbidden", "allowed"]), default="forbidden", show_default=True, help="Whether git history is off limits (git-history oracles are high when forbidden, medium when allowed).")
@click.option("--allow-skipped", is_flag=True, help="Skipped tests do not make a result set red (they are never counted as passed).")
@click.option("--no-harness-gate", is_flag=True, help="Do not use the trial's own verifier verdict as the holdout set.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None, help="Write the certificate JSON here.")
@click.option("--asf", "asf_file", type=click.Path(exists=True, dir_okay=False), default=None, help="Append the certificate to this ASF session as an outcome entry.")
@click.option("--json", "as_json", is_flag=True, help="Print the certificate JSON to stdout.")
@click.option("--strict", is_flag=True, help="Exit 1 unless the run is certified Succeeded.")
@format_option
@member_option
@size_option
def certify_cmd(run, workspace, base, visible, holdout, holdout_manifest, protect, no_default_protect, before, snapshot_out, criteria,
                patch, agent_workspace, history, allow_skipped, no_harness_gate, out_file, asf_file, as_json, strict, format_name, member,
                max_file_bytes):
    """Certify the run at RUN: one terminal state, with its reason and evidence.

    RUN may be a file holding many sessions (an evaluation output.jsonl):
    each is certified in turn (--json: {"path", "certificates": [...]};
    --out: that document; --strict: exit 1 unless every one Succeeded);
    name one as RUN#ID or with --member ID.

    Exit 0 when a certificate was produced (whatever its state; --strict: exit
    1 unless Succeeded), 2 when certification could not run (bad usage, a
    path that is missing or holds no run of a known format, an output that
    cannot be written).
    """
    from ..certify import CertifyOptions, append_outcome, certify
    from ..certify.paths import DEFAULT_PROTECT
    from ..jsonio import MISSING, dumps
    from ..reading.io import load_json

    if snapshot_out:
        if not workspace or not os.path.isdir(workspace):
            fail("--snapshot needs --workspace DIR (an existing directory)")
        from ..certify.canary import snapshot

        globs = _split_globs(protect) + (() if no_default_protect else DEFAULT_PROTECT)
        doc = snapshot(workspace, globs)
        from ..atomic import OutputError, write_atomic

        try:
            write_atomic(snapshot_out, dumps(doc, indent=True) + b"\n")
        except OutputError as e:
            fail(str(e))
        if as_json:
            echo_json({"manifest": snapshot_out, "files": len(doc["files"]), "canaries": len(doc["canaries"])})
        else:
            click.echo(f"{snapshot_out}: {len(doc['files'])} protected / gate file(s), {len(doc['canaries'])} canary string(s)")
        if run is None:
            sys.exit(EXIT_OK)
    if run is None:
        fail("missing RUN (a run trajkit reads), unless --snapshot is given")
    from ..registry import split_member

    if member is not None:
        run = f"{run}#{member}"
    if not os.path.exists(split_member(run)[0]):
        fail(f"{run}: no such file or directory")
    crit = None
    if criteria:
        doc, diags = load_json(criteria)
        if doc is MISSING or not isinstance(doc, dict):
            fail(f"--criteria {criteria}: not a JSON object" + (f" ({diags[0].message})" if diags else ""))
        crit = doc
    if workspace and not os.path.isdir(workspace):
        fail(f"--workspace {workspace}: no such directory")
    if format_name:
        from ..model import DetectionError
        from ..registry import get_format

        try:
            get_format(format_name)
        except DetectionError as e:
            fail(str(e))
    else:
        from ..registry import detect

        if detect(run).format is None:
            # Nothing here is a run trajkit reads: there is nothing to certify
            # (a certificate would only say "unreadable" about a wrong path).
            fail(f"{run}: no known format (name one with --format)")
    opts = CertifyOptions(
        workspace=workspace, base=base, visible=tuple(visible), holdout=tuple(holdout), protect=_split_globs(protect),
        default_protect=not no_default_protect, before=before, holdout_manifest=holdout_manifest, criteria=crit, patch=patch,
        format=format_name, agent_workspace=agent_workspace, history_forbidden=history == "forbidden",
        allow_skipped=allow_skipped, harness_gate=not no_harness_gate, max_file_bytes=max_file_bytes,
    )
    addresses = session_addresses(run, format_name, max_file_bytes)
    if len(addresses) > 1:
        _certify_many(run, addresses, opts, out_file, asf_file, as_json, strict)
    cert = certify(run, opts)
    if out_file:
        try:
            cert.write(out_file)
        except OSError as e:
            fail(f"cannot write {out_file}: {e.strerror}")
    if asf_file:
        try:
            append_outcome(asf_file, cert)
        except (OSError, ValueError) as e:
            fail(f"cannot append the outcome to {asf_file}: {e}")
    if as_json:
        echo_json(cert.to_dict())
    else:
        _print_certificate(cert)
        if out_file:
            click.echo(f"certificate written to {out_file}")
    if strict and not cert.succeeded:
        sys.exit(EXIT_CHECK_FAILED)
    sys.exit(EXIT_OK)


def _certify_many(run: str, addresses: list[str], opts, out_file, asf_file, as_json: bool, strict: bool) -> None:
    """Certify every session of a file holding many, one certificate each; exits."""
    from ..certify import certify
    from ..jsonio import dumps

    if asf_file:
        fail(f"{run} holds {len(addresses)} sessions; --asf appends one certificate: name one as RUN#ID or with --member ID")
    certs = []
    with LiveProgress() as bar:
        bar.start(len(addresses), "certifying")
        for i, address in enumerate(addresses):
            certs.append(certify(address, opts))
            bar.update(i + 1, len(addresses), "certifying")
    doc = {"path": run, "certificates": [c.to_dict() for c in certs]}
    if out_file:
        from ..atomic import OutputError, write_atomic

        try:
            write_atomic(out_file, dumps(doc, indent=True) + b"\n")
        except OutputError as e:
            fail(str(e))
    if as_json:
        echo_json(doc)
    else:
        for address, cert in zip(addresses, certs):
            click.echo(f"== {address}")
            _print_certificate(cert)
        states: dict[str, int] = {}
        for c in certs:
            states[c.state] = states.get(c.state, 0) + 1
        click.echo(f"{len(certs)} sessions: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items())), err=True)
        if out_file:
            click.echo(f"certificates written to {out_file}")
    sys.exit(EXIT_CHECK_FAILED if strict and not all(c.succeeded for c in certs) else EXIT_OK)


@click.command("fcr")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--jobs", "-j", type=int, default=1, show_default=True, help="Certify runs in this many processes.")
@click.option("--workspace", type=click.Path(file_okay=False), default=None, help="Workspace for runs that are certified here (single-run use).")
@click.option("--protect", multiple=True, metavar="GLOB", help="Extra protected globs for runs certified here.")
@click.option("--history", type=click.Choice(["forbidden", "allowed"]), default="forbidden", show_default=True, help="Whether git history is off limits for runs certified here.")
@click.option("--out-dir", type=click.Path(file_okay=False), default=None, help="Also write each run's certificate into this directory.")
@format_option
@size_option
def fcr_cmd(paths, as_json, jobs, workspace, protect, history, out_dir, format_name, max_file_bytes):
    """False-completion rate over PATHS: runs, certificates, or directories of either.

    Directories are walked as `convert DIR` walks them. Runs are certified
    with the trial's own verifier verdict as the holdout set; certificates
    are read back as they are. Each success claim is verified true
    (Succeeded), verified false (a red test, a high or critical finding, the
    harness's own failure signal) or unverifiable (nothing to decide it
    with, e.g. no test results). FCR = verified false / verified claims;
    n/a when no claim could be verified.
    """
    from ..certify import CertifyOptions
    from ..certify.fcr import certify_many, expand, report

    for p in paths:
        if not os.path.exists(p):
            fail(f"{p}: no such file or directory")
    opts = CertifyOptions(workspace=workspace, protect=_split_globs(protect), format=format_name, max_file_bytes=max_file_bytes,
                          history_forbidden=history == "forbidden")
    bad: list = []
    with LiveProgress() as bar:
        bar.status("finding runs and certificates")
        items = expand(paths, on_problem=lambda m: click.echo(f"trajkit: {m}", err=True))
        if not items:
            fail("no runs or certificates found")
        bar.start(len(items), "certifying")
        results = certify_many(items, opts, jobs=max(1, jobs), progress=lambda d, t: bar.update(d, t), bad=bad)
    for b in bad:
        click.echo(f"trajkit: {b.path}: {b.message} [{b.code}]", err=True)  # one unwrapped line per input
    if out_dir:
        od = Path(out_dir)
        for i, (it, c) in enumerate(results):
            name = Path(it.path).name or f"run{i}"
            try:
                c.write(od / f"{i:05d}-{name}.certificate.json")
            except OSError as e:
                fail(f"cannot write into {out_dir}: {e.strerror}")
    rep = report((it.path, c) for it, c in results)
    rep.problems = [b.to_dict() for b in bad]
    status = EXIT_CHECK_FAILED if bad else EXIT_OK  # an input could not be counted
    if as_json:
        echo_json(rep.to_dict())
        sys.exit(status)
    from rich.table import Table

    con = out_console()
    t = Table(title="certified runs", show_header=True, header_style="bold")
    t.add_column("run", overflow="fold")
    t.add_column("state")
    t.add_column("claimed")
    t.add_column("claim check")
    t.add_column("reason", overflow="fold")
    shown = {"verified-true": "verified", "verified-false": "FALSE", "unverifiable": "unverifiable", None: ""}
    for r in rep.per_run:
        t.add_row(r["path"], r["state"], "yes" if r["claimed_success"] else "no", shown.get(r["claim"], ""), r["reason"][:160])
    con.print(t)
    s = Table(title="per state", show_header=True, header_style="bold")
    s.add_column("state")
    s.add_column("runs", justify="right")
    for k, v in rep.states.items():
        s.add_row(k, str(v))
    con.print(s)
    if rep.fcr is not None:
        fcr = f"{rep.fcr:.3f} ({rep.verified_false}/{rep.verified_claims} verified claims)"
    else:
        fcr = "n/a (no run claimed success)" if not rep.claims else "n/a (no claim could be verified)"
    fh = "n/a (no run with visible and holdout results)" if rep.fcr_holdout is None else f"{rep.fcr_holdout:.3f} ({rep.holdout_false_completions}/{rep.gated})"
    con.print(f"runs {rep.runs}   claimed success {rep.claims}: verified true {rep.verified_true}, verified false {rep.verified_false}, "
              f"unverifiable {rep.unverifiable}")
    con.print(f"false-completion rate {fcr}")
    con.print(f"holdout-flag rate {fh}")
    d = rep.to_dict()
    if d["cost_usd"] is not None:
        cps = "n/a" if d["cost_per_success_usd"] is None else f"${d['cost_per_success_usd']:.4f}"
        con.print(f"cost ${d['cost_usd']:.4f} over {rep.costed_runs} run(s) with a recorded cost   cost per success {cps}")
    if bad:
        con.print(f"{len(bad)} input(s) not counted: malformed certificate(s) (see stderr)")
    sys.exit(status)
