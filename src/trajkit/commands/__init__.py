"""CLI verbs of each area, imported lazily by trajkit.cli."""
