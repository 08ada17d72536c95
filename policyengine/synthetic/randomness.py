"""The generator's one source of randomness and its clock, both reproducible from a seed.

Every random decision goes through ``Rand.random()``, whose sequence Python guarantees across
versions (``choice``, ``shuffle`` and ``randint`` carry no such promise).
"""

from __future__ import annotations

import calendar
import math
import random
import time
from collections.abc import Sequence
from typing import Any

from policyengine.synthetic.spec import SUFFIX_ALPHABET

# ------------------------------------------------------------------------- randomness


class Rand:
    """Only ``Random.random()`` is promised to repeat across Python versions; build on it."""

    __slots__ = ("_random",)

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed).random

    def below(self, n: int) -> int:
        return int(self._random() * n)

    def between(self, lo: int, hi: int) -> int:
        return lo + self.below(hi - lo + 1)

    def choice(self, items: Sequence[Any]) -> Any:
        return items[self.below(len(items))]

    def shuffle(self, items: list[Any]) -> None:
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def sample(self, n: int, k: int) -> list[int]:
        """``k`` distinct indices of ``range(n)``, in increasing order."""
        pool = list(range(n))
        for i in range(min(k, n)):
            j = i + self.below(n - i)
            pool[i], pool[j] = pool[j], pool[i]
        return sorted(pool[:k])

    def uuid(self) -> str:
        """A version-4 UUID string; built by hand, ``uuid.UUID`` is the generator's hot spot."""
        r = self._random
        h = f"{int(r() * (1 << 52)):013x}{int(r() * (1 << 52)):013x}{int(r() * (1 << 24)):06x}"
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"

    def suffix(self, length: int = 5) -> str:
        return "".join(SUFFIX_ALPHABET[self.below(27)] for _ in range(length))


def apportion(weights: Sequence[float], total: int) -> list[int]:
    """Integer counts summing to ``total`` in proportion to ``weights`` (largest remainder)."""
    wsum = sum(weights)
    if total <= 0 or wsum <= 0:
        return [0] * len(weights)
    quotas = [w * total / wsum for w in weights]
    counts = [math.floor(q) for q in quotas]
    order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


class Clock:
    """Creation times and resource versions, strictly increasing in creation order."""

    def __init__(self, start: str) -> None:
        self.now = calendar.timegm(time.strptime(start, "%Y-%m-%dT%H:%M:%SZ"))
        self.version = 1000

    def tick(self, seconds: int) -> tuple[str, str]:
        self.now += max(seconds, 1)
        self.version += 1
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now)), str(self.version)
