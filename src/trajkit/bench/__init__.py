"""Benchmark-specific knowledge: manifests and labels of the benchmarks whose
step conventions trajkit reproduces (:mod:`trajkit.bench.ctb`: CodeTraceBench)."""
