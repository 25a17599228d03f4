"""The cheap checks after orjson's decode (``jsonio.suspicious``) and their
fast paths: input that orjson writes back byte for byte (compact, or
``indent=2``), the colon count with ``\\u003a`` counted as a colon, the
``e+`` test for integers orjson bent into floats, and JSON Lines decoded
line by line.

Every expectation comes from the standard library, an independent route:
``json.loads`` with an ``object_pairs_hook`` that sees every key written twice
and a ``parse_int`` that sees every integer beyond 64 bits. Nothing may be lost
silently: whenever the standard library sees a duplicate key or a big
integer, ``jsonio.loads`` must say so; whenever it sees neither, the value
must be the standard library's.
"""

from __future__ import annotations

import json
import random

import orjson
import pytest

from trajkit import jsonio
from trajkit.reading import io as read_io

INT_MIN = -(1 << 63)
UINT_MAX = (1 << 64) - 1


def stdlib_view(data: bytes) -> tuple[object, bool, bool]:
    """The value, whether a key is written twice, whether an integer is beyond 64 bits."""
    dup = []
    big = []

    def pairs(items):
        if len({k for k, _ in items}) != len(items):
            dup.append(items)
        return dict(items)

    def parse_int(text):
        v = int(text)
        if v < INT_MIN or v > UINT_MAX:
            big.append(v)
        return v

    value = json.loads(data.decode("utf-8"), object_pairs_hook=pairs, parse_int=parse_int)
    return value, bool(dup), bool(big)


def assert_nothing_lost(data: bytes) -> None:
    want, dup, big = stdlib_view(data)
    got, d = jsonio.loads(data, "t.json")
    if dup:
        assert d is not None and d.code == "json.duplicate-key", (data[:200], d)
    elif big:
        assert d is not None and d.code == "json.big-integer", (data[:200], d)
    else:
        assert d is None, (data[:200], d)
    assert got == want and type(got) is type(want), data[:200]
    if big:  # exact integers, never the rounded float
        assert repr(got) == repr(want)


LAYOUTS = {
    "compact": lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False),
    "indent2": lambda v: json.dumps(v, indent=2, ensure_ascii=False),
    "indent2-ascii": lambda v: json.dumps(v, indent=2),
    "indent4": lambda v: json.dumps(v, indent=4),
    "python-default": lambda v: json.dumps(v),
    "indent1": lambda v: json.dumps(v, indent=1, ensure_ascii=False),
}


# ---------------------------------------------------------------- duplicate keys


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_key_written_twice_is_caught_in_every_layout(layout):
    doc = {"id": 7, "action": {"command": "ls", "path": "/a:b"}, "args": [1, 2]}
    text = LAYOUTS[layout](doc)
    assert_nothing_lost(text.encode())
    # the same text with the first "command" member written once more, before it
    i = text.index('"command"')
    dup = text[:i] + '"command": "rm -rf /",' + text[i:]
    value, d = jsonio.loads(dup.encode(), "t.json")
    assert d is not None and d.code == "json.duplicate-key" and "'command'" in d.message
    assert d.offset == len(dup[: i + len('"command": "rm -rf /",')].encode())
    assert value["action"]["command"] == "ls"  # the last value, as the standard library keeps it


def test_a_pretty_printed_file_of_indent_2_with_a_duplicate_key_is_caught():
    doc = [{"id": i, "message": f"step {i}", "extras": {"a": i}} for i in range(30)]
    text = json.dumps(doc, indent=2)
    assert text.encode() == orjson.dumps(doc, option=orjson.OPT_INDENT_2)  # the byte-for-byte fast path
    assert jsonio.loads(text.encode()) == (doc, None)
    # an object deep in the list names "a" twice: the re-encoding differs, the colons say why
    bad = text.replace('"a": 17', '"a": 99,\n        "a": 17')
    value, d = jsonio.loads(bad.encode(), "t.json")
    assert d is not None and d.code == "json.duplicate-key" and value[17]["extras"] == {"a": 17}


