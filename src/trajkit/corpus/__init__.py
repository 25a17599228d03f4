"""Many runs at once: finding them (:func:`discover`)."""

from .discover import MAX_DEPTH, RunRef, discover

__all__ = ["MAX_DEPTH", "RunRef", "discover"]
