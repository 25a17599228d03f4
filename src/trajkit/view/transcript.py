"""A session as a presentation tree: what a reader of the run is shown, in
the order it is shown, with nothing about how it is drawn.

Two back-ends walk these nodes: :mod:`trajkit.view.terminal` (``trajkit
show`` and the ``trajkit steps`` table, through rich) and the HTML viewer
(one static page per run). Building the tree does no I/O, imports no
rendering library and reads only the normalized model (never ``Event.raw``
and never a format name to decide anything), so every format that a reader
fills the model for renders the same way.

The tree of one session (:class:`Transcript`)::

    Transcript
      header: Header            format, id, source, facts, task, counts, cost
      steps: [StepNode]         the run at benchmark granularity (what `steps` lists)
        sub_agents: [SubAgentNode]   sub-agents this step spawned, with how they were tied to it
          transcript: Transcript     the sub-agent's own tree, nested
      events: [EventNode]       every event in order
        step: StepNode | None   set when the event is a step's action
        answers: StepNode | None     set when the event is a step's observation
        calls: [CallNode]       the tool calls it makes
        branch                  where it sits in a conversation tree (None for linear logs)
      sub_agents: [SubAgentNode]     sub-agents no step could be tied to
      diagnostics: [DiagnosticNode]  each with the anchor of the step / event it concerns

:class:`StepsTable` is the smaller tree ``trajkit steps`` prints: the header
and the step nodes only (it derives no event's fields and builds no
sub-agent trees, so listing the steps of a large run stays cheap).

Texts are kept whole; cutting them to a width is the back-end's business.
Every step and event node carries an ``anchor``: a string unique within the
page, safe as an HTML id and URL fragment (``step-12``, ``event-40``; inside
a sub-agent prefixed by its path, ``sub2-step-3``), so a back-end can link a
diagnostic, a certificate finding or a deep link to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..diagnostics import Diagnostic
from ..model import BRANCH_ACTIVE, OBSERVATION, Event, FileEdit, Outcome, Session, SpawnLink, Step

#: ``Session.metadata`` keys shown as facts in the header, in this order
#: (only those a reader set to something other than empty).
HEADER_FACTS = ("model", "view", "execution_status", "final_agent_state", "layout")


@dataclass(slots=True)
class Header:
    """What a run is, above its steps or transcript.

    ``format``, ``id`` and ``source_path`` as the session has them;
    ``view`` the on-disk view the events came from (None when the format has
    one); ``facts`` the format-level facts worth a glance, as ``(name,
    value)`` pairs (see :data:`HEADER_FACTS`); ``task`` the task text, whole,
    and ``task_source`` where it was found. ``views`` maps each on-disk view
    to its step count when the caller measured them (``steps --all-views``).
    ``cost`` is the sum of the steps' per-call costs, when any step has one
    (``cost_estimated``: some of it was estimated from the price table);
    ``first_timestamp`` / ``last_timestamp`` the first and last event
    timestamps in event order, as written (transcripts only).

    From the typed run facts: ``harness``, ``agent``, ``models``,
    ``started_at`` / ``ended_at`` (as recorded), ``run_cost`` (the run's cost
    as the record states it), ``outcome`` (the harness's own end signal) and
    ``tokens``: input and output tokens summed over the steps' model calls
    (None when no step has them).
    """

    format: str
    id: str | None
    source_path: str
    view: str | None
    facts: list[tuple[str, Any]]
    task: str | None
    task_source: str | None
    event_count: int
    step_count: int
    diagnostic_count: int
    views: dict[str, int] | None = None
    cost: float | None = None
    cost_estimated: bool = False
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    harness: str | None = None
    harness_version: str | None = None
    agent: str | None = None
    models: list[str] = field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    run_cost: float | None = None
    outcome: Outcome | None = None
    tokens: dict[str, int] | None = None


@dataclass(slots=True)
class EditNode:
    """A file change a step made, ready to show as a diff: ``path`` as the
    record names it, ``diff`` a unified diff of the old content against the
    new (or the record's own patch text), ``whole`` the change wrote the
    whole file, ``complete`` the record held both sides (else the diff shows
    only what it held)."""

    path: str | None
    diff: str
    whole: bool
    complete: bool


@dataclass(slots=True)
class CallNode:
    """One tool call an event makes: the tool's name, its call id and its
    arguments (decoded JSON, or the text as written)."""

    name: str
    call_id: str | None
    arguments: Any


@dataclass(slots=True)
class StepNode:
    """One step: the action the agent took and the answer it got.

    ``anchor`` is ``step-<step_id>`` (prefixed inside a sub-agent).
    ``action`` is rendered as the benchmark writes it, ``tool_type`` the
    native tool name, ``thinking`` the thought attached to the action,
    ``observation`` the answer's whole text. ``action_event_id`` /
    ``observation_event_id`` are the native event ids, and
    ``action_anchor`` / ``observation_anchor`` the anchors of those events'
    nodes when the transcript has them. ``labels`` are benchmark labels
    (CodeTraceBench), ``parallel_group`` groups calls one model response
    made, ``usage`` / ``cost`` that model call's tokens and cost when the
    session has them (``cost_estimated``: from the price table, not the record). ``sub_agents`` lists the sub-agents this step spawned
    (filled in a :class:`Transcript`; empty in a :class:`StepsTable`), and
    ``edit`` the file change its observation records, as a diff (transcripts
    only). ``tokens`` are the model call's input and output tokens (from the
    typed usage) when recorded.
    """

    step_id: int
    anchor: str
    tool_type: str
    action: str
    observation: str
    thinking: str | None
    action_event_id: Any
    observation_event_id: Any
    labels: list[str]
    parallel_group: Any = None
    usage: dict[str, Any] | None = None
    cost: float | None = None
    cost_estimated: bool = False
    action_anchor: str | None = None
    observation_anchor: str | None = None
    sub_agents: list["SubAgentNode"] = field(default_factory=list)
    edit: EditNode | None = None
    tokens: dict[str, int] | None = None


@dataclass(slots=True)
class EventNode:
    """One event of the session, in order.

    ``position`` is its 0-based index in ``Session.events`` and ``anchor``
    ``event-<position + 1>`` (event ids are the format's and need not be
    unique or safe in a URL; ``id`` keeps the native one). ``kind`` is the
    normalized kind, ``type`` the native type name, ``source`` / ``role``
    who produced it. ``text`` and ``reasoning`` are whole. ``calls`` are its
    tool calls; ``call_id`` / ``cause`` what it answers. ``usage`` is the
    model call's usage on the first event of that call. ``branch`` is where
    the event sits in a conversation tree (``active``, ``side``,
    ``abandoned``; None for a linear log) and ``off_branch`` says it is not
    on the active one. ``step`` is the step whose action this event is
    (a back-end then shows the step's rendered action instead of the text),
    ``answers`` the step whose observation it is. ``file`` is the path it was
    read from.
    """

    position: int
    anchor: str
    id: Any
    kind: str
    type: str
    source: str | None
    role: str | None
    timestamp: str | None
    text: str | None
    reasoning: str | None
    calls: list[CallNode]
    call_id: str | None
    cause: Any
    response_id: str | None
    usage: dict[str, Any] | None
    branch: str | None
    step: StepNode | None = None
    answers: StepNode | None = None
    file: str | None = None

    @property
    def off_branch(self) -> bool:
        """The event sits on a branch other than the conversation's active one."""
        return bool(self.branch) and self.branch != BRANCH_ACTIVE


@dataclass(slots=True)
class SubAgentNode:
    """A sub-agent session, nested where it belongs.

    ``step_id`` is the spawning step (None for a sub-agent no step could be
    tied to); ``method`` and ``detail`` say how the reader tied it (None when
    it did not say). ``transcript`` is the sub-agent's own tree, whose
    anchors carry this node's ``anchor`` as prefix.
    """

    anchor: str
    step_id: int | None
    method: str | None
    detail: str | None
    transcript: "Transcript"


@dataclass(slots=True)
class DiagnosticNode:
    """A diagnostic of the session: severity, stable code, message, where
    it is (``file``, ``event_id``, ``line``, ``offset``) and ``text``, the
    one-line form. ``target`` is the anchor of the step (when the event is a
    step's action or observation) or else the event it concerns (the one read
    from the diagnostic's file when several share the id), when the session
    has that event."""

    severity: str
    code: str
    message: str
    file: str | None
    event_id: Any
    line: int | None
    offset: int | None
    text: str
    target: str | None = None


@dataclass(slots=True)
class StepsTable:
    """What ``trajkit steps`` lists: the header and the steps. ``labelled``
    says whether any step carries a benchmark label (the table then has a
    labels column)."""

    header: Header
    steps: list[StepNode]
    labelled: bool


@dataclass(slots=True)
class Transcript:
    """The whole tree of one session (see the module docs). ``anchor`` is
    the prefix of every anchor inside it (``""`` for the top session) and
    ``depth`` how deep a sub-agent it is (0 for the top session)."""

    header: Header
    steps: list[StepNode]
    events: list[EventNode]
    sub_agents: list[SubAgentNode]
    diagnostics: list[DiagnosticNode]
    anchor: str = ""
    depth: int = 0

    def step_nodes(self) -> dict[int, StepNode]:
        """Step id -> its node."""
        return {s.step_id: s for s in self.steps}

    def walk(self):
        """This transcript and every nested sub-agent's, depth first (a
        step's sub-agents in step order, then the unattached ones)."""
        yield self
        for st in self.steps:
            for sub in st.sub_agents:
                yield from sub.transcript.walk()
        for sub in self.sub_agents:
            yield from sub.transcript.walk()


# ---------------------------------------------------------------- building


def _header(session: Session, views: dict[str, Any] | None, timestamps: tuple[str | None, str | None]) -> Header:
    meta = session.metadata or {}
    costs = [_step_cost(s)[0] for s in session.steps if _step_cost(s)[0] is not None]
    estimated = any(_step_cost(s)[1] for s in session.steps)
    run = session.run
    tin = tout = 0
    seen = False
    for st in session.steps:
        u = st.model_usage
        if u is None:
            continue
        if isinstance(u.input, int):
            tin += u.input
            seen = True
        if isinstance(u.output, int):
            tout += u.output
            seen = True
    counts = None
    if views is not None:
        counts = {name: (v.get("step_count") if isinstance(v, dict) else v) for name, v in views.items()}
    return Header(
        format=session.format,
        id=session.id,
        source_path=session.source_path,
        view=session.view,
        facts=[(k, meta[k]) for k in HEADER_FACTS if meta.get(k)],
        task=session.task,
        task_source=session.task_source,
        event_count=len(session.events),
        step_count=len(session.steps),
        diagnostic_count=len(session.diagnostics),
        views=counts,
        cost=round(sum(costs), 10) if costs else None,
        cost_estimated=estimated,
        first_timestamp=timestamps[0],
        last_timestamp=timestamps[1],
        harness=run.harness,
        harness_version=run.harness_version,
        agent=run.agent,
        models=list(run.models),
        started_at=run.started_at,
        ended_at=run.ended_at,
        run_cost=run.cost_usd,
        outcome=session.outcome,
        tokens={"input": tin, "output": tout} if seen else None,
    )


def _step_node(s: Step, prefix: str) -> StepNode:
    return StepNode(
        step_id=s.step_id,
        anchor=f"{prefix}step-{s.step_id}",
        tool_type=s.tool_type,
        action=s.action,
        observation=s.observation,
        thinking=s.thinking,
        action_event_id=s.action_event_id,
        observation_event_id=s.observation_event_id,
        labels=list(s.labels),
        parallel_group=s.parallel_group,
        usage=s.usage,
        cost=_step_cost(s)[0],
        cost_estimated=_step_cost(s)[1],
        tokens=_tokens(s),
    )


def _step_cost(s: Step) -> tuple[float | None, bool]:
    """A step's cost as recorded, else as :mod:`trajkit.pricing` estimated
    it; and whether it is an estimate."""
    if isinstance(s.cost, (int, float)) and not isinstance(s.cost, bool):
        return s.cost, False
    u = s.model_usage
    if u is not None and u.cost_estimated and u.cost is not None:
        return u.cost, True
    return None, False


def _tokens(s: Step) -> dict[str, int] | None:
    u = s.model_usage
    if u is None:
        return None
    out = {k: v for k, v in (("input", u.input), ("output", u.output)) if isinstance(v, int)}
    return out or None


def _lines(text: str) -> list[str]:
    return [line if line.endswith("\n") else line + "\n" for line in text.splitlines(keepends=True)]


def edit_node(edit: FileEdit) -> EditNode | None:
    """``edit`` as a diff: the record's patch when it gives one, else the old
    content against the new (a whole-file write of a file that did not exist,
    or whose old content is unknown, shows every line as added)."""
    import difflib

    path = edit.path if isinstance(edit.path, str) else None
    if isinstance(edit.patch, str) and edit.patch:
        return EditNode(path, edit.patch, edit.whole, True)
    old = edit.old if isinstance(edit.old, str) else None
    new = edit.new if isinstance(edit.new, str) else None
    if old is None and new is None:
        return None
    complete = new is not None and (old is not None or edit.existed is False)
    name = path or "file"
    diff = "".join(difflib.unified_diff(_lines(old or ""), _lines(new or ""), "a/" + name.lstrip("/"), "b/" + name.lstrip("/")))
    return EditNode(path, diff, edit.whole, complete)


def steps_table(session: Session, views: dict[str, Any] | None = None) -> StepsTable:
    """The steps of ``session`` as ``trajkit steps`` lists them. ``views``
    is the per-view report of :func:`trajkit.registry.steps_per_view` (or view
    -> step count), when the caller measured it."""
    steps = [_step_node(s, "") for s in session.steps]
    return StepsTable(_header(session, views, (None, None)), steps, any(s.labels for s in session.steps))


def _lookup(table: dict[Any, Any], key: Any) -> Any:
    try:
        return table.get(key)
    except TypeError:  # an unhashable id
        return None


def _event_node(e: Event, position: int, prefix: str) -> EventNode:
    return EventNode(
        position=position,
        anchor=f"{prefix}event-{position + 1}",
        id=e.id,
        kind=e.kind,
        type=e.type,
        source=e.source,
        role=e.role,
        timestamp=e.timestamp,
        text=e.text,
        reasoning=e.reasoning,
        calls=[CallNode(c.name, c.call_id, c.arguments) for c in e.tool_calls],
        call_id=e.call_id,
        cause=e.cause,
        response_id=e.response_id,
        usage=e.usage,
        branch=e.branch,
        file=e.ref.path if e.ref is not None else None,
    )


def _diagnostic_node(d: Diagnostic, target: str | None) -> DiagnosticNode:
    return DiagnosticNode(d.severity, d.code, d.message, d.file, d.event_id, d.line, d.offset, str(d), target)


def transcript(session: Session, prefix: str = "", depth: int = 0) -> Transcript:
    """The presentation tree of ``session`` and, nested, of its sub-agents.

    ``prefix`` is put before every anchor in the tree (the top session has
    none; a sub-agent's is its node's anchor and a dash).
    """
    steps = [_step_node(s, prefix) for s in session.steps]
    # The step whose action an event is: the last step naming that event
    # (one event holding several parallel calls is the action of several).
    step_of: dict[Any, StepNode] = {}
    answer_of: dict[Any, StepNode] = {}
    for s, node in zip(session.steps, steps):
        try:
            step_of[s.action_event_id] = node
        except TypeError:
            pass
        if s.observation_event_id is not None:
            try:
                answer_of.setdefault(s.observation_event_id, node)
            except TypeError:
                pass
    events: list[EventNode] = []
    first_of: dict[Any, EventNode] = {}
    in_file: dict[tuple[Any, str | None], EventNode] = {}
    stamps: list[str] = []
    for i, e in enumerate(session.events):
        node = _event_node(e, i, prefix)
        node.step = _lookup(step_of, e.id)
        node.answers = _lookup(answer_of, e.id)
        if node.step is not None and node.step.action_anchor is None:
            node.step.action_anchor = node.anchor
        if node.answers is not None and node.answers.observation_anchor is None:
            node.answers.observation_anchor = node.anchor
            if e.kind == OBSERVATION and isinstance(e.edit, FileEdit):
                node.answers.edit = edit_node(e.edit)
        try:
            first_of.setdefault(e.id, node)
            in_file.setdefault((e.id, node.file), node)
        except TypeError:
            pass
        if isinstance(node.timestamp, str) and node.timestamp:
            stamps.append(node.timestamp)
        events.append(node)

    # Sub-agents: under the step that spawned them, in step order; then the
    # ones no step claims.
    count = 0

    def sub(child: Session, step_id: int | None) -> SubAgentNode:
        nonlocal count
        count += 1
        anchor = f"{prefix}sub{count}"
        link: SpawnLink | None = child.spawned_by
        method = link.method if link is not None else None
        detail = link.detail if link is not None else None
        return SubAgentNode(anchor, step_id, method, detail, transcript(child, anchor + "-", depth + 1))

    for s, node in zip(session.steps, steps):
        for child in s.children:
            node.sub_agents.append(sub(child, s.step_id))
    unattached = [sub(c, None) for c in session.children if not any(c in s.children for s in session.steps)]

    diagnostics = []
    for d in session.diagnostics:
        target = None
        if d.event_id is not None:
            st = _lookup(step_of, d.event_id) or _lookup(answer_of, d.event_id)
            # the event in the diagnostic's file when ids repeat, else the first with that id
            ev = _lookup(in_file, (d.event_id, d.file)) or _lookup(first_of, d.event_id)
            if st is not None and ev is not None:
                target = st.anchor
            elif ev is not None:
                target = ev.anchor
        diagnostics.append(_diagnostic_node(d, target))

    header = _header(session, None, (stamps[0], stamps[-1]) if stamps else (None, None))
    return Transcript(header, steps, events, unattached, diagnostics, prefix, depth)
