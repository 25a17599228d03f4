"""The one normalized model every reader produces and every consumer reads.

A reader turns a native record (a trial directory, a conversation directory, a
trace file) into a :class:`Session`. The session keeps every native event
exactly as decoded (:attr:`Event.raw`), adds the normalized facts consumers
need (role, text, tool calls, which call an observation answers, usage), the
steps at benchmark granularity, and the :class:`Diagnostic` list that says
what was odd about the input. Nothing a format does not declare is thrown
away: it stays in ``raw``.

Everything here is plain data (dataclasses of builtins), so sessions pickle
across a process pool and serialize with :meth:`Session.to_dict`.

The typed facts consumers read instead of ``raw`` (``ToolCall.op`` and its
normalized arguments, ``Event.edit``, ``Usage``, ``Session.outcome``,
``Session.run``) are described in ``docs/facts.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from .diagnostics import WARNING, Diagnostic


@dataclass(slots=True)
class Ref:
    """Where something came from: a file, the native event id in it, and the
    1-based inclusive line range when it was read from a multi-event file.

    A reader may leave the line range to be worked out on first use
    (:meth:`lazy`): finding element boundaries in a large pretty-printed file
    costs about as much as decoding it, and most consumers never ask.
    """

    path: str
    event_id: Any = None
    line_start: int | None = None
    line_end: int | None = None
    _lines: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def lazy(cls, path: str, event_id: Any, index: "LineIndex", position: int) -> "Ref":
        """A ref whose line range is element ``position`` of ``index``, found on first access."""
        r = cls.__new__(cls)
        r.path = path
        r.event_id = event_id
        r._lines = (index, position)
        return r

    def __getattr__(self, name: str) -> Any:
        # Only reached for a slot never assigned: the lazy line range.
        if name in ("line_start", "line_end"):
            index, position = object.__getattribute__(self, "_lines")
            start, end = index.get(position)
            self.line_start, self.line_end, self._lines = start, end, None
            return start if name == "line_start" else end
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "event_id": self.event_id,
            "line_start": self.line_start,
            "line_end": self.line_end,
        }


class LineIndex:
    """The 1-based (first, last) line of each top-level element of one JSON
    list file, computed on first use from the file's bytes."""

    __slots__ = ("_data", "_count", "_ranges")

    def __init__(self, data: bytes, count: int) -> None:
        self._data: bytes | None = data
        self._count = count
        self._ranges: list[tuple[int, int]] | None = None

    def get(self, position: int) -> tuple[int | None, int | None]:
        if self._ranges is None:
            from .jsonio import list_element_lines

            self._ranges = list_element_lines(self._data or b"", self._count) or []
            self._data = None
        if position < len(self._ranges):
            return self._ranges[position]
        return None, None


