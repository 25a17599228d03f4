"""Training turns derived from a rollout trace: the agent's own model calls,
with the exact generated token ids and logprobs, their prompts as token ids,
the loss mask, and the checks that say whether the capture can be trusted.

Which calls are turns follows TRL's anchor rule (opencode.md §2.5): a call is
kept when it has messages and tools and its first system message equals that
of the first tool-enabled call; everything else (title generator, summariser, failed
calls, calls without token ids) is dropped and reported. Output ids are always
the captured ones, never re-encoded text. Prompt ids are the captured ones when
the trace holds them (``prompt_source = "captured"``), else the request's
messages rendered with the tokenizer's chat template and the request's tools
(``"retokenized"``), exactly as TRL does.

:func:`derive_turns` does the work; :class:`TurnsResult` gives the rows for
``datasets`` / Parquet and :meth:`TurnsResult.rollout_func` the dict TRL's
``GRPOTrainer(rollout_func=...)`` expects.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..diagnostics import ERROR, INFO, WARNING, Diagnostic
from ..jsonio import dumps_python
from ..model import Session, TrajkitError, Turn
from .calls import AGENT, ModelCall

#: Tool-call markup a hermes / Qwen style template wraps each call in.
DEFAULT_TOOL_CALL_MARKERS = ("<tool_call>", "</tool_call>")

#: Keys of ``summary.json`` that may hold the rollout's reward, in order of preference.
REWARD_KEYS = ("reward", "shaped_reward", "final_reward", "env_reward", "score")


@dataclass(slots=True)
class TurnsResult:
    """The training turns of one rollout, what was dropped and why, the
    rollout summary and every diagnostic the checks raised."""

    rollout: str
    turns: list[Turn]
    summary: dict[str, Any]
    dropped: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    tokenizer: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rollout": self.rollout,
            "summary": self.summary,
            "turns": [t.to_dict() for t in self.turns],
            "dropped": self.dropped,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "tokenizer": self.tokenizer,
        }

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per kept turn, with uniform types so ``datasets`` and
        Arrow load them (tool-call arguments as JSON text)."""
        reward = self.summary.get("reward")
        out = []
        for t in self.turns:
            out.append({
                "rollout": self.rollout,
                "index": t.index,
                "turn": t.extra.get("turn"),
                "prompt_ids": t.prompt_ids,
                "output_ids": t.output_ids,
                "per_token_logps": t.per_token_logps,
                "mask": t.mask,
                "trained": t.trained,
                "prompt_source": t.prompt_source,
                "finish_reason": t.finish_reason,
                "tool_calls": [
                    {
                        "call_id": c.call_id,
                        "name": c.name,
                        "arguments": c.arguments if isinstance(c.arguments, str) else dumps_python(c.arguments),
                    }
                    for c in t.tool_calls
                ],
                "reward": float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
            })
        return out

    def rollout_func(self, fork_on_drift: bool = True) -> dict[str, list[Any]]:
        """What TRL's ``rollout_func`` returns for this rollout: ``prompt_ids``,
        ``completion_ids``, ``logprobs`` and ``env_mask`` (one entry per sample),
        plus ``env_reward`` when the reward is known.

        Turns chain into one sample while each prompt extends the previous
        prompt plus output: the new prompt tail is context (mask 0, logprob
        0.0), the output is model-generated (mask 1 with its logprobs when the
        turn is trained; mask 0 and 0.0 otherwise, as TRL's AsyncGRPO does).
        A prompt that does not extend the chain starts a new sample (TRL's
        FORK). A generated token without a logprob gets mask 0. Samples with
        no mask-1 token are dropped.
        """
        samples: list[dict[str, list[Any]]] = []
        cur: dict[str, list[Any]] | None = None
        full: list[int] = []
        for t in self.turns:
            if cur is not None and full == t.prompt_ids[: len(full)]:
                tail = t.prompt_ids[len(full):]
            else:
                if cur is not None and not fork_on_drift:
                    raise TrajkitError(f"turn {t.index} does not extend the previous turn's prompt and output")
                cur = {"prompt_ids": list(t.prompt_ids), "completion_ids": [], "logprobs": [], "env_mask": []}
                samples.append(cur)
                full = list(t.prompt_ids)
                tail = []
            cur["completion_ids"].extend(tail)
            cur["logprobs"].extend([0.0] * len(tail))
            cur["env_mask"].extend([0] * len(tail))
            for i, tok in enumerate(t.output_ids):
                lp = t.per_token_logps[i] if i < len(t.per_token_logps) else None
                ok = t.trained and lp is not None
                cur["completion_ids"].append(tok)
                cur["logprobs"].append(float(lp) if ok else 0.0)
                cur["env_mask"].append(1 if ok else 0)
            full = full + tail + list(t.output_ids)
        kept = [s for s in samples if any(s["env_mask"])]
        out: dict[str, list[Any]] = {k: [s[k] for s in kept] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask")}
        reward = self.summary.get("reward")
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            out["env_reward"] = [float(reward)] * len(kept)
        return out


    def sequences(self) -> list[dict[str, list[Any]]]:
        """TRL AsyncGRPO-style rows, one per sample of :meth:`rollout_func`:
        ``input_ids`` (prompt included), ``completion_mask`` (1 = train) and
        ``old_log_probs`` (0.0 where the mask is 0)."""
        rf = self.rollout_func()
        out = []
        for p, c, lp, m in zip(rf["prompt_ids"], rf["completion_ids"], rf["logprobs"], rf["env_mask"]):
            out.append({
                "input_ids": list(p) + list(c),
                "completion_mask": [0] * len(p) + list(m),
                "old_log_probs": [0.0] * len(p) + list(lp),
            })
        return out


def rollout_paths(path: str | os.PathLike) -> list[Path]:
    """The rollouts at ``path``, grouped as ``trajkit proxy`` wrote them.

    A directory where the proxy recorded named rollouts
    (``rollouts/<id>/trace.jsonl``, see docs/rl.md) gives each of those
    rollout directories, sorted by id, after the directory itself when its
    own trace holds anything (calls that named no rollout). Any other path is
    one rollout: ``[path]``.
    """
    from .proxy import ROLLOUTS_DIR, TRACE_NAME

    p = Path(path)
    sub = p / ROLLOUTS_DIR
    if not p.is_dir() or not sub.is_dir():
        return [p]
    found = sorted(d for d in sub.iterdir() if d.is_dir() and (d / TRACE_NAME).is_file())
    if not found:
        return [p]
    own = p / TRACE_NAME
    try:
        has_own = own.is_file() and own.stat().st_size > 0
    except OSError:
        has_own = False
    return ([p] if has_own else []) + found


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _reward_of(summary: Any) -> tuple[Any, str | None]:
    if isinstance(summary, dict):
        for k in REWARD_KEYS:
            v = summary.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return v, f"summary.json:{k}"
    return None, None


def _calls_of(session: Session) -> list[tuple[ModelCall, Any, Any]]:
    """Every captured call of the session, parsed, with its event id and line:
    what the session's format declares as its ``model_calls``."""
    from ..registry import cannot, get_format

    fmt = get_format(session.format)
    if fmt.model_calls is None:
        raise TrajkitError(f"{session.source_path}: read as {session.format}; {cannot(session.format, 'model_calls')}")
    return fmt.model_calls(session)


def derive_turns(
    rollout: Session | str | os.PathLike,
    tokenizer: Any = None,
    *,
    reward: float | None = None,
    tool_call_markers: tuple[str, ...] | None = DEFAULT_TOOL_CALL_MARKERS,
    progress: Callable[[int, int], None] | None = None,
) -> TurnsResult:
    """The training turns of a rollout (a Session read as ``rollout-trace``,
    or a path to read).

    ``tokenizer`` is a loaded tokenizer or a local directory; it is needed to
    re-tokenize prompts the trace did not capture and for the tool-call markup
    check. ``reward`` overrides the one in ``summary.json``. Bad data never
    raises: it becomes diagnostics (and dropped turns). Raises
    :class:`~trajkit.rl.tokenize.TokenizerError` only when a prompt must be
    re-tokenized and no usable tokenizer was given. ``progress(done, total)``
    is called as calls are processed.
    """
    from .tokenize import TokenizerError, decode, load_tokenizer, render_prompt_ids, tokenizer_identity, chat_template_of

    if not isinstance(rollout, Session):
        from ..registry import read

        rollout = read(rollout)  # any format that declares model_calls (see _calls_of)
    session = rollout
    if isinstance(tokenizer, (str, os.PathLike)):
        tokenizer = load_tokenizer(tokenizer)
    diags: list[Diagnostic] = []
    file = session.metadata.get("trace_path") or session.source_path

    def diag(code: str, message: str, severity: str = WARNING, event_id: Any = None, line: Any = None) -> None:
        diags.append(Diagnostic(code, message, severity, file=file, event_id=event_id, line=line))

    calls = _calls_of(session)
    template = chat_template_of(tokenizer) if tokenizer is not None else None
    markers = tuple(m for m in (tool_call_markers or ()) if template and m in template)
    if tokenizer is not None and tool_call_markers and not markers:
        diag(
            "turns.tool-call-check-skipped",
            "the chat template does not use the tool-call markup "
            f"({', '.join(tool_call_markers)}); tool-call tokens were not checked",
            INFO,
        )

    vocab = len(tokenizer) if tokenizer is not None and hasattr(tokenizer, "__len__") else 0
    turns: list[Turn] = []
    dropped: list[dict[str, Any]] = []
    prev: Turn | None = None
    by_tool: dict[str, int] = {}
    finish: dict[str, int] = {}
    sources: dict[str, int] = {}
    drifted = 0
    for n_done, (call, eid, line) in enumerate(calls):
        if progress is not None:
            progress(n_done, len(calls))
        reason = None
        if call.failed:
            reason = f"upstream error (status {call.upstream_status})"
        elif call.purpose != AGENT:
            reason = f"{call.purpose} call (not the agent's system prompt and tools)"
        elif call.incomplete:
            reason = "the streamed answer broke off"
        elif call.output_ids is None:
            reason = "no output token ids in the capture"
        if reason is not None:
            dropped.append({"turn": call.turn, "event_id": eid, "purpose": call.purpose, "reason": reason})
            continue
        # --- prompt ids
        prompt_ids: list[int] | None = None
        prompt_source = "retokenized"
        if call.prompt_ids is not None:
            prompt_ids, prompt_source = call.prompt_ids, "captured"
        retok: list[int] | None = None
        if tokenizer is not None:
            tk = call.request.get("chat_template_kwargs")
            try:
                retok = render_prompt_ids(tokenizer, call.messages, call.tools, tk if isinstance(tk, dict) else None)
            except TokenizerError:
                raise
            except Exception as e:  # a template can fail on odd messages
                diag("turns.template-error", f"the chat template failed on this request: {type(e).__name__}: {e}", ERROR, eid, line)
        if prompt_ids is None:
            if tokenizer is None:
                raise TokenizerError(
                    f"turn {call.turn}: the trace holds no prompt ids, so a tokenizer is needed to re-tokenize prompts"
                )
            if retok is None:
                dropped.append({"turn": call.turn, "event_id": eid, "purpose": call.purpose, "reason": "prompt could not be rendered"})
                continue
            prompt_ids = retok
        elif retok is not None and retok != prompt_ids:
            k = _common_prefix(retok, prompt_ids)
            diag(
                "turns.retokenize-mismatch",
                f"the captured prompt ({len(prompt_ids)} tokens) differs from the re-tokenized one "
                f"({len(retok)} tokens) from token {k} on; the captured one is used",
                INFO,
                eid,
                line,
            )
        output_ids = list(call.output_ids or [])
        if vocab and max(output_ids + prompt_ids, default=0) >= vocab:
            diag(
                "turns.ids-out-of-vocab",
                f"token ids reach {max(output_ids + prompt_ids)} but the tokenizer has {vocab} tokens: "
                "the tokenizer is not the one the server used",
                ERROR,
                eid,
                line,
            )
        # --- logprobs
        logps: list[float | None] = list(call.logps or [])
        unaligned: list[float | None] | None = None
        if not logps:
            diag("turns.missing-logprobs", f"no logprobs for the {len(output_ids)} output tokens", WARNING, eid, line)
            logps = [None] * len(output_ids)
        elif len(logps) != len(output_ids) and call.logps_source == "per_token_logps":
            # per_token_logps skips null logprobs, so which token each belongs to is unknown
            diag(
                "turns.missing-logprobs",
                f"{len(logps)} per_token_logps for {len(output_ids)} output tokens and no per-token entries to "
                "align them; kept in extra.unaligned_logps, none used",
                WARNING,
                eid,
                line,
            )
            unaligned, logps = logps, [None] * len(output_ids)
        elif len(logps) != len(output_ids) or any(x is None for x in logps):
            missing = sum(1 for x in logps if x is None) + max(0, len(output_ids) - len(logps))
            diag(
                "turns.missing-logprobs",
                f"{len(logps)} logprobs for {len(output_ids)} output tokens ({missing} missing or null)",
                WARNING,
                eid,
                line,
            )
            logps = (logps + [None] * len(output_ids))[: len(output_ids)]
        # --- usage
        ct = (call.usage or {}).get("completion_tokens")
        if isinstance(ct, int) and not isinstance(ct, bool) and ct != len(output_ids):
            diag(
                "turns.usage-mismatch",
                f"{len(output_ids)} output ids captured but usage.completion_tokens is {ct} "
                f"({ct - len(output_ids):+d}); tokens were lost in the capture",
                WARNING,
                eid,
                line,
            )
        # --- tool-call tokens
        trained = bool(call.tool_calls)
        if trained and markers and tokenizer is not None:
            text = decode(tokenizer, output_ids)
            short = [m for m in markers if text.count(m) < len(call.tool_calls)]
            if short:
                diag(
                    "turns.tool-call-tokens-missing",
                    f"{len(call.tool_calls)} tool call(s) but the output tokens hold too few "
                    f"{', '.join(short)}; the capture dropped tool-call tokens (vLLM streaming bug)",
                    WARNING,
                    eid,
                    line,
                )
        if call.finish_reason == "length":
            diag("turns.truncated", "finish_reason is length: the output was cut at max_tokens", INFO, eid, line)
        # --- drift against the previous kept turn
        extra: dict[str, Any] = {"turn": call.turn, "event_id": eid, "ids_source": call.ids_source}
        if unaligned is not None:
            extra["unaligned_logps"] = unaligned
        if prev is not None:
            expect = prev.prompt_ids + prev.output_ids
            k = _common_prefix(expect, prompt_ids)
            if k < len(expect):
                drifted += 1
                extra["drift"] = {"common_prefix": k, "overwritten": len(expect) - k, "expected_prefix": len(expect)}
                diag(
                    "turns.prompt-drift",
                    f"the prompt does not extend the previous turn's prompt + output: they agree on {k} of "
                    f"{len(expect)} tokens ({len(expect) - k} differ)",
                    WARNING,
                    eid,
                    line,
                )
        turn = Turn(
            index=len(turns),
            prompt_ids=prompt_ids,
            output_ids=output_ids,
            per_token_logps=logps,  # type: ignore[arg-type]
            mask=[0] * len(prompt_ids) + [1] * len(output_ids),
            trained=trained,
            prompt_source=prompt_source,
            finish_reason=call.finish_reason,
            tool_calls=list(call.tool_calls),
            extra=extra,
        )
        turns.append(turn)
        prev = turn
        sources[prompt_source] = sources.get(prompt_source, 0) + 1
        if call.finish_reason:
            finish[call.finish_reason] = finish.get(call.finish_reason, 0) + 1
        for tc in call.tool_calls:
            by_tool[tc.name] = by_tool.get(tc.name, 0) + 1

    if progress is not None:
        progress(len(calls), len(calls))
    if dropped:
        why: dict[str, int] = {}
        for d in dropped:
            why[d["reason"]] = why.get(d["reason"], 0) + 1
        diag(
            "turns.dropped",
            f"{len(dropped)} of {len(calls)} calls are not training turns: "
            + "; ".join(f"{n} × {r}" for r, n in why.items()),
            INFO,
        )
    reward_source = None
    if reward is not None:
        reward_source = "given"
    else:
        reward, reward_source = _reward_of(session.metadata.get("summary"))
    by_purpose: dict[str, int] = {}
    for d in dropped:
        by_purpose[str(d["purpose"])] = by_purpose.get(str(d["purpose"]), 0) + 1
    summary = {
        "rollout": session.source_path,
        "reward": reward,
        "reward_source": reward_source,
        "raw_turns": len(calls),
        "kept_turns": len(turns),
        "trained_turns": sum(1 for t in turns if t.trained),
        "dropped_turns": len(dropped),
        "dropped_by_purpose": by_purpose,
        "tool_calls": sum(by_tool.values()),
        "tool_calls_by_tool": dict(sorted(by_tool.items())),
        "finish_reasons": finish,
        "prompt_sources": sources,
        "drifted_turns": drifted,
        "output_tokens": sum(len(t.output_ids) for t in turns),
        "trained_output_tokens": sum(len(t.output_ids) for t in turns if t.trained),
        "diagnostics": _count_codes(diags),
    }
    return TurnsResult(
        rollout=session.source_path,
        turns=turns,
        summary=summary,
        dropped=dropped,
        diagnostics=diags,
        tokenizer=tokenizer_identity(tokenizer) if tokenizer is not None else None,
    )


def _count_codes(diags: list[Diagnostic]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in diags:
        out[d.code] = out.get(d.code, 0) + 1
    return out


def merge_rollout_funcs(results: list[TurnsResult]) -> dict[str, list[Any]]:
    """The :meth:`TurnsResult.rollout_func` outputs of several rollouts as one
    batch (each key's lists concatenated, in order)."""
    out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": []}
    parts = [r.rollout_func() for r in results]
    with_reward = bool(parts) and all("env_reward" in p for p in parts)
    for p in parts:
        for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask"):
            out[k].extend(p[k])
        if with_reward:
            out.setdefault("env_reward", []).extend(p["env_reward"])
    return out


def write_turns(result: TurnsResult | list[TurnsResult], path: str | os.PathLike) -> Path:
    """Write the turns' rows (of one rollout or several, in order) to
    ``path``: ``.jsonl`` (one row a line), ``.json`` (a list of rows) or
    ``.parquet`` (needs pyarrow)."""
    from ..atomic import atomic_open, write_atomic
    from ..jsonio import dumps

    p = Path(path)
    results = result if isinstance(result, list) else [result]
    rows = [row for r in results for row in r.rows()]
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        with atomic_open(p) as f:
            for r in rows:
                f.write(dumps(r) + b"\n")
    elif suffix == ".json":
        write_atomic(p, dumps(rows, indent=True) + b"\n")
    elif suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as e:  # pragma: no cover - depends on the install
            raise TrajkitError(f"parquet output needs pyarrow (pip install 'trajkit[rl]'): {e}") from e
        schema = pa.schema([
            ("rollout", pa.string()),
            ("index", pa.int64()),
            ("turn", pa.int64()),
            ("prompt_ids", pa.list_(pa.int64())),
            ("output_ids", pa.list_(pa.int64())),
            ("per_token_logps", pa.list_(pa.float64())),
            ("mask", pa.list_(pa.int8())),
            ("trained", pa.bool_()),
            ("prompt_source", pa.string()),
            ("finish_reason", pa.string()),
            ("tool_calls", pa.list_(pa.struct([("call_id", pa.string()), ("name", pa.string()), ("arguments", pa.string())]))),
            ("reward", pa.float64()),
        ])
        for r in rows:
            if not isinstance(r["turn"], int):
                r["turn"] = None
        with atomic_open(p) as f:
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), f)
    else:
        raise TrajkitError(f"{p}: unknown output type {suffix or '(none)'}; use .jsonl, .json or .parquet")
    return p