@pytest.mark.parametrize("spelling", ["\\u003a", "\\u003A"])
def test_an_escaped_colon_does_not_hide_a_duplicate_key(spelling):
    # the escaped colon adds one colon to the re-encoding, the dropped member
    # takes one away: the counts agree only if the escape is counted
    text = '{"url' + spelling + '": "x", "cmd": "ls", "cmd": "rm"}'
    assert_nothing_lost(text.encode())
    value, d = jsonio.loads(text.encode())
    assert d is not None and d.code == "json.duplicate-key" and value == {"url:": "x", "cmd": "rm"}
    # in a key and in a value, no duplicate: read as it is, nothing flagged
    for clean in ('{"a' + spelling + 'b": "c' + spelling + 'd"}', '{\n  "k' + spelling + '": 1\n}'):
        assert_nothing_lost(clean.encode())
        assert jsonio.loads(clean.encode())[1] is None


def test_colons_inside_strings_neither_hide_nor_fake_a_duplicate_key():
    clean = b'{\n    "t": "12:30:45 a:b:c", "u": "http://x:80/"\n}'
    assert jsonio.loads(clean) == ({"t": "12:30:45 a:b:c", "u": "http://x:80/"}, None)
    # a duplicate whose dropped value holds colons of its own
    dup = b'{"t": "a:b:c", "x": 1, "t": "d"}'
    value, d = jsonio.loads(dup)
    assert d is not None and d.code == "json.duplicate-key" and value == {"t": "d", "x": 1}
    # an escaped backslash before u003a is text, not a colon: at most a false alarm, never a miss
    assert_nothing_lost(b'{"p": "C\\\\u003a\\\\dir", "p": 2}')
    assert_nothing_lost(b'{"p": "C\\\\u003a\\\\dir"}')


# ---------------------------------------------------------------- integers beyond 64 bits


@pytest.mark.parametrize(
    "number, big",
    [
        ("9223372036854775807", False),  # 19 digits, int64 max
        ("-9223372036854775808", False),  # 19 digits, int64 min
        ("-9223372036854775809", True),  # 19 digits, one below: orjson reads a float
        ("-9999999999999999999", True),
        ("18446744073709551615", False),  # 20 digits, uint64 max
        ("18446744073709551616", True),
        ("99999999999999999999", True),
        ("-18446744073709551615", True),  # 20 digits after a minus
        ("100000000000000000000", True),  # 21 digits
        ("-123456789012345678901", True),
    ],
)
@pytest.mark.parametrize("layout", ["compact", "indent2", "python-default"])
def test_19_20_and_21_digit_integers(number, big, layout):
    template = LAYOUTS[layout]({"n": "@", "list": [1, "@"]})
    text = template.replace('"@"', number).encode()
    want, _, seen_big = stdlib_view(text)
    assert seen_big is big
    assert_nothing_lost(text)
    # as a whole document, and as a JSON Lines line
    assert_nothing_lost(number.encode())
    diags: list = []
    got = [jl.value for jl in read_io.iter_jsonl(b'{"a":1}\n' + text.replace(b"\n", b" ") + b"\n", "t.jsonl", diags)]
    assert got[1] == want
    assert [d.code for d in diags] == (["json.big-integer"] if big else [])


def test_a_big_integer_is_caught_when_the_output_holds_other_exponents():
    # a float of 1e16 or more, or "e+" in a string, sends the check to the digit scan
    for text in (
        b'{"f": 1e+300, "n": 123456789012345678901}',
        b'{"f": 2.5e20, "n": -9223372036854775809}',
        b'{"s": "the+e+ sign", "n": [18446744073709551616]}',
        ('{"s": "' + "a+" * 40 + 'e+", "n": 123456789012345678901}').encode(),
        ('{"s": "' + "a+" * 40 + '", "n": 123456789012345678901}').encode(),
    ):
        assert_nothing_lost(text)
        assert jsonio.loads(text)[1].code == "json.big-integer"
    # the same without a big integer: nothing flagged
    for text in (b'{"f": 1e+300, "n": 12345678901234567}', b'{"s": "e+e+e+", "big": 1.8446744073709552e+19}'):
        assert_nothing_lost(text)


