"""Switching the plugin's named rules off by name, for ablation: one check for delivery rules and learners alike."""

from __future__ import annotations

from collections.abc import Collection

from langmem_plus.errors import InvalidArgument


def switched_off(names: Collection[str], known: Collection[str], kind: str) -> frozenset[str]:
    """``names`` as a set, each one of ``known``.

    Raises:
        InvalidArgument: a name that is not in ``known`` (``kind`` says what the names are, for the message).
    """
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise InvalidArgument(f"unknown {kind}(s) {unknown}; choose from {', '.join(known)}")
    return frozenset(names)


__all__ = ["switched_off"]
