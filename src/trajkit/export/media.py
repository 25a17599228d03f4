"""Binary attachments (images) out of the exported JSON, into a side folder.

Records keep images inline as base64: Anthropic-style blocks
(``{"type": "base64", "media_type": "image/png", "data": "..."}``, Claude
Code user content and tool results) and ``data:`` URLs (OpenAI-style
``image_url``). One image can be hundreds of kilobytes, so exports never
inline them: :func:`spill` replaces each with a reference
``{"type": "file", "path": "media/<sha256>.<ext>", "media_type", "sha256",
"bytes"}`` (in place of the base64 object, or as ``trajkit-media:<path>``
in place of a data URL) and keeps the bytes, which the conversion writes
under ``<out>/media/``. The reference names the content's hash, so the
entry ids that cover it still pin the image.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Any

#: Base64 payloads shorter than this stay inline (icons, test stubs).
MIN_BYTES = 256
MEDIA_DIR = "media"

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,", re.ASCII)
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/gif": "gif", "image/webp": "webp",
        "application/pdf": "pdf"}


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _keep(media: dict[str, bytes], raw: bytes, media_type: str) -> dict[str, Any]:
    digest = hashlib.sha256(raw).hexdigest()
    ext = _EXT.get(media_type.lower(), "bin")
    path = f"{MEDIA_DIR}/{digest}.{ext}"
    media[path] = raw
    return {"type": "file", "path": path, "media_type": media_type, "sha256": digest, "bytes": len(raw)}


def spill(value: Any, media: dict[str, bytes]) -> Any:
    """``value`` with every large base64 payload replaced by a reference to
    a file kept in ``media`` (``path -> bytes``). Values without one are
    returned as they are (the same object)."""
    if isinstance(value, dict):
        if value.get("type") == "base64" and isinstance(value.get("data"), str) and len(value["data"]) >= MIN_BYTES:
            raw = _decode(value["data"])
            if raw is not None:
                ref = _keep(media, raw, str(value.get("media_type") or "application/octet-stream"))
                rest = {k: v for k, v in value.items() if k not in ("type", "data", "media_type")}
                return {**ref, **rest}
        out = None
        for k, v in value.items():
            nv = spill(v, media)
            if nv is not v:
                if out is None:
                    out = dict(value)
                out[k] = nv
        return out if out is not None else value
    if isinstance(value, list):
        out_l = None
        for i, v in enumerate(value):
            nv = spill(v, media)
            if nv is not v:
                if out_l is None:
                    out_l = list(value)
                out_l[i] = nv
        return out_l if out_l is not None else value
    if isinstance(value, str) and len(value) >= MIN_BYTES and value.startswith("data:"):
        m = _DATA_URL.match(value)
        if m:
            raw = _decode(value[m.end():])
            if raw is not None:
                return "trajkit-media:" + _keep(media, raw, m.group(1))["path"]
    return value
