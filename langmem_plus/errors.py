"""The langmem_plus exception tree.

Every error the package raises on purpose derives from ``LangmemPlusError`` and
from the builtin it resembles, so ``except ValueError`` keeps working::

    LangmemPlusError
    ├── InvalidNamespace(ValueError)      a namespace that is empty or badly formed
    ├── InvalidRecord(ValueError)         a record that fails validation
    ├── InvalidArgument(ValueError)       an argument outside its documented range
    ├── StoreUnavailable(ConnectionError) Chroma path or server cannot be opened
    ├── ModelOutputError(ValueError)      a chat model answered with unusable JSON
    ├── ContentTooLarge(ValueError)       content larger than an InstantMemory's capacity
    ├── UnknownItem(KeyError)             no InstantMemory item with that id
    └── EnvError(RuntimeError)            an environment was driven wrongly
"""

from __future__ import annotations


class LangmemPlusError(Exception):
    """Root of every error langmem_plus raises on purpose."""


class InvalidNamespace(LangmemPlusError, ValueError):
    """A namespace is empty, has an empty part, or has a part with control characters."""


class InvalidRecord(LangmemPlusError, ValueError):
    """A record failed validation (bad field value, wrong namespace, ...)."""


class InvalidArgument(LangmemPlusError, ValueError):
    """An argument is outside its documented range (a negative ``top_k``, a float year, ...)."""


class StoreUnavailable(LangmemPlusError, ConnectionError):
    """The Chroma store could not be opened or reached."""


class ModelOutputError(LangmemPlusError, ValueError):
    """A chat model's answer could not be parsed or validated as the JSON asked for."""


class ContentTooLarge(LangmemPlusError, ValueError):
    """Content given to ``InstantMemory.attend`` has more tokens than the memory's whole capacity."""


class UnknownItem(LangmemPlusError, KeyError):
    """No item with this id is in the InstantMemory (never attended, or evicted since)."""


class EnvError(LangmemPlusError, RuntimeError):
    """An environment was used out of order (step before reset, unknown task, ...)."""


__all__ = [
    "ContentTooLarge",
    "EnvError",
    "InvalidArgument",
    "InvalidNamespace",
    "InvalidRecord",
    "LangmemPlusError",
    "ModelOutputError",
    "StoreUnavailable",
    "UnknownItem",
]
