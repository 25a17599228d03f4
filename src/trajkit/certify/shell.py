"""Shell command lines taken apart into what they read, write and run.

A best-effort, side-effect-free reading of POSIX shell text: heredoc bodies
are cut out, the line is split into simple commands at ``&& || ; | &`` and
newlines, and each simple command yields the paths it reads, the paths it
writes (redirections, ``tee``, ``sed -i``, ``rm``, ``mv`` ...), and whether its
writes can be replayed from the record (they never can: shell writes make an
event-rebuilt diff untrustworthy).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")

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
    """One simple command: its words, and the paths it reads and writes."""

    words: list[str]
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    cd: str | None = None
    code: str | None = None  # the program text of ``python -c`` / ``node -e`` / ``bash -c``

    @property
    def name(self) -> str:
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""

    @property
    def text(self) -> str:
        return " ".join(self.words)


def strip_heredocs(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The command text without heredoc bodies, and the bodies cut out
    (each with the command line that reads it)."""
    lines = text.split("\n")
    out: list[str] = []
    bodies: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        delims = [m.group(2) for m in _HEREDOC.finditer(line)]
        i += 1
        for d in delims:
            body = []
            while i < len(lines) and lines[i].strip() != d:
                body.append(lines[i])
                i += 1
            i += 1  # the delimiter line
            bodies.append((line, "\n".join(body)))
    return "\n".join(out), bodies


_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r]+)"""
    r"""|(?P<op>[;&|<>()]+)"""
    r"""|(?P<comment>\#.*)"""
    r"""|(?P<word>(?:[^\s;&|()<>'"\\]|\\.?|'[^']*'?|"(?:[^"\\]|\\.)*"?)+)"""
)
_UNQUOTE = re.compile(r"""'([^']*)'?|"((?:[^"\\]|\\.)*)"?|\\(.?)""")


def _unquote_word(w: str) -> str:
    if "'" not in w and '"' not in w and "\\" not in w:
        return w

    def sub(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return m.group(1)
        if m.group(2) is not None:
            return re.sub(r'\\([\\"$`])', r"\1", m.group(2))
        return m.group(3) or ""

    return _UNQUOTE.sub(sub, w)


def _tokens(text: str) -> list[str]:
    """Shell words and operator runs of one line (quotes removed, comments dropped),
    as ``shlex`` in POSIX mode with punctuation characters splits them."""
    toks: list[str] = []
    pos, n = 0, len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:  # a lone character no alternative takes
            toks.append(text[pos])
            pos += 1
            continue
        pos = m.end()
        kind = m.lastgroup
        if kind == "word":
            toks.append(_unquote_word(m.group(0)))
        elif kind == "op":
            toks.append(m.group(0))
        elif kind == "comment":
            break
    return toks


#: Interpreters: a heredoc or -c string fed to them is a program, not file content.
INTERPRETERS = {"python", "python2", "python3", "node", "ruby", "perl", "php", "bash", "sh", "zsh", "dash", "ksh", "deno", "bun"}
SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
#: Commands whose arguments are text or patterns, never files they open by name.
TEXT_ARGS = {"echo", "printf", "git", "grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "export", "alias", "test", "[", "[[", "true", "false", "set", "read"}


def base_name(word: str) -> str:
    name = word.rsplit("/", 1)[-1]
    m = re.match(r"^(python|pypy)[\d.]*$", name)
    return "python" if m else name


_SEPARATORS = {"&&", "||", ";", "|", "&", "\n", "(", ")", ";;", "|&"}
_REDIRECT = re.compile(r"^(\d*)(>>|>\||>|&>>|&>|<)$")


def split_commands(text: str) -> list[SimpleCommand]:
    """The simple commands of a shell line, with their reads and writes."""
    return list(_split_cached(text)) if len(text) < 4096 else _split(text)


@functools.lru_cache(maxsize=8192)
def _split_cached(text: str) -> tuple[SimpleCommand, ...]:
    return tuple(_split(text))


def _split(text: str) -> list[SimpleCommand]:
    body, _ = strip_heredocs(text)
    toks: list[str] = []
    for line in body.split("\n"):
        toks.extend(_tokens(line))
        toks.append("\n")
    cmds: list[SimpleCommand] = []
    cur: list[str] = []
    reads: list[str] = []
    writes: list[str] = []
    i = 0

    def flush() -> None:
        nonlocal cur, reads, writes
        if cur or reads or writes:
            cmds.append(_classify(cur, reads, writes))
        cur, reads, writes = [], [], []

    while i < len(toks):
        t = toks[i]
        if t in _SEPARATORS:
            flush()
            i += 1
            continue
        # shlex splits "2>" into "2" ">" and ">>" into ">" ">" : rebuild operators
        if t in (">", "<", ">>", ">|", "<<", "<<<", "<>", ">&", "<&", "&>"):
            op = t
            j = i + 1
            while j < len(toks) and toks[j] in (">", "&", "|") and len(op) < 3:
                op += toks[j]
                j += 1
            if cur and cur[-1].isdigit() and len(cur[-1]) == 1:
                cur.pop()
            target = toks[j] if j < len(toks) and toks[j] not in _SEPARATORS else None
            if target is not None:
                if op.startswith("<<"):
                    pass  # heredoc / herestring: the word is not a file
                elif op.endswith("&") or target.startswith("&"):
                    pass  # fd duplication
                elif op.startswith("<") and op != "<>":
                    reads.append(target)
                else:
                    if target not in ("/dev/null", "/dev/stderr", "/dev/stdout", "/dev/tty"):
                        writes.append(target)
                j += 1
            i = j
            continue
        cur.append(t)
        i += 1
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
