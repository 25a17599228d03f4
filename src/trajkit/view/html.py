"""The HTML back-end: the presentation tree of :mod:`trajkit.view.transcript`
as one static, self-contained page (``trajkit view``).

The page holds everything it shows: its CSS and script are inline; the
header, diagnostics and certificate ride in one ``<script
type="application/json">`` block, and the timeline in pages of
:data:`PAGE_SIZE` items, each gzipped JSON in base64 (``tk-page-N``), with
the anchor index beside them (``tk-index``). No CDN, no font, no image and no
request of any kind; the page works from a ``file://`` URL with the network
off.

The script inflates (``DecompressionStream``) and draws one timeline page at
a time, so a 20,000-step run never puts 20,000 steps into the DOM; an
observation's full text enters the DOM only when it is expanded (the step
shows a short preview until then).

Agent output is hostile. Every text from the run reaches the page inside a
data block: JSON with ``<``, ``>`` and ``&`` written as ``\\u`` escapes, or
base64 (so no ``</script>`` in a run can end the block), and the script puts
it into the DOM with ``textContent`` only, never as markup. The one text
this module writes into the HTML itself (the ``<title>``) is HTML-escaped.

This module builds the page from the tree and the (optional) certificate
and CodeTraceBench row; it reads no file and never looks at native shapes.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from datetime import datetime
from typing import Any

from .transcript import DiagnosticNode, EditNode, StepNode, SubAgentNode, Transcript

#: Timeline items (steps and messages) per page of the timeline; a run with
#: more is split into pages the reader moves through.
PAGE_SIZE = 1000

#: Event kinds shown in the timeline between the steps (the normalized
#: kinds of :mod:`trajkit.model`): messages, errors the harness recorded,
#: condensations, reasoning, and observations that answer no step. Other
#: events (state, system prompt) are reachable through anchors only.
_NOTE_KINDS = ("message", "error", "condensation", "reasoning", "observation")


# ---------------------------------------------------------------- data


def _num(v: Any) -> float | int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and v != v:  # NaN
        return None
    return v


def _str(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else str(v)


def _parse_time(text: str | None) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    t = text.strip()
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(t)
    except ValueError:
        return None


def duration_seconds(start: str | None, end: str | None) -> float | None:
    """Seconds from ``start`` to ``end`` (ISO timestamps as recorded), or
    None when either is missing, unreadable, or they cannot be compared."""
    a, b = _parse_time(start), _parse_time(end)
    if a is None or b is None:
        return None
    try:
        return (b - a).total_seconds()
    except TypeError:  # one aware, one naive
        return None


def _edit(e: EditNode | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {"p": e.path, "d": e.diff, "w": e.whole, "c": e.complete}


def _step(s: StepNode, subs: list[dict[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {"k": "s", "a": s.anchor, "n": s.step_id, "tool": s.tool_type, "act": s.action, "obs": s.observation}
    if s.thinking:
        d["th"] = s.thinking
    if s.labels:
        d["lab"] = [str(x) for x in s.labels]
    if s.tokens:
        d["tok"] = {k: v for k, v in s.tokens.items() if _num(v) is not None}
    if _num(s.cost) is not None:
        d["cost"] = s.cost
    if s.edit is not None:
        d["edit"] = _edit(s.edit)
    if subs:
        d["subs"] = subs
    return d


def _diag(d: DiagnosticNode, alias: dict[str, str]) -> dict[str, Any]:
    where = d.file or ""
    if d.line is not None:
        where += f":{d.line}"
    elif d.offset is not None:
        where += f"@{d.offset}"
    if d.event_id is not None:
        where += f" event {d.event_id}"
    return {"sev": d.severity, "code": d.code, "msg": d.message, "where": where.strip(),
            "to": alias.get(d.target, d.target) if d.target else None}


class _Builder:
    """Turns a transcript tree into the page's data: the timeline items, and
    for every anchor in the tree where it is shown."""

    def __init__(self) -> None:
        #: anchor -> index of the top-level timeline item that shows it
        self.loc: dict[str, int] = {}
        #: anchor of an event / sub-agent -> anchor of the element that shows it
        self.alias: dict[str, str] = {}

    def transcript(self, tree: Transcript, top: int | None) -> dict[str, Any]:
        """The items, diagnostics and unattached sub-agents of ``tree``.
        ``top`` is the index of the top-level item it is nested in (None for
        the top transcript: each item is then its own)."""
        steps_by_anchor = {s.anchor: s for s in tree.steps}
        shown: set[str] = set()
        items: list[dict[str, Any]] = []
        pending: str | None = None  # events before the first shown item point at it
        waiting: list[str] = []

        def place(anchor: str) -> int:
            index = len(items) if top is None else top
            self.loc[anchor] = index
            return index

        def add_step(st: StepNode) -> None:
            index = place(st.anchor)
            subs = [self.sub(sub, index) for sub in st.sub_agents]
            items.append(_step(st, subs))
            shown.add(st.anchor)

        for e in tree.events:
            st = e.step or e.answers
            if st is not None:
                if st.anchor not in shown:
                    add_step(st)
                target = st.anchor
            elif e.kind in _NOTE_KINDS and (e.text or e.reasoning):
                place(e.anchor)
                items.append({"k": "m", "a": e.anchor, "kind": e.kind, "who": _str(e.role or e.source),
                              "ts": _str(e.timestamp), "text": e.text or e.reasoning or "",
                              "off": e.branch if e.off_branch else None})
                target = e.anchor
            else:
                target = pending
            if target is None:
                waiting.append(e.anchor)
                continue
            pending = target
            self.alias[e.anchor] = target
            for w in waiting:
                self.alias[w] = target
            waiting = []
            self.loc.setdefault(e.anchor, self.loc[target])
        # steps whose action no event holds (a step without its event in the view)
        for anchor, st in steps_by_anchor.items():
            if anchor not in shown:
                add_step(st)
        if waiting and items:
            for w in waiting:
                self.alias[w] = items[-1]["a"]
                self.loc[w] = self.loc[items[-1]["a"]]
        loose = [self.sub(sub, top) for sub in tree.sub_agents]
        diags = [_diag(d, self.alias) for d in tree.diagnostics]
        return {"items": items, "loose": loose, "diags": diags}

    def sub(self, node: SubAgentNode, top: int | None) -> dict[str, Any]:
        if top is not None:
            self.loc[node.anchor] = top
        body = self.transcript(node.transcript, top if top is not None else -1)
        h = node.transcript.header
        return {"a": node.anchor, "how": node.method, "why": node.detail, "id": h.id, "task": h.task,
                "steps": h.step_count, "events": h.event_count, **body}


def _header(tree: Transcript) -> dict[str, Any]:
    h = tree.header
    out: dict[str, Any] = {
        "format": h.format, "id": _str(h.id), "source": h.source_path, "view": h.view, "task": h.task,
        "task_source": h.task_source, "harness": h.harness, "harness_version": h.harness_version, "agent": h.agent,
        "models": [str(m) for m in h.models], "steps": h.step_count, "events": h.event_count,
        "diagnostics": h.diagnostic_count, "facts": [[str(k), _str(v)] for k, v in h.facts],
    }
    started = h.started_at or h.first_timestamp
    ended = h.ended_at or h.last_timestamp
    out["started"], out["ended"] = _str(started), _str(ended)
    out["duration"] = duration_seconds(started, ended)
    cost = _num(h.run_cost) if _num(h.run_cost) is not None else _num(h.cost)
    out["cost"] = cost
    out["tokens"] = h.tokens
    o = h.outcome
    if o is not None:
        out["outcome"] = {"status": _str(o.status), "signal": o.signal, "reached_end": bool(o.reached_end),
                          "claimed_success": bool(o.claimed_success), "budget": bool(o.budget_exhausted),
                          "external_error": _str(o.external_error), "human_abort": bool(o.human_abort),
                          "approval_wait": bool(o.approval_wait)}
    return out


def _certificate(cert: Any, tree: Transcript) -> dict[str, Any]:
    """The certificate's state, reason and findings, each finding's evidence
    linked to the step (or event) it names in the top session."""
    steps = {s.step_id: s.anchor for s in tree.steps}
    events: dict[str, str] = {}
    for e in tree.events:
        events.setdefault(str(e.id), e.anchor)
    findings = []
    for f in cert.findings or []:
        if not isinstance(f, dict):
            continue
        links, where = [], []
        for ev in f.get("evidence") or []:
            if not isinstance(ev, dict):
                continue
            sid, eid = ev.get("step_id"), ev.get("event_id")
            if isinstance(sid, int) and not isinstance(sid, bool) and sid in steps:
                links.append({"a": steps[sid], "label": f"step {sid}"})
            elif eid is not None and str(eid) in events:
                links.append({"a": events[str(eid)], "label": f"event {eid}"})
            elif sid is not None or eid is not None:
                where.append(" ".join(x for x in (f"step {sid}" if sid is not None else "", f"event {eid}" if eid is not None else "") if x))
            if ev.get("file"):
                where.append(f"{ev['file']}:{ev['line']}" if ev.get("line") else str(ev["file"]))
        findings.append({"sev": _str(f.get("severity")), "rule": _str(f.get("rule")), "msg": _str(f.get("message")),
                         "links": links, "where": [str(w) for w in where]})
    return {"state": cert.state, "reason": cert.reason, "claimed_success": bool(cert.claimed_success),
            "false_claim": bool(cert.false_claim), "findings": findings}


def page_data(tree: Transcript, certificate: Any = None, ctb: dict[str, Any] | None = None,
              page_size: int = PAGE_SIZE) -> dict[str, Any]:
    """Everything the page shows, as plain data.

    ``items`` are the top-level timeline items (steps with their nested
    sub-agents, and messages), ``loc`` maps every anchor to the index of the
    item that shows it and ``alias`` every event anchor to the element that
    shows it. ``certificate`` is a :class:`trajkit.certify.Certificate` (or
    None); ``ctb`` the CodeTraceBench manifest row whose labels the steps carry.
    """
    b = _Builder()
    body = b.transcript(tree, None)
    data: dict[str, Any] = {"header": _header(tree), **body, "loc": b.loc, "alias": b.alias,
                            "page": max(1, int(page_size))}
    if certificate is not None:
        data["cert"] = _certificate(certificate, tree)
    if ctb is not None:
        data["ctb"] = {k: _str(ctb.get(k)) for k in ("traj_id", "trial_name", "step_count", "model", "benchmark") if ctb.get(k) is not None}
    return data


def _dumps(data: Any) -> bytes:
    try:
        import orjson

        return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, ValueError):  # integers beyond 64 bits, lone surrogates
        return json.dumps(data, ensure_ascii=True, default=str).encode("ascii")


def _json_block(data: Any) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``:
    ``<``, ``>`` and ``&`` are ``\\u`` escapes, so nothing in it can close
    the element or open a comment."""
    text = _dumps(data).decode("utf-8")
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _packed(data: Any) -> str:
    """``data`` as gzipped JSON in base64 (only ``[A-Za-z0-9+/=]``, so it
    cannot end its element), for the page to inflate when it needs it."""
    return base64.b64encode(gzip.compress(_dumps(data), compresslevel=6, mtime=0)).decode("ascii")


