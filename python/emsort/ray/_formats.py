"""Formats as the distributed sort needs them.

Parsing and item sizes mirror ``emsort_sort::Format`` (``crates/sort/src/format.rs``):

=========================  ==========================  ===============================================
format                     item                        order
=========================  ==========================  ===============================================
``u32 i32 u64 i64``        a native-endian integer     numeric
``f32 f64``                a native-endian IEEE float  total order, -inf … -0 < +0 … +inf, NaNs last
``rec:SIZE:KOFF:KLEN``     SIZE bytes                  bytewise on bytes ``KOFF .. KOFF+KLEN``
``lines``                  bytes up to ``\\n``          bytewise (``LC_ALL=C sort``)
=========================  ==========================  ===============================================

The sorting itself is emsort's (``emsort.sort_buffer``, ``emsort.partition_points``,
``emsort.merge_files``). :meth:`Format.keys` gives numpy's view of the same order; the
tests use it as an oracle independent of emsort.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import numpy as np

_NUMBERS = {
    "u32": "=u4",
    "i32": "=i4",
    "u64": "=u8",
    "i64": "=i8",
    "f32": "=f4",
    "f64": "=f8",
}

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
    """A parsed format string."""

    spec: str
    kind: str  # "number", "rec" or "lines"
    item_size: Optional[int]  # None for lines
    dtype: Optional[np.dtype] = None  # numbers only
    key_offset: int = 0  # rec only
    key_len: int = 0  # rec only

    @staticmethod
    def parse(spec: str) -> "Format":
        if isinstance(spec, Format):
            return spec
        s = str(spec)
        if s in _NUMBERS:
            dt = np.dtype(_NUMBERS[s])
            return Format(s, "number", dt.itemsize, dt)
        if s == "lines":
            return Format(s, "lines", None)
        if s.startswith("rec:"):
            bad = ValueError(
                f"invalid record format '{s}': expected rec:SIZE:KEY_OFFSET:KEY_LEN with "
                "KEY_LEN ≥ 1 and KEY_OFFSET + KEY_LEN ≤ SIZE (e.g. rec:100:0:10)"
            )
            parts = s[4:].split(":")
            if len(parts) != 3 or not all(p.isdigit() for p in parts):
                raise bad
            size, off, klen = (int(p) for p in parts)
            if size == 0 or klen == 0 or off + klen > size:
                raise bad
            return Format(s, "rec", size, None, off, klen)
        raise ValueError(
            f"unknown format '{s}' (expected u32, i32, u64, i64, f32, f64, "
            "rec:SIZE:KEY_OFFSET:KEY_LEN or lines)"
        )

    @property
    def fixed(self) -> bool:
        return self.item_size is not None

    # ---- numpy view of the order (test oracle) ---------------------------------------

    def keys(self, buf) -> np.ndarray:
        """An array, one entry per item of ``buf``, whose natural numpy order is the
        format's order (fixed-size formats only; NaNs of either sign are equal and last)."""
        a = np.frombuffer(buf, dtype=np.uint8) if not isinstance(buf, np.ndarray) else buf.view(np.uint8).reshape(-1)
        if self.kind == "number":
            if self.spec in ("f32", "f64"):
                ut = np.dtype("=u4") if self.spec == "f32" else np.dtype("=u8")
                bits = a.view(ut)
                top = ut.type(1) << ut.type(ut.itemsize * 8 - 1)
                k = np.where((bits & top) != 0, ~bits, bits | top)
                k[np.isnan(a.view(self.dtype))] = np.iinfo(ut).max
                return k
            return a.view(self.dtype)
        recs = a.reshape(-1, self.item_size)
        key = np.ascontiguousarray(recs[:, self.key_offset : self.key_offset + self.key_len])
        return key.view(f"S{self.key_len}").reshape(-1)


def split_lines(data: bytes) -> list:
    """The lines of ``data`` without their ``\\n`` (a last line may lack it)."""
    if not data:
        return []
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    return lines
