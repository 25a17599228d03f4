"""Shell command lines taken apart into what they read, write and run.

A best-effort, side-effect-free reading of POSIX shell text. One quote-aware
lexer does the work: single and double quotes, ``$'...'``, backslash escapes
and line continuations, comments, ``$(...)`` / backticks / ``<(...)`` (their
commands are read too), redirections with their file descriptors (``2>&1``,
``>|``, ``&>``, ``<<<``), and heredocs (their bodies are cut out, quoted
delimiters and ``<<-`` included). The line is split into simple commands at
``&& || ; | &`` and newlines, and each simple command yields the paths it
reads, the paths it writes (redirections, ``tee``, ``sed -i``, ``rm``, ``mv``
...), and its text exactly as written (``SimpleCommand.text``), for evidence.

A secret mask glued into a word (OpenHands Cloud writes
``https://<redacted>@github.com/...``) is part of the word, not a pair of
redirections: the command really ran with the secret in its place.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

#: Commands that only read the files named in their arguments.
READERS = {
    "cat", "tac", "less", "more", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "ack", "awk", "gawk",
    "nl", "wc", "diff", "cmp", "strings", "xxd", "od", "hexdump", "base64", "file", "ls", "find", "tree",
    "stat", "md5sum", "sha1sum", "sha256sum", "jq", "yq", "bat", "view", "sort", "uniq", "cut", "column",
    "zcat", "bzcat", "xzcat", "unzip", "source", ".", "bash", "sh", "zsh", "python", "python3", "node",
    "ruby", "perl", "php", "pytest", "py.test", "du", "readlink", "realpath", "open", "code", "vimdiff",
}
#: Commands that write (create, change or delete) the files in their arguments.
WRITERS = {"rm", "rmdir", "touch", "chmod", "chown", "truncate", "shred", "unlink", "vi", "vim", "nano", "emacs", "ed"}
#: Prefix words that run the rest of the line as the command.
PREFIXES = {"sudo", "time", "env", "nohup", "nice", "exec", "command", "builtin", "xargs", "stdbuf", "doas"}


@dataclass(slots=True)
class SimpleCommand:
    """One simple command: its words (quotes removed), the paths it reads and
    writes, and its text as written (``as_written``: quotes, redirections and all)."""

    words: list[str]
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    cd: str | None = None
    code: str | None = None  # the program text of ``python -c`` / ``node -e`` / ``bash -c``
    as_written: str | None = None

    @property
    def name(self) -> str:
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""

    @property
    def text(self) -> str:
        """The command as the agent wrote it (falls back to the words joined)."""
        return self.as_written if self.as_written is not None else " ".join(self.words)


# ------------------------------------------------------------------ the lexer

#: A secret mask a harness writes in place of a value (``<redacted>``,
#: ``<secret_hidden>``, ``<GITHUB_TOKEN>`` ...): a word, never redirections.
_MASK = re.compile(r"<((?i:redacted|hidden|masked|filtered|removed|sensitive|secret|secret_hidden|[A-Za-z0-9]+[_-](?:token|key|secret|password|pat)|token|api_key|apikey|password|passwd|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+))>")
#: Any ``<name>`` placeholder, taken as a mask when glued inside a URL-like word.
_PLACEHOLDER = re.compile(r"<[A-Za-z][A-Za-z0-9_.-]*>")
_REDIR = re.compile(r"(\d{1,2})?(&>>|&>|<<<|<<-|<<|<>|<&|>&|>>|>\||<|>)")
_SEP = re.compile(r"&&|\|\||;;&|;;|;&|\|&|[;&|()]")
_PLAIN = re.compile(r"""[^\s'"\\$`<>;&|()]+""")
_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}

#: Operators that end a simple command.
_SEPARATORS = {"&&", "||", ";", "|", "&", "\n", "(", ")", ";;", ";;&", ";&", "|&"}


@dataclass(slots=True)
class _Tok:
    kind: str  # "word" | "sep" | "redir"
    value: str  # the word with quotes removed, or the operator
    start: int
    end: int
    fd: str | None = None
    subs: list[str] = field(default_factory=list)  # command substitutions inside a word


@dataclass(slots=True)
class _Heredoc:
    line: str  # the command line that reads it
    body: str
    span: tuple[int, int]  # the body and its delimiter line, in the text


