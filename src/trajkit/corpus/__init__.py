"""Many runs at once: finding them (:func:`discover`), one batch engine
(:func:`run`: serial, process, Ray Data), and the Parquet index
(:mod:`.index`, :mod:`.tables`, :mod:`.query`)."""

from .discover import ARCHIVE, MAX_DEPTH, RunRef, discover
from .run import ENGINES, Batch, EngineError, Failed, run

__all__ = ["ARCHIVE", "ENGINES", "MAX_DEPTH", "Batch", "EngineError", "Failed", "RunRef", "discover", "run"]
