"""Tokenizers from local files, and the prompt rendering training turns use.

Everything here needs the ``rl`` extra (``transformers``, ``tokenizers``,
``jinja2``); it is imported lazily so the core install works without it. A
tokenizer is always loaded from a local directory (``tokenizer.json`` plus
``tokenizer_config.json`` with a ``chat_template``); nothing is fetched.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from ..model import TrajkitError


class TokenizerError(TrajkitError):
    """A tokenizer could not be loaded or cannot do what a turn needs."""


def load_tokenizer(path: str | os.PathLike) -> Any:
    """The tokenizer saved in directory ``path`` (local files only)."""
    p = Path(path)
    if not p.exists():
        raise TokenizerError(f"{p}: no such tokenizer directory")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        from transformers import AutoTokenizer, PreTrainedTokenizerFast
    except ImportError as e:  # pragma: no cover - depends on the install
        raise TokenizerError(f"tokenizers need the rl extra (pip install 'trajkit[rl]'): {e}") from e
    try:
        if p.is_file():
            tok = PreTrainedTokenizerFast(tokenizer_file=str(p))
        else:
            tok = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
    except Exception as e:  # transformers raises many kinds for a bad directory
        raise TokenizerError(f"{p}: cannot load a tokenizer: {type(e).__name__}: {e}") from e
    tok._trajkit_path = str(p)  # type: ignore[attr-defined]
    return tok


def chat_template_of(tok: Any) -> str | None:
    """The tokenizer's chat template text, if it has one."""
    t = getattr(tok, "chat_template", None)
    if isinstance(t, dict):
        t = t.get("default") or next(iter(t.values()), None)
    return t if isinstance(t, str) else None


def tokenizer_identity(tok: Any) -> dict[str, Any]:
    """What names a tokenizer in outputs: its path, class, vocabulary size and
    a hash of its chat template."""
    tmpl = chat_template_of(tok)
    return {
        "path": getattr(tok, "_trajkit_path", None) or getattr(tok, "name_or_path", None),
        "class": type(tok).__name__,
        "vocab_size": len(tok) if hasattr(tok, "__len__") else None,
        "chat_template_sha256": hashlib.sha256(tmpl.encode()).hexdigest() if tmpl else None,
    }


def render_prompt_ids(tok: Any, messages: list[Any], tools: list[Any] | None, template_kwargs: dict[str, Any] | None = None) -> list[int]:
    """The prompt token ids the server would render for a request: the chat
    template over ``messages`` with ``tools`` and a generation prompt."""
    if chat_template_of(tok) is None:
        raise TokenizerError("the tokenizer has no chat_template; prompts cannot be rendered")
    kwargs = dict(template_kwargs or {})
    out = tok.apply_chat_template(
        messages,
        tools=tools,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=False,
        **kwargs,
    )
    if hasattr(out, "keys"):
        out = out["input_ids"]
    if out and isinstance(out[0], list):
        out = out[0]
    return [int(x) for x in out]


def decode(tok: Any, ids: list[int]) -> str:
    """The text of ``ids``, special tokens included."""
    return tok.decode(ids, skip_special_tokens=False)
