"""Which of an agent's tools a task is likely to call: the scope of the notes shown before its first call.

A naive Bayes classifier over the words of goals: each tool's "document" is its
description plus the goals of the past runs that called it, and a task's likelihood
for a tool is the posterior of that tool given the task's words (Laplace smoothing,
priors from how often past runs called the tool). Words no document has say nothing and
are left out. So a task learns its tools from the words that tell tools apart
("json", "branch", "table"), not from words every question shares ("what", "how many").
Pure: words in, scores out.

Example:
    >>> past = [(words("Which 3 rows of the pets table are oldest?"), ["run_sql"]),
    ...         (words("Show the first 2 entries of the cars list in cars.json"), ["jq"])]
    >>> scores = tool_scores(words("How many entries does the pets list in pets.json have?"),
    ...                      {"run_sql": words("Run SQL on the database"), "jq": words("Run jq on a JSON file")}, past)
    >>> max(scores, key=scores.get)
    'jq'
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

_WORD = re.compile(r"[a-z][a-z0-9_]*")
SMOOTHING = 1.0
"""Laplace smoothing of the word counts (add-one)."""


def words(text: str) -> list[str]:
    """The lowercase words of ``text`` (``pupils.json`` is ``pupils`` and ``json``)."""
    return _WORD.findall(text.lower())


def tool_scores(
    goal: Sequence[str], tools: Mapping[str, Sequence[str]], past: Sequence[tuple[Sequence[str], Sequence[str]]]
) -> dict[str, float]:
    """The posterior in [0, 1] (summing to 1) of each of ``tools`` calling a task with the words ``goal``.

    Args:
        goal: The task's words.
        tools: The agent's tools, each with the words of its description.
        past: Earlier runs: the words of their goal, and the tools they called.

    Returns:
        Tool -> its posterior; all equal when no word of the goal is in any tool's document.
    """
    counts: dict[str, Counter[str]] = {t: Counter(desc) for t, desc in tools.items()}
    runs: Counter[str] = Counter()
    for goal_words, used in past:
        for t in set(used) & set(tools):
            counts[t].update(goal_words)
            runs[t] += 1
    vocabulary = set().union(*counts.values()) if counts else set()
    known = [w for w in goal if w in vocabulary]
    size = max(len(vocabulary), 1)
    total_runs = sum(runs.values())
    logs: dict[str, float] = {}
    for t, c in counts.items():
        n = sum(c.values())
        prior = math.log((runs[t] + 1) / (total_runs + len(tools)))
        logs[t] = prior + sum(math.log((c[w] + SMOOTHING) / (n + SMOOTHING * size)) for w in known)
    if not logs:
        return {}
    top = max(logs.values())
    weights = {t: math.exp(v - top) for t, v in logs.items()}
    total = sum(weights.values())
    return {t: w / total for t, w in weights.items()}


def likely_tools(scores: Mapping[str, float], *, min_score: float, max_tools: int, ratio: float = 0.0) -> list[str]:
    """The tools to show notes for: likeliest first, at most ``max_tools``, each at least ``min_score`` and at
    least ``ratio`` times the likeliest's score.

    Example:
        >>> likely_tools({"a": 0.9, "b": 0.2, "c": 0.5}, min_score=0.3, max_tools=2)
        ['a', 'c']
        >>> likely_tools({"a": 0.9, "b": 0.2, "c": 0.5}, min_score=0.3, max_tools=2, ratio=0.75)
        ['a']
    """
    ranked = sorted((t for t, s in scores.items() if s >= min_score), key=lambda t: (-scores[t], t))
    best = scores[ranked[0]] if ranked else 0.0
    return [t for t in ranked if scores[t] >= ratio * best][:max_tools]


__all__ = ["SMOOTHING", "likely_tools", "tool_scores", "words"]