def _title(data: dict[str, Any]) -> str:
    h = data["header"]
    task = (h.get("task") or "").strip().splitlines()
    first = task[0] if task else (h.get("id") or h.get("source") or "run")
    if len(first) > 80:
        first = first[:79] + "…"
    return f"trajkit · {first}"


def render(tree: Transcript, certificate: Any = None, ctb: dict[str, Any] | None = None,
           page_size: int = PAGE_SIZE) -> str:
    """The page for ``tree`` (see the module docs), as one HTML string."""
    data = page_data(tree, certificate, ctb, page_size)
    items, ps = data.pop("items"), data["page"]
    index = {"loc": data.pop("loc"), "alias": data.pop("alias")}
    data["count"] = len(items)
    data["pages"] = max(1, -(-len(items) // ps))
    blocks = [f'<script type="application/octet-stream" id="tk-index">{_packed(index)}</script>']
    # the top-level step numbers each page holds, so a link to a step finds
    # its page without inflating the anchor index
    data["spans"] = []
    for p in range(data["pages"]):
        ns = [it["n"] for it in items[p * ps:(p + 1) * ps] if it["k"] == "s" and isinstance(it["n"], int)]
        data["spans"].append([min(ns), max(ns)] if ns else None)
    for p in range(data["pages"]):
        blocks.append(f'<script type="application/octet-stream" id="tk-page-{p}">{_packed(items[p * ps:(p + 1) * ps])}</script>')
    return _page(_title(data), "run", _json_block(data), "".join(blocks))


def render_index(rows: list[dict[str, Any]], title: str = "trajkit runs") -> str:
    """An index page over many runs. Each row: ``name``, ``href`` (the run's
    page, relative; None when it could not be written), ``format``,
    ``task``, ``outcome`` (a word), ``rank`` (how the outcome sorts),
    ``steps``, ``cost``, ``diagnostics`` and ``error``."""
    return _page(title, "index", _json_block({"runs": rows}), "")


def _page(title: str, kind: str, data: str, packed: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">"
        "<link rel=\"icon\" href=\"data:,\">"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
        f"<body data-kind=\"{kind}\"><div id=\"app\"><p class=\"muted\">loading…</p></div>"
        f"<script type=\"application/json\" id=\"tk-data\">{data}</script>{packed}"
        f"<script>{_JS}</script></body></html>\n"
    )


_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def slug(name: str) -> str:
    """A file name made of ``name``'s safe characters (never empty, never hidden)."""
    s = _SLUG.sub("_", name).strip("._") or "run"
    return s[:120]


_CSS = r"""
:root{--fg:#1d2330;--muted:#667085;--bg:#f7f8fa;--card:#fff;--line:#e3e6eb;--acc:#2456c8;--add:#e6f6ea;--del:#fdecec;
--warn:#9a6700;--err:#b42318;--ok:#157f3b;--code:#f2f4f7}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
#app{max-width:1100px;margin:0 auto;padding:12px 16px 80px}
h1{font-size:18px;margin:4px 0 8px;word-break:break-word}
h2{font-size:15px;margin:18px 0 6px}
a{color:var(--acc)}
pre{margin:4px 0;padding:6px 8px;background:var(--code);border-radius:4px;white-space:pre-wrap;word-break:break-word;
font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;max-height:none}
.muted{color:var(--muted)}.empty{font-size:12px;margin:2px 0 4px}
.card{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:10px 12px;margin:8px 0}
.grid{margin:0;display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}
.grid dt{color:var(--muted)}.grid dd{margin:0;word-break:break-word}
.badge{display:inline-block;padding:0 6px;border-radius:10px;background:#eef2ff;color:#3538cd;font-size:12px;margin-right:4px;white-space:nowrap}
.badge.lab{background:#fff4e5;color:#9a4b00}.badge.ok{background:#e6f6ea;color:var(--ok)}
.badge.bad{background:#fdecec;color:var(--err)}.badge.warn{background:#fff8e1;color:var(--warn)}
.toolbar{position:sticky;top:0;z-index:5;background:var(--bg);padding:8px 0;display:flex;gap:8px;flex-wrap:wrap;align-items:center;border-bottom:1px solid var(--line)}
#filter{flex:1 1 220px;min-width:0;padding:6px 8px;border:1px solid var(--line);border-radius:4px;font:inherit}
button{font:inherit;font-size:12px;padding:2px 8px;border:1px solid var(--line);border-radius:4px;background:var(--card);cursor:pointer}
.step,.note{background:var(--card);border:1px solid var(--line);border-left:4px solid #c7d2fe;border-radius:6px;padding:6px 10px;margin:8px 0;scroll-margin-top:56px}
.note{border-left-color:#d0d5dd}.note.error{border-left-color:var(--err)}
.step.current,.note.current{outline:2px solid var(--acc)}
.step:target{outline:2px solid var(--acc)}
.head{display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.head .num{font-weight:600;text-decoration:none}
.head .tool{font-weight:600}
.head .fig{margin-left:auto;color:var(--muted);font-size:12px}
.lbl{color:var(--muted);font-size:12px;margin-top:4px}
.think{color:#475467;font-style:italic}
.diff .add{background:var(--add);display:block}.diff .del{background:var(--del);display:block}.diff .hunk{color:var(--acc);display:block}
details.sub{margin:6px 0 2px 6px;padding-left:10px;border-left:2px dashed #c7d2fe}
details.sub>summary{cursor:pointer;color:var(--acc)}
.pager{display:flex;gap:8px;align-items:center;margin:8px 0;flex-wrap:wrap}
table{border-collapse:collapse;width:100%;background:var(--card)}
th,td{border-bottom:1px solid var(--line);padding:4px 6px;text-align:left;vertical-align:top;word-break:break-word}
th{cursor:pointer;user-select:none;white-space:nowrap}
.sev-error{color:var(--err)}.sev-warning{color:var(--warn)}.sev-high{color:var(--err)}.sev-medium{color:var(--warn)}
.help{font-size:12px;color:var(--muted)}
@media (max-width:600px){#app{padding:6px 8px 60px}.help{display:none}.grid{grid-template-columns:1fr}.grid dt{margin-top:4px}.head .fig{margin-left:0}}
"""

_JS = r"""
(function(){
"use strict";
var D=JSON.parse(document.getElementById('tk-data').textContent);
var app=document.getElementById('app');
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!=null)e.textContent=String(text);return e;}
function add(p){for(var i=1;i<arguments.length;i++){var c=arguments[i];if(c!=null)p.appendChild(c);}return p;}
function link(anchor,text){var a=el('a',null,text);a.href='#'+anchor;return a;}
function fmtNum(n){return (n==null)?'':Number(n).toLocaleString('en-US');}
function fmtCost(c){return (c==null)?'':'$'+(c<0.01&&c>0?c.toPrecision(2):c.toFixed(4));}
function fmtDur(s){if(s==null)return '';var neg=s<0;s=Math.abs(Math.round(s));var h=Math.floor(s/3600),m=Math.floor(s%3600/60),x=s%60;
 return (neg?'-':'')+(h?h+'h ':'')+(h||m?m+'m ':'')+x+'s';}
var LONG_CHARS=400,LONG_LINES=6,PREVIEW=240;
function isLong(t){if(t.length>LONG_CHARS)return true;var n=0;for(var i=0;i<t.length;i++){if(t.charCodeAt(i)===10&&++n>=LONG_LINES)return true;}return false;}
function preview(t){var lines=t.split('\n',4).slice(0,3).join('\n');return lines.length>PREVIEW?lines.slice(0,PREVIEW):lines;}
function countLines(t){var n=1;for(var i=0;i<t.length;i++)if(t.charCodeAt(i)===10)n++;return n;}
// A text block: whole when short; else a preview and a button that puts the whole text into the DOM.
function block(label,text,cls){
 var w=el('div','blk '+(cls||''));
 if(label)add(w,el('div','lbl',label));
 text=text==null?'':String(text);
 if(text===''){add(w,el('div','muted empty','(empty)'));return w;}
 if(!isLong(text)){add(w,el('pre',null,text));return w;}
 var pre=el('pre','preview',preview(text)+' …');
 var b=el('button','expand','show all ('+fmtNum(countLines(text))+(countLines(text)===1?' line, ':' lines, ')+fmtNum(text.length)+' chars)');
 b.onclick=function(){expand(w);};
 w._full=text;add(w,pre,b);return w;}
function expand(w){if(!w._full||w.classList.contains('open'))return;var pre=w.querySelector('pre');var b=w.querySelector('button.expand');
 var full=el('pre','full',w._full);w.replaceChild(full,pre);w.classList.add('open');b.textContent='collapse';
 b.onclick=function(){collapse(w);};}
function collapse(w){var pre=w.querySelector('pre');var b=w.querySelector('button.expand');
 w.replaceChild(el('pre','preview',preview(w._full)+' …'),pre);w.classList.remove('open');
 b.textContent='show all ('+fmtNum(countLines(w._full))+(countLines(w._full)===1?' line, ':' lines, ')+fmtNum(w._full.length)+' chars)';b.onclick=function(){expand(w);};}
function diffView(e){
 var w=el('div','blk diff');var lines=e.d.split('\n');var plus=0,minus=0;
 for(var i=0;i<lines.length;i++){var l=lines[i];if(l[0]==='+'&&l.slice(0,3)!=='+++')plus++;else if(l[0]==='-'&&l.slice(0,3)!=='---')minus++;}
 add(w,el('div','lbl','edit '+(e.p||'')+(e.w?' (whole file)':'')+'  +'+plus+' −'+minus+(e.c?'':'  (the record holds only part of the change)')));
 var pre=el('pre');var shown=false;var b=el('button','expand','show diff');
 function draw(){pre.textContent='';for(var i=0;i<lines.length;i++){var l=lines[i];
  var c=(l.slice(0,3)==='+++'||l.slice(0,3)==='---')?null:l[0]==='+'?'add':l[0]==='-'?'del':l.slice(0,2)==='@@'?'hunk':null;
  var s=el('span',c,l);if(!c)s.style.display='block';pre.appendChild(s);}}
 if(lines.length<=40){draw();add(w,pre);return w;}
 b.onclick=function(){if(shown){w.removeChild(pre);b.textContent='show diff';}else{draw();w.insertBefore(pre,b);b.textContent='hide diff';}shown=!shown;};
 add(w,b);return w;}
function stepEl(s){
 var e=el('article','step');e.id=s.a;e.dataset.a=s.a;
 var h=el('div','head');add(h,link(s.a,'#'+s.n),el('span','tool',s.tool));
 if(s.lab)s.lab.forEach(function(l){add(h,el('span','badge lab',l));});
 var fig=[];if(s.tok){if(s.tok.input!=null)fig.push('in '+fmtNum(s.tok.input));if(s.tok.output!=null)fig.push('out '+fmtNum(s.tok.output));}
 if(s.cost!=null)fig.push(fmtCost(s.cost));if(fig.length)add(h,el('span','fig',fig.join(' · ')));
 add(e,h);
 if(s.th)add(e,block('thinking',s.th,'think'));
 add(e,block('action',s.act,'act'));
 if(s.edit)add(e,diffView(s.edit));
 add(e,block('observation',s.obs,'obs'));
 if(s.subs)s.subs.forEach(function(sub){add(e,subEl(sub));});
 return e;}
function noteEl(m){var e=el('div','note '+m.kind);e.id=m.a;e.dataset.a=m.a;
 var h=el('div','head');add(h,link(m.a,m.kind),el('span','muted',m.who||''));if(m.off)add(h,el('span','badge warn',m.off+' branch'));
 if(m.ts)add(h,el('span','fig',m.ts));add(e,h,block(null,m.text,'text'));return e;}
function itemEl(it){return it.k==='s'?stepEl(it):noteEl(it);}
function diagList(diags){var ul=el('ul','diags');diags.forEach(function(d){var li=el('li','sev-'+d.sev);
 add(li,el('span',null,d.sev+' '),el('code',null,d.code),el('span',null,' '+d.msg+' '));
 if(d.where)add(li,el('span','muted','('+d.where+') '));if(d.to)add(li,link(d.to,'→ '+d.to));ul.appendChild(li);});return ul;}
function subEl(sub){var d=el('details','sub');d.id=sub.a;
 var how=sub.how?(' — tied by '+sub.how+(sub.why?': '+sub.why:'')):'';
 add(d,el('summary',null,'sub-agent '+(sub.id||'')+' · '+sub.steps+' steps'+how));
 if(sub.task)add(d,block('task',sub.task,'task'));
 sub.items.forEach(function(it){d.appendChild(itemEl(it));});
 sub.loose.forEach(function(s2){d.appendChild(subEl(s2));});
 if(sub.diags.length){add(d,el('div','lbl','diagnostics'),diagList(sub.diags));}
 return d;}
function dl(pairs){var g=el('dl','grid');pairs.forEach(function(p){if(p[1]==null||p[1]==='')return;add(g,el('dt',null,p[0]));
 var dd=el('dd');if(p[1] instanceof Node)dd.appendChild(p[1]);else dd.textContent=String(p[1]);g.appendChild(dd);});return g;}
function outcomeText(o){if(!o)return null;var t=(o.status||o.signal||(o.reached_end?'ended':'did not end'));
 var x=[];if(o.claimed_success)x.push('claimed success');if(o.budget)x.push('budget exhausted');if(o.external_error)x.push('external error: '+o.external_error);
 if(o.human_abort)x.push('stopped by a person');if(o.approval_wait)x.push('waiting for approval');if(!o.reached_end)x.push('no end signal');
 return t+(x.length?' ('+x.join('; ')+')':'');}
function certEl(c){var w=el('div');var ok=c.state==='Succeeded';
 add(w,el('span','badge '+(ok?'ok':'bad'),c.state),el('span',null,' '+c.reason));
 if(c.false_claim)add(w,el('div','sev-error','the engine claimed success: a false claim'));return w;}
// ---------------------------------------------------------------- run page
// The timeline's items ride in gzipped pages (tk-page-N) and the anchor index
// in tk-index; each is inflated the first time it is needed.
var cache={};
function b64(s){var bin=atob(s.trim());var u=new Uint8Array(bin.length);for(var i=0;i<bin.length;i++)u[i]=bin.charCodeAt(i);return u;}
function inflate(id){if(!cache[id]){var s=document.getElementById(id).textContent;
 cache[id]=new Response(new Blob([b64(s)]).stream().pipeThrough(new DecompressionStream('gzip'))).text().then(JSON.parse);}
 return cache[id];}
function runPage(){
 var H=D.header,PS=D.page,N=D.count,chunks=[];
 app.textContent='';
 var h1=el('h1',null,(H.task||'').trim().split('\n')[0]||H.id||H.source);
 add(app,h1);
 var card=el('div','card');
 var tokens=H.tokens?('in '+fmtNum(H.tokens.input)+' · out '+fmtNum(H.tokens.output)):null;
 var facts=[['format',H.format+(H.view?' (view '+H.view+')':'')],['harness',H.harness?(H.harness+(H.harness_version?' '+H.harness_version:'')):null],
  ['agent',H.agent],['model'+(H.models.length>1?'s':''),H.models.join(', ')],['outcome',outcomeText(H.outcome)],
  ['certificate',D.cert?certEl(D.cert):null],['tokens',tokens],['cost',H.cost!=null?fmtCost(H.cost):null],
  ['duration',H.duration!=null?fmtDur(H.duration)+'  ('+H.started+' → '+H.ended+')':null],
  ['steps',fmtNum(H.steps)+' steps · '+fmtNum(H.events)+' events · '+fmtNum(H.diagnostics)+' diagnostics'],
  ['CodeTraceBench',D.ctb?Object.keys(D.ctb).map(function(k){return k+' '+D.ctb[k];}).join(' · ')+
   (D.ctb.step_count!=null&&String(D.ctb.step_count)!==String(H.steps)?'  — the row expects '+D.ctb.step_count+' steps; the run has '+H.steps:''):null],
  ['session',H.id],['source',H.source]];
 add(card,dl(facts));
 if(H.task)add(card,block('task'+(H.task_source?' ('+H.task_source+')':''),H.task,'task'));
 add(app,card);
 if(D.cert&&D.cert.findings.length){add(app,el('h2',null,'certificate findings'));var t=el('table','findings');
  add(t,add(el('tr'),el('th',null,'severity'),el('th',null,'rule'),el('th',null,'finding'),el('th',null,'evidence')));
  D.cert.findings.forEach(function(f){var tr=el('tr');var ev=el('td');f.links.forEach(function(l){add(ev,link(l.a,l.label),document.createTextNode(' '));});
   f.where.forEach(function(x){add(ev,el('span','muted',x+' '));});
   add(tr,el('td','sev-'+f.sev,f.sev),el('td',null,f.rule),el('td',null,f.msg),ev);t.appendChild(tr);});add(app,t);}
 if(D.diags.length){add(app,el('h2',null,'diagnostics'),diagList(D.diags));}
 var bar=el('div','toolbar');var inp=el('input');inp.id='filter';inp.type='search';inp.placeholder='filter steps (tool, action, thinking, observation, labels)…';
 var info=el('span','muted');info.id='info';var prev=el('button',null,'◀ page');var next=el('button',null,'page ▶');
 add(bar,inp,prev,next,info,el('span','help','j / k: next / previous step · o: expand · /: filter'));add(app,bar);
 var tl=el('section');tl.id='timeline';add(app,tl);
 if(D.loose.length){add(app,el('h2',null,'sub-agents not tied to a step'));D.loose.forEach(function(s){app.appendChild(subEl(s));});}
 var view=null,page=-1,cur=-1,hay=null,busy=Promise.resolve();
 function total(){return view?view.length:N;}
 function at(i){return view?view[i]:i;}
 function pages(){return Math.max(1,Math.ceil(total()/PS));}
 function item(g){return chunks[Math.floor(g/PS)][g%PS];}
 function load(ps){return Promise.all(ps.map(function(p){return inflate('tk-page-'+p).then(function(x){chunks[p]=x;});}));}
 function loadAll(){var ps=[];for(var p=0;p<D.pages;p++)ps.push(p);return load(ps);}
 function need(a,b){var ps={};for(var i=a;i<b;i++)ps[Math.floor(at(i)/PS)]=1;return load(Object.keys(ps).map(Number));}
 // draw page p of the current list (all items, or the filtered ones)
 function show(p){var n=total(),a=p*PS,b=Math.min(n,a+PS);
  return need(a,b).then(function(){tl.textContent='';var f=document.createDocumentFragment();var steps=0;
   for(var i=a;i<b;i++){var it=item(at(i));if(it.k==='s')steps++;f.appendChild(itemEl(it));}
   tl.appendChild(f);cur=-1;page=p;
   info.textContent=(view?fmtNum(n)+' of '+fmtNum(N)+' items match · ':'')+(n?('items '+fmtNum(a+1)+'–'+fmtNum(b)+' ('+fmtNum(steps)+' steps)'):'nothing matches')+
    (pages()>1?' · page '+(p+1)+' of '+pages():'');
   prev.disabled=p===0;next.disabled=p>=pages()-1;tl.dataset.page=String(p);tl.dataset.steps=String(steps);});}
 function queue(f){busy=busy.then(f,f);return busy;}
 prev.onclick=function(){queue(function(){if(page>0)return show(page-1).then(function(){window.scrollTo(0,tl.offsetTop-60);});});};
 next.onclick=function(){queue(function(){if(page<pages()-1)return show(page+1).then(function(){window.scrollTo(0,tl.offsetTop-60);});});};
 function text(it){return it.k==='s'?[it.tool,it.act,it.th||'',it.obs,(it.lab||[]).join(' '),'#'+it.n].join('\n'):[it.kind,it.who||'',it.text].join('\n');}
 var timer=null;
 inp.addEventListener('input',function(){clearTimeout(timer);timer=setTimeout(function(){queue(applyFilter);},120);});
 function applyFilter(){var q=inp.value.trim().toLowerCase();
  if(!q){view=null;return show(0);}
  info.textContent='searching…';
  return loadAll().then(function(){if(!hay){hay=[];for(var g=0;g<N;g++)hay.push(text(item(g)).toLowerCase());}
   view=[];for(var i=0;i<N;i++)if(hay[i].indexOf(q)>=0)view.push(i);return show(0);});}
 function quick(anchor){var m=/^step-(\d+)$/.exec(anchor);if(!m||view)return null;var n=+m[1];
  for(var p=0;p<D.spans.length;p++){var r=D.spans[p];if(r&&r[0]<=n&&n<=r[1])return p;}return null;}
 function land(a){var e=document.getElementById(a);if(!e)return false;
  for(var x=e.parentElement;x;x=x.parentElement)if(x.tagName==='DETAILS')x.open=true;
  e.scrollIntoView({block:'start'});mark(e);return true;}
 function go(anchor){if(!anchor)return Promise.resolve(false);
  var qp=quick(anchor);
  if(qp!=null)return (qp!==page?show(qp):Promise.resolve()).then(function(){return land(anchor)||full(anchor);});
  return full(anchor);}
 function full(anchor){
  return inflate('tk-index').then(function(ix){var a=ix.alias[anchor]||anchor;var idx=ix.loc[a];var p=page;
   if(idx!=null&&idx>=0){var pos=idx;if(view){pos=view.indexOf(idx);if(pos<0){inp.value='';view=null;pos=idx;}}p=Math.floor(pos/PS);}
   return (p!==page?show(p):Promise.resolve()).then(function(){return land(a);});});}
 function mark(e){var old=document.querySelector('.current');if(old)old.classList.remove('current');e.classList.add('current');
  cur=stepsOnPage().indexOf(e);}
 function stepsOnPage(){return Array.prototype.slice.call(tl.querySelectorAll(':scope > .step'));}
 function move(d){var list=stepsOnPage();
  if(cur<0){var top=list.length;for(var i=0;i<list.length;i++){if(list[i].getBoundingClientRect().top>60){top=i;break;}}cur=d>0?top-1:top;}
  var n=cur+d,step=Promise.resolve();
  if(n>=list.length&&page<pages()-1){step=show(page+1);n=0;}
  else if(n<0&&page>0){step=show(page-1);n=-1;}
  return step.then(function(){var list=stepsOnPage();if(n<0)n=list.length+n;if(n<0||n>=list.length)return;
   var e=list[n];e.scrollIntoView({block:'start'});mark(e);history.replaceState(null,'','#'+e.id);});}
 document.addEventListener('keydown',function(ev){if(ev.ctrlKey||ev.metaKey||ev.altKey)return;
  var t=ev.target;if(t&&(t.tagName==='INPUT'||t.tagName==='TEXTAREA')){if(ev.key==='Escape')t.blur();return;}
  if(ev.key==='j'){queue(function(){return move(1);});ev.preventDefault();}else if(ev.key==='k'){queue(function(){return move(-1);});ev.preventDefault();}
  else if(ev.key==='/'){inp.focus();ev.preventDefault();}
  else if(ev.key==='o'){var c=document.querySelector('.current');if(c){var w=c.querySelector(':scope > .obs');if(w){if(w.classList.contains('open'))collapse(w);else expand(w);}}}});
 window.addEventListener('hashchange',function(){queue(function(){return go(decodeURIComponent(location.hash.slice(1)));});});
 queue(function(){return show(0).then(function(){if(location.hash)return go(decodeURIComponent(location.hash.slice(1)));})
  .then(function(){document.body.dataset.readyMs=String(Math.round(performance.now()));document.body.dataset.ready='1';});});
 busy.catch(function(e){app.appendChild(el('p','sev-error','trajkit could not draw this page: '+e));});}
// ---------------------------------------------------------------- index page
function indexPage(){var runs=D.runs;app.textContent='';
 add(app,el('h1',null,fmtNum(runs.length)+' runs'));
 var t=el('table','runs');var cols=[['name','name'],['outcome','rank'],['steps','steps'],['cost','cost'],['diagnostics','diagnostics'],['format','format'],['task','task']];
 var key=['rank','steps','cost'],dir=1;
 var head=el('tr');cols.forEach(function(c){var th=el('th',null,c[0]);th.onclick=function(){if(key[0]===c[1])dir=-dir;else{key=[c[1]];dir=1;}draw();};head.appendChild(th);});
 var body=el('tbody');add(t,add(el('thead'),head),body);add(app,t);
 function cmp(a,b){for(var i=0;i<key.length;i++){var k=key[i],x=a[k],y=b[k];if(x===y)continue;if(x==null)return 1;if(y==null)return -1;
  return (x<y?-1:1)*(i===0?dir:1);}return 0;}
 function draw(){body.textContent='';runs.slice().sort(cmp).forEach(function(r){var tr=el('tr');var n=el('td');
  if(r.href){var a=el('a',null,r.name);a.href=r.href;n.appendChild(a);}else n.textContent=r.name;
  var task=(r.task||'').split('\n')[0];if(task.length>160)task=task.slice(0,159)+'…';
  add(tr,n,el('td',r.error?'sev-error':null,r.error?('unreadable: '+r.error):r.outcome),el('td',null,r.steps==null?'':fmtNum(r.steps)),
   el('td',null,fmtCost(r.cost)),el('td',null,r.diagnostics==null?'':fmtNum(r.diagnostics)),el('td',null,r.format||''),el('td',null,task));
  body.appendChild(tr);});}
 draw();document.body.dataset.ready='1';}
try{if(document.body.dataset.kind==='index')indexPage();else runPage();}
catch(e){app.textContent='trajkit could not draw this page: '+e;throw e;}
})();
"""