def test_floats_with_20_or_more_digits_are_not_integers():
    for text in (
        b'{"latency": 0.00017189979553222656}',
        b'{\n  "x": 1.234567890123456789012345,\n  "y": -0.000000000000000000001\n}',
        b'{"x": 12345678901234567890.5, "y": 1.5e-300, "z": 123456789012345678901e-3}',
        b'{"id": "000000000000400080000000000000", "sha": "sha256:00000000000000000000000000000000"}',
    ):
        assert_nothing_lost(text)  # no diagnostic, and the floats as the standard library reads them


# ---------------------------------------------------------------- NaN / Infinity, nesting


def test_nan_inside_strings_is_text_and_bare_nan_is_flagged():
    for text in (b'{"a": "NaN", "b": "Infinity", "c": "-Infinity"}', b'{\n  "a": "NaN"\n}'):
        assert jsonio.loads(text)[1] is None
    for text in (b'{"a": NaN}', b'{\n  "a": [1, Infinity]\n}', b'{"a": -Infinity}'):
        value, d = jsonio.loads(text)
        assert d is not None and d.code == "json.nonstandard"
        assert value == json.loads(text) or value["a"] != value["a"]  # NaN is not equal to itself


def test_deep_nesting_in_a_pretty_printed_file_is_flagged():
    value: object = 1
    for _ in range(300):
        value = [value]
    text = json.dumps({"deep": value}, indent=2).encode()
    got, d = jsonio.loads(text, "t.json")
    assert d is not None and d.code == "json.too-deep"
    assert jsonio.dumps(got)


# ---------------------------------------------------------------- differential: random documents


def _random_value(rng: random.Random, depth: int) -> object:
    r = rng.random()
    if depth > 4 or r < 0.45:
        return rng.choice([
            rng.randint(-(10**6), 10**6),
            rng.choice([INT_MIN, INT_MIN - 1, UINT_MAX, UINT_MAX + 1, 10**25, -(10**25), 10**19, -(10**19)]),
            rng.random() * 10 ** rng.randint(-30, 30),
            rng.choice(["a:b", "e+", "x\u003ay", "NaN", "é", "\u2028", "12345678901234567890123", "\\u003a", "\"}", ""]),
            None, True, False,
        ])
    if r < 0.75:
        keys = [rng.choice(["a", "b", "c", "k:", "é", "cmd"]) for _ in range(rng.randint(0, 4))]
        return {k: _random_value(rng, depth + 1) for k in keys}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def _with_duplicate(text: str, rng: random.Random) -> str:
    """``text`` with one object's first member written once more before it."""
    starts = [i for i, c in enumerate(text) if c == "{" and text[i + 1 : i + 2] not in ("}", "")]
    if not starts:
        return text
    i = rng.choice(starts) + 1
    # the member runs to the first comma or closing brace at depth 0 outside strings
    depth, j, in_str = 0, i, False
    while j < len(text):
        c = text[j]
        if in_str:
            if c == "\\":
                j += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            break
        j += 1
    member = text[i:j].strip()
    return text[:i] + member + "," + text[i:]


def test_random_documents_in_every_layout_lose_nothing():
    rng = random.Random(20261201)
    checked = dup_seen = big_seen = 0
    for _ in range(600):
        value = {"root": _random_value(rng, 0)}
        for layout, write in LAYOUTS.items():
            text = write(value)
            if rng.random() < 0.5:
                text = text.replace(":", "\\u003a", 1) if '":' not in text[:3] and rng.random() < 0.2 else text
                text = _with_duplicate(text, rng)
            data = text.encode()
            try:
                _, dup, big = stdlib_view(data)
            except ValueError:
                continue
            assert_nothing_lost(data)
            checked += 1
            dup_seen += dup
            big_seen += big
    assert checked > 3000 and dup_seen > 300 and big_seen > 300, (checked, dup_seen, big_seen)


# ---------------------------------------------------------------- JSON Lines


