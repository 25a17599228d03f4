"""Recognising OpenHands evaluation outputs and Cloud exports (imported by detection; kept free of the index and readers)."""

from __future__ import annotations

import re
from pathlib import Path

from ... import jsonio
from ...reading.probe import Probe, has_u_escape
from ...registry import STRONG, Match, Reject

NAME = "openhands-eval"
CLOUD_NAME = "openhands-cloud"

#: The start of a record as both harnesses write it (pydantic ``model_dump_json``:
#: ``instance_id`` first, the SDK's ``attempt`` next).
_HEAD = re.compile(rb'\s*\{\s*"instance_id"\s*:\s*("(?:[^"\\\n]|\\.)*")\s*(?:,\s*"attempt"\s*:\s*(\d{1,9})\b)?')


# ---------------------------------------------------------------- detection


def looks_like_output(path: str | Path, probe: Probe) -> bool:
    """Whether a file starts like an OpenHands evaluation output: its first
    non-blank line is a JSON object whose first member is ``instance_id``
    and that has ``history``, ``test_result`` or ``instruction`` (checked on
    the first 64 KiB: the head of a record whose history is huge is
    enough)."""
    head = probe.head(str(path), 1 << 16)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    m = _HEAD.match(head)
    if m is None:
        return False
    line = head.split(b"\n", 1)[0]
    return any(k in line for k in (b'"history"', b'"test_result"', b'"instruction"', b'"metrics"'))


_KEY = b'"instance_id"'


def ruled_out(prefix: bytes) -> bool:
    """True when no file whose first bytes are ``prefix`` (any of its first
    bytes, or all of a short file) can start like an output
    (:func:`looks_like_output`'s ``{"instance_id"`` after a byte order mark
    and blanks); False when it may (read the head to know)."""
    if prefix.startswith(b"\xef\xbb\xbf"):
        prefix = prefix[3:]
    elif b"\xef\xbb\xbf".startswith(prefix):  # nothing, or cut inside a byte order mark
        return False
    rest = prefix.lstrip()  # the ASCII blanks, as the pattern's \s
    if not rest:
        return False
    if rest[:1] != b"{":
        return True
    rest = rest[1:].lstrip()
    return not (rest.startswith(_KEY) or _KEY.startswith(rest))  # the key, or cut inside it: may be one


#: The sniffs' constant answers (immutable: made once, not per file asked about).
_NOT_FILE = Reject("not a file")
_NOT_OUTPUT = Reject("does not start like an OpenHands evaluation record ({\"instance_id\": ..., \"history\": ...})")
_NOT_CLOUD = Reject("not a JSON object with conversation and events members")


def sniff(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    p = str(candidate)  # the probe's key, made once
    if not probe.is_file(p):
        return _NOT_FILE
    if looks_like_output(p, probe):
        return Match(candidate, fingerprint, STRONG, "JSON Lines of OpenHands evaluation records (instance_id, history, test_result)")
    return _NOT_OUTPUT


# ---------------------------------------------------------------- Cloud export


_CLOUD_HEAD = re.compile(rb'"(conversation|events)"\s*:')


def _may_be_cloud(head: bytes) -> bool:
    """False when :func:`looks_like_cloud` is certainly False for ``head``:
    both ways it decides need the ``conversation`` and ``events`` keys, spelled
    plainly unless with ``\\u`` escapes. Two searches instead of decoding every
    small JSON file detection meets."""
    return (b'"conversation"' in head and b'"events"' in head) or has_u_escape(head)


def looks_like_cloud(path: str | Path, probe: Probe) -> bool:
    """Whether a JSON file is an OpenHands Cloud export: an object with
    ``conversation`` (an object) and ``events`` members. A file of up to 64
    KiB is decoded; a larger one must name both members in its first 64 KiB
    (the conversation details come first and are small)."""
    head = probe.head(str(path), 1 << 16)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    if not head.lstrip().startswith(b"{"):
        return False
    if not _may_be_cloud(head):
        return False
    if len(head) < (1 << 16) - 3:
        try:
            doc = jsonio.fast_loads(head)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            return isinstance(doc.get("conversation"), dict) and "events" in doc
    return len(set(_CLOUD_HEAD.findall(head))) >= 2


def sniff_cloud(probe: Probe, candidate: Path, fingerprint: str) -> Match | Reject:
    p = str(candidate)  # the probe's key, made once
    if not probe.is_file(p):
        return _NOT_FILE
    if looks_like_cloud(p, probe):
        return Match(candidate, fingerprint, STRONG, "a JSON object with conversation and events (an OpenHands Cloud export)")
    return _NOT_CLOUD
