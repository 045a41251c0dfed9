"""A realistic synthetic lesson memory and a labelled query set, for ``bench retrieval``.

The memory imitates what many runs over many tools leave behind (design.md §2, §6):

- ``TOOLS`` tools in ``DOMAINS`` domains; each tool has error families (an error
  template such as ``unknown command '{w}'``) and each family many fingerprints;
- one fingerprint is answered by several rewrite lessons with different WRONG
  patterns (one ``unknown command <str>`` fingerprint, many misspelt commands), so
  the fingerprint alone does not say which lesson fixes a failure: the failing
  action does;
- tags from a fixed vocabulary, lessons in every status, conflict pairs (same
  WRONG, different CORRECT, the loser less reliable), co-activation links between
  lessons of one tool; apart from the conflict pairs, no two lessons of one tool
  share a WRONG pattern, so every query has one right answer.

Each query names the lesson that fixes it. Queries carry fresh literals in their
error text, and a share of them are paraphrased: reworded error text and a
fingerprint the memory has never seen, so exact fingerprint match alone cannot
answer them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from langmem_plus._text import stable_id
from langmem_plus.records import ErrorEvent, Lesson, LessonScope, Link, Provenance

TOOLS = 40
"""Distinct tools in the synthetic memory."""
DOMAINS = 8
"""Distinct domains; tool ``i`` is in domain ``i % DOMAINS``."""
LESSONS_PER_FP = 3
"""Rewrite lessons per fingerprint (different WRONG patterns under one fingerprint)."""
STATUS_WEIGHTS = {"candidate": 0.45, "promoted": 0.35, "suppressed": 0.10, "archived": 0.10}
"""Share of lessons per status."""
CONFLICT_SHARE = 0.03
"""Share of lessons that get a conflicting twin (same WRONG, other CORRECT, less reliable)."""
LINKS_PER_LESSON = 0.2
"""Co-activation links per lesson (between lessons of one tool)."""
PARAPHRASE_SHARE = 0.4
"""Share of queries whose error text is reworded and whose fingerprint is new."""

TAGS = [
    "unknown_command", "column_reference", "sort_direction", "operator_mismatch", "path_quote",
    "arity_mismatch", "type_mismatch", "missing_argument", "permission", "rate_limit",
    "syntax_structure", "encoding", "timeout", "not_found", "auth", "schema",
]
FAMILIES = [
    ("unknown command '{w}' at stage {n}", "the command {w} is not recognised (stage {n})", "unknown_command"),
    ("no such column: {w}", "column {w} does not exist in this table", "column_reference"),
    ("invalid sort direction '{w}'", "sort order {w} not understood", "sort_direction"),
    ("operator {w} cannot compare str and int", "cannot apply {w} between text and number", "operator_mismatch"),
    ("path '{w}/{n}' did not match any files", "nothing found at {w}/{n}", "path_quote"),
    ("{w}() takes {n} positional arguments", "wrong number of arguments passed to {w} ({n})", "arity_mismatch"),
    ("expected int for {w}, got str", "{w} must be a number, not text", "type_mismatch"),
    ("missing required option --{w}", "option --{w} must be given", "missing_argument"),
    ("permission denied: /var/{w}/{n}", "not allowed to open /var/{w}/{n}", "permission"),
    ("HTTP 429 rate limit exceeded for {w}", "too many requests sent to {w}", "rate_limit"),
    ("unexpected token '{w}' at line {n}", "parse error near {w} on line {n}", "syntax_structure"),
    ("schema mismatch: field {w} not in record", "record has no field named {w}", "schema"),
]
SYLLABLES = ["ka", "lo", "mi", "zu", "re", "ta", "vo", "ni", "sa", "pe", "qu", "di", "fo", "gu", "he", "ja"]


def _word(rng: random.Random, parts: int = 3) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts))


def _fresh_word(rng: random.Random, used: set[str], tries: int = 8) -> str:
    """A word not in ``used`` (then added): three syllables, one more after ``tries`` misses."""
    parts = 3
    while True:
        for _ in range(tries):
            word = _word(rng, parts)
            if word not in used:
                used.add(word)
                return word
        parts += 1


@dataclass(frozen=True)
class Query:
    """One labelled on-error query: the event, and the id of the lesson that fixes it."""

    event: ErrorEvent
    target: str
    paraphrased: bool


@dataclass
class SyntheticMemory:
    """Lessons, co-activation links and labelled queries of one synthetic memory."""

    lessons: list[Lesson]
    links: list[Link]
    queries: list[Query]


def _status(rng: random.Random) -> str:
    r, acc = rng.random(), 0.0
    for status, share in STATUS_WEIGHTS.items():
        acc += share
        if r < acc:
            return status
    return "candidate"


def build_memory(n: int, namespace: tuple[str, ...], *, queries: int = 200, seed: int = 0) -> SyntheticMemory:
    """``n`` lessons (about), their links, and ``queries`` labelled queries.

    Args:
        n: Lessons wanted (conflict twins included).
        namespace: Namespace of every record.
        queries: Labelled queries to draw.
        seed: Random seed; the same seed gives the same memory.

    Returns:
        The synthetic memory.
    """
    rng = random.Random(seed)
    lessons: list[Lesson] = []
    meta: list[tuple[int, int, str, str]] = []  # (tool, family, fp literal, wrong) per lesson
    wrongs: dict[int, set[str]] = {}  # WRONG patterns taken, per tool
    fp_count = max(1, n // LESSONS_PER_FP)
    i = 0
    while len(lessons) < n:
        fp_i = i // LESSONS_PER_FP % fp_count
        tool = fp_i % TOOLS
        family = (fp_i // TOOLS) % len(FAMILIES)
        template, _, tag = FAMILIES[family]
        literal = f"{_word(rng, 2)}{fp_i}"
        fp_text = f"tool{tool}: " + template.format(w="<str>", n="<num>") + f" [{literal}]"
        fp_id = stable_id("fp", str(fp_i))
        # One tool's lessons never share a WRONG by accident: two unlinked lessons with one
        # WRONG and different fixes would make a query's right answer a coin toss (the
        # deliberate ones are the conflict twins below, linked by ``conflicts_with``).
        wrong, correct = _fresh_word(rng, wrongs.setdefault(tool, set())), _word(rng)
        second = rng.choice(TAGS)
        lesson = Lesson(
            id=stable_id("les", *namespace, str(i)),
            namespace=namespace,
            rule_text=f"WRONG: {wrong} -> CORRECT: {correct} (when tool{tool} says {template.format(w=wrong, n='N')})",
            wrong=wrong,
            correct=correct,
            triggers=[fp_id],
            fingerprints=[fp_text],
            tags=[tag] if second == tag else [tag, second],
            scope=LessonScope(level="domain", tool=f"tool{tool}", domain=f"domain{tool % DOMAINS}"),
            status=_status(rng),  # type: ignore[arg-type]
            reliability=round(rng.uniform(0.3, 0.95), 3),
            provenance=Provenance(run_ids=[f"run{rng.randrange(max(1, n // 4))}"]),
            created_at=1_000_000.0 + i,
            updated_at=1_000_000.0 + i,
        )
        lessons.append(lesson)
        meta.append((tool, family, literal, wrong))
        i += 1
        if rng.random() < CONFLICT_SHARE and len(lessons) < n:
            twin = lesson.model_copy(
                update={
                    "id": stable_id("les", *namespace, str(i), "twin"),
                    "correct": _word(rng),
                    "reliability": round(lesson.reliability * 0.5, 3),
                    "conflicts_with": [lesson.id],
                    "status": "candidate",
                }
            )
            twin = twin.model_copy(update={"rule_text": f"WRONG: {wrong} -> CORRECT: {twin.correct} (when tool{tool} says {template.format(w=wrong, n='N')})"})
            lessons.append(twin)
            meta.append((tool, family, literal, wrong))
    by_tool: dict[int, list[int]] = {}
    for j, (tool, *_rest) in enumerate(meta):
        by_tool.setdefault(tool, []).append(j)
    links: list[Link] = []
    for _ in range(int(n * LINKS_PER_LESSON)):
        a = rng.randrange(len(lessons))
        b = rng.choice(by_tool[meta[a][0]])
        if a != b:
            links.append(
                Link(
                    id=stable_id("lnk", lessons[a].id, lessons[b].id),
                    namespace=namespace,
                    a=f"lesson:{lessons[a].id}",
                    b=f"lesson:{lessons[b].id}",
                    weight=float(rng.randint(1, 4)),
                )
            )
    return SyntheticMemory(lessons, links, _queries(lessons, meta, namespace, queries, rng))


def _queries(
    lessons: list[Lesson], meta: list[tuple[int, int, str, str]], namespace: tuple[str, ...], k: int, rng: random.Random
) -> list[Query]:
    eligible = [j for j, l in enumerate(lessons) if l.retrievable and not l.conflicts_with]
    out: list[Query] = []
    for q in range(k):
        j = rng.choice(eligible)
        lesson = lessons[j]
        tool, family, literal, wrong = meta[j]
        template, paraphrase, _tag = FAMILIES[family]
        fresh = rng.randint(1, 999)
        paraphrased = rng.random() < PARAPHRASE_SHARE
        text = (paraphrase if paraphrased else template).format(w=wrong, n=fresh)
        fp_text = f"tool{tool}: " + template.format(w="<str>", n="<num>") + f" [{literal}]"
        fp_id = stable_id("fp", "paraphrase", str(q)) if paraphrased else lesson.triggers[0]
        action = f"{_word(rng, 2)} | {wrong} {_word(rng, 2)}={fresh}"
        event = ErrorEvent(
            id=stable_id("ev", *namespace, str(q)),
            namespace=namespace,
            run_id=f"query{q}",
            step=1,
            fingerprint=text if paraphrased else fp_text,
            fingerprint_id=fp_id,
            tags=[lesson.tags[0]],
            channel="hard",
            action=action,
            error_text=f"tool{tool}: {text}",
            tool=f"tool{tool}",
        )
        out.append(Query(event=event, target=lesson.id, paraphrased=paraphrased))
    return out


__all__ = ["Query", "SyntheticMemory", "build_memory"]
