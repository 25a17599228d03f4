"""Costs the record lacks are estimated once, centrally, from the price table
shipped in the package, and flagged as estimated (issue 11, "Usage"). The
expected figures are worked out by hand from the table's published rates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajkit import pricing
from trajkit.model import Event, Session, Step, Usage

TABLE = Path(pricing.__file__).resolve().parent / "pricing.json"


def test_table_records_its_source_and_date():
    doc = json.loads(TABLE.read_text())
    assert "litellm" in doc["source"].lower() and doc["taken"] == "2026-12-01"
    assert doc["unit"] == "USD per 1,000,000 tokens"
    for name, rates in doc["models"].items():
        assert rates["input"] >= 0 and rates["output"] >= 0, name


def test_rates_of_known_models_are_the_published_ones():
    m = json.loads(TABLE.read_text())["models"]
    # OpenAI list prices: gpt-4o $2.50 in / $1.25 cached / $10 out per million
    assert (m["gpt-4o"]["input"], m["gpt-4o"]["cache_read"], m["gpt-4o"]["output"]) == (2.5, 1.25, 10.0)
    # Anthropic Claude Sonnet 4.5: $3 in, $0.30 cache read, $3.75 cache write, $15 out
    r = m["claude-sonnet-4-5"]
    assert (r["input"], r["cache_read"], r["cache_write"], r["output"]) == (3.0, 0.3, 3.75, 15.0)


def test_estimate_by_hand():
    # gpt-4o: 1000 prompt tokens of which 200 cached, 500 out:
    # 800 * 2.50 + 200 * 1.25 + 500 * 10 = 2000 + 250 + 5000 = 7250 per million = $0.00725
    assert pricing.estimate(Usage(input=1000, cache_read=200, output=500, model="gpt-4o")) == pytest.approx(0.00725)
    # Sonnet 4.5 (dated name): 10000 prompt = 1000 fresh + 6000 read + 3000 written, 200 out:
    # 1000*3 + 6000*0.30 + 3000*3.75 + 200*15 = 3000 + 1800 + 11250 + 3000 = 19050 -> $0.01905
    u = Usage(input=10000, cache_read=6000, cache_write=3000, output=200, model="claude-sonnet-4-5-20250929")
    assert pricing.estimate(u) == pytest.approx(0.01905)
    # provider prefix dropped; gpt-4o-mini $0.15 in / $0.60 out: 2e6*0.15 + 1e6*0.60 = $0.90
    assert pricing.estimate(Usage(input=2_000_000, output=1_000_000, model="openai/gpt-4o-mini")) == pytest.approx(0.90)
    # output only
    assert pricing.estimate(Usage(output=1000, model="gpt-4o")) == pytest.approx(0.01)


@pytest.mark.parametrize("u", [
    Usage(input=10, output=10, model="no-such-model-xyz"),  # not in the table
    Usage(input=10, output=10),  # no model
    Usage(model="gpt-4o"),  # no tokens
])
def test_no_estimate_without_model_or_tokens(u):
    assert pricing.estimate(u) is None


def test_estimate_session_fills_only_what_is_missing():
    recorded = Usage(input=1000, output=500, model="gpt-4o", cost=0.5)
    missing = Usage(input=1000, cache_read=200, output=500, model="gpt-4o")
    step_only = Usage(output=1000, model="gpt-4o")
    unknown = Usage(input=5, output=5, model="mystery")
    child = Session(format="x", source_path="/c", events=[Event(id=1, kind="action", type="a", raw=None, model_usage=Usage(output=100, model="gpt-4o"))])
    s = Session(
        format="x", source_path="/p",
        events=[Event(id=1, kind="action", type="a", raw=None, model_usage=recorded),
                Event(id=2, kind="action", type="a", raw=None, model_usage=missing),
                Event(id=3, kind="action", type="a", raw=None, model_usage=unknown)],
        steps=[Step(step_id=1, action="a", tool_type="t", observation="", model_usage=step_only)],
        children=[child],
    )
    pricing.estimate_session(s)
    assert recorded.cost == 0.5 and not recorded.cost_estimated
    assert missing.cost == pytest.approx(0.00725) and missing.cost_estimated
    assert step_only.cost == pytest.approx(0.01) and step_only.cost_estimated
    assert unknown.cost is None and not unknown.cost_estimated
    assert child.events[0].model_usage.cost == pytest.approx(0.001) and child.events[0].model_usage.cost_estimated
    d = s.steps[0].to_dict()
    assert d["cost"] == pytest.approx(0.01) and d["cost_estimated"] is True