def test_json_lines_fast_path_keeps_line_numbers_offsets_and_raw_bytes():
    lines = [
        b'{"a":1}',
        b"",
        b'{"b": 2, "b": 3}',  # not compact, a duplicate
        b"   ",
        b'{"c":"x:y","n":18446744073709551616}\r',  # CRLF, a big integer
        b"not json",
        b'{"d":[1,2,{"e":null}]}',
        b'{"cut": "no newl',
    ]
    data = b"\n".join(lines)
    diags: list = []
    got = list(read_io.iter_jsonl(data, "t.jsonl", diags))
    offsets, pos = [], 0
    for ln in lines:
        offsets.append(pos)
        pos += len(ln) + 1
    want_rows = [k for k, ln in enumerate(lines) if ln.strip()]
    assert [jl.line for jl in got] == [k + 1 for k in want_rows]
    assert [jl.offset for jl in got] == [offsets[k] for k in want_rows]
    assert [jl.raw for jl in got] == [lines[k] for k in want_rows]
    assert got[0].value == {"a": 1} and got[1].value == {"b": 3} and got[2].value == {"c": "x:y", "n": 18446744073709551616}
    assert got[3].value is jsonio.MISSING and got[4].value == {"d": [1, 2, {"e": None}]} and got[5].value is jsonio.MISSING
    assert [(d.code, d.line) for d in diags] == [
        ("json.duplicate-key", 3),
        ("json.big-integer", 5),
        ("jsonl.invalid-line", 6),
        ("jsonl.truncated-line", 8),
    ]
    dup = diags[0]
    assert dup.offset == offsets[2] + lines[2].index(b'"b": 3')
    # with a final newline the last line is a bad line, not a cut-off one
    diags = []
    list(read_io.iter_jsonl(data + b"\n", "t.jsonl", diags))
    assert diags[-1].code == "jsonl.invalid-line" and diags[-1].line == 8


def test_json_lines_of_the_corpus_match_a_line_by_line_stdlib_decode(corpus):
    seen = 0
    for p in sorted(corpus.rglob("*.jsonl")):
        data = p.read_bytes()
        diags: list = []
        got = {jl.line: jl.value for jl in read_io.iter_jsonl(data, str(p), diags)}
        flagged = {d.line for d in diags}
        for k, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                assert k not in got
                continue
            try:
                want, dup, big = stdlib_view(line)
            except (ValueError, RecursionError):
                assert got[k] is jsonio.MISSING or k in flagged
                continue
            assert got[k] == want, (p, k)
            if dup or big:
                assert k in flagged, (p, k)
            seen += 1
    assert seen > 500


def test_json_lines_a_line_nested_too_deep_to_write_back_is_flagged_and_kept():
    deep = b'{"d":' + b"[" * 300 + b"1" + b"]" * 300 + b"}"
    data = b'{"a":1}\n' + deep + b'\n7\n-9223372036854775809\n1.5\n'
    diags: list = []
    got = list(read_io.iter_jsonl(data, "t.jsonl", diags))
    assert [jl.line for jl in got] == [1, 2, 3, 4, 5]
    assert [(d.code, d.line) for d in diags] == [("json.too-deep", 2), ("json.big-integer", 4)]
    assert got[2].value == 7 and got[3].value == -9223372036854775809 and type(got[3].value) is int and got[4].value == 1.5
    assert jsonio.dumps(got[1].value)  # clipped, so it writes back


# ---------------------------------------------------------------- dumps_python (step texts)
#
# ``jsonio.dumps_python`` writes a mapping member by member and long strings
# with orjson; the expectation is the standard library's own
# ``json.dumps(value, ensure_ascii=False)``.


def test_dumps_python_escapes_every_code_point_as_the_standard_library():
    # each code point alone, and inside a string long enough to take the orjson path
    for cp in list(range(0, 0xD800, 7)) + list(range(0xD800, 0xE000, 97)) + list(range(0xE000, 0x110000, 331)) + list(range(0, 0x100)):
        c = chr(cp)
        for s in (c, c * 200, "x" * 130 + c, c + "y" * 140):
            assert jsonio.dumps_python(s) == json.dumps(s, ensure_ascii=False), hex(cp)
            args = {"path": "/a", "content": s, "n": 1}
            assert jsonio.dumps_python(args) == json.dumps(args, ensure_ascii=False), hex(cp)


