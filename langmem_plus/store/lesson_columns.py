"""LessonColumns: each lesson node's status, tool and (WRONG, CORRECT), as columns by the adjacency's node id.

A base saves these three values per lesson node as arrays (``LessonGraph.to_state``). They
used to be kept as dictionaries by lesson id (the changes since the base) and turned into
columns at close, a dictionary lookup and a code lookup per lesson: 0.2-0.3 s of the closing
thread's CPU after a 100k import (docs/performance-log.md, "Close after an import"). Here every
write sets its node's cell at once, so a save copies the columns and joins the rewrite text:
no per-lesson Python at close, as the adjacency's edge log does for its rows.

A column starts as the loaded base's (memory-mapped, read only) array and is copied into a
growable one at its first write (``_Column``), so an open pays nothing for it.

Example:
    >>> c = LessonColumns()
    >>> c.set_lesson(2, "promoted", "sql"); c.set_rewrite(2, ("pick", "SELECT"))
    >>> c.tool_of(2), c.rewrite_of(2), c.status_of(0), c.tool_of(9)
    ('sql', ('pick', 'SELECT'), None, None)
    >>> table, arrays = c.arrays(3)
    >>> table, arrays["status"].tolist(), arrays["rewrite_offsets"][2].tolist()
    ({'statuses': ['promoted'], 'tools': ['sql']}, [-1, -1, 0], [0, 4, 10])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from langmem_plus.config import DEFAULT_CONFIG


class _Column:
    """A numpy column by node id (-1: none), growing on write; a loaded base's array is copied at its first write."""

    def __init__(self, values: np.ndarray, dtype: Any, width: int = 0) -> None:
        self._dtype, self._width = np.dtype(dtype), width
        self.data = values
        self.size = len(values)
        """Cells that hold a value (the rest of ``data`` is spare capacity)."""
        self._owned = False

    @classmethod
    def empty(cls, dtype: Any, width: int = 0) -> _Column:
        return cls(np.full((0, width) if width else 0, -1, dtype=dtype), dtype, width)

    def _reserve(self, gid: int) -> None:
        if self._owned and gid < len(self.data):
            return
        capacity = max(gid + 1, 2 * len(self.data)) if gid >= len(self.data) else len(self.data)  # doubling: amortised
        grown = np.full((capacity, self._width) if self._width else capacity, -1, dtype=self._dtype)
        grown[: self.size] = self.data[: self.size]
        self.data, self._owned = grown, True

    def set(self, gid: int, value: Any) -> None:
        """Cell ``gid`` holds ``value`` from now on."""
        self._reserve(gid)
        self.data[gid] = value
        if gid >= self.size:
            self.size = gid + 1

    def get(self, gid: int) -> int:
        """The code in cell ``gid`` (its first field in a wide column; -1: none, or beyond the column)."""
        if gid >= self.size:
            return -1
        return int(self.data[gid, 0] if self._width else self.data[gid])

    def column(self, n: int) -> np.ndarray:
        """The first ``n`` cells as a new array (-1 past the written ones).

        Raises:
            ValueError: a cell past ``n`` holds a value (a node the caller does not count).
        """
        out = np.full((n, self._width) if self._width else n, -1, dtype=self._dtype)
        kept = min(n, self.size)
        out[:kept] = self.data[:kept]
        if self.size > n and np.any(self.data[n : self.size] >= 0):
            raise ValueError("a column holds a value past the nodes")
        return out


class StringCodes:
    """A string table: value -> code, in the order values were first met."""

    def __init__(self, names: Sequence[str] = ()) -> None:
        self.names = list(names)
        self.code = {name: c for c, name in enumerate(self.names)}

    def of(self, value: str | None) -> int:
        """``value``'s code, giving it the next one when it has none (None: -1)."""
        if value is None:
            return -1
        found = self.code.get(value)
        if found is None:
            found = self.code[value] = len(self.names)
            self.names.append(value)
        return found


