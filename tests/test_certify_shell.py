"""The shell reader (issue 14 item 12): quote-aware tokenising, commands shown
as written, secret masks that are not redirections.

Expected values are derived by hand from each command line; two independent
routes back them up: ``shlex`` (POSIX mode) for the words of operator-free
lines, and bash itself, run in an empty directory with no ``PATH``, for the
files a line's redirections create.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from certify_shapes import junit, v1_run
from trajkit.certify import CertifyOptions, certify
from trajkit.certify.shell import split_commands, strip_heredocs


def _summary(text: str) -> list[tuple[list[str], list[str], list[str], str]]:
    return [(c.words, c.reads, c.writes, c.text) for c in split_commands(text)]


# command, [(words, reads, writes, text as written)] -- all derived by hand
CASES = [
    # the OpenHands Cloud secret mask is part of the URL, not "< redacted" and "> @github.com/..."
    ("git clone https://<redacted>@github.com/org/repo.git",
     [(["git", "clone", "https://<redacted>@github.com/org/repo.git"], [], [], "git clone https://<redacted>@github.com/org/repo.git")]),
    ("git remote set-url origin https://x-access-token:<redacted>@github.com/o/r && git push",
     [(["git", "remote", "set-url", "origin", "https://x-access-token:<redacted>@github.com/o/r"], [], [],
       "git remote set-url origin https://x-access-token:<redacted>@github.com/o/r"),
      (["git", "push"], [], [], "git push")]),
    ("export GITHUB_TOKEN=<redacted>; curl -H 'Authorization: token <secret_hidden>' https://api.github.com",
     [(["export", "GITHUB_TOKEN=<redacted>"], [], [], "export GITHUB_TOKEN=<redacted>"),
      (["curl", "-H", "Authorization: token <secret_hidden>", "https://api.github.com"], [], [],
       "curl -H 'Authorization: token <secret_hidden>' https://api.github.com")]),
    ("gh auth login --with-token <redacted>",
     [(["gh", "auth", "login", "--with-token", "<redacted>"], [], [], "gh auth login --with-token <redacted>")]),
    # quoting kept in the evidence; the redirection target found
    ("printf 'Hello, world!\\n' > hello.txt",
     [(["printf", "Hello, world!\\n"], [], ["hello.txt"], "printf 'Hello, world!\\n' > hello.txt")]),
    ('echo "a > b" > out.txt',
     [(["echo", "a > b"], [], ["out.txt"], 'echo "a > b" > out.txt')]),
    ("echo 'x | y; z && w' >> log.txt",
     [(["echo", "x | y; z && w"], [], ["log.txt"], "echo 'x | y; z && w' >> log.txt")]),
    ('echo "say \\"hi\\" > there" > q.txt',
     [(["echo", 'say "hi" > there'], [], ["q.txt"], 'echo "say \\"hi\\" > there" > q.txt')]),
    ("echo it\\'s \\> fine > esc.txt",
     [(["echo", "it's", ">", "fine"], [], ["esc.txt"], "echo it\\'s \\> fine > esc.txt")]),
    ("echo 'don'\\''t' > apos.txt",
     [(["echo", "don't"], [], ["apos.txt"], "echo 'don'\\''t' > apos.txt")]),
    ("printf $'tab\\there' > ansi.txt",
     [(["printf", "tab\there"], [], ["ansi.txt"], "printf $'tab\\there' > ansi.txt")]),
    # file descriptors
    ("make test 2>&1 | tee build.log",
     [(["make", "test"], [], [], "make test 2>&1"), (["tee", "build.log"], [], ["build.log"], "tee build.log")]),
    ("pytest -q >|report.txt 2>errors.txt",
     [(["pytest", "-q"], [], ["report.txt", "errors.txt"], "pytest -q >|report.txt 2>errors.txt")]),
    ("python run.py &> all.log &",
     [(["python", "run.py"], ["run.py"], ["all.log"], "python run.py &> all.log")]),
    ("ls >/dev/null 2>&1 && cat < in.txt",
     [(["ls"], [], [], "ls >/dev/null 2>&1"), (["cat"], ["in.txt"], [], "cat < in.txt")]),
    ("exec 3>&- 1>&2",
     [([], [], [], "exec 3>&- 1>&2")]),
    # command substitution: the inner command is read too (first: the shell runs it first)
    ('echo "$(cat notes/secret.txt)" > copy.txt',
     [(["cat", "notes/secret.txt"], ["notes/secret.txt"], [], "cat notes/secret.txt"),
      (["echo", "$(cat notes/secret.txt)"], [], ["copy.txt"], 'echo "$(cat notes/secret.txt)" > copy.txt')]),
    ("wc -l `ls src/*.py` > count.txt",
     [(["ls", "src/*.py"], ["src/*.py"], [], "ls src/*.py"),
      (["wc", "-l", "`ls src/*.py`"], ["`ls src/*.py`"], ["count.txt"], "wc -l `ls src/*.py` > count.txt")]),
    ("echo $((1 + 2)) > sum.txt",
     [(["echo", "$((1 + 2))"], [], ["sum.txt"], "echo $((1 + 2)) > sum.txt")]),
    ("diff <(sort a.txt) <(sort b.txt) > d.txt",
     [(["sort", "a.txt"], ["a.txt"], [], "sort a.txt"), (["sort", "b.txt"], ["b.txt"], [], "sort b.txt"),
      (["diff", "/dev/fd/63", "/dev/fd/63"], [], ["d.txt"], "diff <(sort a.txt) <(sort b.txt) > d.txt")]),
    # heredocs: the body is not shell; quoted delimiters, <<- and herestrings
    ("cat > notes.md <<'EOF'\nrm -rf / > x; echo $(cat y)\nEOF\nls",
     [(["cat"], [], ["notes.md"], "cat > notes.md <<'EOF'"), (["ls"], [], [], "ls")]),
    ('cat <<"END" > t.txt\n  a > b\nEND',
     [(["cat"], [], ["t.txt"], 'cat <<"END" > t.txt')]),
    ("cat <<-EOF >> tabbed.txt\n\tx > y\n\tEOF\necho done",
     [(["cat"], [], ["tabbed.txt"], "cat <<-EOF >> tabbed.txt"), (["echo", "done"], [], [], "echo done")]),
    ('cat <<< "EOF" > here.txt\nrm stale.txt',
     [(["cat"], [], ["here.txt"], 'cat <<< "EOF" > here.txt'), (["rm", "stale.txt"], [], ["stale.txt"], "rm stale.txt")]),
    ('echo "<<EOF" > marker.txt\nrm old.txt',
     [(["echo", "<<EOF"], [], ["marker.txt"], 'echo "<<EOF" > marker.txt'), (["rm", "old.txt"], [], ["old.txt"], "rm old.txt")]),
    # a quoted string spanning lines is one word; a comment is no command
    ("python -c \"import os\nprint(os.getcwd())\" > cwd.txt  # where am I",
     [(["python", "-c", "import os\nprint(os.getcwd())"], [], ["cwd.txt"], "python -c \"import os\nprint(os.getcwd())\" > cwd.txt")]),
    ("echo one \\\n  two > cont.txt",
     [(["echo", "one", "two"], [], ["cont.txt"], "echo one \\\n  two > cont.txt")]),
    # sub-shells and groups
    ("(cd build && make) > make.log",
     [(["cd", "build"], [], [], "cd build"), (["make"], [], [], "make"), ([], [], ["make.log"], "> make.log")]),
]


@pytest.mark.parametrize("line,expected", CASES, ids=[c[0][:40] for c in CASES])
def test_split_commands(line, expected):
    assert _summary(line) == expected


def test_cd_inside_a_subshell_and_the_sed_script_is_not_a_file():
    cmds = split_commands("sed -i 's/a > b/c/' 'src/my file.py'")
    assert [(c.words, c.writes) for c in cmds] == [(["sed", "-i", "s/a > b/c/", "src/my file.py"], ["src/my file.py"])]


SHLEX_LINES = [
    "printf 'Hello, world!\\n'",
    'echo "a \\"b\\" c" \'d\'"e"',
    "grep -rn \"foo bar\" src/ --include='*.py'",
    "python -c \"print('x')\"",
    "echo 'don'\\''t' it\\'s",
    "git commit -m \"fix: handle 'quoted' names\"",
]


@pytest.mark.parametrize("line", SHLEX_LINES)
def test_words_agree_with_shlex(line):
    (cmd,) = split_commands(line)
    assert cmd.words == shlex.split(line, posix=True)
    assert cmd.text == line


# lines that only use bash builtins: run in an empty directory with no PATH,
# the files they create are exactly their redirection targets
BASH_LINES = [
    "printf 'Hello, world!\\n' > hello.txt",
    'echo "a > b" > out.txt',
    "echo 'x | y; z' >> app.txt",
    'echo "say \\"hi\\" > there" > q.txt',
    "echo it\\'s \\> fine > esc.txt",
    "echo hi &> both.txt",
    "echo x 2>&1 >|o1.txt",
    "echo a 1>one.txt 2>two.txt",
    ": > 'with space.txt'",
    'echo "$(echo inner > inner.txt)" > outer.txt',
    "echo `echo bt > bt.txt` > bt-out.txt",
    ": <<'EOF' > hd.txt\nline > notafile.txt\nEOF",
    ": <<-EOF >> tabbed.txt\n\tx > nope.txt\n\tEOF",
    ': <<< "x > nofile.txt" > here.txt',
    "echo one \\\n  two > cont.txt",
    "(echo sub) > sub.txt",
    "printf $'tab\\there' > ansi.txt",
    "echo '<<EOF' > marker.txt\n: > after.txt",
]


def _written(line: str) -> set[str]:
    out: set[str] = set()
    for c in split_commands(line):
        out.update(w for w in c.writes if not w.startswith("<"))
    return out


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("line", BASH_LINES)
def test_redirection_targets_agree_with_bash(tmp_path, line):
    bash = shutil.which("bash")
    assert subprocess.run([bash, "-n", "-c", line], capture_output=True).returncode == 0
    subprocess.run([bash, "--noprofile", "--norc", "-c", line], cwd=tmp_path, env={"PATH": ""}, capture_output=True, timeout=10)
    created = {p.name for p in tmp_path.iterdir()}
    assert created, line
    assert _written(line) == created


def test_strip_heredocs_keeps_the_lines_and_returns_the_bodies():
    text = "cat > a.py <<'EOF'\nprint('<<NOT')\nEOF\npython3 - <<PY\nimport os\nPY\necho done"
    rest, bodies = strip_heredocs(text)
    assert rest == "cat > a.py <<'EOF'\npython3 - <<PY\necho done"
    assert bodies == [("cat > a.py <<'EOF'", "print('<<NOT')"), ("python3 - <<PY", "import os")]


def test_hostile_shell_text_never_raises():
    deep = ['"$(' * 3000, "$(" * 3000, '$("' * 3000, "<(" * 3000, "${" * 3000, "$((" * 3000, "`" * 3001]  # nesting: no RecursionError
    for line in ["'unterminated", '"open $(', "$(((", "`", "<<", "cat <<EOF", "echo \\", ">", "2>&", "<(", "$'\\", "${x", ")))(((", *deep]:
        for c in split_commands(line):
            assert isinstance(c.text, str)
        strip_heredocs(line)


# ---------------------------------------------------------------- through certify


def _certify(tmp_path: Path, cmd: str):
    run = v1_run(tmp_path / "conv", [{"terminal": cmd, "output": ""}])
    green = junit(tmp_path / "green.xml", {"t": "passed"})
    return certify(str(run), CertifyOptions(visible=(str(green),), holdout=(str(green),)))


def test_a_masked_clone_url_is_no_phantom_write(tmp_path):
    cert = _certify(tmp_path, "git clone https://<redacted>@github.com/org/repo.git")
    assert cert.diff.get("unreconstructable", []) == []  # the key is left out when empty
    assert cert.diff["trustworthy"] is True
    tokens = [ev["token"] for f in cert.findings for ev in f["evidence"]]
    assert tokens == ["exec git clone https://<redacted>@github.com/org/repo.git"]


def test_a_shell_write_is_shown_as_written_with_its_target(tmp_path):
    cmd = "printf 'Hello, world!\\n' > hello.txt"
    cert = _certify(tmp_path, cmd)
    assert [(u["command"], u["path"]) for u in cert.diff["unreconstructable"]] == [(cmd, "hello.txt")]
    assert cmd in cert.diff["reason"]
    # and in the JSON certificate, byte for byte after decoding
    assert json.loads(json.dumps(cert.to_dict()))["diff"]["unreconstructable"][0]["command"] == cmd
