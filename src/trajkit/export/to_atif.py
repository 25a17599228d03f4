"""ATIF (Harbor's Agent Trajectory Interchange Format, v1.8) projected from ASF.

One ATIF document per root-to-leaf path of an ASF session (``asf.md`` §9),
so every reader reaches ATIF through the same normalized path as ASF:
Session → ASF → ATIF. Differences from the reference projection, chosen so
the export is lossless:

- steps cover the **whole path**; a compaction becomes a copied-context
  system step (``is_copied_context``, ``extra.context_management``) at its
  place instead of hiding what came before it;
- every tool call of a model call is kept (not just the first);
- the native events each step came from ride in ``extra["trajkit:native"]``
  and the Open Responses items in ``extra.openresponses`` unless
  passthrough is off.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ..spec import asf
from ..spec.asf.context import _apply_checkpoint, _apply_config

SCHEMA_VERSION = "ATIF-v1.8"
NATIVE = "trajkit:native"

Resolver = Callable[[str], "asf.AsfFile | None"]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                if isinstance(c.get("text"), str):
                    parts.append(c["text"])
                elif isinstance(c.get("refusal"), str):
                    parts.append(c["refusal"])
        return "\n".join(parts)
    return ""


def _reasoning_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, list) and content:
        t = _text_of(content)
        if t:
            return t
    return _text_of(item.get("summary"))


def _arguments(args: Any) -> dict[str, Any]:
    if isinstance(args, str):
        try:
            v = json.loads(args)
        except ValueError:
            return {"_arguments": args}
        return v if isinstance(v, dict) else {"_arguments": v}
    return args if isinstance(args, dict) else {"_arguments": args}


def _tool_definition(t: Any) -> dict[str, Any]:
    if isinstance(t, dict) and t.get("type") == "function" and "name" in t:
        fn = {k: t[k] for k in ("name", "description", "parameters", "strict") if k in t}
        return {"type": "function", "function": fn}
    return t if isinstance(t, dict) else {"type": "unknown", "value": t}


def _output_content(output: Any) -> Any:
    if isinstance(output, str):
        return output if output != "" else None
    if isinstance(output, list):
        return _text_of(output) or None
    return None if output is None else json.dumps(output, ensure_ascii=False)


class _Projection:
    def __init__(self, f: asf.AsfFile, leaf: str, resolver: Resolver | None, passthrough: bool, trajectory_id: str | None):
        self.f = f
        self.leaf = leaf
        self.resolver = resolver
        self.passthrough = passthrough
        self.trajectory_id = trajectory_id or leaf
        self.steps: list[dict[str, Any]] = []
        self.pending: dict[str, list[Any]] = {}
        self.call_step: dict[str, dict[str, Any]] = {}
        self.call_result: dict[str, dict[str, Any]] = {}
        self.agent: dict[str, Any] | None = None
        self.agent_key: Any = None
        self.settings = asf.Settings()
        self.first_settings: dict[str, Any] | None = None
        self.agent_entry: asf.Entry | None = None
        self.outcomes: list[dict[str, Any]] = []
        self.subagents: list[dict[str, Any]] = []
        self.root_extra: dict[str, Any] = {}
        self.totals = {"prompt": 0, "completion": 0, "cached": 0, "cost": 0.0, "calls": 0, "has_cost": False}
        self.entry_step: dict[str, int] = {}  # entry id -> index into steps

    # -- helpers
    def _native(self, e: asf.Entry) -> Any:
        n = e.obj.get(NATIVE)
        return n.get("raw") if isinstance(n, dict) and "raw" in n else None

    def _step(self, source: str, message: Any, e: asf.Entry, **kw: Any) -> dict[str, Any]:
        st: dict[str, Any] = {"source": source, "message": message, "timestamp": e.obj.get("ts")}
        st.update(kw)
        extra = st.setdefault("extra", {})
        extra["agentsession"] = {"entry_id": e.id}
        if self.pending:
            extra.update(self.pending)
            self.pending = {}
        self._attach_native(st, e)
        st["_index"] = len(self.steps)
        self.steps.append(st)
        self.entry_step[e.id] = st["_index"]
        return st

    def _attach_native(self, st: dict[str, Any], e: asf.Entry) -> None:
        if not self.passthrough:
            return
        raw = self._native(e)
        if raw is not None:
            st["extra"].setdefault(NATIVE, []).append(raw)

    def _pend(self, key: str, value: Any) -> None:
        self.pending.setdefault(key, []).append(value)

    def _close_agent(self) -> None:
        self.agent = None
        self.agent_key = None

    def _agent_step(self, e: asf.Entry, key: Any) -> dict[str, Any]:
        if self.agent is not None and self.agent_key == key and key is not None:
            return self.agent
        if self.agent is not None and key is None and self.agent_key is None:
            return self.agent
        self._close_agent()
        st = self._step("agent", "", e)
        st["extra"]["item_entry_ids"] = []
        if self.passthrough:
            st["extra"].setdefault("openresponses", {"items": []})
        st["_texts"] = []
        st["_reasoning"] = []
        model = self.settings.model
        if model:
            st["model_name"] = model
        eff = self.settings.reasoning.get("effort") if isinstance(self.settings.reasoning, dict) else None
        if isinstance(eff, (str, float, int)) and not isinstance(eff, bool):
            st["reasoning_effort"] = eff
        self.agent = st
        self.agent_key = key
        return st

    # -- entries
    def run(self) -> dict[str, Any]:
        path = self.f.path_to(self.leaf)
        for e in path:
            o = e.obj
            t = o.get("type")
            if t == "config":
                _apply_config(self.settings, e, [])
                if self.first_settings is None:
                    self.first_settings = self.settings.to_dict()
                    self.agent_entry = e
                    continue
                self._pend("config_entries", {"entry_id": e.id, **asf.content_of(o)})
                continue
            if t == "item":
                self._item(e)
                continue
            if t == "response":
                self._response(e)
                continue
            if t == "compaction":
                self._close_agent()
                _apply_checkpoint(self.settings, o.get("config"))
                summary = _text_of((o.get("summary") or {}).get("content")) if isinstance(o.get("summary"), dict) else ""
                extra = {
                    "context_management": {"type": "compaction", "boundary": "replace"},
                    "first_kept": o.get("first_kept"),
                }
                if "tokens_before" in o:
                    extra["tokens_before"] = o["tokens_before"]
                if self.passthrough:
                    extra["openresponses"] = {"summary": o.get("summary"), "pinned": o.get("pinned") or []}
                st = self._step("system", summary, e, is_copied_context=True, observation={"results": [{"content": summary or None}]})
                st["extra"].update(extra)
                self._count_usage(o.get("usage"))
                self.totals["calls"] += 1  # a compaction is a model call
                continue
            if t == "branch_summary":
                self._close_agent()
                summary = _text_of((o.get("summary") or {}).get("content")) if isinstance(o.get("summary"), dict) else ""
                st = self._step("system", summary, e, is_copied_context=True)
                st["extra"]["branch_from"] = o.get("from")
                self._count_usage(o.get("usage"))
                self.totals["calls"] += 1
                continue
            if t == "outcome":
                rec = {"entry_id": e.id, **{k: v for k, v in asf.content_of(o).items() if k != NATIVE}}
                self.outcomes.append(rec)
                target = o.get("target")
                if target in self.entry_step:
                    self.steps[self.entry_step[target]]["extra"].setdefault("outcome", []).append(rec)
                else:
                    self._pend("outcomes", rec)
                continue
            if t == "custom" and isinstance(o.get("data"), dict) and isinstance(o["data"].get("usage"), dict):
                # A paid model call recorded with its usage alone.
                self._count_usage(o["data"]["usage"])
                self.totals["calls"] += 1
            if t == "link" and o.get("rel") == "subsession":
                self._link(e)
                continue
            # Records, extensions and custom entries ride on the next step.
            key = {"custom": "custom", "label": "labels", "info": "info", "env": "environments", "outcome": "outcomes",
                   "link": "links", "queued": "queued", "run": "runs", "dispatch": "dispatches", "decision": "decisions"}.get(t, "extensions")
            rec = {"entry_id": e.id, "type": t, **{k: v for k, v in asf.content_of(o).items() if k != NATIVE}}
            if self.passthrough and self._native(e) is not None:
                rec[NATIVE] = self._native(e)
            self._pend(key, rec)
        return self._finish()

    def _item(self, e: asf.Entry) -> None:
        o = e.obj
        it = o.get("item")
        if not isinstance(it, dict):
            self._pend("extensions", {"entry_id": e.id, "item": it})
            return
        typ = it.get("type")
        role = it.get("role")
        resp = o.get("response")
        is_output = resp is not None or typ in ("function_call", "reasoning") or (typ == "message" and role == "assistant")
        if typ == "function_call_output":
            self._output(e, it)
            return
        if is_output and typ in ("message", "function_call", "reasoning"):
            st = self._agent_step(e, resp)
            st["extra"]["item_entry_ids"].append(e.id)
            if self.passthrough:
                st["extra"]["openresponses"]["items"].append(it)
                if st["extra"]["agentsession"]["entry_id"] != e.id:
                    self._attach_native(st, e)
            self.entry_step[e.id] = st["_index"]
            if typ == "message":
                st["_texts"].append(_text_of(it.get("content")))
                if it.get("phase") is not None:
                    st["extra"].setdefault("phases", []).append(it["phase"])
            elif typ == "reasoning":
                st["_reasoning"].append(_reasoning_text(it))
            else:
                call = {"tool_call_id": it.get("call_id"), "function_name": it.get("name") or "tool", "arguments": _arguments(it.get("arguments"))}
                tc_extra = {k: o[k] for k in ("trajkit:native_call_id", "trajkit:native_name") if k in o}
                if tc_extra:
                    call["extra"] = tc_extra
                st.setdefault("tool_calls", []).append(call)
                if isinstance(it.get("call_id"), str):
                    self.call_step[it["call_id"]] = st
            return
        self._close_agent()
        text = _text_of(it.get("content"))
        if typ == "message" and role == "user":
            st = self._step("user", text, e)
        elif typ == "message":
            st = self._step("system", text, e)
            st["extra"]["role"] = role
        else:
            st = self._step("system", text, e)
            st["extra"]["item_type"] = typ
        if self.passthrough:
            st["extra"]["openresponses"] = {"item": it}
        if o.get("visible") is False:
            st["extra"]["visible"] = False

    def _output(self, e: asf.Entry, it: dict[str, Any]) -> None:
        cid = it.get("call_id")
        content = _output_content(it.get("output"))
        result: dict[str, Any] = {}
        st = self.call_step.get(cid) if isinstance(cid, str) else None
        extra: dict[str, Any] = {"agentsession": {"entry_id": e.id}}
        if self.passthrough:
            raw = self._native(e)
            if raw is not None:
                extra[NATIVE] = raw
        if st is None:
            self._close_agent()
            sys = self._step("system", content or "", e)
            sys["extra"]["orphan_call_id"] = cid
            sys["observation"] = {"results": [{"content": content, "extra": extra}]}
            return
        result["source_call_id"] = cid
        if content is not None:
            result["content"] = content
        result["extra"] = extra
        st.setdefault("observation", {"results": []})["results"].append(result)
        self.call_result[cid] = result
        self.entry_step[e.id] = st["_index"]

    def _response(self, e: asf.Entry) -> None:
        o = e.obj
        rid = o.get("response_id")
        st = self.agent
        if st is None or (self.agent_key is not None and rid != self.agent_key):
            self._close_agent()
            st = self._agent_step(e, rid)
        st["timestamp"] = o.get("ts")
        st["llm_call_count"] = o.get("attempts", 1) if isinstance(o.get("attempts"), int) else 1
        if o.get("model"):
            st["model_name"] = o["model"]
        st["extra"]["response_entry_id"] = e.id
        self.entry_step[e.id] = st["_index"]
        if self.passthrough:
            st["extra"].setdefault("openresponses", {"items": []})["response"] = {k: v for k, v in o.items() if k not in ("id", "parent", "type", NATIVE)}
        for k in ("status", "error", "incomplete", "latency_ms", "request_hash"):
            if o.get(k) is not None and not (k == "status" and o[k] == "completed"):
                st["extra"][k] = o[k]
        usage = o.get("usage")
        metrics: dict[str, Any] = {}
        if isinstance(usage, dict):
            inp, out, cached = self._count_usage(usage)
            metrics.update({"prompt_tokens": inp, "completion_tokens": out, "cached_tokens": cached})
            rt = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
            if rt:
                metrics["extra"] = {"reasoning_tokens": rt}
        cost = o.get("trajkit:cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            metrics["cost_usd"] = float(cost)
            self.totals["cost"] += float(cost)
            self.totals["has_cost"] = True
            if o.get("trajkit:cost_estimated") is True:
                metrics.setdefault("extra", {})["cost_estimated"] = True
                self.totals["estimated"] = True
        for k in ("prompt_token_ids", "completion_token_ids", "logprobs"):
            if isinstance(o.get("trajkit:" + k), list):
                metrics[k] = o["trajkit:" + k]
        if metrics:
            st["metrics"] = metrics
        self.totals["calls"] += 1
        self._close_agent()

    def _count_usage(self, usage: Any) -> tuple[int, int, int]:
        if not isinstance(usage, dict):
            return 0, 0, 0
        inp = usage.get("input_tokens") or 0
        out = usage.get("output_tokens") or 0
        cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
        self.totals["prompt"] += inp
        self.totals["completion"] += out
        self.totals["cached"] += cached
        return inp, out, cached

    def _link(self, e: asf.Entry) -> None:
        o = e.obj
        child_sid = o.get("session")
        cid = o.get("call_id")
        child = self.resolver(child_sid) if (self.resolver and isinstance(child_sid, str)) else None
        ref: dict[str, Any] = {"session_id": child_sid}
        if child is not None and child.entries:
            child_leaf = child.main_leaf()
            ref["trajectory_id"] = f"{child_sid}/{child_leaf}"
            doc = project(child, child_leaf, self.resolver, self.passthrough, trajectory_id=ref["trajectory_id"])
            self.subagents.append(doc)
            fm = doc.get("final_metrics") or {}
            if isinstance(fm.get("total_cost_usd"), (int, float)):
                self.totals["cost"] += fm["total_cost_usd"]
                self.totals["has_cost"] = True
        else:
            ref["trajectory_path"] = f"{child_sid}.json"
        ref["extra"] = {"agentsession": {"entry_id": e.id}}
        result = self.call_result.get(cid) if isinstance(cid, str) else None
        if result is None and isinstance(cid, str) and cid in self.call_step:
            st = self.call_step[cid]
            result = {"source_call_id": cid}
            st.setdefault("observation", {"results": []})["results"].append(result)
            self.call_result[cid] = result
        if result is not None:
            result.setdefault("subagent_trajectory_ref", []).append(ref)
        else:
            self.root_extra.setdefault("unattached_subsessions", []).append(ref)

    def _finish(self) -> dict[str, Any]:
        h = self.f.header
        harness = h.get("harness") if isinstance(h.get("harness"), dict) else {}
        first = self.first_settings or {}
        agent: dict[str, Any] = {
            "name": str(harness.get("name") or "agentsession"),
            "version": str(harness.get("version") or h.get("format") or "unknown"),
        }
        if first.get("model"):
            agent["model_name"] = first["model"]
        if first.get("tools"):
            agent["tool_definitions"] = [_tool_definition(t) for t in first["tools"]]
        agent_extra: dict[str, Any] = {}
        if first.get("instructions") is not None:
            agent_extra["instructions"] = first["instructions"]
        if self.agent_entry is not None:
            agent_extra["agentsession"] = {"entry_id": self.agent_entry.id}
            raw = self._native(self.agent_entry) if self.passthrough else None
            if raw is not None:
                agent_extra[NATIVE] = raw
        if agent_extra:
            agent["extra"] = agent_extra
        if self.pending:
            if self.steps:
                self.steps[-1]["extra"].setdefault("trailing", {}).update(self.pending)
            else:
                self.root_extra.update(self.pending)
            self.pending = {}
        steps = self.steps
        if not steps:
            # ATIF needs one step: an empty session is one system step saying so.
            steps.append({"source": "system", "message": "", "extra": {"empty_session": True}})
        for i, st in enumerate(steps, start=1):
            st["step_id"] = i
            st.pop("_index", None)
            texts = st.pop("_texts", None)
            reasoning = st.pop("_reasoning", None)
            if st["source"] == "agent":
                st["message"] = "\n".join(t for t in (texts or []) if t is not None)
                r = "\n".join(x for x in (reasoning or []) if x)
                if r:
                    st["reasoning_content"] = r
            if st.get("timestamp") is None:
                st.pop("timestamp", None)
        ordered = [_order_step(st) for st in steps]
        total_calls = self.totals["calls"]
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "session_id": h.get("id"),
            "trajectory_id": self.trajectory_id,
            "agent": agent,
            "steps": ordered,
        }
        fm: dict[str, Any] = {
            "total_prompt_tokens": self.totals["prompt"],
            "total_completion_tokens": self.totals["completion"],
            "total_cached_tokens": self.totals["cached"],
            "total_steps": total_calls,
        }
        if self.totals["has_cost"]:
            fm["total_cost_usd"] = round(self.totals["cost"], 10)
        if self.outcomes:
            fm["extra"] = {"outcome": self.outcomes}
        if self.totals.get("estimated"):
            fm.setdefault("extra", {})["cost_estimated"] = True
        doc["final_metrics"] = fm
        if total_calls != len(ordered):
            doc["notes"] = (
                f"total_steps counts the path's {total_calls} model call(s) (responses, compactions, branch summaries "
                f"and calls recorded with their usage alone), "
                f"not its {len(ordered)} steps, which also hold user, system and copied-context steps."
            )
        extra: dict[str, Any] = {
            "agentsession": {k: v for k, v in {
                "format": h.get("format"), "leaf": self.leaf, "cwd": h.get("cwd"),
                "parent_session": h.get("parent_session"), "spawned_by": h.get("spawned_by"),
                "records": h.get("records"),
            }.items() if v is not None},
            "openresponses": {"payload": h.get("payload")},
        }
        for k in ("trajkit:source", "trajkit:metadata"):
            if k in h:
                extra[k] = h[k]
        extra.update(self.root_extra)
        doc["extra"] = extra
        if self.subagents:
            doc["subagent_trajectories"] = self.subagents
        return doc


_STEP_ORDER = ("step_id", "timestamp", "source", "model_name", "reasoning_effort", "message", "reasoning_content",
               "tool_calls", "observation", "metrics", "llm_call_count", "is_copied_context", "extra")


def _order_step(st: dict[str, Any]) -> dict[str, Any]:
    return {k: st[k] for k in _STEP_ORDER if k in st}


def project(f: asf.AsfFile, leaf: str, resolver: Resolver | None = None, passthrough: bool = True,
            trajectory_id: str | None = None) -> dict[str, Any]:
    """The ATIF document for the path from the root to ``leaf``."""
    return _Projection(f, leaf, resolver, passthrough, trajectory_id).run()


def project_session(f: asf.AsfFile, resolver: Resolver | None = None, passthrough: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """One ATIF document per leaf: ``(file name, document)``. The live path is
    ``<session>.json``; other leaves ``<session>_<leaf hex prefix>.json``."""
    sid = str(f.header.get("id") or "session")
    main = f.main_leaf()
    out: list[tuple[str, dict[str, Any]]] = []
    leaves = [leaf for leaf in f.leaves() if not _leaf_marker(f, leaf)]
    if main is not None and main not in leaves:
        leaves.append(main)
    for leaf in leaves:
        doc = project(f, leaf, resolver, passthrough)
        if leaf == main:
            name = f"{sid}.json"
        else:
            name = f"{sid}_{str(leaf).removeprefix('sha256:')[:12]}.json"
            doc.setdefault("extra", {})["abandoned_at"] = _fork_point(f, leaf, main)
        out.append((name, doc))
    out.sort(key=lambda t: (t[0] != f"{sid}.json", t[0]))
    return out


def _leaf_marker(f: asf.AsfFile, leaf: str) -> bool:
    """A ``label leaf`` appended right after the entry it marks (not a path of its own)."""
    e = f.by_id.get(leaf)
    if e is None:
        return False
    o = e.obj
    return o.get("type") == "label" and o.get("label") == "leaf" and o.get("target") == o.get("parent")


def _fork_point(f: asf.AsfFile, leaf: str, main: str | None) -> str | None:
    if main is None:
        return None
    on_main = {e.id for e in f.path_to(main)}
    for e in reversed(f.path_to(leaf)):
        if e.id in on_main:
            return e.id
    return None
