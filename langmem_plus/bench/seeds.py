"""Seed lists as the benches take them on the command line."""

from __future__ import annotations


def parse_seeds(text: str) -> list[int]:
    """``"0"``, ``"0,2"`` or ``"0-2"`` as a list of seeds."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    return out


__all__ = ["parse_seeds"]
