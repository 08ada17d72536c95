"""Fuzzing policyengine's two readers of untrusted input: policy sources and snapshots.

A policy comes from whoever may edit a ConfigMap; a snapshot from whatever ``kubectl`` (or a
person) wrote. Neither may crash a tool: every problem must come back as a diagnostic (a
policy) or a ``ModelError`` (a snapshot). ``targets`` holds the two checks as plain functions
of bytes; ``python -m fuzz`` drives them with atheris (coverage-guided, seeded from the shipped
policies and the test fixtures), and the suite runs them on generated inputs as a smoke test.
"""
