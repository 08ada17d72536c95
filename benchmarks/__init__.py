"""policyengine's benchmark suite: ``python -m benchmarks [SCENARIO ...]`` (see README.md here)."""
