"""SWE-bench evaluation reports beside a run (``report.json``).

The SWE-bench harness writes one ``report.json`` per evaluated instance,
either flat (``{patch_is_None, patch_exists, patch_successfully_applied,
resolved, tests_status}``, as published experiment folders keep it) or keyed
by instance id (``{<instance id>: {...}}``, as the harness writes it under
``logs/run_evaluation/...``). Readers of harnesses that run SWE-bench
(SWE-agent, mini-swe-agent) look for it with :func:`find_report` and put it
in :attr:`RunInfo.results <trajkit.model.RunInfo.results>` as a
:class:`~trajkit.model.TrialResult` of kind :data:`SWE_BENCH`; certify's gate
reads it as the harness's own test verdict.
"""

from __future__ import annotations

import os
from typing import Any

SWE_BENCH = "swe-bench"

#: Members that make a dict a per-instance SWE-bench report.
REPORT_KEYS = ("resolved", "tests_status", "patch_successfully_applied")


def report_record(doc: Any, instance_id: str | None) -> dict[str, Any] | None:
    """The per-instance record of a SWE-bench ``report.json`` (flat, or keyed by
    instance id: the one for ``instance_id``, or the only one), else None."""
    if not isinstance(doc, dict):
        return None
    if any(k in doc for k in REPORT_KEYS):
        return doc
    if instance_id is not None and isinstance(doc.get(instance_id), dict):
        rec = doc[instance_id]
        return rec if any(k in rec for k in REPORT_KEYS) else None
    if len(doc) == 1:
        rec = next(iter(doc.values()))
        if isinstance(rec, dict) and any(k in rec for k in REPORT_KEYS):
            return rec
    return None


def report_candidates(run_file: str, instance_id: str | None) -> list[str]:
    """Where a SWE-bench ``report.json`` for the run in ``run_file`` may sit:
    beside it, and in the ``logs/<instance id>/`` folder of a published
    experiment (``<exp>/trajs/<id>/<id>.traj.json`` beside ``<exp>/logs/<id>/report.json``)."""
    d = os.path.dirname(run_file)
    out = [os.path.join(d, "report.json")]
    if instance_id:
        up = os.path.dirname(d)
        out.append(os.path.join(d, "logs", instance_id, "report.json"))
        out.append(os.path.join(up, "logs", instance_id, "report.json"))
        out.append(os.path.join(os.path.dirname(up), "logs", instance_id, "report.json"))
    return list(dict.fromkeys(out))