@dataclass(slots=True)
class ToolCall:
    """One tool call an action makes: the call id, the tool's name, and its
    arguments (decoded JSON when they decode, else the string as written).

    A reader may hand over the arguments as the JSON text the model wrote
    (:meth:`lazy`); they are decoded on first access.

    The typed facts (``op``, ``action``, ``input`` and the normalized
    arguments) are what consumers read; a reader fills them from its
    harness's tool table (:meth:`trajkit.vocab.ToolTable.call`), on first
    access. They take no part in equality and are not in :meth:`to_dict`.
    See ``docs/facts.md``.
    """

    name: str
    arguments: Any = None
    call_id: str | None = None
    _text: Any = field(default=None, repr=False, compare=False)
    # --- typed facts (issue 9), set from the harness's tool table (:mod:`trajkit.vocab`).
    #: What the call does: one of :data:`TOOL_OPS` (None when no table described it).
    op: str | None = field(default=None, compare=False)
    #: The action the harness executed for this call, when it records one
    #: under its own name (OpenHands V0 ``run``, SDK ``TerminalAction``);
    #: else the tool name.
    action: str | None = field(default=None, compare=False)
    #: The argument mapping as the harness executed it (the parsed action
    #: when the harness records one, else the decoded call arguments; a
    #: value that is no mapping is kept as ``{"_raw": value}``).
    input: dict[str, Any] | None = field(default=None, compare=False)
    #: Normalized arguments, as the table names them: the shell command or
    #: program text (``shell``, ``code``), the file or directory path, the
    #: content written (a whole file, inserted text or a patch; the finish
    #: message for ``finish``; a rendering for ``other``), the text an edit
    #: replaces and its replacement, and the URL fetched.
    command: str | None = field(default=None, compare=False)
    path: str | None = field(default=None, compare=False)
    content: str | None = field(default=None, compare=False)
    old: str | None = field(default=None, compare=False)
    new: str | None = field(default=None, compare=False)
    url: str | None = field(default=None, compare=False)
    _spec: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def lazy(cls, name: str, arguments_json: str, call_id: str | None) -> "ToolCall":
        """A call whose ``arguments`` are decoded from ``arguments_json`` when first read."""
        c = cls.__new__(cls)
        c.name = name
        c.call_id = call_id
        c._text = arguments_json
        c._spec = None
        return c

    @classmethod
    def described(cls, spec: Any, name: str, arguments: Any, call_id: str | None, *, lazy_json: bool = False,
                  action: str | None = None, input: Any = None) -> "ToolCall":
        """A call whose typed facts (``op``, ``input``, ``command``, ...) are
        filled by ``spec.describe(call)`` on first access. ``spec`` is a
        :class:`trajkit.vocab.ToolSpec`; ``lazy_json``: ``arguments`` is the
        JSON text the model wrote, decoded on first access. ``action`` /
        ``input``: the executed action's name and mapping, when the harness
        records one apart from the call."""
        c = cls.lazy(name, arguments, call_id) if lazy_json else cls(name, arguments, call_id)
        c._spec = (spec, action, input)
        for f in _TOOL_FACTS:
            try:
                object.__delattr__(c, f)
            except AttributeError:
                pass
        return c

    def __getattr__(self, name: str) -> Any:
        # Only reached for a slot never assigned: the lazy arguments, or the typed facts.
        if name == "arguments":
            text = object.__getattribute__(self, "_text")
            from .jsonio import MISSING, loads

            value, _ = loads(text)
            self.arguments = text if value is MISSING else value
            self._text = None
            return self.arguments
        if name in _TOOL_FACTS:
            pending = object.__getattribute__(self, "_spec")
            for f in _TOOL_FACTS:
                object.__setattr__(self, f, None)
            self._spec = None
            if pending is not None:
                spec, action, input = pending
                spec.describe(self, action, input)
            return object.__getattribute__(self, name)
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"call_id": self.call_id, "name": self.name, "arguments": self.arguments}


#: The slots of :class:`ToolCall` a tool table fills.
_TOOL_FACTS = ("op", "action", "input", "command", "path", "content", "old", "new", "url")


# Normalized event kinds. A reader sets ``Event.kind`` to one of these; the
# native type name always stays in ``Event.type``.
MESSAGE = "message"  # a chat message (user, assistant or system text)
ACTION = "action"  # the agent asks for a tool / environment effect
OBSERVATION = "observation"  # the answer to an action (tool result, rejection, error)
SYSTEM = "system"  # the system prompt / tool declarations
REASONING = "reasoning"  # model thinking that is its own event
CONDENSATION = "condensation"  # history condensed: events forgotten, summary inserted
STATE = "state"  # agent / conversation state changes, bookkeeping
ERROR_EVENT = "error"  # an error the harness recorded that answers no action
OTHER = "other"  # anything else (unknown kinds stay events)
EVENT_KINDS = (MESSAGE, ACTION, OBSERVATION, SYSTEM, REASONING, CONDENSATION, STATE, ERROR_EVENT, OTHER)


