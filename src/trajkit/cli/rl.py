"""The RL verbs: ``turns`` (a rollout trace → training turns) and ``proxy``
(the capture proxy that records rollout traces)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._common import EXIT_CANNOT_RUN, EXIT_CHECK_FAILED, console, echo_json, fail, out_console
from ._options import format_option, size_option
from ._common import progress as progress_bar


@click.command("turns")
@click.argument("rollouts", nargs=-1, required=True, type=click.Path(exists=False))
@click.option("--tokenizer", "tokenizer_path", type=click.Path(exists=True), default=None,
              help="Local tokenizer directory (tokenizer.json + tokenizer_config.json with a chat_template). "
                   "Needed unless the trace captured prompt ids.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="Write the turns here: .jsonl (a row a line), .json (a list) or .parquet.")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the rollout summary (reward, turn and tool-call counts) as JSON here (a list for several rollouts).")
@click.option("--trl", "trl_path", type=click.Path(dir_okay=False), default=None,
              help="Also write what TRL's rollout_func returns (prompt_ids, completion_ids, logprobs, env_mask) as JSON here.")
@click.option("--reward", type=float, default=None, help="The rollout's reward (overrides summary.json).")
@click.option("--json", "as_json", is_flag=True, help="Print summary, dropped calls and diagnostics (and the turns, without --out) as JSON.")
@click.option("--strict", is_flag=True, help="Exit 1 when a capture check warns (lost tokens, missing logprobs, drift).")
@format_option
@size_option
def turns_cmd(rollouts, tokenizer_path, out_path, summary_path, trl_path, reward, as_json, strict, format_name, max_file_bytes):
    """Derive training turns from the rollout trace(s) at ROLLOUTS (runs of
    any format that declares its model calls, such as rollout traces).

    Keeps the agent's own calls (the first system message of the first
    tool-enabled call), takes output ids and logprobs exactly as captured, and
    renders each prompt with the tokenizer's chat template and the request's
    tools unless the trace captured prompt ids. Several rollouts (a GRPO group)
    go into one --out / --trl, in the order given; a proxy --out directory
    with named rollouts (rollouts/<id>/) stands for each of them.
    """
    from ..jsonio import dumps
    from ..model import ReadOptions, TrajkitError

    tokenizer = None
    try:
        from ..rl.turns import derive_turns, merge_rollout_funcs, write_turns

        if tokenizer_path:
            from ..rl.tokenize import load_tokenizer

            tokenizer = load_tokenizer(tokenizer_path)
    except TrajkitError as e:
        fail(str(e))
    except ImportError as e:  # pragma: no cover - depends on the install
        fail(f"turns need the rl extra (pip install 'trajkit[rl]'): {e}")

    import os

    from ..model import DetectionError
    from ..registry import cannot, formats_that_can, get_format, read, root_for
    from ..rl.turns import rollout_paths

    for path in rollouts:
        if not os.path.exists(path):
            fail(f"{path}: no such file or directory")
    if format_name:
        try:
            get_format(format_name)
        except DetectionError as e:
            fail(str(e))
    rollouts = [str(p) for r in rollouts for p in rollout_paths(r)]  # a proxy's named rollouts, one by one
    results, sessions, skipped = [], [], []
    can = ", ".join(formats_that_can("model_calls"))
    from ..corpus.run import SERIAL, run

    def read_rollout(path: str):
        """(session, why not usable) for one rollout: the task the batch engine runs."""
        try:
            root = root_for(path, format_name) if format_name else path  # a path inside the run finds its root
            session = read(root, format=format_name, options=ReadOptions(max_file_bytes=max_file_bytes))
        except (DetectionError, TrajkitError) as e:
            return None, f"{e}; no captured model calls to derive turns from (formats that give model calls: {can})"
        fmt = get_format(session.format)
        if not fmt.can("model_calls"):
            return session, f"{path}: read as {session.format}; {cannot(session.format, 'model_calls')}"
        if not fmt.model_calls(session):
            for d in session.diagnostics:
                click.echo(str(d), err=True)
            return session, f"{path}: no captured model calls to derive turns from"
        return session, None

    with _Progress(len(rollouts)) as progress:
        # the one batch engine, serially: the turns of a GRPO group keep the order given
        for batch in run(read_rollout, rollouts, engine=SERIAL, batch_size=1):
            path, got = batch.items[0], batch.results[0]
            session, why = (None, f"{path}: {got.error}") if not isinstance(got, tuple) else got
            if why is not None:
                if len(rollouts) == 1:
                    fail(why)
                click.echo(f"trajkit: {why}; skipped", err=True)
                skipped.append(path)
                continue
            try:
                result = derive_turns(session, tokenizer, reward=reward, progress=progress.calls(path))
            except TrajkitError as e:
                fail(f"{path}: {e}" if len(rollouts) > 1 else str(e))
            results.append(result)
            sessions.append(session)
    from ..atomic import write_atomic

    written = {}
    try:
        if out_path:
            written["turns"] = str(write_turns(results, out_path))
        if summary_path:
            summ = results[0].summary if len(rollouts) == 1 else [r.summary for r in results]
            write_atomic(summary_path, dumps(summ, indent=True) + b"\n")
            written["summary"] = summary_path
        if trl_path:
            trl = results[0].rollout_func() if len(rollouts) == 1 else merge_rollout_funcs(results)
            write_atomic(trl_path, dumps(trl) + b"\n")
            written["trl"] = trl_path
    except (TrajkitError, OSError) as e:
        fail(str(e))
    docs = []
    for session, result in zip(sessions, results):
        diags = session.diagnostics + result.diagnostics
        doc = {
            "summary": result.summary,
            "dropped": result.dropped,
            "tokenizer": result.tokenizer,
            "diagnostics": [d.to_dict() for d in diags],
        }
        if not out_path:
            doc["turns"] = [t.to_dict() for t in result.turns]
        docs.append(doc)
        if not as_json:
            _print_turns(result)
            for d in diags:
                if d.severity != "info":
                    click.echo(str(d), err=True)
    if as_json:
        if len(rollouts) == 1:
            echo_json({**docs[0], "written": written})
        else:
            echo_json({"rollouts": docs, "skipped": skipped, "written": written})
    else:
        for k, v in written.items():
            click.echo(f"wrote {k}: {v}")
    warned = any(d.severity != "info" for r in results for d in r.diagnostics)
    if skipped or (strict and warned):
        sys.exit(EXIT_CHECK_FAILED)


class _Progress:
    """A transient progress bar on stderr (only when stderr is a terminal)."""

    def __init__(self, rollouts: int) -> None:
        self.console = console(stderr=True)
        self.enabled = self.console.is_terminal
        self.rollouts = rollouts
        self._p = None

    def __enter__(self):
        if self.enabled:
            self._p = progress_bar("{task.description}", self.console)
            self._p.__enter__()
        return self

    def __exit__(self, *exc):
        if self._p is not None:
            self._p.__exit__(*exc)

    def calls(self, path: str):
        if self._p is None:
            return None
        task = self._p.add_task(f"turns of {Path(path).name}", total=None)

        def update(done: int, total: int) -> None:
            self._p.update(task, completed=done, total=total)

        return update


def _print_turns(result) -> None:
    from rich.table import Table

    out = out_console()
    table = Table(title=f"turns of {result.rollout}")
    for col in ("#", "turn", "prompt", "output", "logprobs", "trained", "prompt ids", "finish", "tool calls"):
        table.add_column(col)
    for t in result.turns:
        table.add_row(
            str(t.index),
            str(t.extra.get("turn")),
            str(len(t.prompt_ids)),
            str(len(t.output_ids)),
            str(sum(1 for x in t.per_token_logps if x is not None)),
            "yes" if t.trained else "no",
            t.prompt_source,
            str(t.finish_reason),
            ", ".join(c.name for c in t.tool_calls),
        )
    out.print(table)
    s = result.summary
    out.print(
        f"calls {s['raw_turns']}  kept {s['kept_turns']}  trained {s['trained_turns']}  dropped {s['dropped_turns']}  "
        f"reward {s['reward']}  tool calls {s['tool_calls_by_tool']}"
    )
    for d in result.dropped:
        out.print(f"dropped turn {d['turn']}: {d['reason']}")


@click.command("proxy")
@click.option("--upstream", required=True, help="Base URL of the OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Rollout directory; records are appended to OUT/trace.jsonl.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (keep the loopback unless the agent runs elsewhere).")
@click.option("--port", type=int, default=0, show_default=True, help="Port to listen on (0: any free port; see OUT/proxy.json).")
@click.option("--top-logprobs", type=int, default=5, show_default=True, help="Alternatives per token to ask the upstream for.")
@click.option("--vllm/--no-vllm", default=True, show_default=True,
              help="Ask for token ids too (vLLM's return_tokens_as_token_ids / return_token_ids).")
@click.option("--max-tokens-cap", type=int, default=None, help="Cap max_tokens / max_completion_tokens.")
@click.option("--model-override", default=None, help="Send this model id upstream instead of the client's.")
@click.option("--disable-thinking", is_flag=True, help="Set chat_template_kwargs.enable_thinking=false.")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds allowed per upstream call.")
@click.option("--max-runtime", type=float, default=None, help="Stop by itself after this many seconds.")
@click.option("--max-event-bytes", type=int, default=16 << 20, show_default=True,
              help="Largest SSE event parsed (0: no cap); a bigger one is passed on and the call recorded as cut.")
@click.option("--quiet", is_flag=True, help="Do not log each call to stderr.")
def proxy_cmd(upstream, out_dir, host, port, top_logprobs, vllm, max_tokens_cap, model_override, disable_thinking, timeout,
              max_runtime, max_event_bytes, quiet):
    """Run the capture proxy: forward an agent's model calls to UPSTREAM and
    record each one (token ids, logprobs) to OUT/trace.jsonl.

    Point the agent's OpenAI-compatible base URL at http://HOST:PORT/v1
    (or http://HOST:PORT/r/ROLLOUT-ID/v1 to record that rollout in
    OUT/rollouts/ROLLOUT-ID/). Stops on Ctrl-C / SIGTERM after calls in
    flight finish.
    """
    import asyncio

    from ..model import TrajkitError

    try:
        import aiohttp  # noqa: F401  (the proxy extra)

        from ..rl.proxy import ProxyConfig, serve
    except ImportError as e:
        fail(f"the proxy needs the proxy extra (pip install 'trajkit[proxy]'): {e}")
    if not upstream.startswith(("http://", "https://")):
        fail(f"--upstream must be an http(s) URL, not {upstream!r}")
    try:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(f"{out_dir}: cannot create the output directory: {e.strerror or e}")
    cfg = ProxyConfig(
        upstream=upstream,
        top_logprobs=top_logprobs,
        vllm=vllm,
        max_tokens_cap=max_tokens_cap,
        model_override=model_override,
        disable_thinking=disable_thinking,
        timeout=timeout,
        max_event_bytes=max_event_bytes,
    )

    def log(msg: str) -> None:
        if not quiet:
            click.echo(f"trajkit proxy: {msg}", err=True)

    def ready(h: str, p: int) -> None:
        click.echo(f"trajkit proxy: listening on http://{h}:{p}/v1 -> {cfg.masked()}; trace {Path(out_dir) / 'trace.jsonl'}", err=True)

    try:
        done = asyncio.run(serve(cfg, Path(out_dir), host, port, log=log, ready=ready, max_runtime=max_runtime))
    except TrajkitError as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot listen on {host}:{port}: {e.strerror or e}", EXIT_CANNOT_RUN)
    click.echo(f"trajkit proxy: stopped; {done['recorded']} calls recorded", err=True)
    if done["write_errors"]:
        fail(f"{done['write_errors']} calls could not be written to the trace", EXIT_CHECK_FAILED)
