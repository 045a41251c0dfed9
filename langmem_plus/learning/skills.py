"""Skills: procedures distilled from repeated successes (design.md §6 "Skills", AMM spec §6).

A subgoal template solved ``skill_min_successes`` (3) times becomes a skill:

- **steps**: the common action subsequence of its success episodes, literals
  generalised (numbers and quoted strings become ``<num>`` / ``<str>``) and gaps
  shown as ``…``, so ``LOAD people | KEEP age >= 30 | PICK name`` and ``LOAD orders
  | KEEP status = 'paid' | PICK id`` give ``LOAD … | KEEP … | PICK …``;
- **preconds**: preconditions satisfied in every success;
- **effects**: state facts true at the end of every success;
- **failure modes**: what went wrong around it (avoidance episodes of the same
  template, and failed executions recorded later).

A skill matches a goal by template token overlap (Jaccard >= ``skill_match_min_overlap``)
or, given an embedder, cosine > ``skill_match_cosine``. Its missing preconditions
become hints. Its success rate is an EMA (alpha ``skill_ema_alpha``) of outcomes.
Everything here is pure; the facade stores skills and adds them to the lesson graph.

Example:
    >>> common_subsequence([["LOAD", "a", "|", "KEEP", "x"], ["LOAD", "b", "|", "KEEP", "y"]])
    ['LOAD', '|', 'KEEP']
    >>> skeleton([["LOAD", "a", "|", "KEEP", "x"], ["LOAD", "b", "|", "KEEP", "y"]])
    'LOAD … | KEEP …'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

import numpy as np

from langmem_plus._text import action_tokens, stable_id
from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.episodes import goal_template
from langmem_plus.records import Episode, Hint, Namespace, Skill, SkillEvidence, SkillStats

GAP = "…"
"""Marks tokens that differ between the successes a skill step was distilled from."""
STEP_SEPARATOR = ";"
"""Joins the actions of one episode before the common subsequence is taken, so steps stay apart."""
FAILURE_MODES_KEPT = 10
"""Distinct failure modes a skill keeps (newest last); provenance for people, not a tunable."""

_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_WORD = re.compile(r"[a-z0-9]+")

Embed = Callable[[list[str]], list[list[float]]]
"""An embedder's ``embed_documents``: texts -> vectors."""


def _general(tok: str) -> str:
    if _NUMBER.match(tok):
        return "<num>"
    if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "\"'":
        return "<str>"
    return tok


def episode_tokens(ep: Episode) -> list[str]:
    """The episode's actions as one generalised token list, actions separated by ``STEP_SEPARATOR``."""
    out: list[str] = []
    for i, action in enumerate(ep.action_seq):
        if i:
            out.append(STEP_SEPARATOR)
        out.extend(_general(t) for t in action_tokens(action))
    return out