@dataclass(slots=True)
class Event:
    """One native event as read, plus the normalized facts consumers need.

    ``raw`` is the decoded native JSON, untouched: writing it back gives the
    same JSON value. The other fields are derived from it by the reader and
    are never written back into ``raw``.

    - ``id``: the native id (an int for OpenHands V0, a string for the SDK);
      always hashable (an int, a string or None: a reader turns an id
      written as anything else into None and says so in a diagnostic).
    - ``kind``: one of :data:`EVENT_KINDS`; ``type``: the native type name.
    - ``source``: who produced it in the native vocabulary (agent, user,
      environment, hook); ``role``: the chat role it maps to (system, user,
      assistant, tool) or None.
    - ``text``: message text, observation content or thought, as shown to
      the model where the format says.
    - ``tool_calls``: the calls an action makes (several for parallel calls
      when one event holds them all).
    - ``call_id`` / ``cause``: on an observation, the tool call id it answers
      and the native id of the action event it answers.
    - ``response_id``: the LLM response that produced it (groups the actions
      of one model call); ``usage``: the token usage and ``cost`` of that
      model call, on the first event of the call only (never running
      totals: a reader whose format stores totals takes differences).
    - ``reasoning``: model reasoning text carried by this event.
    - ``parent_id``: the native parent event when the format stores a tree.
    - ``branch``: where the event sits in that tree, when the format stores
      one: ``active`` (on the path to the conversation's leaf), ``side`` (off
      that path but still part of the conversation, e.g. state updates) or
      ``abandoned`` (a branch the conversation left); None for a linear log.
    - ``ref``: where it was read from.
    - ``edit``: the :class:`FileEdit` an editor / write result records
      (set by the reader; consumers rebuild diffs from it, never from ``raw``).
    - ``model_usage``: ``usage`` as a typed :class:`Usage` (consumers read
      this one; the dict stays for the outputs that print it).
    - ``cwd``: on an observation, the absolute working directory it reports.
    - ``tools``: on a system event, the tool declarations given to the model.
    """

    id: Any
    kind: str
    type: str
    raw: Any
    source: str | None = None
    role: str | None = None
    timestamp: str | None = None
    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    call_id: str | None = None
    cause: Any = None
    response_id: str | None = None
    reasoning: str | None = None
    usage: dict[str, Any] | None = None
    parent_id: Any = None
    ref: Ref | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    branch: str | None = None
    # --- typed facts (issue 9)
    #: The file change this event records (an editor's or a write's result), else None.
    edit: "FileEdit | None" = None
    #: ``usage`` typed: the figures of the model call this event is the first of.
    model_usage: "Usage | None" = None
    #: The absolute working directory an observation reports its command ran in.
    cwd: str | None = None
    #: On a system event: the tool declarations given to the model, as written.
    tools: list[Any] | None = None
    _derive: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def lazy(cls, id: Any, kind: str, type: str, raw: Any, ref: Ref | None, derive: Any) -> "Event":
        """An event whose other fields come from ``derive(raw)`` (a dict of
        field values; absent ones take their defaults) on first access.

        Readers use it so that work nobody asks for is never done: reading
        the steps of a run touches few fields of few events.
        """
        e = cls.__new__(cls)
        e.id = id
        e.kind = kind
        e.type = type
        e.raw = raw
        e.ref = ref
        e._derive = derive
        return e

    def __getattr__(self, name: str) -> Any:
        # Only reached for a slot never assigned: a lazy event's derived fields.
        derive = object.__getattribute__(self, "_derive")
        if derive is None or name not in _DERIVED_DEFAULTS:
            raise AttributeError(name)
        self._derive = None
        values = derive(self.raw)
        for field_name, default in _DERIVED_DEFAULTS.items():
            try:
                object.__getattribute__(self, field_name)  # already set: keep it
            except AttributeError:
                value = values.get(field_name, default)
                setattr(self, field_name, value() if callable(value) else value)
        return object.__getattribute__(self, name)

    def to_dict(self, raw: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "kind": self.kind, "type": self.type}
        for name in ("source", "role", "timestamp", "text", "call_id", "cause", "response_id", "reasoning", "usage", "parent_id", "branch"):
            v = getattr(self, name)
            if v is not None:
                d[name] = v
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.ref is not None:
            d["ref"] = self.ref.to_dict()
        if self.extra:
            d["extra"] = self.extra
        if raw:
            d["raw"] = self.raw
        return d


