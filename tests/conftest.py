"""Shared pytest configuration: the loopback Kubernetes API server fixtures for every test, and
hypothesis profiles.

``ci`` (the default) is derandomized and keeps no example database, so a run is the same run
everywhere and a property test cannot pass on one machine and fail on the next; ``dev``
explores new examples on each run and remembers failures. Choose one with
``HYPOTHESIS_PROFILE=dev``; a test's own ``@settings`` (its example count) still applies.
"""

import os

from hypothesis import settings

pytest_plugins = ["tests.apiserver.fixtures"]

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
