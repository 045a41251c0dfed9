"""The one place context is assembled: retrieved items compete for one token budget in an InstantMemory.

Every surface that hands memory to a model (pre-run and on-error retrieval, the
tool sheet, ``LearningMemory.render`` and the lookup tool, the distill node, the
``create_agent`` middleware's system-message block) puts its lessons, episodes and
skills through ``assemble``: each item is attended with its relevance and its line
(quoted data with its id, under ``HINTS_HEADER``), plus a compact form of the line
(``- <id>="WRONG -> CORRECT"``) that compression uses first; what does not
fit is compressed, least relevant first, then evicted; items under the eviction
threshold leave. The block is the memory's plain export.

Relevance (pure functions here): a lesson's retrieval score by default; before a
run, its habit rate (``habit_rate``: how often the tool's recent runs opened with
its mistake or applied it); an episode or skill, ``instant_support_weight`` times its
cosine to the query.

Example:
    >>> from langmem_plus.records import Lesson, ScoredItem
    >>> l = Lesson(id="les_1", namespace=("ns",), rule_text="WRONG: from -> CORRECT: LOAD", wrong="from", correct="LOAD")
    >>> block = assemble([ScoredItem(kind="lesson", item=l, score=0.9)], budget=200)
    >>> block.text.splitlines()[1]
    '- [lesson:les_1] "Use \\\\`LOAD\\\\` instead of \\\\`from\\\\`"'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.errors import ContentTooLarge
from langmem_plus.learning.hints import HINTS_HEADER, hint_from_item, render_hints
from langmem_plus.learning.textmatch import is_procedure
from langmem_plus.memory_types.instant import CompressLowest, InstantMemory
from langmem_plus.records import Lesson, RunRecord, ScoredItem
from langmem_plus.retrieval.fast_scoring import ActionMatcher

_ID_UNSAFE = re.compile(r"[^\w.:\-]")

Line = Callable[[ScoredItem], str]
"""Renders one item as one line of quoted data with its id."""
Relevance = Callable[[ScoredItem], float]
"""An item's relevance in [0, 1]."""


@dataclass(frozen=True)
class Assembled:
    """An assembled block: the items shown (most relevant first), those left out, the text and its tokens."""

    shown: list[ScoredItem]
    dropped: list[ScoredItem]
    text: str
    tokens: int
    exact: bool = True


def hint_line(item: ScoredItem) -> str:
    """An item as ``render_hints`` writes it: ``- [kind:id] "hint"`` (quotes, backticks escaped)."""
    return render_hints([hint_from_item(item)]).split("\n", 1)[1]


COMPACT_WORDS = 8
"""Words of an episode's or skill's hint kept in its compact line (a rewrite keeps its whole rule)."""


def compact_line(item: ScoredItem) -> str:
    """The short form of an item's line, ``- <id>=<JSON string>`` (the id's prefix, ``les_`` / ``ep_`` / ``skl_``,
    names the kind): a rewrite lesson as ``"WRONG -> CORRECT"``, another item as the first
    ``COMPACT_WORDS`` words of its hint's step (what follows its lead phrase; an "Avoid" hint and a procedure whole),
    never cutting inside a back-quoted action (``whole_actions``).
    JSON quoting keeps it data: its text cannot leave the quotes.
    """
    it = item.item
    if isinstance(it, Lesson) and it.wrong and it.correct is not None:
        text = f"{it.wrong} -> {it.correct}"
    else:
        hint = hint_from_item(item).text
        if not hint.startswith("Avoid"):  # "Worked before for a similar goal: start with ..." -> "start with ..."
            hint = hint.split(": ", 1)[-1]
        words = hint.split()
        kept = len(words) if is_procedure(hint) else whole_actions(words, COMPACT_WORDS)  # a plan is followed whole
        text = " ".join(words[:kept]) + (" …" if len(words) > kept else "")
    return f"- {_ID_UNSAFE.sub('_', item.item_id)}={json.dumps(text, ensure_ascii=False)}"


def whole_actions(words: Sequence[str], limit: int) -> int:
    """How many of ``words`` a cut to about ``limit`` keeps without splitting a back-quoted action: the most, at most
    ``limit``, that end on an action's closing back-quote (any number, when nothing is quoted), else the fewest that do.
    A reader can use a procedure cut after its second step, not one cut inside its first.

    Example:
        >>> words = "start with `connect red cable to router` then `look`".split()
        >>> whole_actions(words, 4), whole_actions(words, 8), whole_actions("a b c".split(), 2)
        (7, 7, 2)
    """
    if len(words) <= limit:
        return len(words)
    quoted = any("`" in w for w in words)
    ticks, safe = 0, []
    for k, word in enumerate(words, start=1):
        ticks += word.count("`")
        if ticks % 2 == 0 and ("`" in word or not quoted):  # right after an action closes (or any word, none quoted)
            safe.append(k)
    under = [k for k in safe if k <= limit]
    return under[-1] if under else (safe[0] if safe else len(words))


def _clip01(x: float) -> float:
    return 0.0 if not x == x else max(0.0, min(1.0, float(x)))  # NaN -> 0