def native_record(event: Event) -> Any:
    """``event``'s native record, to be carried along untouched (the ATIF
    ``extra``, ASF unknown members, the loss report's member list).

    The one way a consumer touches :attr:`Event.raw`: it may copy or list
    the record, never read facts out of it in a native shape (those are the
    reader's to normalize; ``tests/test_no_raw.py`` holds the line).
    """
    return event.raw


#: The fields a lazy :class:`Event` derives, with their defaults (callables make a fresh value).
_DERIVED_DEFAULTS: dict[str, Any] = {
    "source": None, "role": None, "timestamp": None, "text": None, "tool_calls": list, "call_id": None,
    "cause": None, "response_id": None, "reasoning": None, "usage": None, "parent_id": None, "extra": dict,
    "branch": None,
    "edit": None, "model_usage": None, "cwd": None, "tools": None,
}


#: ``Event.branch`` values (the words the OpenHands SDK reader's tree uses).
BRANCH_ACTIVE = "active"
BRANCH_SIDE = "side"
BRANCH_ABANDONED = "abandoned"


@dataclass(slots=True)
class SpawnLink:
    """How a sub-agent session was tied to the step that spawned it.

    Set on the child :class:`Session` (``Session.spawned_by``) by the reader
    that matched it. ``step_id`` and ``action_event_id`` name the parent's
    step; ``method`` says which rule matched (a stable word the format
    documents, e.g. ``usage-metrics``, ``prompt``, ``timestamp``) and
    ``detail`` why, for people. ``child_id`` is the child session's id at
    the time it was matched.
    """

    child_id: str | None
    step_id: int
    action_event_id: Any
    method: str
    detail: str = ""


@dataclass(slots=True)
class Step:
    """One step at benchmark granularity: an action the agent took, paired
    with the answer it got.

    ``action`` is the rendered action text exactly as the benchmark
    convention writes it (see :mod:`trajkit.steps`); ``tool_type`` the native
    action / tool name; ``thinking`` the agent's thought attached to the
    action, if any; ``observation`` the answer's text (``""`` when it has
    none). Refs point at the native action and observation events.
    """

    step_id: int
    action: str
    tool_type: str
    observation: str
    thinking: str | None = None
    action_ref: Ref | None = None
    observation_ref: Ref | None = None
    action_event_id: Any = None
    observation_event_id: Any = None
    labels: list[str] = field(default_factory=list)
    parallel_group: Any = None
    usage: dict[str, Any] | None = None
    cost: float | None = None
    children: list["Session"] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``usage`` and ``cost`` typed (issue 9): consumers read this one.
    model_usage: "Usage | None" = None

    def to_dict(self) -> dict[str, Any]:
        """The CodeTracer ``steps.json`` shape, plus trajkit's extras."""
        d: dict[str, Any] = {
            "step_id": self.step_id,
            "action": self.action,
            "observation": self.observation,
            "action_ref": self.action_ref.to_dict() if self.action_ref else None,
            "observation_ref": self.observation_ref.to_dict() if self.observation_ref else None,
            "tool_type": self.tool_type,
        }
        if self.thinking is not None:
            d["thinking"] = self.thinking
        if self.parallel_group is not None:
            d["parallel_group"] = self.parallel_group
        d["action_event_id"] = self.action_event_id
        d["observation_event_id"] = self.observation_event_id
        if self.labels:
            d["labels"] = list(self.labels)
        if self.usage is not None:
            d["usage"] = self.usage
        if self.cost is not None:
            d["cost"] = self.cost
        elif self.model_usage is not None and self.model_usage.cost_estimated and self.model_usage.cost is not None:
            d["cost"] = self.model_usage.cost
            d["cost_estimated"] = True
        if self.children:
            d["children"] = [c.id for c in self.children]
        if self.extra:
            d["extra"] = self.extra
        return d