class LessonColumns:
    """Status, tool and (WRONG, CORRECT) of each lesson node, by node id, set by every write (None: none).

    The rewrite pairs are offsets into one text: the base's, then every pair written since
    appended to it (``_parts``); pairs written since the base are also kept by node id, so
    a read does not join the text.
    """

    def __init__(
        self,
        statuses: Sequence[str] = (),
        status: np.ndarray | None = None,
        tools: Sequence[str] = (),
        tool: np.ndarray | None = None,
        rewrite_offsets: np.ndarray | None = None,
        rewrite_text: str = "",
        *,
        rewrite_slack: int = DEFAULT_CONFIG.storage.graph_rewrite_slack,
    ) -> None:
        self._rewrite_slack = rewrite_slack
        self._statuses, self._tools = StringCodes(statuses), StringCodes(tools)
        self._status = _Column(status, np.int8) if status is not None else _Column.empty(np.int8)
        self._tool = _Column(tool, np.int32) if tool is not None else _Column.empty(np.int32)
        self._offsets = _Column(rewrite_offsets, np.int64, 3) if rewrite_offsets is not None else _Column.empty(np.int64, 3)
        self._base_text = rewrite_text
        self._parts: list[str] = []
        """Text appended since the base: WRONG then CORRECT of each pair written."""
        self._text_size = len(rewrite_text)
        self._pairs: dict[int, tuple[str, str]] = {}
        """Pairs written since the base, by node id (a node whose pair is the base's is not here)."""
        self.status_version = 0
        """Counts ``set_lesson`` calls: masks made from the statuses (``status_masks``) are stale when it moved."""

    # ---- writes ---------------------------------------------------------------

    def set_lesson(self, gid: int, status: str | None, tool: str | None) -> None:
        """Node ``gid``'s status and tool from now on (both None: not a lesson any more)."""
        self._status.set(gid, self._statuses.of(status))
        self._tool.set(gid, self._tools.of(tool))
        self.status_version += 1

    def set_rewrite(self, gid: int, pair: tuple[str, str] | None) -> None:
        """Node ``gid``'s (WRONG, CORRECT) from now on; an unchanged pair adds no text."""
        if pair is None:
            if self._offsets.get(gid) >= 0:
                self._offsets.set(gid, -1)
            self._pairs.pop(gid, None)
            return
        if self.rewrite_of(gid) == pair:
            return
        wrong, correct = pair
        start = self._text_size
        self._offsets.set(gid, (start, start + len(wrong), start + len(wrong) + len(correct)))
        self._parts += pair
        self._text_size += len(wrong) + len(correct)
        self._pairs[gid] = pair

    # ---- reads ----------------------------------------------------------------

    def status_of(self, gid: int | None) -> str | None:
        code = -1 if gid is None else self._status.get(gid)
        return None if code < 0 else self._statuses.names[code]

    def status_masks(self, n: int, statuses: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per node id below ``n``: (a lesson whose status is in ``statuses``, a lesson), read from the column in place.

        Comparisons over the written cells, no copy of the column (faster than a table lookup over two copies),
        made again after a status or the node count changes.
        """
        codes = self._status.data[: min(n, self._status.size)]
        blocked, lessons = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        for status in set(statuses):
            code = self._statuses.code.get(status)
            if code is not None:
                blocked[: len(codes)] |= codes == code
        np.greater_equal(codes, 0, out=lessons[: len(codes)])
        return blocked, lessons

    def tool_of(self, gid: int | None) -> str | None:
        """The tool of node ``gid`` (None: none, or not a lesson)."""
        code = -1 if gid is None else self._tool.get(gid)
        return None if code < 0 else self._tools.names[code]

    def rewrite_of(self, gid: int | None) -> tuple[str, str] | None:
        """The (WRONG, CORRECT) of node ``gid``, None for any other."""
        if gid is None:
            return None
        found = self._pairs.get(gid)
        if found is not None:
            return found
        if gid >= self._offsets.size:
            return None
        start, mid, end = self._offsets.data[gid].tolist()
        return None if start < 0 else (self._base_text[start:mid], self._base_text[mid:end])

    @property
    def text_size(self) -> int:
        """Characters of rewrite text held: the base's and every pair appended since."""
        return self._text_size

    # ---- snapshot -------------------------------------------------------------

    def arrays(self, n: int) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
        """The columns of ``n`` nodes as a base saves them: ({"statuses", "tools"} tables, arrays).

        The status table is the sorted statuses some lesson has (codes remapped to it); the
        rewrite text is the base's with the appended pairs, rebuilt from the live pairs alone
        once replaced text outweighs the live text (``MemoryConfig.storage.graph_rewrite_slack``).

        Raises:
            ValueError: a column holds a value past ``n`` nodes.
        """
        codes = self._status.column(n)
        used = np.flatnonzero(np.bincount(codes[codes >= 0].astype(np.int64), minlength=len(self._statuses.names)))
        statuses = sorted(self._statuses.names[c] for c in used.tolist())
        remap = np.full(len(self._statuses.names) + 1, -1, dtype=np.int8)  # the last cell: code -1 stays -1
        remap[[self._statuses.code[s] for s in statuses]] = np.arange(len(statuses), dtype=np.int8)
        offsets = self._offsets.column(n)
        text = self._base_text + "".join(self._parts)
        live = offsets[offsets[:, 0] >= 0]
        if len(text) > 2 * int((live[:, 2] - live[:, 0]).sum()) + self._rewrite_slack:
            offsets, text = _live_text(offsets, text)
        arrays = {
            "status": remap[codes],
            "tool": self._tool.column(n),
            "rewrite_offsets": offsets,
            "rewrite_utf8": np.frombuffer(text.encode("utf-8"), dtype=np.uint8),
        }
        return {"statuses": statuses, "tools": list(self._tools.names)}, arrays

    @classmethod
    def from_arrays(
        cls, tables: Mapping[str, Any], arrays: Mapping[str, Any], n: int, *, rewrite_slack: int = DEFAULT_CONFIG.storage.graph_rewrite_slack
    ) -> LessonColumns:
        """The columns ``arrays`` saved for ``n`` nodes, checked (``rewrite_slack``: as the constructor's).

        Raises:
            ValueError, KeyError: they are damaged (a code past its table, offsets past their text, a wrong length).
        """
        statuses = [str(s) for s in tables["statuses"]]
        tools = [str(t) for t in tables["tools"]]
        status = checked_codes(arrays["status"], n, len(statuses))
        tool = checked_codes(arrays["tool"], n, len(tools))
        offsets, text = checked_rewrites(arrays, n)
        return cls(statuses, status, tools, tool, offsets, text, rewrite_slack=rewrite_slack)


def _live_text(offsets: np.ndarray, text: str) -> tuple[np.ndarray, str]:
    """The offsets and text of the live pairs alone, in node order (the replaced pairs' text dropped)."""
    gids = np.flatnonzero(offsets[:, 0] >= 0)
    spans = offsets[gids]
    parts = [text[start:end] for start, end in zip(spans[:, 0].tolist(), spans[:, 2].tolist())]
    lengths = spans[:, 2] - spans[:, 0]
    starts = np.cumsum(lengths) - lengths
    out = np.full_like(offsets, -1)
    out[gids, 0] = starts
    out[gids, 1] = starts + (spans[:, 1] - spans[:, 0])
    out[gids, 2] = starts + lengths
    return out, "".join(parts)


def checked_codes(codes: Any, n: int, size: int, *, allow_none: bool = True) -> np.ndarray:
    """``codes`` as an integer array of length ``n`` with values in ``[-1 or 0, size)``.

    Raises:
        ValueError: it is not.
    """
    out = np.asarray(codes)
    if out.shape != (n,) or out.dtype.kind not in "iu":
        raise ValueError("a saved column does not match the nodes")
    if n and (int(out.min()) < (-1 if allow_none else 0) or int(out.max()) >= size):
        raise ValueError("a saved column holds an unknown code")
    return out


def checked_rewrites(arrays: Mapping[str, Any], n: int) -> tuple[np.ndarray, str]:
    """The saved (WRONG, CORRECT) offsets and their text, checked against each other.

    Raises:
        ValueError: they do not fit together (or the text is not UTF-8).
    """
    offsets = np.asarray(arrays["rewrite_offsets"])
    text = np.asarray(arrays["rewrite_utf8"], dtype=np.uint8).tobytes().decode("utf-8")
    if offsets.shape != (n, 3) or offsets.dtype.kind not in "iu":
        raise ValueError("the rewrite offsets do not match the nodes")
    some = offsets[offsets[:, 0] >= 0]
    if np.any(offsets[offsets[:, 0] < 0] != -1) or not (
        np.all(some[:, 0] <= some[:, 1]) and np.all(some[:, 1] <= some[:, 2]) and (not len(some) or int(some[:, 2].max()) <= len(text))
    ):
        raise ValueError("the rewrite offsets do not fit their text")
    return offsets, text


__all__ = ["LessonColumns", "StringCodes", "checked_codes", "checked_rewrites"]