def default_relevance(item: ScoredItem, config: MemoryConfig = DEFAULT_CONFIG) -> float:
    """A lesson's score (design.md §5.3, in [0, 1]); an episode or skill, ``instant_support_weight`` x its cosine;
    a fact (already past ``fact_min_cos``), ``instant_support_weight`` x its confidence: a held fact stays in
    the block when room is left, a doubtful one fades under the eviction threshold."""
    if item.kind == "lesson":
        return _clip01(item.score)
    if item.kind == "fact":
        return _clip01(config.context.instant_support_weight * item.components.get("confidence", 0.0))
    return _clip01(config.context.instant_support_weight * item.components.get("cos", 0.0))


def habit_rate(lesson: Lesson, runs: Sequence[RunRecord], matchers: Sequence[ActionMatcher] | None = None) -> float:
    """How often ``runs`` needed ``lesson``: runs that applied it or opened with its mistake, (1, 1) prior.

    "Opened with": the WRONG pattern occurs in a failure at the run's first step, the
    agent's own first guess; mistakes made while recovering from a failure do not count.

    Example:
        >>> habit_rate(Lesson(id="l", namespace=("n",), rule_text="r"), [])
        0.5
    """
    if matchers is None:
        matchers = opening_matchers(runs)
    hits = sum(1 for run, m in zip(runs, matchers) if lesson.id in run.applied or m.applies(lesson))
    return (hits + 1) / (len(runs) + 2)


def opening_matchers(runs: Sequence[RunRecord]) -> list[ActionMatcher]:
    """One matcher per run over the actions of its failures at step 0."""
    return [ActionMatcher([f.action for f in run.failures if f.step == 0]) for run in runs]


def habit_relevance(
    runs: Sequence[RunRecord], config: MemoryConfig = DEFAULT_CONFIG, *, task_runs: Sequence[RunRecord] = ()
) -> Relevance:
    """Before a run: a lesson's ``habit_rate`` over the tool's ``runs``, or over ``task_runs`` (the task's, else its
    family's) when that is higher; text rules and other items ``default_relevance``."""
    matchers, task_matchers = opening_matchers(runs), opening_matchers(task_runs)

    def relevance(item: ScoredItem) -> float:
        # A text rule (``applies_when`` set) is conditioned on what the agent will read, not on
        # its first guess: no opening mistake can show it is needed, so its retrieval score counts.
        if isinstance(item.item, Lesson) and item.item.applies_when is None:
            own = habit_rate(item.item, task_runs, task_matchers) if task_runs else 0.0
            return max(habit_rate(item.item, runs, matchers), own)
        return default_relevance(item, config)

    return relevance


def in_order(items: Sequence[ScoredItem]) -> Relevance:
    """Relevance by position (first is 1, then evenly down, never under 0.5): keeps a caller's ranking."""
    rank = {id(it): i for i, it in enumerate(items)}
    n = max(1, len(items))
    return lambda item: 1.0 - 0.5 * rank.get(id(item), n) / n


def assemble(
    items: Sequence[ScoredItem],
    *,
    budget: int,
    config: MemoryConfig = DEFAULT_CONFIG,
    relevance: Relevance | None = None,
    line: Line = hint_line,
    short: Line = compact_line,
    header: str = HINTS_HEADER,
    now: float = 0.0,
) -> Assembled:
    """Put ``items`` through one ``InstantMemory`` of ``budget`` tokens (header included) and export it.

    Args:
        items: Retrieved items, any order; an item id is shown once.
        budget: Tokens for the whole block.
        config: Supplies the eviction threshold, compression ratio and support weight.
        relevance: Item -> relevance in [0, 1]; ``default_relevance`` when None.
        line: Renders an item's full line.
        short: Renders the form a line is compressed to when the budget is tight (``compact_line``); pass
            ``line`` again when no shorter form keeps what the reader needs (it is then shown whole or left out).
        header: The block's first line (data, not instructions).
        now: Time for the instant memory (no decay happens inside one assembly).

    Returns:
        The block; ``shown`` is in the block's order.
    """
    rel = relevance or (lambda it: default_relevance(it, config))
    unique: dict[str, ScoredItem] = {}
    for it in items:
        unique.setdefault(it.item_id, it)
    mem = InstantMemory(max(0, budget), config=config, strategy=CompressLowest(config.context.instant_compress_ratio), now=now)
    head = mem.tokens_of(header)
    mem.capacity = max(0, budget - head - 1)  # the header and its newline come first
    for it in unique.values():
        brief = short(it)
        for content in dict.fromkeys((line(it), brief)):  # a line too long for the budget comes in short
            try:
                mem.attend(content, _clip01(rel(it)), it.kind, source_id=it.item_id, summary=brief, payload=it, now=now)
                break
            except ContentTooLarge:
                continue
    mem.tick(now)  # leaves out what is under the eviction threshold
    kept = mem.selected(budget, header=header, separator="\n")
    shown = [i.payload for i in kept]
    text = "\n".join([header, *(i.content for i in kept)]) if kept else ""
    taken = {s.item_id for s in shown}
    dropped = [it for it in unique.values() if it.item_id not in taken]
    return Assembled(shown, dropped, text, mem.tokens_of(text) if text else 0, mem.tokens_exact)


__all__ = [
    "Assembled",
    "assemble",
    "compact_line",
    "whole_actions",
    "default_relevance",
    "habit_rate",
    "habit_relevance",
    "hint_line",
    "in_order",
    "opening_matchers",
]