@dataclass(slots=True)
class Turn:
    """One model call kept for training: the tokens it saw, the tokens it
    generated, their log-probabilities and the loss mask.

    ``prompt_ids`` are the context tokens, ``output_ids`` the generated ones
    exactly as captured (never re-encoded text). ``mask`` covers
    ``prompt_ids + output_ids``: 0 for context, 1 for generated tokens.
    ``trained`` says whether the turn made a tool call. ``prompt_source`` is
    ``captured`` or ``retokenized``.
    """

    index: int
    prompt_ids: list[int]
    output_ids: list[int]
    per_token_logps: list[float]
    mask: list[int]
    trained: bool
    prompt_source: str = "retokenized"
    finish_reason: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "prompt_ids": self.prompt_ids,
            "output_ids": self.output_ids,
            "per_token_logps": self.per_token_logps,
            "mask": self.mask,
            "trained": self.trained,
            "prompt_source": self.prompt_source,
            "finish_reason": self.finish_reason,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            **({"extra": self.extra} if self.extra else {}),
        }


@dataclass(slots=True)
class SourceFile:
    """One native file a reader looked at, and what became of it.

    ``role`` says what the file is to the format (``events``, ``event``,
    ``state``, ``metadata``, ``results``, ``recording``, ...). ``status`` is
    ``read`` (its content is in the session), ``skipped`` (a diagnostic says
    why), ``unused`` (a view that was not chosen, a recording) or
    ``ignored`` (a sidecar the format itself ignores). ``event_ids`` lists the
    native events that came from it.
    """

    path: str
    role: str
    status: str = "read"
    size: int | None = None
    event_ids: list[Any] = field(default_factory=list)
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"path": self.path, "role": self.role, "status": self.status, "size": self.size}
        if self.event_ids:
            d["event_ids"] = self.event_ids
        if self.note:
            d["note"] = self.note
        return d


@dataclass(slots=True)
class Session:
    """One agent run, normalized.

    - ``id``: the native session / conversation id; ``format``: the format
      name from the registry; ``source_path``: the root path it was read from.
    - ``task`` and ``task_source``: the task text and where it was found.
    - ``events``: every native event in the chosen view, in native order.
    - ``steps``: the run at benchmark step granularity.
    - ``view``: which on-disk view the events came from, when a format has
      several (``flat_export``, ``events``, ``event_cache``, ...).
    - ``metadata``: format-level facts (model, harness version, results,
      state), JSON-serializable.
    - ``children``: sub-agent sessions spawned by this one.
    - ``spawned_by``: on a sub-agent session, the step of the parent that
      spawned it and how that was worked out (None when it is no sub-agent,
      or could not be tied to a step).
    - ``files``: every native file looked at and what became of it.
    - ``diagnostics``: everything odd about the input.
    - ``outcome``: the harness's own end signal (:class:`Outcome`) or None.
    - ``run``: typed run facts (:class:`RunInfo`); ``metadata`` keeps the
      format-private rest.
    """

    format: str
    source_path: str
    id: str | None = None
    task: str | None = None
    task_source: str | None = None
    events: list[Event] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    view: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    children: list["Session"] = field(default_factory=list)
    files: list[SourceFile] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    spawned_by: SpawnLink | None = None
    # --- typed facts (issue 9)
    #: The harness's own end signal, when the format records one (else None:
    #: consumers then judge from the normalized events alone).
    outcome: "Outcome | None" = None
    #: Facts about the run as a whole (harness, models, ids, workspace, cost, results files).
    run: "RunInfo" = field(default_factory=lambda: RunInfo())
    #: The session as an ASF file (:class:`trajkit.spec.asf.AsfFile`) when it
    #: was read from one: ASF export passes it through unchanged, so its
    #: content-addressed ids survive (``asf.md`` §13.5). None otherwise.
    asf: Any = None

    def diag(self, code: str, message: str, severity: str = WARNING, **where: Any) -> Diagnostic:
        """Record a diagnostic on this session and return it."""
        d = Diagnostic(code=code, message=message, severity=severity, **where)
        self.diagnostics.append(d)
        return d

    def event_by_id(self, event_id: Any) -> Event | None:
        for e in self.events:
            if e.id == event_id:
                return e
        return None

    def walk(self) -> Iterator["Session"]:
        """This session and every descendant sub-agent session, depth first."""
        yield self
        for c in self.children:
            yield from c.walk()

    def to_dict(self, events: bool = False, raw: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "format": self.format,
            "source_path": self.source_path,
            "task": self.task,
            "task_source": self.task_source,
            "view": self.view,
            "step_count": len(self.steps),
            "steps": [s.to_dict() for s in self.steps],
            "metadata": self.metadata,
            "diagnostics": [x.to_dict() for x in self.diagnostics],
        }
        if self.children:
            d["children"] = [c.to_dict(events=events, raw=raw) for c in self.children]
        if events:
            d["events"] = [e.to_dict(raw=raw) for e in self.events]
        return d


