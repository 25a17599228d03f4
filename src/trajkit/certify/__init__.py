"""Post-run certification: one terminal state per run, with evidence.

:func:`certify` reads a run (any session trajkit reads), works out the
engine's own end signal, the holdout gate over visible and withheld test
results, the real diff, and the anticheat findings over what the agent really
did, and projects them onto exactly one of the seven terminal states
(:data:`TERMINAL_STATES`). :func:`fcr` aggregates many certificates into the
false-completion rate.
"""

from .certificate import SCHEMA, Certificate, append_outcome, load_certificate, outcome_payload
from .pipeline import CertifyOptions, certify
from .states import TERMINAL_STATES, EngineOutcome, project

__all__ = [
    "SCHEMA", "Certificate", "CertifyOptions", "EngineOutcome", "TERMINAL_STATES",
    "append_outcome", "certify", "load_certificate", "outcome_payload", "project",
]