def _match_close(text: str, i: int, open_: str = "(", close: str = ")") -> int:
    """The index just after the ``close`` matching an ``open_`` already
    consumed before ``i`` (quotes, escapes, backticks and nesting respected);
    the end of the text when it never closes. Iterative: hostile nesting
    depth costs memory, never the Python stack."""
    opener = {")": "(", "}": "{"}
    stack = [close]  # what ends each open context: ")" / "}" / '"'
    n = len(text)
    while i < n:
        c = text[i]
        top = stack[-1]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            i = _skip_backtick(text, i + 1)
            continue
        if top == '"':
            if c == '"':
                stack.pop()
            elif c == "$" and text.startswith("$(", i):
                stack.append(")")
                i += 2
                continue
            i += 1
            continue
        if c == "'":
            j = text.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == '"':
            stack.append('"')
        elif c == "$" and top != ")" and text.startswith("$(", i):
            stack.append(")")
            i += 2
            continue
        elif c == opener[top]:
            stack.append(top)
        elif c == top:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return n


def _skip_backtick(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == "`":
            return i + 1
        else:
            i += 1
    return n


def _dollar(text: str, i: int, buf: list[str], subs: list[str]) -> int:
    """A ``$`` construct at ``i`` inside a word: appended to ``buf`` as written
    (``$'...'`` decoded); command substitutions recorded in ``subs``."""
    if text.startswith("$((", i):
        j = _match_close(text, i + 3)
        j = j + 1 if j < len(text) and text[j] == ")" else j
        buf.append(text[i:j])
        return j
    if text.startswith("$(", i):
        j = _match_close(text, i + 2)
        subs.append(text[i + 2 : j - 1] if text[j - 1 : j] == ")" else text[i + 2 : j])
        buf.append(text[i:j])
        return j
    if text.startswith("${", i):
        j = _match_close(text, i + 2, "{", "}")
        buf.append(text[i:j])
        return j
    if text.startswith("$'", i):  # ANSI-C quoting
        j, n = i + 2, len(text)
        while j < n and text[j] != "'":
            if text[j] == "\\" and j + 1 < n:
                buf.append(_ANSI_C.get(text[j + 1], "\\" + text[j + 1]))
                j += 2
            else:
                buf.append(text[j])
                j += 1
        return min(j + 1, n)
    if text.startswith('$"', i):  # locale quoting: a double-quoted string
        return i + 1
    buf.append("$")
    return i + 1


def _word(text: str, i: int) -> tuple[str, int, list[str]]:
    """One shell word starting at ``i``: its value (quotes removed), the index
    after it, and the command substitutions inside it."""
    n = len(text)
    buf: list[str] = []
    subs: list[str] = []
    start = i
    while i < n:
        m = _PLAIN.match(text, i)
        if m:
            buf.append(m.group(0))
            i = m.end()
            continue
        c = text[i]
        if c in " \t\r\n;&|()":
            break
        if c == "\\":
            if text.startswith("\\\n", i):  # line continuation
                i += 2
            else:
                buf.append(text[i + 1 : i + 2])
                i += 2
        elif c == "'":
            j = text.find("'", i + 1)
            j = n if j < 0 else j
            buf.append(text[i + 1 : j])
            i = j + 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                d = text[j]
                if d == "\\" and j + 1 < n:
                    nxt = text[j + 1]
                    if nxt == "\n":
                        pass
                    elif nxt in '$`"\\':
                        buf.append(nxt)
                    else:
                        buf.append("\\" + nxt)
                    j += 2
                elif d == "$":
                    j = _dollar(text, j, buf, subs) if not text.startswith("$'", j) else (buf.append("$"), j + 1)[1]
                elif d == "`":
                    k = _skip_backtick(text, j + 1)
                    subs.append(text[j + 1 : k - 1] if text[k - 1 : k] == "`" else text[j + 1 : k])
                    buf.append(text[j:k])
                    j = k
                else:
                    buf.append(d)
                    j += 1
            i = min(j + 1, n)
        elif c == "$":
            i = _dollar(text, i, buf, subs)
        elif c == "`":
            k = _skip_backtick(text, i + 1)
            subs.append(text[i + 1 : k - 1] if text[k - 1 : k] == "`" else text[i + 1 : k])
            buf.append(text[i:k])
            i = k
        elif c in "<>":
            m = _MASK.match(text, i) or (_PLACEHOLDER.match(text, i) if i > start and "://" in text[start:i] else None)
            if m is None:
                break
            buf.append(m.group(0))
            i = m.end()
        else:  # pragma: no cover - every other character is plain
            buf.append(c)
            i += 1
    return "".join(buf), i, subs


def _lex(text: str) -> tuple[list[_Tok], list[_Heredoc]]:
    """The tokens of a shell text and its heredoc bodies (cut out of the token stream)."""
    toks: list[_Tok] = []
    docs: list[_Heredoc] = []
    pending: list[tuple[str, bool]] = []  # (delimiter, strip leading tabs) waiting for the end of the line
    line_start = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r":
            i += 1
            continue
        if c == "\\" and text.startswith("\\\n", i):
            i += 2
            continue
        if c == "\n":
            toks.append(_Tok("sep", "\n", i, i + 1))
            line = text[line_start:i]
            i += 1
            for delim, tabs in pending:
                body_start = i
                body: list[str] = []
                while i < n:
                    j = text.find("\n", i)
                    j = n if j < 0 else j
                    ln = text[i:j]
                    i = min(j + 1, n)
                    if (ln.lstrip("\t") if tabs else ln) == delim:
                        break
                    body.append(ln.lstrip("\t") if tabs else ln)
                docs.append(_Heredoc(line, "\n".join(body), (body_start, i)))
            pending = []
            line_start = i
            continue
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "<>&" or c.isdigit():
            m = _REDIR.match(text, i)
            if m and not (m.group(2) in ("<", ">") and text.startswith("(", m.end())) and not (c == "<" and _MASK.match(text, i)):
                op = m.group(2)
                toks.append(_Tok("redir", op, i, m.end(), fd=m.group(1)))
                i = m.end()
                if op in ("<<", "<<-"):
                    while i < n and text[i] in " \t":
                        i += 1
                    ws = i
                    delim, i, _ = _word(text, i)
                    toks.append(_Tok("word", delim, ws, i))
                    pending.append((delim, op == "<<-"))
                continue
        if c in "<>" and text.startswith("(", i + 1):  # process substitution <(...) / >(...)
            j = _match_close(text, i + 2)
            inner = text[i + 2 : j - 1] if text[j - 1 : j] == ")" else text[i + 2 : j]
            toks.append(_Tok("word", "/dev/fd/63", i, j, subs=[inner]))
            i = j
            continue
        m = _SEP.match(text, i)
        if m:
            toks.append(_Tok("sep", m.group(0), i, m.end()))
            i = m.end()
            continue
        value, j, subs = _word(text, i)
        if j == i:  # a lone character nothing takes (a stray quote end): keep going
            toks.append(_Tok("word", text[i], i, i + 1))
            i += 1
            continue
        toks.append(_Tok("word", value, i, j, subs=subs))
        i = j
    if pending:  # heredocs announced on the last line, with no body
        docs.extend(_Heredoc(text[line_start:], "", (n, n)) for _ in pending)
    return toks, docs


def strip_heredocs(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The command text without heredoc bodies, and the bodies cut out
    (each with the command line that reads it)."""
    _, docs = _lex(text)
    if not docs:
        return text, []
    out, pos = [], 0
    for d in docs:
        a, b = d.span
        out.append(text[pos:a])
        pos = b
    out.append(text[pos:])
    return "".join(out).rstrip("\n") if text and not text.endswith("\n") else "".join(out), [(d.line, d.body) for d in docs]


#: Interpreters: a heredoc or -c string fed to them is a program, not file content.
INTERPRETERS = {"python", "python2", "python3", "node", "ruby", "perl", "php", "bash", "sh", "zsh", "dash", "ksh", "deno", "bun"}
SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
#: Commands whose arguments are text or patterns, never files they open by name.
TEXT_ARGS = {"echo", "printf", "git", "grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "export", "alias", "test", "[", "[[", "true", "false", "set", "read"}


def base_name(word: str) -> str:
    name = word.rsplit("/", 1)[-1]
    m = re.match(r"^(python|pypy)[\d.]*$", name)
    return "python" if m else name


_NULL_DEVICES = ("/dev/null", "/dev/stderr", "/dev/stdout", "/dev/tty")


def split_commands(text: str) -> list[SimpleCommand]:
    """The simple commands of a shell line, with their reads and writes; the
    commands inside ``$(...)``, backticks and ``<(...)`` come first, as the
    shell runs them first."""
    return list(_split_cached(text)) if len(text) < 4096 else _split(text)


@functools.lru_cache(maxsize=8192)
def _split_cached(text: str) -> tuple[SimpleCommand, ...]:
    return tuple(_split(text))


def _split(text: str, depth: int = 0) -> list[SimpleCommand]:
    toks, _ = _lex(text)
    cmds: list[SimpleCommand] = []
    cur: list[str] = []
    reads: list[str] = []
    writes: list[str] = []
    inner: list[str] = []
    span: list[int] = []

    def flush() -> None:
        nonlocal cur, reads, writes, inner, span
        for sub in inner:
            if depth < 6 and sub.strip():
                cmds.extend(_split(sub, depth + 1))
        if cur or reads or writes:
            sc = _classify(cur, reads, writes)
            sc.as_written = text[span[0] : span[1]] if span else None
            if "/dev/fd/63" in sc.reads:  # a process substitution's pipe, not a file
                sc.reads = [r for r in sc.reads if r != "/dev/fd/63"]
            cmds.append(sc)
        cur, reads, writes, inner, span = [], [], [], [], []

    def extend(t: _Tok) -> None:
        if span:
            span[1] = t.end
        else:
            span.extend((t.start, t.end))

    i = 0
    while i < len(toks):
        t = toks[i]
        if t.kind == "sep":
            flush()
            i += 1
            continue
        extend(t)
        if t.kind == "word":
            cur.append(t.value)
            inner.extend(t.subs)
            i += 1
            continue
        # a redirection: the next word is its target
        op = t.value
        tgt = toks[i + 1] if i + 1 < len(toks) and toks[i + 1].kind == "word" else None
        i += 1
        if tgt is None:
            continue
        extend(tgt)
        inner.extend(tgt.subs)
        i += 1
        target = tgt.value
        if op in ("<<", "<<-", "<<<"):
            continue  # heredoc / herestring: the word is not a file
        if op in ("<&", ">&") and (target.isdigit() or target == "-"):
            continue  # fd duplication / closing
        if op == "<" or op == "<&":
            reads.append(target)
        elif target not in _NULL_DEVICES and target != "/dev/fd/63":
            writes.append(target)
    flush()
    return cmds


def _classify(words: list[str], reads: list[str], writes: list[str]) -> SimpleCommand:
    w = list(words)
    while w and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w[0]):
        w.pop(0)
    while w and w[0].rsplit("/", 1)[-1] in PREFIXES:
        name = w.pop(0).rsplit("/", 1)[-1]
        while w and (w[0].startswith("-") or (name == "env" and "=" in w[0])):
            w.pop(0)
    if w and w[0].rsplit("/", 1)[-1] == "timeout":
        w.pop(0)
        while w and (w[0].startswith("-") or re.match(r"^\d+[smhd]?$", w[0])):
            w.pop(0)
    sc = SimpleCommand(w, list(reads), list(writes))
    if not w:
        return sc
    name = base_name(sc.name)
    args = w[1:]
    operands = [a for a in args if not a.startswith("-")]
    if name == "cd":
        sc.cd = operands[0] if operands else "~"
    elif name in WRITERS:
        sc.writes.extend(operands[1:] if name in ("chmod", "chown") and operands else operands)
    elif name == "tee":
        sc.writes.extend(operands)
    elif name in ("sed", "perl") and any(a == "-i" or a.startswith("-i") or a == "--in-place" or a.startswith("--in-place") for a in args):
        files = _sed_files(args)
        sc.writes.extend(files)
    elif name in ("sed",):
        sc.reads.extend(_sed_files(args))
    elif name in ("mv",):
        sc.writes.extend(operands)
    elif name in ("cp", "rsync", "scp", "install", "ln"):
        if operands:
            sc.reads.extend(operands[:-1])
            sc.writes.append(operands[-1])
    elif name == "dd":
        for a in args:
            if a.startswith("if="):
                sc.reads.append(a[3:])
            elif a.startswith("of="):
                sc.writes.append(a[3:])
    elif name == "git":
        sub = _git_sub(args)
        rest = [a for a in args if a != sub]
        branch_only = sub in ("checkout", "switch") and any(a in ("-b", "-B", "-c", "-C", "--orphan") for a in rest) and "--" not in rest
        if sub in ("rm", "mv"):
            sc.writes.extend(a for a in rest if not a.startswith("-") and a not in ("--",))
        elif sub in ("checkout", "restore", "reset", "stash", "apply", "am", "merge", "rebase", "cherry-pick", "revert", "pull", "clean", "switch") and not branch_only:
            if not (sub == "stash" and any(a in ("list", "show") for a in rest)) and not (sub == "reset" and "--hard" not in rest and any(a in ("--soft", "--mixed") for a in rest)):
                sc.writes.append("<git working tree>")
        if sub in ("show", "cat-file", "log", "diff", "blame", "grep", "annotate", "whatchanged"):
            for a in rest:
                m = re.match(r"^[^\s:-][^\s:]*:(.+)$", a)  # <rev>:<path>
                if m and "://" not in a:
                    sc.reads.append(m.group(1))
            if "--" in rest:
                sc.reads.extend(a for a in rest[rest.index("--") + 1 :] if not a.startswith("-"))
            elif sub == "blame":
                sc.reads.extend(a for a in rest if not a.startswith("-"))
    elif name == "patch":
        sc.writes.append("<patch targets>")
    elif name in ("grep", "egrep", "fgrep", "rg", "ag", "ack"):
        # the first operand is the pattern unless -e/-f gave it
        has_e = any(a in ("-e", "-f") or a.startswith("--regexp") for a in args)
        sc.reads.extend(operands if has_e else operands[1:])
    elif name in ("awk", "gawk"):
        sc.reads.extend(operands[1:])
    elif name == "find":
        for a in args:
            if a.startswith("-") or a in ("!", "(", ")"):
                break
            sc.reads.append(a)
        if "-delete" in args or "-exec" in args and any(x in ("rm", "sed", "mv") for x in args):
            sc.writes.append("<find matches>")
    elif name in ("python", "python3", "node", "ruby", "perl", "php", "bash", "sh", "zsh") and any(a in ("-c", "-e", "-m") for a in args):
        k = next(i for i, a in enumerate(args) if a in ("-c", "-e", "-m"))
        if args[k] == "-m":
            sc.reads.extend(a for a in args[k + 2:] if not a.startswith("-"))
        elif k + 1 < len(args):
            sc.code = args[k + 1]
    elif name in ("pytest", "py.test"):
        skip = False
        for a in args:
            if skip:
                skip = False
            elif a in ("-k", "-m", "-p", "-o", "--deselect", "--rootdir", "-c", "--confcutdir", "--junitxml", "--junit-xml", "--basetemp", "--ignore", "--ignore-glob"):
                skip = True
            elif not a.startswith("-"):
                sc.reads.append(a)
    elif name in READERS:
        sc.reads.extend(operands)
    return sc


def _sed_files(args: list[str]) -> list[str]:
    """The file operands of a sed / perl -i command (the script is not a file)."""
    files = []
    script_given = False
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-e", "--expression", "-f", "--file"):
            script_given = True
            skip = True
            continue
        if a.startswith("-"):
            continue
        if not script_given:
            script_given = True
            continue
        files.append(a)
    return files


def _git_sub(args: list[str]) -> str:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-C", "-c", "--git-dir", "--work-tree"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return a
    return ""


_PATHLIKE = re.compile(r"""(?:(?<=^)|(?<=[\s'"=(,:\[]))((?:~|\.{1,2})?/?[A-Za-z0-9_.@+-]+(?:/[A-Za-z0-9_.@+*-]*)+|[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]*\.[A-Za-z0-9]{1,8})(?=$|[\s'",;:)\]])""")


def path_mentions(text: str) -> list[str]:
    """Path-shaped tokens anywhere in a text (quoted strings included)."""
    out = []
    for m in _PATHLIKE.finditer(text):
        p = m.group(1)
        if "://" in p or p.startswith("//"):
            continue
        out.append(p)
    return out
