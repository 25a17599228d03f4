"""The Agent Session Format (ASF, RFC 0001 draft 0.11), direction-neutral.

The spec lives here, not under ``export/``, because every direction uses it:
``export/to_asf.py`` writes ASF, ``export/to_atif.py`` projects it, ``trajkit
verify`` and ``certify --asf`` read and check it, and an ASF input format will
read it next. An ASF file is JSONL: a header line, then one entry per line;
entries are content-addressed (``shared/formats/asf.md`` §3).

- :mod:`.codec` — the hashing rules: :func:`canonical` (JCS),
  :func:`content_hash`, :func:`entry_id`, :func:`request_hash`,
  :func:`normalize_ts`, :func:`normalise_ijson`;
- :mod:`.entries` — :class:`Entry`, :class:`AsfFile`, the lenient reader
  :func:`read_asf` (keeps every line's bytes, preserves unknown types and
  members, reads the prefix of a cut-off file, migrates pre-0.5 files in
  memory), the writer (:func:`write_asf`, :func:`make_entry`);
- :mod:`.context` — the normative context algorithm (§5): :func:`build_context`,
  :func:`request_context`, :class:`RequestWalker`;
- :mod:`.verify` — :func:`verify`, every check a reader can make.

Nothing here raises on bad data: problems become
:class:`~trajkit.diagnostics.Diagnostic` values with stable ``asf.*`` codes
(documented in ``docs/export.md`` and ``docs/diagnostics.md``). The public
names of the four modules are importable from this package.
"""

from __future__ import annotations

from .codec import (
    ENVELOPE,
    canonical,
    content_hash,
    content_of,
    entry_id,
    normalise_ijson,
    normalize_ts,
    prepare,
    request_hash,
    sha256_hex,
    text_hash,
)
from .entries import (
    CONTEXT_TYPES,
    CORE_TYPES,
    ENTRY_NAMING,
    FORMAT,
    FORMAT_MINOR,
    FUTURE_RECORD_TYPES,
    PAYLOAD,
    RECORD_TYPES,
    AsfFile,
    Entry,
    entry_line,
    make_entry,
    migrate_legacy,
    parse_format,
    read_asf,
    write_asf,
)
from .context import (
    Context,
    RequestWalker,
    Settings,
    build_context,
    request_context,
    request_leaf,
    request_of,
)
from .verify import (
    verify,
)

__all__ = [
    "ENVELOPE",
    "canonical",
    "content_hash",
    "content_of",
    "entry_id",
    "normalise_ijson",
    "normalize_ts",
    "prepare",
    "request_hash",
    "sha256_hex",
    "text_hash",
    "CONTEXT_TYPES",
    "CORE_TYPES",
    "ENTRY_NAMING",
    "FORMAT",
    "FORMAT_MINOR",
    "FUTURE_RECORD_TYPES",
    "PAYLOAD",
    "RECORD_TYPES",
    "AsfFile",
    "Entry",
    "entry_line",
    "make_entry",
    "migrate_legacy",
    "parse_format",
    "read_asf",
    "write_asf",
    "Context",
    "RequestWalker",
    "Settings",
    "build_context",
    "request_context",
    "request_leaf",
    "request_of",
    "verify",
]