def lcs_pairs(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of two token lists (dynamic programming, O(len(a) * len(b))).

    Example:
        >>> lcs_pairs(["a", "b", "c"], ["b", "x", "c"])
        [(1, 0), (2, 2)]
    """
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            out.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return out


def _lcs(a: Sequence[str], b: Sequence[str]) -> list[str]:
    """Longest common subsequence of two token lists."""
    return [a[i] for i, _ in lcs_pairs(a, b)]


def common_subsequence(seqs: Sequence[Sequence[str]]) -> list[str]:
    """A common subsequence of all ``seqs`` (pairwise LCS, left to right); [] for no sequences."""
    if not seqs:
        return []
    common = list(seqs[0])
    for seq in seqs[1:]:
        common = _lcs(common, seq)
    return common


def _has_gap(seq: Sequence[str], common: Sequence[str]) -> list[bool]:
    """For each slot around the tokens of ``common`` (len + 1 slots), whether ``seq`` has tokens there."""
    gaps = [False] * (len(common) + 1)
    k = 0
    for tok in seq:
        if k < len(common) and tok == common[k]:
            k += 1
        else:
            gaps[k] = True
    return gaps


def skeleton(seqs: Sequence[Sequence[str]]) -> str:
    """The common subsequence of ``seqs`` as text, with ``GAP`` where some sequence has more tokens."""
    common = common_subsequence(seqs)
    gaps = [False] * (len(common) + 1)
    for seq in seqs:
        gaps = [g or h for g, h in zip(gaps, _has_gap(seq, common))]
    parts: list[str] = []
    for k, tok in enumerate(common):
        if gaps[k]:
            parts.append(GAP)
        parts.append(tok)
    if gaps[len(common)]:
        parts.append(GAP)
    return " ".join(parts)


def _steps(episodes: Sequence[Episode], limit: int) -> list[str]:
    seqs = [episode_tokens(e) for e in episodes if e.action_seq]
    if not seqs:
        return []
    text = skeleton(seqs)
    steps = [s.strip() for s in text.split(f" {STEP_SEPARATOR} ")]
    return [s for s in steps if s and s != GAP][:limit]


def _intersection(lists: Sequence[Sequence[str]]) -> list[str]:
    if not lists:
        return []
    common = set(lists[0])
    for lst in lists[1:]:
        common &= set(lst)
    return [x for x in lists[0] if x in common]


def skill_id(namespace: Namespace, template: str, context: str) -> str:
    """Stable id of the skill for one (subgoal template, context)."""
    return stable_id("skl", *namespace, template, context)


def synthesize_skill(
    successes: Sequence[Episode],
    *,
    failures: Sequence[Episode] = (),
    existing: Skill | None = None,
    config: MemoryConfig = DEFAULT_CONFIG,
    now: float,
) -> Skill | None:
    """A skill from the success episodes of one (subgoal template, context), or None (design.md §6).

    None until the successes, counting merged duplicates (``Episode.count``), reach
    ``skill_min_successes``. With ``existing`` (the skill already stored for the
    template), its id, stats and failure modes are kept and the procedure refreshed.

    Args:
        successes: Success episodes of one template and context.
        failures: Avoidance / near-miss episodes of the same template; their summaries
            become failure modes.
        existing: The stored skill for this template, if any.
        config: Supplies ``skill_min_successes`` and ``skill_max_steps``.
        now: Current time, epoch seconds.
    """
    wins = [e for e in successes if e.kind == "success"]
    solved = sum(max(e.count, 1) for e in wins)
    if not wins or solved < config.lifecycle.skill_min_successes:
        return None
    first = wins[0]
    template, context = first.subgoal_template, first.context
    goals = list(dict.fromkeys([template, *(goal_template(e.goal_signature) for e in wins)]))
    effects = _intersection([e.state_fingerprint for e in wins]) or [f"goal reached: {template}"]
    modes = list(existing.failure_modes) if existing else []
    for ep in failures:
        if ep.kind != "success" and ep.summary and ep.summary not in modes:
            modes.append(ep.summary)
    stats = existing.stats if existing else SkillStats(executions=solved, successes=solved, success_rate=1.0)
    return Skill(
        id=existing.id if existing else skill_id(first.namespace, template, context),
        namespace=first.namespace,
        name=re.sub(r"\W+", "_", template.lower()).strip("_")[:60] or "skill",
        goal_templates=goals,
        preconds=_intersection([e.preconds_satisfied for e in wins]),
        steps=_steps(wins, config.lifecycle.skill_max_steps),
        effects=effects,
        failure_modes=modes[-FAILURE_MODES_KEPT:],
        stats=stats,
        source_episodes=sorted({e.episode_id for e in wins}),
        created_at=existing.created_at if existing else now,
    )


def record_skill_outcome(
    skill: Skill, *, passed: bool, failure_mode: str | None = None, config: MemoryConfig = DEFAULT_CONFIG
) -> Skill:
    """A copy of ``skill`` with one execution folded in: counts, EMA success rate, failure mode (design.md §6).

    ``success_rate <- (1 - alpha) * success_rate + alpha * outcome`` with alpha
    ``skill_ema_alpha``; a failed execution's ``failure_mode`` is appended when new.

    Example:
        >>> s = Skill(id="s", namespace=("n",), name="n", stats=SkillStats(success_rate=1.0))
        >>> record_skill_outcome(s, passed=False, failure_mode="timeout").stats.success_rate
        0.9
    """
    alpha = config.lifecycle.skill_ema_alpha
    st = skill.stats
    stats = SkillStats(
        executions=st.executions + 1,
        successes=st.successes + int(passed),
        failures=st.failures + int(not passed),
        success_rate=(1.0 - alpha) * st.success_rate + alpha * float(passed),
    )
    modes = list(skill.failure_modes)
    if not passed and failure_mode and failure_mode not in modes:
        modes = [*modes, failure_mode][-FAILURE_MODES_KEPT:]
    return skill.model_copy(update={"stats": stats, "failure_modes": modes})


def apply_skill_evidence(skill: Skill, ev: SkillEvidence, config: MemoryConfig = DEFAULT_CONFIG) -> Skill:
    """``skill`` with one run's outcome folded in (``record_skill_outcome``): the skills' fold (``learning.ledger``)."""
    return record_skill_outcome(skill, passed=ev.passed, failure_mode=ev.failure_mode, config=config)


def template_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the word tokens of two goal templates, in [0, 1].

    Example:
        >>> template_overlap("names of people over <num>", "names of people under <num>")
        0.6666666666666666
    """
    ta, tb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def match_skills(
    goal: str,
    skills: Sequence[Skill],
    config: MemoryConfig = DEFAULT_CONFIG,
    *,
    embed: Embed | None = None,
) -> list[tuple[Skill, float]]:
    """Skills that match ``goal``, best first, with their match score (design.md §6).

    A skill matches when the goal's template overlaps one of its templates by at least
    ``skill_match_min_overlap`` (Jaccard of word tokens), or, with ``embed``, when the
    cosine of the goal and a template exceeds ``skill_match_cosine``. The score is the
    larger of the two.
    """
    tmpl = goal_template(goal)
    vecs: dict[str, np.ndarray] = {}
    if embed is not None and skills:
        texts = list(dict.fromkeys([tmpl, *(t for s in skills for t in s.goal_templates)]))
        vecs = {t: np.asarray(v, dtype=np.float64) for t, v in zip(texts, embed(texts))}
    out: list[tuple[Skill, float]] = []
    for skill in skills:
        overlap = max((template_overlap(tmpl, t) for t in skill.goal_templates), default=0.0)
        cos = 0.0
        if vecs:
            q = vecs[tmpl]
            for t in skill.goal_templates:
                v = vecs[t]
                denom = float(np.linalg.norm(q) * np.linalg.norm(v))
                cos = max(cos, float(q @ v) / denom if denom else 0.0)
        if overlap >= config.lifecycle.skill_match_min_overlap or cos > config.lifecycle.skill_match_cosine:
            out.append((skill, max(overlap, cos)))
    return sorted(out, key=lambda sc: (-sc[1], sc[0].id))


def skill_hints(skill: Skill, satisfied: Collection[str] = ()) -> list[Hint]:
    """Hints from a matched skill: its first step, then one per missing precondition (design.md §6).

    Example:
        >>> s = Skill(id="s", namespace=("n",), name="deploy", preconds=["logged_in", "built"],
        ...           steps=["push image"])
        >>> [h.text for h in skill_hints(s, satisfied={"built"})]
        ['Skill deploy: start with `push image`', 'Skill deploy needs logged_in first']
    """
    hints: list[Hint] = []
    if skill.steps:
        hints.append(Hint(text=f"Skill {skill.name}: start with `{skill.steps[0]}`", source_kind="skill", source_id=skill.id))
    for pre in skill.preconds:
        if pre not in satisfied:
            hints.append(
                Hint(text=f"Skill {skill.name} needs {pre} first", precondition=pre, source_kind="skill", source_id=skill.id)
            )
    return hints


__all__ = [
    "lcs_pairs",
    "GAP",
    "apply_skill_evidence",
    "common_subsequence",
    "episode_tokens",
    "match_skills",
    "record_skill_outcome",
    "skeleton",
    "skill_hints",
    "skill_id",
    "synthesize_skill",
    "template_overlap",
]
