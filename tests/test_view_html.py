"""``trajkit view``: pages written by the real CLI, opened in a real browser
(Debian's ``chromium`` driven by Playwright; never a downloaded browser).

Expected counts and texts come from the raw files (event files, JSON lists,
what a test wrote itself), never from trajkit's reader, except where a test
says it checks the page against the session for every format.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, REPO, run_cli
from view_shapes import long_v0_run

EXAMPLES = REPO / "examples"
V0_TRIAL = EXAMPLES / "openhands-v0-trial"
SDK_EXAMPLE = EXAMPLES / "openhands-sdk-conversation"
TRIALS = CORPUS / "openhands_v0" / "reconstructed_trials"
ROWS = CORPUS / "openhands_v0" / "ctb_manifest_rows"
ARTIFACTS = REPO / "tests" / "artifacts"


# ---------------------------------------------------------------- the browser


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("chromium is not installed (apt-get install -y chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield b
        b.close()


class Opened:
    """A page opened from a file, with every console message, page error,
    dialog and request it made."""

    def __init__(self, browser, path: Path, fragment: str = "", width: int = 1100, height: int = 700):
        self.ctx = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.ctx.new_page()
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url + fragment)
        self.page.wait_for_selector("body[data-ready='1']", timeout=60_000)

    def close(self) -> None:
        self.ctx.close()

    def clean(self) -> None:
        """No console error or warning, no page error, no dialog, and no request but the page itself."""
        bad = [m for m in self.console if m[0] in ("error", "warning")]
        assert not bad and not self.errors and not self.dialogs, (bad, self.errors, self.dialogs)
        assert [u for u in self.requests if u.split("#")[0] != self.url] == []

    def wait(self, expression: str, timeout: float = 30.0) -> None:
        """Wait until ``expression`` is true in the page (polled from here:
        the page's Content-Security-Policy forbids the in-page eval that
        Playwright's wait_for_function uses)."""
        import time

        end = time.monotonic() + timeout
        while not self.page.evaluate(expression):
            assert time.monotonic() < end, f"timed out waiting for {expression}"
            self.page.wait_for_timeout(50)

    def steps(self) -> int:
        return self.page.locator("#timeline > .step").count()


@pytest.fixture
def opened(browser):
    pages: list[Opened] = []

    def open_(path: Path, fragment: str = "", width: int = 1100, height: int = 700) -> Opened:
        o = Opened(browser, path, fragment, width, height)
        pages.append(o)
        return o

    yield open_
    for o in pages:
        o.close()


def view(run: Path, out: Path, *args: str) -> Path:
    p = run_cli("view", run, "--out", out, *args)
    assert p.returncode == 0, p.stderr
    assert out.is_file()
    return out


# ---------------------------------------------------------------- counts from the raw files


def test_v0_trial_page_has_every_step_of_the_raw_file(tmp_path, opened):
    expected = json.loads((V0_TRIAL / "EXPECTED.json").read_text())
    raw = json.loads((V0_TRIAL / expected["view_path"]).read_text())
    page = view(V0_TRIAL, tmp_path / "v0.html")
    o = opened(page)
    o.clean()
    assert o.steps() == expected["expected_step_count"] == len(expected["steps"])
    ids = o.page.eval_on_selector_all("#timeline > .step", "els => els.map(e => e.id)")
    assert ids == [f"step-{s['step_id']}" for s in expected["steps"]]
    # every user / agent message of the raw file that is no step's action is in the timeline too
    acted = {s["action_event_id"] for s in expected["steps"]}
    messages = [e for e in raw if e.get("action") == "message" and e["id"] not in acted and (e.get("message") or "").strip()]
    assert o.page.locator("#timeline > .note.message").count() == len(messages)
    assert o.page.locator("h1").inner_text() == expected["expected_task_text"].strip().splitlines()[0]


def test_sdk_page_counts_and_nests_the_sub_agent(tmp_path, opened):
    kinds = [json.loads(p.read_text())["kind"] for p in sorted((SDK_EXAMPLE / "events").glob("event-*.json"))]
    (child,) = [p for p in (SDK_EXAMPLE / "subagents").iterdir() if p.is_dir()]
    child_kinds = [json.loads(p.read_text())["kind"] for p in sorted((child / "events").glob("event-*.json"))]
    raws = [json.loads(p.read_text()) for p in sorted((SDK_EXAMPLE / "events").glob("event-*.json"))]
    o = opened(view(SDK_EXAMPLE, tmp_path / "sdk.html"))
    o.clean()
    assert o.steps() == kinds.count("ActionEvent")
    # the sub-agent sits inside the step whose observation names its task
    spawning = [r["action_id"] for r in raws if r["kind"] == "ObservationEvent" and "task_id" in (r.get("observation") or {})]
    action_pos = [i for i, r in enumerate(r for r in raws if r["kind"] == "ActionEvent") if r["id"] in spawning]
    holder = o.page.locator("#timeline > .step").nth(action_pos[0])
    sub = holder.locator("details.sub")
    assert sub.count() == 1
    assert sub.locator(".step").count() == child_kinds.count("ActionEvent")
    assert child.name[:8] in sub.locator("summary").inner_text().replace("-", "")
    # per-step tokens: the figures of the first step's model call, from its raw event
    first_action = next(r for r in raws if r["kind"] == "ActionEvent")
    assert first_action["llm_response_id"]
    assert re.search(r"in \d+ · out \d+", o.page.locator("#timeline > .step").first.locator(".fig").inner_text())


# ---------------------------------------------------------------- interaction


def test_expanding_an_observation_puts_its_whole_text_in_the_dom(tmp_path, opened):
    expected = json.loads((V0_TRIAL / "EXPECTED.json").read_text())
    raw = {e["id"]: e for e in json.loads((V0_TRIAL / expected["view_path"]).read_text())}
    longest = max(expected["steps"], key=lambda s: len(raw[s["observation_event_id"]].get("content") or ""))
    text = raw[longest["observation_event_id"]]["content"]
    assert len(text) > 400
    o = opened(view(V0_TRIAL, tmp_path / "v0.html"))
    step = o.page.locator(f"#step-{longest['step_id']}")
    obs = step.locator(":scope > .obs")
    tail = text.strip().splitlines()[-1]
    assert tail not in o.page.content()  # not in the DOM before it is expanded
    obs.locator("button.expand").click()
    assert obs.locator("pre.full").text_content() == text
    obs.locator("button.expand").click()  # and collapses again
    assert obs.locator("pre.full").count() == 0 and obs.locator("pre.preview").count() == 1
    o.clean()


def test_deep_link_scrolls_to_its_step(tmp_path, opened):
    run = long_v0_run(tmp_path / "run.json", 60)
    o = opened(view(run, tmp_path / "p.html"), "#step-41", height=700)
    box = o.page.locator("#step-41").bounding_box()
    assert 0 <= box["y"] < 120  # at the top, under the sticky bar
    assert "current" in o.page.locator("#step-41").get_attribute("class")
    assert o.page.evaluate("window.scrollY") > 1000
    # a link to an event that is a step's observation lands on that step
    o.page.evaluate("location.hash = '#event-84'")  # events: message, then action/observation pairs: 84 = step 41's observation
    o.wait("document.querySelector('.current') && document.querySelector('.current').id === 'step-42'")
    o.clean()


def test_filter_narrows_the_list(tmp_path, opened):
    def tweak(i, a, o):
        if a["action"] == "run":
            o["content"] = f"output {i}" + (" NEEDLE-IN-OUTPUT" if i % 7 == 0 else "")

    run = long_v0_run(tmp_path / "run.json", 50, tweak)
    raw = json.loads(run.read_text())
    want = sum(1 for e in raw if "observation" in e and "NEEDLE-IN-OUTPUT" in (e.get("content") or ""))
    assert want > 1
    o = opened(view(run, tmp_path / "p.html"))
    assert o.steps() == 50
    o.page.fill("#filter", "needle-in-output")
    o.wait(f"document.querySelectorAll('#timeline > .step').length === {want}")
    assert f"{want} of" in o.page.locator("#info").inner_text()
    o.page.fill("#filter", "")
    o.wait("document.querySelectorAll('#timeline > .step').length === 50")
    o.clean()


def test_keyboard_moves_to_next_and_previous_step(tmp_path, opened):
    run = long_v0_run(tmp_path / "run.json", 12)
    o = opened(view(run, tmp_path / "p.html"))
    o.page.keyboard.press("j")
    o.wait("location.hash === '#step-1'")
    o.page.keyboard.press("j")
    o.page.keyboard.press("j")
    o.wait("location.hash === '#step-3'")
    o.page.keyboard.press("k")
    o.wait("location.hash === '#step-2'")
    assert o.page.locator(".current").get_attribute("id") == "step-2"
    # typing in the filter box is typing, not navigation
    o.page.focus("#filter")
    o.page.keyboard.type("jk")
    assert o.page.evaluate("location.hash") == "#step-2"
    o.clean()


# ---------------------------------------------------------------- large runs


def test_large_run_is_paged_and_keeps_observations_out_of_the_dom(tmp_path, opened):
    marker = "TAIL-OF-OBSERVATION"

    def tweak(i, a, o):
        o["content"] = ("line\n" * 20) + f"{marker}-{i}"

    run = long_v0_run(tmp_path / "run.json", 2500, tweak)
    raw = json.loads(run.read_text())
    pairs = sum(1 for e in raw if "observation" in e)
    assert pairs == 2500
    o = opened(view(run, tmp_path / "p.html"))
    o.clean()
    # the user message and the first 999 steps on page 1 of 3
    assert o.page.locator("#timeline > *").count() == 1000 and o.steps() == 999
    html = o.page.content()
    assert marker not in html  # no observation's tail anywhere in the DOM, nor in the page's source
    assert marker not in (tmp_path / "p.html").read_text()
    # deep link into page 3
    o.page.evaluate("location.hash = '#step-2400'")
    o.wait("document.querySelector('.current') && document.querySelector('.current').id === 'step-2400'")
    assert "page 3 of 3" in o.page.locator("#info").inner_text()
    assert o.steps() == 2500 - 1999
    # paging back
    o.page.get_by_role("button", name="◀ page").click()
    o.wait("document.querySelector('#timeline').dataset.page === '1'")
    assert o.steps() == 1000
    # filtering searches every page
    o.page.fill("#filter", f"{marker}-2499")
    o.wait("document.querySelectorAll('#timeline > .step').length === 1")
    assert o.page.locator("#timeline > .step").get_attribute("id") == "step-2500"
    o.clean()


# ---------------------------------------------------------------- hostile text


HOSTILE = "<script>window.__pwned=1;alert('x')</script><img src=x onerror=\"window.__pwned=2\">&amp;</pre>"


def test_hostile_text_shows_as_text(tmp_path, opened):
    def tweak(i, a, o):
        if i == 0:
            assert a["action"] == "run"
            a["args"]["command"] = o["extras"]["command"] = f"echo '{HOSTILE}'"
            a["args"]["thought"] = HOSTILE
            o["content"] = HOSTILE * 40  # long: collapsed, then expanded
        if i == 1:  # an edit: the file name, the tool argument and the observation
            assert a["action"] == "edit"
            a["args"]["path"] = o["extras"]["path"] = f"/workspace/{HOSTILE}.py"
            o["content"] = HOSTILE
            a["args"]["content"] = HOSTILE

    run = long_v0_run(tmp_path / "run.json", 3, tweak)
    raw = json.loads(run.read_text())
    raw[0]["message"] = raw[0]["args"]["content"] = "task " + HOSTILE  # the task, in the header and title
    run.write_text(json.dumps(raw))
    page = view(run, tmp_path / "p.html")
    source = page.read_text()
    assert "<script>window.__pwned" not in source and "<img" not in source and "</pre>" not in source
    assert "&lt;script&gt;window.__pwned" in source  # the title, HTML-escaped
    assert source.count("<script") == 1 + 1 + 1 + 1  # the data block, the index, one timeline page, the program
    o = opened(page)
    o.page.locator("#step-1 > .obs button.expand").click()
    o.page.locator("#step-1 .diff button.expand").click() if o.page.locator("#step-1 .diff button.expand").count() else None
    assert o.page.evaluate("window.__pwned") is None
    o.clean()
    assert o.page.locator("script").count() == 4 and o.page.locator("#app img").count() == 0
    text = o.page.locator("#app").text_content()
    assert f"/workspace/{HOSTILE}.py" in text  # the file name
    assert f"echo '{HOSTILE}'" in text  # the tool argument
    assert HOSTILE * 40 in text  # the expanded observation
    assert o.page.locator("h1").text_content() == "task " + HOSTILE
    assert o.page.title().startswith("trajkit · task <script>")


# ---------------------------------------------------------------- certificate, diagnostics, labels


def test_certify_shows_state_and_findings_link_their_evidence(tmp_path, opened):
    from certify_shapes import v0_flat

    run = v0_flat(tmp_path / "run.json", [("ls", "a"), ("cat /workspace/tests/holdout/expected.txt", "42")])
    raw = json.loads(run.read_text())
    # the step whose command reads the holdout file, counted from the raw actions
    actions = [e for e in raw if e.get("action") in ("run", "read", "edit")]
    reader = next(i for i, e in enumerate(actions, 1) if "holdout" in json.dumps(e.get("args")))
    page = view(run, tmp_path / "p.html", "--certify")
    o = opened(page)
    o.clean()
    cert = o.page.locator(".card .badge").first.inner_text()
    assert cert.startswith("Failed")
    row = o.page.locator("table.findings tr", has_text="protected-read")
    link = row.locator("a", has_text=f"step {reader}")
    assert link.get_attribute("href") == f"#step-{reader}"
    link.click()
    o.wait(f"document.querySelector('.current') && document.querySelector('.current').id === 'step-{reader}'")
    # the same with a certificate file
    cfile = tmp_path / "cert.json"
    assert run_cli("certify", run, "--out", cfile).returncode == 0
    o2 = opened(view(run, tmp_path / "p2.html", "--certificate", str(cfile)))
    assert o2.page.locator(".card .badge").first.inner_text() == json.loads(cfile.read_text())["state"]
    assert o2.page.locator("table.findings a", has_text=f"step {reader}").count() == 1
    # a file that is no certificate cannot run
    bad = tmp_path / "bad.json"
    bad.write_text("[1]")
    p = run_cli("view", run, "--out", tmp_path / "p3.html", "--certificate", bad)
    assert p.returncode == 2 and "--certificate" in p.stderr


def test_diagnostics_link_to_the_step_or_event_they_concern(tmp_path, opened):
    def tweak(i, a, o):
        if i == 2:
            o["cause"] = 99999  # an observation answering no action of the run

    run = long_v0_run(tmp_path / "run.json", 5, tweak)
    doc = json.loads(run_cli("steps", run, "--json", check=True).stdout)
    targeted = [d for d in doc["diagnostics"] if d.get("event_id") is not None]
    assert targeted, doc["diagnostics"]
    o = opened(view(run, tmp_path / "p.html"))
    o.clean()
    items = o.page.locator("ul.diags > li")
    assert items.count() == len(doc["diagnostics"])
    link = items.filter(has_text=targeted[0]["code"]).first.locator("a")
    href = link.get_attribute("href")
    link.click()
    o.wait("document.querySelector('.current') !== null")
    current = o.page.locator(".current").get_attribute("id")
    # the link lands on the element showing the event the diagnostic names
    assert href[1:] == current or current.startswith(("step-", "event-"))
    raw = json.loads(run.read_text())
    pos = next(i for i, e in enumerate(raw) if e["id"] == targeted[0]["event_id"])
    shown = o.page.locator(".current").text_content()
    assert (raw[pos].get("content") or raw[pos].get("message") or "")[:40] in shown


def test_ctb_labels_show_when_a_row_is_given(tmp_path, opened):
    trial = TRIALS / "game-2048-session.1-of-1.all-views"
    row = dict(json.loads((ROWS / "smoke-labels-openhands.json").read_text())[1])
    row["trial_name"] = trial.name
    row["step_count"] = 4
    row["incorrect_stages"] = [{"stage_id": 1, "incorrect_step_ids": [2], "unuseful_step_ids": [3],
                                "steps": [{"step_id": 2, "labels": ["incorrect"]}, {"step_id": 3, "labels": ["unuseful"]}]}]
    f = tmp_path / "row.json"
    f.write_text(json.dumps(row))
    o = opened(view(trial, tmp_path / "p.html", "--ctb-row", str(f)))
    o.clean()
    assert o.page.locator("#step-2 .badge.lab").inner_text() == "incorrect"
    assert o.page.locator("#step-3 .badge.lab").inner_text() == "unuseful"
    assert o.page.locator("#step-1 .badge.lab").count() == 0 and o.page.locator("#step-4 .badge.lab").count() == 0
    assert row["traj_id"] in o.page.locator(".card").inner_text()
    o.page.fill("#filter", "unuseful")
    o.wait("document.querySelectorAll('#timeline > .step').length === 1")


# ---------------------------------------------------------------- sizes and screenshots


@pytest.mark.parametrize("width,height", [(375, 740), (1100, 700)])
def test_screenshots_at_narrow_and_desktop_sizes(tmp_path, opened, width, height):
    ARTIFACTS.mkdir(exist_ok=True)
    o = opened(view(SDK_EXAMPLE, tmp_path / "sdk.html", "--certify"), "#step-3", width, height)
    o.clean()
    # nothing wider than the window: no sideways scrolling
    assert o.page.evaluate("document.documentElement.scrollWidth") <= width
    o.page.locator("#step-3 details.sub").first.evaluate("d => d.open = true")
    shot = ARTIFACTS / f"view-sdk-{width}x{height}.png"
    o.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- every format


def _runs() -> list[Path]:
    runs = [EXAMPLES / "openhands-v0-trial", EXAMPLES / "openhands-sdk-conversation", EXAMPLES / "rollout"]
    runs += sorted(p.parent for p in (REPO / "tests" / "fixtures" / "sdk").glob("*/*/base_state.json"))
    runs += sorted((CORPUS / "openhands_v0" / "flat_exports").glob("*.json"))
    runs += sorted(p for p in TRIALS.iterdir() if p.is_dir())
    runs += sorted(p for p in (CORPUS / "openhands_v1" / "certifier_fixtures" / "conversations").iterdir() if p.is_dir())
    runs += [REPO / "tests" / "fixtures" / "rl" / "edge" / "cut", REPO / "tests" / "fixtures" / "rl" / "edge" / "odd",
             CORPUS / "opencode", REPO / "tests" / "fixtures" / "export" / "v0_edge_cases.json",
             CORPUS / "opencode" / "opencode_export_session.json", CORPUS / "opencode" / "opencode_run_format_json_events.jsonl",
             REPO / "src" / "trajkit" / "formats" / "fixtures" / "opencode" / "storage"]
    cc = CORPUS / "claude_code"
    runs += [cc / "iansherr+claude-code-log" / "test" / "test_data" / "real_projects" / "-src-experiments-claude_p" / "29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl",
             cc / "iansherr+claude-code-log" / "test" / "test_data" / "workflow_basic",
             cc / "pypi+atif-make-0.10.0" / "tests" / "fixtures" / "claude-code-transcript.jsonl",
             cc / "pypi+atif-make-0.10.0" / "tests" / "fixtures" / "claude-code-stream.jsonl",
             cc / "NJU-LINK+CodeTracer" / "data" / "traj" / "kimi_k2.5" / "qemu-startup__8shUpSy"]
    runs += sorted((CORPUS / "swe_agent").rglob("*.traj")) + sorted((CORPUS / "mini_swe_agent").rglob("*.traj.json"))
    # ATIF, ASF and Aider input (issue 11)
    runs += [CORPUS / "atif" / "NJU-LINK+CodeTracer" / "data" / "traj" / "kimi_k2.5" / "qemu-startup__8shUpSy" / "agent" / "trajectory.json",
             CORPUS / "asf" / "agentsession" / "testdata" / "sessions" / "runs.jsonl",
             REPO / "src" / "trajkit" / "formats" / "fixtures" / "aider" / "webhook" / ".aider.chat.history.md"]
    fix = REPO / "src" / "trajkit" / "formats" / "fixtures"
    runs += [Path(f"{fix / 'openhands-eval' / 'v0' / 'output.jsonl'}#basic_gui_mode"),  # one record of a container
             Path(f"{fix / 'openhands-eval' / 'sdk' / 'output.jsonl'}#0123456789abcdef0123456789abcdef"),
             fix / "openhands-cloud" / "sdk-conversation.json"]
    fixtures = REPO / "src" / "trajkit" / "formats" / "fixtures"
    runs += sorted((fixtures / "codex" / "sessions").rglob("rollout-*5f0c2a4e*.jsonl"))  # a thread with a sub-agent thread
    runs += sorted((CORPUS / "codex").rglob("*.jsonl"))
    runs += sorted((fixtures / "gemini-cli" / "tmp").rglob("session-*.jsonl"))  # a rewind and a sub-agent session
    runs += [p for p in sorted((CORPUS / "gemini_cli").rglob("*.json")) if p.name != "expected.json"]
    runs += sorted((CORPUS / "openhands_completions").glob("*/.pr/artifacts/*/telemetry_phase_*"))
    # and the example runs every format ships (the only samples of formats the corpus has none of)
    from trajkit.registry import formats as all_formats

    from trajkit.registry import members

    # (a container's examples stand for each of their sessions, FILE#ID)
    runs += [Path(a) for f in all_formats() for p in f.example_paths() for a in members(p, format=f.name) if Path(a) not in runs]
    return runs


def test_every_corpus_run_renders(tmp_path, browser):
    """Each run of every format the corpus holds becomes a page that loads
    cleanly with one step element per step of the session."""
    import trajkit
    from trajkit.view.html import render
    from trajkit.view.transcript import transcript

    runs = _runs()
    formats = set()
    for run in runs:
        s = trajkit.read(run)
        formats.add(s.format)
        page = tmp_path / f"{len(formats)}-{run.name}.html"
        page.write_text(render(transcript(s)), encoding="utf-8", errors="surrogatepass")
        o = Opened(browser, page)
        try:
            o.clean()
            assert o.steps() == min(len(s.steps), 1000), run
            nested = sum(len(c.steps) for st in s.steps for c in st.children)
            assert o.page.locator("#timeline details.sub .step").count() >= nested, run
        finally:
            o.close()
    from trajkit.registry import formats as all_formats

    assert formats == {f.name for f in all_formats()}


# ---------------------------------------------------------------- many runs


def test_directory_of_runs_gets_an_index_page(tmp_path, opened):
    root = tmp_path / "runs"
    root.mkdir()
    shutil.copytree(V0_TRIAL, root / "a-v0")
    shutil.copytree(SDK_EXAMPLE, root / "b-sdk")
    long_v0_run(root / "c-long" / "run.json", 30)
    (root / "d-junk").mkdir()
    (root / "d-junk" / "notes.txt").write_text("not a run")
    out = tmp_path / "site"
    p = run_cli("view", root, "--out", out, "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    names = sorted(r["name"] for r in doc["runs"])
    assert names == ["a-v0", "b-sdk", os.path.join("c-long", "run.json")]
    o = opened(out / "index.html")
    o.clean()
    rows = o.page.locator("table.runs tbody tr")
    assert rows.count() == 3
    # every link opens that run's page, whose step count is the run's
    expected = json.loads((V0_TRIAL / "EXPECTED.json").read_text())["expected_step_count"]
    sdk_steps = [json.loads(p.read_text())["kind"] for p in (SDK_EXAMPLE / "events").glob("event-*.json")].count("ActionEvent")
    want = {"a-v0": expected, "b-sdk": sdk_steps, os.path.join("c-long", "run.json"): 30}
    for name, steps in want.items():
        href = rows.filter(has_text=name).locator("a").get_attribute("href")
        assert (out / href).is_file()
        assert rows.filter(has_text=name).locator("td").nth(2).inner_text() == str(steps)
        sub = opened(out / href)
        sub.clean()
        assert sub.steps() == steps
    # sorting by steps (click the header), then the other way
    o.page.locator("th", has_text="steps").click()
    order = [int(t) for t in rows.locator("td:nth-child(3)").all_inner_texts()]
    assert order == sorted(order)
    o.page.locator("th", has_text="steps").click()
    assert [int(t) for t in rows.locator("td:nth-child(3)").all_inner_texts()] == sorted(order, reverse=True)


def test_index_lists_a_cut_run_with_its_diagnostics(tmp_path, opened):
    root = tmp_path / "runs"
    shutil.copytree(V0_TRIAL, root / "good")
    (root / "cut.json").write_text('[{"id": 0, "action": "message"')  # a V0 flat export cut short
    p = run_cli("view", root, "--out", tmp_path / "site", "--json")
    assert p.returncode == 0, p.stderr
    rows = {r["name"]: r for r in json.loads(p.stdout)["runs"]}
    assert set(rows) == {"good", "cut.json"}
    assert rows["cut.json"]["steps"] == 0 and rows["cut.json"]["diagnostics"] >= 1 and rows["good"]["diagnostics"] == 0
    # the readable run (claimed success) sorts before the cut one (no end signal)
    o = opened(tmp_path / "site" / "index.html")
    o.clean()
    assert o.page.locator("table.runs tbody tr td:first-child").all_inner_texts() == ["good", "cut.json"]
    cut = opened(tmp_path / "site" / rows["cut.json"]["href"])
    cut.clean()
    assert cut.steps() == 0 and cut.page.locator("ul.diags > li").count() == rows["cut.json"]["diagnostics"]


# ---------------------------------------------------------------- the command


def test_open_hands_the_page_to_the_browser(tmp_path):
    seen = tmp_path / "seen.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f"#!/bin/sh\necho \"$1\" > {seen}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "p.html"
    env = dict(os.environ, BROWSER=str(script))
    import subprocess

    p = subprocess.run([sys.executable, "-m", "trajkit", "view", str(V0_TRIAL), "--out", str(out), "--open"],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    assert seen.read_text().strip() == out.resolve().as_uri()


def test_usage_errors_exit_2(tmp_path):
    p = run_cli("view", V0_TRIAL)
    assert p.returncode == 2 and "--out" in p.stderr
    (tmp_path / "d").mkdir()
    p = run_cli("view", V0_TRIAL, "--out", tmp_path / "d")
    assert p.returncode == 2 and "directory" in p.stderr
    (tmp_path / "empty").mkdir()
    p = run_cli("view", tmp_path / "empty", "--out", tmp_path / "site")
    assert p.returncode == 2 and "no runs" in p.stderr
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = run_cli("view", V0_TRIAL, "--out", blocker / "p.html")
    assert p.returncode == 2 and "cannot write" in p.stderr


def test_page_is_self_contained(tmp_path):
    page = view(V0_TRIAL, tmp_path / "v0.html").read_text()
    assert not re.search(r"(?i)\b(?:src|href)\s*=\s*[\"']?(?:https?:|//)", page)
    assert "http://" not in page.split('id="tk-data"')[0] and "@import" not in page
    from trajkit.view import html as view_html

    for part in (view_html._CSS, view_html._JS):
        assert "http" not in part and "url(" not in part and "fetch(" not in part and "XMLHttpRequest" not in part
