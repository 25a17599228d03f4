"""The record classes of the steps path (:mod:`trajkit._records`) behave as
the dataclasses they replaced: each is compared here with a dataclass made
by :func:`dataclasses.make_dataclass` from the field list written below
(names in order, defaults, frozen, slots), on the same values: constructor
(positional and keyword), ``repr``, ``==``, hashing, immutability, slots,
``__match_args__``, pickling and copying."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import pytest

from trajkit.formats.openhands_sdk.layout import EventScan
from trajkit.formats.openhands_sdk.tree import Branching
from trajkit.formats.openhands_v0.layout import Layout
from trajkit.reading.io import JsonLine, Refusal
from trajkit.reading.probe import Probe
from trajkit.registry import Candidate, Detection, Format, FormatEntry, Match, Reject
from trajkit.vocab import ToolSpec, ToolTable
from trajkit.vocab.swe_agent import TextCommand

NEW_LIST = object()  #: a field whose default is a new empty list (the dataclass's default_factory=list)
NEW_DICT = object()
NEW_PROBE = object()
REQUIRED = dataclasses.MISSING

#: class -> (frozen, slots, [(field, default)]), as the dataclasses declared them
SPECS = {
    Match: (True, True, [("root", REQUIRED), ("fingerprint", REQUIRED), ("strength", "strong"), ("reason", ""), ("hint", None)]),
    Reject: (True, True, [("reason", REQUIRED)]),
    Format: (True, False, [
        ("name", REQUIRED), ("description", REQUIRED), ("fingerprints", REQUIRED), ("priority", REQUIRED),
        ("sniff", REQUIRED), ("read", REQUIRED), ("find_sessions", None), ("summarize", None), ("views", None),
        ("context", None), ("model_calls", None), ("members", None), ("tools", None), ("homes", None), ("examples", ()),
    ]),
    Candidate: (False, True, [("format", REQUIRED), ("priority", REQUIRED), ("path", REQUIRED), ("fingerprint", REQUIRED),
                              ("outcome", REQUIRED), ("strength", None), ("root", None), ("reason", "")]),
    Detection: (False, True, [("path", REQUIRED), ("format", REQUIRED), ("match", REQUIRED), ("ambiguous", False),
                              ("considered", NEW_LIST), ("member", None), ("diagnostics", NEW_LIST)]),
    FormatEntry: (True, True, [("name", REQUIRED), ("value", REQUIRED), ("origin", REQUIRED)]),
    ToolSpec: (True, True, [("name", REQUIRED), ("op", None), ("single", None), ("mcp", None)]),
    ToolTable: (False, True, [("harness", REQUIRED), ("specs", NEW_DICT)]),
    Refusal: (False, True, [("code", REQUIRED), ("size", REQUIRED), ("reason", REQUIRED)]),
    JsonLine: (False, True, [("value", REQUIRED), ("line", REQUIRED), ("offset", REQUIRED), ("raw", REQUIRED)]),
    Layout: (False, True, [("kind", REQUIRED), ("root", REQUIRED), ("flat_candidates", NEW_LIST), ("session_dirs", NEW_LIST),
                           ("metadata_files", NEW_LIST), ("recordings", NEW_LIST), ("probe", NEW_PROBE), ("rel_base", None)]),
    EventScan: (False, True, [("ordered", NEW_LIST), ("others", NEW_LIST), ("first_missing", None), ("diagnostics", NEW_LIST)]),
    Branching: (False, True, [("parents", REQUIRED), ("active", NEW_LIST), ("leaf", None), ("leaf_source", "none"), ("place", NEW_LIST),
                              ("diagnostics", NEW_LIST)]),
    TextCommand: (True, True, [("action", REQUIRED), ("open_file", None)]),
}

_FACTORY = {NEW_LIST: list, NEW_DICT: dict, NEW_PROBE: Probe}


def reference(cls):
    """The dataclass ``cls`` was, built from :data:`SPECS`."""
    frozen, slots, fields = SPECS[cls]
    spec = []
    for name, default in fields:
        if default is REQUIRED:
            spec.append((name, object))
        elif default in _FACTORY:
            spec.append((name, object, dataclasses.field(default_factory=_FACTORY[default])))
        else:
            spec.append((name, object, dataclasses.field(default=default)))
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=frozen, slots=slots)


def sample_values(cls, salt: int):
    """A value for every field (hashable ones, so frozen records hash)."""
    return [f"{cls.__name__}-{name}-{salt}" if i % 2 == 0 else (i, salt) for i, (name, _) in enumerate(SPECS[cls][2])]


CLASSES = list(SPECS)


def test_every_record_class_of_the_steps_path_is_listed():
    from trajkit._records import Record

    found = set()

    def walk(c):
        for sub in c.__subclasses__():
            if sub.__module__.startswith("trajkit.") and sub.__module__ != "trajkit._records":
                found.add(sub)
            walk(sub)

    walk(Record)
    assert found <= set(SPECS), found - set(SPECS)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_constructor_matches_the_dataclass(cls):
    ref = reference(cls)
    fields = SPECS[cls][2]
    params = list(inspect.signature(cls).parameters.values())
    ref_params = list(inspect.signature(ref).parameters.values())
    assert [p.name for p in params] == [p.name for p in ref_params] == [n for n, _ in fields]
    for p, (name, default) in zip(params, fields):
        assert p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        if default is REQUIRED:
            assert p.default is inspect.Parameter.empty
        elif default in _FACTORY:  # a new object per instance, not one shared default
            assert p.default is None
        else:
            assert p.default == default
    # positional and keyword construction give the same fields as the dataclass
    vals = sample_values(cls, 1)
    a, b = cls(*vals), ref(*vals)
    assert [getattr(a, n) for n, _ in fields] == [getattr(b, n) for n, _ in fields] == vals
    assert cls(**{n: v for (n, _), v in zip(fields, vals)}) == a
    # defaults: only the required fields given
    required = [v for (n, d), v in zip(fields, vals) if d is REQUIRED]
    a, b, c = cls(*required), ref(*required), cls(*required)
    for name, default in fields:
        if default in _FACTORY:
            x, y = getattr(a, name), getattr(b, name)
            assert type(x) is type(y) and x is not getattr(c, name)  # new per instance
            if default is not NEW_PROBE:
                assert x == y
        else:
            assert getattr(a, name) == getattr(b, name)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_repr_eq_hash_match_args_as_the_dataclass(cls):
    ref = reference(cls)
    v1, v2 = sample_values(cls, 1), sample_values(cls, 2)
    a, a2, b = cls(*v1), cls(*v1), cls(*v2)
    assert repr(a) == repr(ref(*v1)) and repr(b) == repr(ref(*v2))
    assert a == a2 and not (a != a2) and a != b
    assert a != ref(*v1) and (a == object()) is False  # another class is never equal
    assert a.__eq__(ref(*v1)) is NotImplemented
    assert cls.__match_args__ == ref.__match_args__
    frozen = SPECS[cls][0]
    if frozen:
        assert hash(a) == hash(a2) == hash(ref(*v1))  # both hash the tuple of their fields
    else:
        with pytest.raises(TypeError):
            hash(a)
        with pytest.raises(TypeError):
            hash(ref(*v1))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_frozen_and_slots_as_the_dataclass(cls):
    ref = reference(cls)
    frozen, slots, fields = SPECS[cls]
    vals = sample_values(cls, 3)
    for obj in (cls(*vals), ref(*vals)):
        first = fields[0][0]
        if frozen:
            with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{first}'"):
                setattr(obj, first, 1)
            with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot delete field '{first}'"):
                delattr(obj, first)
            # a new attribute: refused (a slots dataclass of Python 3.11 refuses it with a TypeError, its bug)
            with pytest.raises(dataclasses.FrozenInstanceError if obj.__class__ is cls else (dataclasses.FrozenInstanceError, TypeError)):
                obj.not_a_field = 1
            assert getattr(obj, first) == vals[0]
        else:
            setattr(obj, first, "changed")
            assert getattr(obj, first) == "changed"
            if slots:
                with pytest.raises(AttributeError):
                    obj.not_a_field = 1
        assert hasattr(obj, "__dict__") is (not slots)
    if slots:
        assert tuple(cls.__slots__) == tuple(ref.__slots__)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_pickle_and_copy_round_trip(cls):
    vals = sample_values(cls, 4)
    a = cls(*vals)
    for b in (pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
        assert type(b) is cls and b == a and b is not a
        assert [getattr(b, n) for n, _ in SPECS[cls][2]] == vals


def test_a_steps_process_defines_no_dataclass_beyond_import_trajkit():
    """Defining a dataclass costs ~4M instructions at import: ``trajkit
    steps`` on a small run defines only those ``import trajkit`` defines
    (the model's), and modules it adds use :mod:`trajkit._records`."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    code = (
        "import contextlib, dataclasses, io, sys\n"
        "import trajkit\n"
        "base = {m for m in sys.modules if m.startswith('trajkit')}\n"
        "from trajkit.cli import run\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        run(['steps', {str(repo / 'examples' / 'openhands-v0-trial')!r}])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "for name, mod in sorted(sys.modules.items()):\n"
        "    if name.startswith('trajkit') and name not in base:\n"
        "        for obj in list(vars(mod).values()):\n"
        "            if isinstance(obj, type) and obj.__module__ == name and dataclasses.is_dataclass(obj):\n"
        "                print(name, obj.__qualname__)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout == "", p.stdout