# ---------------------------------------------------------------- typed facts (issue 9)
#
# What consumers (certify, export, rl, the CLI) need to know about a run,
# typed and filled by the readers, so that no consumer reads ``Event.raw`` in
# a native shape or tests a format name.

#: :attr:`ToolCall.op` values. ``shell``: runs a shell command; ``read``: reads
#: a file or lists a directory; ``write``: writes a whole file; ``edit``: changes
#: part of a file (an editor command); ``search``: searches files by name or
#: content; ``code``: runs a program text (IPython cell); ``patch``: applies a
#: patch text; ``fetch``: fetches a URL / drives a browser; ``finish``: declares
#: the task done; ``spawn``: starts a sub-agent; ``think``: thinks aloud (no
#: effect); ``message``: talks to the user (no effect); ``control``: harness
#: bookkeeping (state changes, condensation, plans: no effect); ``other``: any
#: other tool.
SHELL_OP, READ_OP, WRITE_OP, EDIT_OP, SEARCH_OP, CODE_OP, PATCH_OP, FETCH_OP = (
    "shell", "read", "write", "edit", "search", "code", "patch", "fetch")
FINISH_OP, SPAWN_OP, THINK_OP, MESSAGE_OP, CONTROL_OP, OTHER_OP = "finish", "spawn", "think", "message", "control", "other"
TOOL_OPS = (SHELL_OP, READ_OP, WRITE_OP, EDIT_OP, SEARCH_OP, CODE_OP, PATCH_OP, FETCH_OP,
            FINISH_OP, SPAWN_OP, THINK_OP, MESSAGE_OP, CONTROL_OP, OTHER_OP)
#: The ops that change nothing outside the conversation.
NO_EFFECT_OPS = frozenset((THINK_OP, MESSAGE_OP, CONTROL_OP))


@dataclass(slots=True)
class FileEdit:
    """One file change a harness's editor (or write tool) reported.

    - ``path``: the file as the record names it (None when the record names none).
    - ``old``: its content before (None when the record does not say).
    - ``new``: its content after (None when the record does not say).
    - ``existed``: whether the file existed before (None when unknown); a
      file that did not exist has ``old == ""`` in effect.
    - ``whole``: the change is a whole-file write (``new`` is the file), not
      an editor command with before/after content.
    - ``patch``: a patch text, when the record gives one instead of contents.
    - ``final``: ``patch`` is the harness's own diff of the whole run at its
      end (a SWE-agent / mini-swe-agent submission: ``git diff`` of the
      workspace against the run's start), so it covers shell writes too and
      is the run's change as a whole (``path`` may then be None).
    """

    path: str | None
    old: str | None = None
    new: str | None = None
    existed: bool | None = None
    whole: bool = False
    patch: str | None = None
    final: bool = False