def _random_args(rng: random.Random) -> object:
    pool = ["", "a", "é", "\u2028", "\x00\x1f\x7f", "\ud800", '"}\\', "x" * 127, "y" * 128, "line\n" * 60 + "\ud83d\ude00",
            "z" * 300 + "\udcff"]
    def scalar() -> object:
        return rng.choice([rng.choice(pool), rng.randint(-5, 5), rng.choice([INT_MIN - 1, UINT_MAX + 1, 10**30]),
                           rng.random(), float("nan"), float("inf"), -0.0, 1e16, 1e-5, None, True, False])
    def value(depth: int) -> object:
        r = rng.random()
        if depth > 2 or r < 0.6:
            return scalar()
        if r < 0.8:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(pool[:6]): value(depth + 1) for _ in range(rng.randint(0, 3))}
    keys = [rng.choice(["command", "path", "content", "é", "", "old_str", "new_str", "k\"", "\ud800"]) for _ in range(rng.randint(0, 6))]
    out: dict = {k: value(0) for k in keys}
    if rng.random() < 0.1:  # keys json.dumps converts
        out[rng.choice([1, 2.5, None, True])] = scalar()
    return out


def test_dumps_python_writes_random_arguments_as_the_standard_library():
    rng = random.Random(15)
    for _ in range(3000):
        args = _random_args(rng)
        assert jsonio.dumps_python(args) == json.dumps(args, ensure_ascii=False), args
    # other top-level values take the C encoder as they are
    for v in ([1, "x" * 200, {"a": None}], 3, 2.5, None, True, "s"):
        assert jsonio.dumps_python(v) == json.dumps(v, ensure_ascii=False)


def test_dumps_python_leaving_out_a_member_writes_the_mapping_without_it():
    # the step text's "name(args without thought)": the same text as json.dumps of a copy without the member
    rng = random.Random(16)
    for _ in range(3000):
        args = _random_args(rng)
        if rng.random() < 0.5:
            args["thought"] = rng.choice(["why", "x" * 200, None, [1, {"a": "b"}]])
        want = json.dumps({k: v for k, v in args.items() if k != "thought"}, ensure_ascii=False)
        assert jsonio.dumps_python(args, "thought") == want, args
    assert jsonio.dumps_python({"thought": "t"}, "thought") == "{}"
    assert jsonio.dumps_python({1: "a", "thought": "t", "b": 2}, "thought") == json.dumps({1: "a", "b": 2}, ensure_ascii=False)

    class Sub(dict):
        pass

    assert jsonio.dumps_python(Sub(thought="t", a=1), "thought") == '{"a": 1}'
    # other values take no member out
    for v in ([1, "thought"], "thought", 3, None):
        assert jsonio.dumps_python(v, "thought") == json.dumps(v, ensure_ascii=False)


def test_dumps_python_keys_met_before_and_new_keys_write_the_same():
    # the '"key": ' texts kept between calls are those of str keys only, and the store stops growing
    import trajkit.jsonio as j

    keys = [f"k{i}\n\u00e9\"" for i in range(3000)]
    for k in keys:
        assert j.dumps_python({k: 1, 1: 2}) == json.dumps({k: 1, 1: 2}, ensure_ascii=False)
        assert j.dumps_python({k: "v", "path": "/a"}) == json.dumps({k: "v", "path": "/a"}, ensure_ascii=False)
    for k in reversed(keys):  # kept or not, the text is the same
        assert j.dumps_python({k: None}) == json.dumps({k: None}, ensure_ascii=False)
    # a key equal to a kept one but of another type is converted as json.dumps converts it
    # (one mapping each: 1 and True are the same Python key)
    for m in ({"1": 1, 1: 2}, {"true": 1, True: 3}, {"null": 1, None: 4}, {"1.5": 1, 1.5: 2}):
        assert j.dumps_python(m) == json.dumps(m, ensure_ascii=False)
    cells = [c.cell_contents for c in j.dumps_python.__closure__ if isinstance(c.cell_contents, dict)]
    assert cells and all(len(c) <= 1024 and all(type(k) is str for k in c) for c in cells)


def test_dumps_python_of_every_v0_action_in_the_corpus_is_the_standard_library(corpus):
    seen = 0
    for p in sorted((corpus / "openhands_v0").rglob("*.json")):
        try:
            value = json.loads(p.read_bytes())
        except ValueError:
            continue
        for ev in value if isinstance(value, list) else [value]:
            args = ev.get("args") if isinstance(ev, dict) else None
            if isinstance(args, dict):
                assert jsonio.dumps_python(args) == json.dumps(args, ensure_ascii=False), p
                seen += 1
    assert seen > 50
