"""The normative ASF context algorithm (§5): the settings and items a model saw
at a leaf (:func:`build_context`), the request a response was sent
(:func:`request_context`; its hash is :func:`.codec.request_hash`) and :class:`RequestWalker`,
which builds the contexts of many responses on one path incrementally.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .codec import canonical, text_hash
from .entries import AsfFile, Entry

# --------------------------------------------------------------------------- context

@dataclass
class Settings:
    """The request settings in force at a point on a path (RFC 0001 §5 step 2)."""

    model: Any = None
    instructions: Any = None
    parts: list[dict[str, Any]] | None = None
    omitted: list[Any] | None = None
    reasoning: Any = None
    text: Any = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    omit: dict[str, Any] = field(default_factory=dict)
    has: set[str] = field(default_factory=set)
    part_history: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    part_texts: dict[str, str] = field(default_factory=dict)
    omitted_lists: dict[str, list[Any]] = field(default_factory=dict)

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if self.model is not None:
            d["model"] = self.model
        if self.instructions is not None:
            d["instructions"] = self.instructions
        if self.parts:
            d["instructions_parts"] = self.parts
        if self.omitted:
            d["instructions_omitted"] = self.omitted
        if "reasoning" in self.has and self.reasoning is not None:
            d["reasoning"] = self.reasoning
        if "text" in self.has and self.text is not None:
            d["text"] = self.text
        if self.tools:
            d["tools"] = self.tools
        if self.extra:
            d["extra"] = self.extra
        if self.omit:
            d["omit"] = self.omit
        return d


@dataclass
class Context:
    """The context built at a leaf: settings, items, the entries that make up
    the (possibly compacted) path, the entry each item came from, the items
    ``omit`` left out, and anything that could not be resolved."""

    leaf: str
    settings: dict[str, Any]
    items: list[Any]
    entries: list[str]
    item_entries: list[str]
    omitted: list[dict[str, Any]] = field(default_factory=list)
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (code, entry id, message)
    compaction: str | None = None
    model_at: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {"settings": self.settings, "items": self.items, "entries": self.entries, "item_entries": self.item_entries}
        if self.omitted:
            d["omitted"] = self.omitted
        return d

    def request(self) -> dict[str, Any]:
        """The canonical Open Responses request (RFC 0001 §5 step 5)."""
        return request_of(self.settings, self.items)


def request_of(settings: dict[str, Any], items: list[Any]) -> dict[str, Any]:
    """Settings + items as the request whose hash a response carries.

    Checked against the corpus: ``model``, ``instructions`` (parts joined),
    ``tools`` when non-empty, ``reasoning`` / ``text`` when set, the ``extra``
    passthrough keys at top level, ``input``, ``store: false``.
    """
    req: dict[str, Any] = {}
    if settings.get("model") is not None:
        req["model"] = settings["model"]
    if settings.get("instructions") is not None:
        req["instructions"] = settings["instructions"]
    if settings.get("tools"):
        req["tools"] = settings["tools"]
    if settings.get("reasoning") is not None:
        req["reasoning"] = settings["reasoning"]
    if settings.get("text") is not None:
        req["text"] = settings["text"]
    for k, v in (settings.get("extra") or {}).items():
        if k not in req and k not in ("input", "store", "previous_response_id"):
            req[k] = v
    req["input"] = list(items)
    req["store"] = False
    return req


def _apply_checkpoint(s: Settings, cfg: Any) -> None:
    s.reset()
    if not isinstance(cfg, dict):
        return
    s.model = cfg.get("model")
    s.instructions = cfg.get("instructions")
    if isinstance(cfg.get("instructions_parts"), list):
        s.parts = [dict(p) for p in cfg["instructions_parts"] if isinstance(p, dict)]
        for p in s.parts:
            if isinstance(p.get("id"), str) and isinstance(p.get("text"), str):
                s.part_history.setdefault(p["id"], {})[text_hash(p["text"])] = p
                s.part_texts[text_hash(p["text"])] = p["text"]
        if s.instructions is None and s.parts:
            s.instructions = "\n\n".join(p.get("text", "") for p in s.parts)
    if isinstance(cfg.get("instructions_omitted"), list):
        s.omitted = list(cfg["instructions_omitted"])
    for k in ("reasoning", "text"):
        if k in cfg:
            setattr(s, k, cfg[k])
            s.has.add(k)
    if isinstance(cfg.get("tools"), list):
        s.tools = list(cfg["tools"])
    if isinstance(cfg.get("extra"), dict):
        s.extra = {k: v for k, v in cfg["extra"].items() if v is not None}
    if isinstance(cfg.get("omit"), dict):
        s.omit = _merge_omit({}, cfg["omit"])


def _merge_omit(cur: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    if not delta:
        return {}
    out = dict(cur)
    if "reasoning" in delta:
        if delta["reasoning"] is None:
            out.pop("reasoning", None)
        else:
            out["reasoning"] = delta["reasoning"]
    if isinstance(delta.get("items"), list):
        items = list(out.get("items", []))
        for i in delta["items"]:
            if i not in items:
                items.append(i)
        out["items"] = items
    return out


def _apply_config(s: Settings, e: Entry, problems: list[tuple[str, str, str]]) -> None:
    o = e.obj
    eid = e.id
    if o.get("replace") is True:
        s.reset()
    if "model" in o:
        s.model = o["model"]
    for k in ("reasoning", "text"):
        if k in o:
            setattr(s, k, o[k])
            s.has.add(k)
    if "instructions_parts" in o:
        resolved = _resolve_parts(s, o["instructions_parts"], eid, problems)
        if resolved is not None:
            s.parts = resolved
            joined = "\n\n".join(p["text"] for p in resolved)
            if isinstance(o.get("instructions"), str) and o["instructions"] != joined:
                problems.append(("asf.bad-instructions", eid, "instructions does not equal the parts joined with a blank line"))
                s.instructions = o["instructions"]
            else:
                s.instructions = joined
            for p in resolved:
                s.part_history.setdefault(p["id"], {})[text_hash(p["text"])] = p
                s.part_texts[text_hash(p["text"])] = p["text"]
        else:
            # Parts that cannot be resolved: fall back to the instructions string.
            s.parts = None
            if "instructions" in o:
                s.instructions = o["instructions"]
    elif "instructions" in o:
        s.instructions = o["instructions"]
        s.parts = None
    if "instructions_omitted" in o:
        s.omitted = _resolve_omitted(s, o["instructions_omitted"], eid, problems)
        if isinstance(eid, str):
            s.omitted_lists[eid] = s.omitted
    if isinstance(o.get("tools_added"), list):
        for t in o["tools_added"]:
            name = t.get("name") if isinstance(t, dict) else None
            if name is not None:
                s.tools = [x for x in s.tools if not (isinstance(x, dict) and x.get("name") == name)]
            s.tools.append(t)
    if isinstance(o.get("tools_removed"), list):
        gone = set(x for x in o["tools_removed"] if isinstance(x, str))
        s.tools = [x for x in s.tools if not (isinstance(x, dict) and x.get("name") in gone)]
    if isinstance(o.get("extra"), dict):
        for k, v in o["extra"].items():
            if v is None:
                s.extra.pop(k, None)
            else:
                s.extra[k] = v
    if "omit" in o:
        om = o["omit"]
        if not isinstance(om, dict):
            problems.append(("asf.bad-omit", eid, "omit is not an object"))
        else:
            r = om.get("reasoning")
            if r is not None and r != "other_models":
                problems.append(("asf.bad-omit", eid, f"omit.reasoning {r!r} is not a known value (other_models)"))
            s.omit = _merge_omit(s.omit, om)


def _resolve_parts(s: Settings, parts: Any, eid: str, problems: list) -> list[dict[str, Any]] | None:
    if not isinstance(parts, list):
        problems.append(("asf.bad-instructions", eid, "instructions_parts is not a list"))
        return None
    in_force = s.parts or []
    by_id = {p.get("id"): (i, p) for i, p in enumerate(in_force)}
    cursor = 0
    out: list[dict[str, Any]] = []
    ok = True
    for el in parts:
        if not isinstance(el, dict):
            ok = False
            continue
        if "keep" in el and "id" not in el:
            n = el.get("keep")
            if not isinstance(n, int) or n < 0 or cursor + n > len(in_force):
                problems.append(("asf.bad-instructions", eid, f"{{keep:{n}}} runs past the parts in force"))
                ok = False
                continue
            out.extend(dict(p) for p in in_force[cursor:cursor + n])
            cursor += n
            continue
        pid = el.get("id")
        if pid in by_id:
            cursor = by_id[pid][0] + 1
        if isinstance(el.get("text"), str):
            p = {"id": pid, "text": el["text"]}
            if "source" in el:
                p["source"] = el["source"]
            elif pid in by_id and "source" in by_id[pid][1]:
                p["source"] = by_id[pid][1]["source"]
            out.append(p)
            continue
        h = el.get("hash")
        text = None
        known: dict[str, Any] | None = None
        if pid in by_id and isinstance(by_id[pid][1].get("text"), str) and text_hash(by_id[pid][1]["text"]) == h:
            known = by_id[pid][1]
        else:
            # 0.11: a hash may name a part out of force whose text the path holds.
            known = s.part_history.get(pid, {}).get(h)
        if known is not None:
            text = known["text"]
        if text is None:
            problems.append(("asf.bad-instructions", eid, f"part {pid!r} names hash {h} that no text on the path has"))
            ok = False
            continue
        p = {"id": pid, "text": text}
        if "source" in el:
            p["source"] = el["source"]
        elif known is not None and "source" in known:
            p["source"] = known["source"]
        out.append(p)
    return out if ok else None


def _resolve_omitted(s: Settings, lst: Any, eid: str, problems: list) -> list[Any] | None:
    if not isinstance(lst, list):
        problems.append(("asf.bad-omitted", eid, "instructions_omitted is not a list"))
        return s.omitted
    in_force = s.omitted or []
    cursors: dict[Any, int] = {None: 0}
    lists: dict[Any, list] = {None: in_force}
    out: list[Any] = []
    for el in lst:
        if isinstance(el, dict) and "keep" in el and "id" not in el:
            n = el.get("keep")
            src = el.get("of")
            if src is not None:
                if src not in s.omitted_lists or not isinstance(s.omitted_lists[src], list):
                    problems.append(("asf.unresolved-omitted", eid, f"keep/of names {src}, not a config with an omitted list earlier on this path since the last checkpoint"))
                    out.append(el)
                    continue
                lists.setdefault(src, s.omitted_lists[src])
                cursors.setdefault(src, 0)
            base = lists[src]
            c = cursors[src]
            if not isinstance(n, int) or n < 0 or c + n > len(base):
                problems.append(("asf.unresolved-omitted", eid, f"keep {n} runs past the omitted list it counts over"))
                out.append(el)
                continue
            out.extend(base[c:c + n])
            cursors[src] = c + n
            continue
        if isinstance(el, dict) and "id" in el:
            for key, base in lists.items():
                for i, x in enumerate(base):
                    if isinstance(x, dict) and x.get("id") == el["id"]:
                        cursors[key] = i + 1
                        break
        out.append(el)
    return out


def build_context(f: AsfFile, leaf: str, path: list[Entry] | None = None) -> Context:
    """The context at ``leaf`` (RFC 0001 §5): settings, items and provenance."""
    if path is None:
        path = f.path_to(leaf)
    problems: list[tuple[str, str, str]] = []
    comp_idx = None
    for i, e in enumerate(path):
        if e.type == "compaction":
            comp_idx = i
    s = Settings()
    model_at: dict[str, Any] = {}
    # Settings: replay every config (or from the last compaction's checkpoint).
    start = 0
    if comp_idx is not None:
        _apply_checkpoint(s, path[comp_idx].obj.get("config"))
        start = comp_idx + 1
        # model in force before the checkpoint still attributes earlier items
        pre = Settings()
        for e in path[:comp_idx]:
            if e.type == "config":
                _apply_config(pre, e, [])
            model_at[e.id] = pre.model
    for e in path[start:]:
        if e.type == "config":
            _apply_config(s, e, problems)
        model_at[e.id] = s.model
    if comp_idx is not None:
        model_at[path[comp_idx].id] = s.model
    # Items.
    items: list[Any] = []
    item_entries: list[str] = []
    entries: list[str] = []
    if comp_idx is not None:
        comp = path[comp_idx]
        co = comp.obj
        fk = co.get("first_kept")
        fk_idx = next((i for i, e in enumerate(path[:comp_idx]) if e.id == fk), None)
        if fk_idx is None:
            problems.append(("asf.bad-first-kept", comp.id, f"first_kept {fk!r} is not an entry on the path before the compaction"))
            fk_idx = comp_idx
        entries.append(comp.id)
        if "summary" in co:
            items.append(co["summary"])
            item_entries.append(comp.id)
        for p in co.get("pinned") or []:
            items.append(p)
            item_entries.append(comp.id)
        seq = path[fk_idx:comp_idx] + path[comp_idx + 1:]
    else:
        seq = path
    candidates: list[tuple[Entry, Any]] = []
    for e in seq:
        entries.append(e.id)
        t = e.type
        if t == "item" and "item" in e.obj:
            candidates.append((e, e.obj["item"]))
        elif t == "branch_summary" and "summary" in e.obj:
            candidates.append((e, e.obj["summary"]))
    # The omit in force at the end of the path decides every item on it.
    omit = s.omit
    omitted: list[dict[str, Any]] = []
    req_model = s.model
    omit_items = set(omit.get("items") or [])
    for e, it in candidates:
        reason = None
        if (
            omit.get("reasoning") == "other_models"
            and e.type == "item"
            and isinstance(it, dict)
            and it.get("type") == "reasoning"
            and e.obj.get("response") is not None
            and req_model
            and model_at.get(e.id)
            and model_at.get(e.id) != req_model
        ):
            reason = "other_models"
        elif e.id in omit_items:
            reason = "items"
        if reason:
            omitted.append({"entry": e.id, "reason": reason})
            continue
        items.append(it)
        item_entries.append(e.id)
    return Context(
        leaf=leaf,
        settings=s.to_dict(),
        items=items,
        entries=entries,
        item_entries=item_entries,
        omitted=omitted,
        problems=problems,
        compaction=path[comp_idx].id if comp_idx is not None else None,
        model_at=model_at,
    )


def request_leaf(f: AsfFile, response: Entry, path: list[Entry] | None = None) -> tuple[str | None, list[Entry]]:
    """The entry a response's request context ends at: the path to the
    response minus its own output items (matched by ``response``)."""
    if path is None:
        path = f.path_to(response.id)
    rid = response.obj.get("response_id")
    idx = len(path) - 1  # the response itself
    cut = idx
    j = idx - 1
    while j >= 0:
        e = path[j]
        if e.type != "item":
            j -= 1
            continue
        r = e.obj.get("response")
        if rid is not None and r == rid:
            cut = j
            j -= 1
            continue
        break
    prefix = path[:cut]
    if not prefix:
        return None, []
    return prefix[-1].id, prefix


def request_context(f: AsfFile, response: Entry) -> Context | None:
    """The context the model saw for ``response``, or None at an empty path."""
    leaf, prefix = request_leaf(f, response)
    if leaf is None:
        return None
    return build_context(f, leaf, prefix)


class RequestWalker:
    """Request hashes along one path, fed entry by entry in path order.

    Equivalent to ``request_hash(request_context(f, response).request())``
    but linear in the path instead of quadratic: the canonical bytes of each
    item are computed once, and a request is the join of the items before the
    response's own outputs. :meth:`hash_for` returns None whenever the fast
    rules do not apply (an ``omit`` in force, a config written between a
    response's outputs, non-ASCII passthrough keys); callers then build the
    context the normative way.
    """

    def __init__(self) -> None:
        self.settings = Settings()
        self.version = 0  # bumps on every settings change
        self.items: list[bytes] = []
        self.item_resp: list[Any] = []
        self.item_version: list[int] = []
        self.path: list[Entry] = []
        self._cache: tuple[int, bytes, bytes] | None = None

    def feed(self, e: Entry) -> None:
        self.path.append(e)
        t = e.type
        o = e.obj
        if t == "config":
            _apply_config(self.settings, e, [])
            self.version += 1
        elif t == "compaction":
            _apply_checkpoint(self.settings, o.get("config"))
            self.version += 1
            fk = o.get("first_kept")
            idx = next((i for i, x in enumerate(self.path[:-1]) if x.id == fk), len(self.path) - 1)
            self.items, self.item_resp, self.item_version = [], [], []
            if "summary" in o:
                self._push(o["summary"], None)
            for pin in o.get("pinned") or []:
                self._push(pin, None)
            for x in self.path[idx:-1]:
                if x.type == "item" and "item" in x.obj:
                    self._push(x.obj["item"], x.obj.get("response"))
                elif x.type == "branch_summary" and "summary" in x.obj:
                    self._push(x.obj["summary"], None)
        elif t == "item" and "item" in o:
            self._push(o["item"], o.get("response"), e.safe)
        elif t == "branch_summary" and "summary" in o:
            self._push(o["summary"], None, e.safe)

    def _push(self, item: Any, response: Any, safe: bool = False) -> None:
        self.items.append(canonical(item, safe))
        self.item_resp.append(response)
        self.item_version.append(self.version)

    def hash_for(self, response_id: Any) -> str | None:
        """The request hash of a response with ``response_id`` appended now."""
        if self.settings.omit:
            return None
        k = len(self.items)
        if response_id is not None:
            while k > 0 and self.item_resp[k - 1] == response_id:
                k -= 1
        if k < len(self.items) and self.item_version[k] != self.version:
            return None  # settings changed after the first output: the slow way
        if self._cache is None or self._cache[0] != self.version:
            req = request_of(self.settings.to_dict(), [])
            del req["input"]
            if not all(isinstance(x, str) and x.isascii() for x in req):
                return None
            before = {a: b for a, b in req.items() if a < "input"}
            after = {a: b for a, b in req.items() if a > "input"}
            head = canonical(before)[:-1] if before else b"{"
            head += b"," if before else b""
            tail = canonical(after)[1:] if after else b"}"
            tail = (b"," + tail) if after else tail
            self._cache = (self.version, head + b'"input":[', b"]" + tail)
        _, head, tail = self._cache
        h = hashlib.sha256(head)
        h.update(b",".join(self.items[:k]))
        h.update(tail)
        return "sha256:" + h.hexdigest()
