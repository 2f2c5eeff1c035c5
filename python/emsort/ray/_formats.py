"""Formats and sizes as the distributed sort needs them.

The engine parses formats and orders items: :meth:`Format.parse` takes its item size
from ``emsort.item_size`` (which raises the engine's ``ValueError`` for a bad format), the
tasks sort and cut fixed-size items with ``emsort.sort_buffer`` and
``emsort.partition_points``, and lines with an ``emsort.LineOrder`` (GNU sort's ordering
options). All that is left here is the item size the driver plans chunks with, and the
sizes of the options (``"256M"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

import emsort

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*$")


def parse_size(value) -> int:
    """``"256M"`` → 268435456 (K/M/G/T are powers of 1024, as in the emsort binary)."""
    if isinstance(value, (int, np.integer)):
        if value < 0:
            raise ValueError(f"size must not be negative: {value}")
        return int(value)
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f"invalid size '{value}' (expected a number with an optional K/M/G/T suffix)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


@dataclass(frozen=True)
class Format:
    """A format's name and its item size (``None`` for ``lines``)."""

    spec: str
    item_size: Optional[int]

    @staticmethod
    def parse(spec) -> "Format":
        """The format named ``spec``; ``ValueError`` (the engine's message) for a bad one."""
        if isinstance(spec, Format):
            return spec
        s = str(spec)
        if s == "lines":
            return Format(s, None)
        return Format(s, emsort.item_size(s))

    @property
    def fixed(self) -> bool:
        """Whether items have a fixed size (numbers, records)."""
        return self.item_size is not None