@dataclass(slots=True)
class Usage:
    """The figures of one model call, in one naming.

    Token counts: ``input`` (prompt, cached included), ``output``
    (completion), ``cache_read`` and ``cache_write`` (prompt tokens read from /
    written to the provider's cache), ``reasoning`` (output tokens spent
    reasoning), ``total`` (as recorded, else None); ``cost`` in USD. ``source``
    says where the figures came from (e.g. ``llm_metrics difference``,
    ``usage_to_metrics``, ``response.usage``). None means "not recorded".
    ``output_lower_bound``: ``output`` is a lower bound, not the call's
    figure (Claude Code 2.x writes the usage of the stream's first event:
    ``output_tokens`` counts what had been generated when the row was
    written).
    ``cost_estimated``: ``cost`` was not recorded but estimated by
    :mod:`trajkit.pricing` from ``model`` and the token counts (set after the
    reader, never by it); outputs show such a cost as estimated.
    """

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None
    total: int | None = None
    cost: float | None = None
    source: str | None = None
    model: str | None = None
    output_lower_bound: bool = False
    cost_estimated: bool = False

    @classmethod
    def from_counts(cls, counts: Any, source: str | None) -> "Usage | None":
        """A :class:`Usage` from a token-count mapping in any of the three
        namings readers meet (chat completions ``prompt_tokens``, Responses
        ``input_tokens`` + ``*_details``, provider ``cache_read_*``); None when
        ``counts`` is no mapping."""
        if not isinstance(counts, dict):
            return None

        def num(*keys: str) -> int | None:
            for k in keys:
                v = counts.get(k)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    return int(v)
            return None

        cached = num("cached_tokens", "cache_read_tokens", "cache_read_input_tokens")
        details = counts.get("input_tokens_details")
        if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
            cached = details["cached_tokens"]
        reasoning = num("reasoning_tokens")
        od = counts.get("output_tokens_details")
        if isinstance(od, dict) and isinstance(od.get("reasoning_tokens"), int):
            reasoning = od["reasoning_tokens"]
        cost = counts.get("cost")
        return cls(
            input=num("input_tokens", "prompt_tokens"),
            output=num("output_tokens", "completion_tokens"),
            cache_read=cached,
            cache_write=num("cache_write_tokens", "cache_creation_input_tokens"),
            reasoning=reasoning,
            total=num("total_tokens"),
            cost=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
            source=source,
            model=counts["model"] if isinstance(counts.get("model"), str) else None,
        )


@dataclass(slots=True)
class Outcome:
    """The harness's own end signal, in neutral form (set by the reader).

    ``reached_end``: the harness emitted its own "done" signal.
    ``claimed_success``: the agent / harness declared the task done.
    ``status``: the native end status text as recorded (``finished``,
    ``error``, ``agent_timeout`` ...); ``signal``: which signal decided, in
    words. ``budget_exhausted``: a step, token, time or cost cap was hit;
    ``external_error``: an unrecoverable external block (text; at most one of
    this and ``budget_exhausted``); ``human_abort``: an operator stopped the
    run; ``approval_wait``: it stopped waiting for a confirmation.
    ``evidence``: the native event ids / files the decision rests on.
    """

    reached_end: bool
    external_error: str | None = None
    budget_exhausted: bool = False
    human_abort: bool = False
    status: str | None = None
    signal: str = ""
    claimed_success: bool = False
    approval_wait: bool = False
    evidence: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class TrialResult:
    """A results file the harness wrote for the run (read by the reader).

    ``kind``: ``terminal-bench`` (``results.json``: ``failure_mode``,
    ``is_resolved``, ``parser_results``) or ``harbor`` (``result.json``:
    ``exception_info``, ``verifier_result``, ``agent_result``); ``path``: the
    file; ``data``: its decoded content.
    """

    kind: str
    path: str | None
    data: dict[str, Any]


