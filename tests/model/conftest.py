"""Make ``builders`` importable from the model tests without a package ``__init__``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