@dataclass(slots=True)
class RecordLink:
    """Another record of the same run, kept by another tool (set by the reader that found both).

    ``rel``: what the other record is to this one: ``model-calls`` (a capture
    of the run's model calls, e.g. a proxy's rollout trace beside an agent's
    own session) or ``session`` (the agent's own session record beside a
    capture). ``path``: where it is; ``session_id``: the agent session it
    holds, when known; ``method``: how the two were matched (``call-ids``:
    the tool call ids of one appear in the other; ``sibling-file``: it sits
    beside this record, in the layout the harness writes); ``detail``: why, for people.
    """

    rel: str
    path: str
    session_id: str | None = None
    method: str = ""
    detail: str = ""


@dataclass(slots=True)
class RunInfo:
    """Facts about the run as a whole, typed (set by the reader; None = not recorded).

    - ``harness`` / ``harness_version``: the harness that ran the agent and its version.
    - ``agent``: the agent (class / kind) inside the harness.
    - ``models``: the LLM models the run called, first one first;
      ``reasoning_effort``: the effort setting the run's model was given.
    - ``benchmark`` / ``instance_id`` / ``trial_id``: where the run sits in a benchmark.
    - ``workspace``: the agent's working directory as recorded;
      ``default_workspace``: the harness's sandbox directory when the record
      names none (e.g. ``/workspace``).
    - ``started_at`` / ``ended_at``: ISO timestamps as recorded.
    - ``cost_usd``: the run's LLM cost as the record states it.
    - ``results``: the harness's results files (:class:`TrialResult`).
    - ``verifier_dir``: the harness's verifier output directory (harbor ``verifier/``).
    - ``links``: other records of the same run (:class:`RecordLink`).
    """

    harness: str | None = None
    harness_version: str | None = None
    agent: str | None = None
    models: list[str] = field(default_factory=list)
    reasoning_effort: str | None = None
    benchmark: str | None = None
    instance_id: str | None = None
    trial_id: str | None = None
    workspace: str | None = None
    default_workspace: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    cost_usd: float | None = None
    results: list[TrialResult] = field(default_factory=list)
    verifier_dir: str | None = None
    links: list[RecordLink] = field(default_factory=list)

    def result(self, kind: str) -> TrialResult | None:
        """The first results file of ``kind``, if any."""
        return next((r for r in self.results if r.kind == kind), None)


@dataclass(slots=True)
class ReadOptions:
    """Knobs every reader accepts.

    ``max_file_bytes``: a file larger than this becomes a diagnostic instead
    of being read (default 1 GiB). ``view``: force one on-disk view by name
    instead of the first available. ``tz``: an IANA zone name for formats that
    write naive local timestamps. ``steps``: compute steps (turn off for
    raw-only reads). ``hint``: what detection already learned about the
    root (private to the format whose sniff made it), so a reader need not
    probe the layout twice; a reader checks it is its own and ignores it
    otherwise. ``member``: which session of a container (one file or
    database holding many sessions, a format declaring ``Format.members``)
    to read; it is what follows ``#`` in an address such as
    ``output.jsonl#django__django-11163``.
    """

    max_file_bytes: int = 1 << 30
    view: str | None = None
    tz: str | None = None
    steps: bool = True
    hint: Any = None
    member: str | None = None


class TrajkitError(Exception):
    """Base of the errors trajkit raises for misuse (never for bad data)."""


class StepCountMismatch(TrajkitError):
    """A session's step count differs from the count a benchmark expects."""

    def __init__(self, expected: int, actual: int, view: str | None, path: str | None = None):
        self.expected = expected
        self.actual = actual
        self.view = view
        self.path = path
        super().__init__(
            f"step count mismatch: expected {expected}, got {actual} from view {view or 'unknown'}"
            + (f" ({path})" if path else "")
        )


class DetectionError(TrajkitError):
    """No format, or more than one equally good format, matches a path."""
