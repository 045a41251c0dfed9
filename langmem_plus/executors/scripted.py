"""ScriptedExecutor: an offline policy that behaves like an agent new to a tool (design.md §8).

It renders a task's structured intent (``task.context["intent"]``, a list of
abstract ops such as ``{"op": "filter", "col": "age", "cmp": ">=", "value": 30}``)
in a *conventional dialect*: what an agent used to SQL, PRQL, pandas or unix would
guess (``from people | filter age >= 30 | select name, age``, ``sort age desc``,
``limit 3``, ``count()``, ``==``, double-quoted strings). So on gridtool or
fluxtool it makes the mistakes an unfamiliar agent makes. It carries no state
between attempts: the only knowledge that crosses attempts is the hints it is
given, and within an attempt everything is derived again from the history.

Per call to ``act``:

1. Render the intent: a topic (an op such as ``filter``, or a word class such as
   ``compare``) uses the tool's usage/term lines if its docs were read in this
   attempt, else its second guess if the last command of this attempt used it,
   else the conventional first guess.
2. Apply every hint's WRONG -> CORRECT rewrite (``rewrite.apply_rewrite``) in
   order; a hint that would undo what the docs taught is skipped.
3. After a failure, if that action is new, run it (a new hint or new docs fixed
   something). Otherwise find the topic that failed from the stage number and the
   quoted literal of the error, then with probability ``retry_alternative_p`` try
   the second conventional guess for that topic, else read that topic's docs.

One topic changes per retry, so a failed action and the next one differ only
where that topic is rendered, which is what lesson synthesis
(``rewrite.derive_rewrite``) turns into a general rule.

Example:
    >>> from langmem_plus.envs.gridtool import GridToolEnv
    >>> env, ex = GridToolEnv(), ScriptedExecutor(seed=0)
    >>> task = env.tasks()[0]
    >>> ex.act(task, [], []).action
    'from people | filter age >= 30 | select name, age'
    >>> from langmem_plus.records import Hint
    >>> hint = Hint(text="use LOAD", source_id="les_1", wrong="from", correct="LOAD")
    >>> ex.act(task, [], [hint]).action
    'LOAD people | filter age >= 30 | select name, age'
"""

from __future__ import annotations

import difflib
import logging
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langmem_plus._text import action_tokens
from langmem_plus.executors.base import Decision
from langmem_plus.records import Hint, Step, TaskSpec
from langmem_plus.rewrite import apply_rewrite

logger = logging.getLogger(__name__)

FULL_DOCS = "*"
"""Marker in the set of read topics for a read of the whole docs (topic None)."""
PIPE = "pipe"
"""Topic of the stage joiner."""

CONVENTIONAL: Mapping[str, tuple[str, str]] = {
    PIPE: ("{stage} | {stage}", "{stage} |> {stage}"),
    "load": ("from {table}", "read {table}"),
    "filter": ("filter {col} {cmp} {value}", "where {col} {cmp} {value}"),
    "select": ("select {cols}", "project {cols}"),
    "sort": ("sort {col} {dir}", "order by {col} {dir}"),
    "limit": ("limit {n}", "head {n}"),
    "count": ("count()", "count(*)"),
    "group": ("group by {key} {agg}({col})", "groupby {key} {agg}({col})"),
}
"""Per op: (first guess, second guess), the forms other tools use."""

TERM_GUESSES: Mapping[str, tuple[Mapping[str, str], Mapping[str, str]]] = {
    "cmp": ({}, {"==": "="}),
    "dir": ({"asc": "", "desc": "desc"}, {}),
    "quote": ({"": '"'}, {"": "'"}),
    "agg": ({}, {"avg": "mean", "sum": "total", "min": "minimum", "max": "maximum"}),
}
"""Per word class: (first guesses, second guesses); a word missing from both is used as is."""

TERM_TOPICS: Mapping[str, str] = {"cmp": "compare", "dir": "sort", "quote": "quote", "agg": "aggregate"}
"""Word class -> the docs topic that spells it."""

ALT_TOPICS: tuple[str, ...] = (*CONVENTIONAL, "compare", "quote", "aggregate")
"""Topics that have a second guess."""

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_DOCS_LINE = re.compile(r"^[ \t]*(usage|term)\[([^\]\n]+)\]:[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_STAGE = re.compile(r"stage\s*#?\s*(\d+)", re.IGNORECASE)
_QUOTED = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")
_PUNCT = frozenset({",", "(", ")"})


# --------------------------------------------------------------------------- plain data


@dataclass(frozen=True)
class _Knowledge:
    """What the docs read in this attempt taught."""

    usage: Mapping[str, str] = field(default_factory=dict)
    terms: Mapping[str, str] = field(default_factory=dict)
    read: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _Slot:
    """One rendered piece of a stage and the topic responsible for it."""

    text: str
    topic: str
    from_docs: bool


@dataclass(frozen=True)
class _Stage:
    op: str
    text: str
    slots: tuple[_Slot, ...]


@dataclass(frozen=True)
class _Plan:
    """A rendered action with the provenance of every piece."""

    stages: tuple[_Stage, ...]
    joiner: str
    joiner_from_docs: bool

    @property
    def action(self) -> str:
        return self.joiner.join(s.text for s in self.stages)

    def protected(self) -> list[list[str]]:
        """Token runs the docs taught; hints may not remove them."""
        runs = [
            [t for t in action_tokens(slot.text) if t not in _PUNCT]
            for stage in self.stages
            for slot in stage.slots
            if slot.from_docs
        ]
        if self.joiner_from_docs:
            runs.append(action_tokens(self.joiner))
        return [r for r in runs if r]


# --------------------------------------------------------------------------- history


def _is_docs(step: Step) -> bool:
    return step.info.get("kind") == "docs"


def _knowledge(history: Sequence[Step]) -> _Knowledge:
    """Usage templates and term spellings from the docs steps of this attempt."""
    usage: dict[str, str] = {}
    terms: dict[str, str] = {}
    read: set[str] = set()
    for step in history:
        if not _is_docs(step):
            continue
        topic = step.info.get("topic")
        read.add(str(topic).strip().lower() if topic else FULL_DOCS)
        for kind, key, value in _DOCS_LINE.findall(step.observation):
            key = key.strip()
            if kind == "usage":
                usage[key] = value
                read.add(key)
            else:
                terms[key] = value
                read.add(TERM_TOPICS.get(key.split(".", 1)[0], key))
    return _Knowledge(usage, terms, frozenset(read))


def _norm(action: str) -> str:
    return " ".join(action.split())


def _intent(task: TaskSpec) -> list[Mapping[str, Any]] | None:
    intent = task.context.get("intent") if isinstance(task.context, dict) else None
    if not isinstance(intent, list) or not intent:
        return None
    if not all(isinstance(op, Mapping) and isinstance(op.get("op"), str) for op in intent):
        return None
    return intent


# --------------------------------------------------------------------------- rendering


def _term(slot: str, word: str, know: _Knowledge, alts: frozenset[str]) -> tuple[str, bool]:
    """The spelling of ``word`` of word class ``slot``, and whether the docs gave it."""
    key = "quote" if slot == "quote" else f"{slot}.{word}"
    if key in know.terms:
        return know.terms[key], True
    first, second = TERM_GUESSES[slot]
    if TERM_TOPICS[slot] in alts and word in second:
        return second[word], False
    return first.get(word, word), False


def _fill(name: str, op: Mapping[str, Any], know: _Knowledge, alts: frozenset[str]) -> _Slot:
    """Render one placeholder of an op template."""
    kind = str(op["op"])
    if name == "cols":
        return _Slot(", ".join(str(c) for c in op["cols"]), kind, False)
    if name == "cmp":
        text, docs = _term("cmp", str(op["cmp"]), know, alts)
        return _Slot(text, "compare", docs)
    if name == "dir":
        text, docs = _term("dir", str(op.get("dir", "asc")), know, alts)
        return _Slot(text, kind, docs)
    if name == "agg":
        text, docs = _term("agg", str(op["agg"]), know, alts)
        return _Slot(text, "aggregate", docs)
    if name == "value" and isinstance(op["value"], str):
        quote, docs = _term("quote", "", know, alts)
        return _Slot(f"{quote}{op['value']}{quote}", "quote", docs)
    if name in op:
        return _Slot(str(op[name]), kind, False)
    return _Slot("{" + name + "}", kind, False)


def _render_op(op: Mapping[str, Any], know: _Knowledge, alts: frozenset[str]) -> _Stage:
    kind = str(op["op"])
    from_docs = kind in know.usage
    if from_docs:
        template = know.usage[kind]
    else:
        guesses = CONVENTIONAL.get(kind, (kind, kind))
        template = guesses[1] if kind in alts else guesses[0]
    slots: list[_Slot] = []
    parts: list[str] = []
    pos = 0
    for match in [*_PLACEHOLDER.finditer(template), None]:
        literal = template[pos : match.start() if match else len(template)]
        parts.append(literal)
        slots.extend(_Slot(tok, kind, from_docs) for tok in action_tokens(literal))
        if match is None:
            break
        slot = _fill(match.group(1), op, know, alts)
        parts.append(slot.text)
        if slot.text:
            slots.append(slot)
        pos = match.end()
    return _Stage(kind, " ".join("".join(parts).split()), tuple(slots))


def _joiner(template: str) -> str:
    match = re.search(r"\{stage\}(.+?)\{stage\}", template)
    return match.group(1) if match else " | "


def _render(intent: Sequence[Mapping[str, Any]], know: _Knowledge, alts: frozenset[str]) -> _Plan:
    """Render the whole intent under the current knowledge and second guesses."""
    if PIPE in know.usage:
        joiner, from_docs = _joiner(know.usage[PIPE]), True
    else:
        joiner, from_docs = _joiner(CONVENTIONAL[PIPE][1 if PIPE in alts else 0]), False
    return _Plan(tuple(_render_op(op, know, alts) for op in intent), joiner, from_docs)


# --------------------------------------------------------------------------- hints


def _count_run(tokens: Sequence[str], run: Sequence[str]) -> int:
    n = len(run)
    return sum(1 for i in range(len(tokens) - n + 1) if list(tokens[i : i + n]) == list(run))


def _apply_hints(plan: _Plan, hints: Sequence[Hint]) -> tuple[str, tuple[str, ...]]:
    """Apply each hint's rewrite in order, skipping one that removes a docs-taught token."""
    action = plan.action
    protected = plan.protected()
    applied: list[str] = []
    for hint in hints:
        wrong, correct = getattr(hint, "wrong", None), getattr(hint, "correct", None)
        if not isinstance(wrong, str) or not wrong.strip() or not isinstance(correct, str):
            continue
        try:
            new = apply_rewrite(action, wrong, correct)
        except Exception as exc:  # noqa: BLE001 - an odd hint must never break the policy (Executor protocol)
            logger.debug("langmem_plus: hint %s skipped: %r", hint.source_id, exc)
            continue
        if not new or new == action:
            continue
        before, after = action_tokens(action), action_tokens(new)
        if any(_count_run(after, run) < _count_run(before, run) for run in protected):
            continue
        action = new
        if hint.source_id not in applied:
            applied.append(hint.source_id)
    return action, tuple(applied)


# --------------------------------------------------------------------------- diagnosis


def _signatures(base: Sequence[str], alt: Sequence[str]) -> list[list[list[str]]]:
    """Per change between the first- and second-guess renderings, the token runs that show it.

    A change is shown by its new tokens together with one neighbour (left or right),
    so a second-guess word that is also a column name elsewhere is not mistaken for it.
    """
    changes: list[list[list[str]]] = []
    matcher = difflib.SequenceMatcher(None, list(base), list(alt), autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        run = list(alt[j1:j2])
        shows = []
        if j1 > 0:
            shows.append(list(alt[j1 - 1 : j2]))
        if j2 < len(alt):
            shows.append(run + [alt[j2]])
        changes.append(shows or [run])
    return changes


def _active_alts(intent: Sequence[Mapping[str, Any]], know: _Knowledge, last_cmd: Step | None) -> frozenset[str]:
    """Topics whose second guess the last command used (so it is kept until the docs say otherwise)."""
    if last_cmd is None:
        return frozenset()
    used = action_tokens(last_cmd.action)
    base = action_tokens(_render(intent, know, frozenset()).action)
    active: set[str] = set()
    for topic in ALT_TOPICS:
        if topic in know.read:
            continue
        sigs = _signatures(base, action_tokens(_render(intent, know, frozenset({topic})).action))
        if sigs and all(any(_count_run(used, run) > 0 for run in shows) for shows in sigs):
            active.add(topic)
    return frozenset(active)


def _same(quoted: str, text: str) -> bool:
    q = quoted.strip().lower()
    if not q:
        return False
    words = {t.lower().strip("'\"") for t in action_tokens(text)}
    return q == text.strip().lower() or q == text.strip().lower().strip("'\"") or q in words


def _attribute(error_text: str, plan: _Plan) -> str | None:
    """The topic an error is about: the joiner, a quoted literal's slot, or the stage's op."""
    quoted = [a or b for a, b in _QUOTED.findall(error_text)]
    joiner = plan.joiner.strip()
    if joiner and any(q.strip() == joiner for q in quoted):
        return PIPE
    match = _STAGE.search(error_text)
    index = int(match.group(1)) - 1 if match else -1
    stage = plan.stages[index] if 0 <= index < len(plan.stages) else None
    for q in quoted:
        for candidate in [stage] if stage else plan.stages:
            for slot in candidate.slots:
                if _same(q, slot.text):
                    return slot.topic
    return stage.op if stage else None


# --------------------------------------------------------------------------- the executor


class ScriptedExecutor:
    """Offline executor: conventional first guesses, docs on demand, hints as rewrites.

    Args:
        seed: Seed of the per-decision random draws (combined with the task id and
            the history length, so ``act`` is a pure function of its inputs).
        docs_allowed: Whether it may read the docs (a step each) after an error.
        retry_alternative_p: Probability of trying a second conventional guess for
            the failing topic before reading its docs.

    Example:
        >>> ex = ScriptedExecutor(seed=1, docs_allowed=False)
        >>> ex.retry_alternative_p
        0.3
    """

    def __init__(self, seed: int = 0, docs_allowed: bool = True, retry_alternative_p: float = 0.3) -> None:
        if not 0.0 <= float(retry_alternative_p) <= 1.0:
            raise ValueError(f"retry_alternative_p must be in [0, 1], got {retry_alternative_p!r}")
        self.seed = int(seed)
        self.docs_allowed = bool(docs_allowed)
        self.retry_alternative_p = float(retry_alternative_p)

    def act(self, task: TaskSpec, history: Sequence[Step], hints: Sequence[Hint]) -> Decision:
        """The next move for ``task`` given this attempt's ``history`` and the ``hints``."""
        intent = _intent(task)
        if intent is None:
            return Decision(kind="done", note="task has no structured intent to render")
        steps = list(history)
        last = steps[-1] if steps else None
        if last is not None and not _is_docs(last) and not last.feedback.failed and last.feedback.reward > 0:
            return Decision(kind="done", note="solved")
        know = _knowledge(steps)
        commands = [s for s in steps if not _is_docs(s)]
        last_cmd = commands[-1] if commands else None
        try:
            alts = _active_alts(intent, know, last_cmd)
            plan = _render(intent, know, alts)
        except (KeyError, TypeError, ValueError) as exc:
            return Decision(kind="done", note=f"cannot render the intent: {exc!r}")
        action, applied = _apply_hints(plan, hints)
        tried = {_norm(s.action) for s in commands}
        if last_cmd is None or _norm(action) not in tried:
            note = "first attempt" if last_cmd is None else "retry with what docs/hints changed"
            return Decision(kind="command", action=action, applied_hints=applied, note=note)
        return self._recover(task, len(steps), intent, know, alts, plan, hints, tried, last_cmd)

    def _recover(
        self,
        task: TaskSpec,
        n_steps: int,
        intent: Sequence[Mapping[str, Any]],
        know: _Knowledge,
        alts: frozenset[str],
        plan: _Plan,
        hints: Sequence[Hint],
        tried: set[str],
        last_cmd: Step,
    ) -> Decision:
        """Nothing new to run: second guess, docs, or give up."""
        topic = _attribute(last_cmd.feedback.error_text or last_cmd.observation, plan)
        rng = random.Random(f"{self.seed}:{task.task_id}:{n_steps}")
        draw = rng.random()
        alt = self._alternative(intent, know, alts, plan, hints, tried, topic)
        if alt is not None and draw < self.retry_alternative_p:
            return Decision(kind="command", action=alt[0], applied_hints=alt[1], note=f"second guess for {topic}")
        if self.docs_allowed and topic is not None and topic not in know.read:
            return Decision(kind="docs", topic=topic, note=f"read the docs on {topic}")
        if self.docs_allowed and FULL_DOCS not in know.read:
            return Decision(kind="docs", topic=None, note="read the whole manual")
        if alt is not None:
            return Decision(kind="command", action=alt[0], applied_hints=alt[1], note=f"second guess for {topic}")
        return Decision(kind="done", note=f"out of ideas for {topic or 'the failure'}")

    @staticmethod
    def _alternative(
        intent: Sequence[Mapping[str, Any]],
        know: _Knowledge,
        alts: frozenset[str],
        plan: _Plan,
        hints: Sequence[Hint],
        tried: set[str],
        topic: str | None,
    ) -> tuple[str, tuple[str, ...]] | None:
        """The action with the second guess for ``topic``, if there is an untried one."""
        if topic is None or topic not in ALT_TOPICS or topic in know.read or topic in alts:
            return None
        alt_plan = _render(intent, know, alts | {topic})
        if alt_plan.action == plan.action:
            return None
        action, applied = _apply_hints(alt_plan, hints)
        return None if _norm(action) in tried else (action, applied)


__all__ = ["ALT_TOPICS", "CONVENTIONAL", "TERM_GUESSES", "ScriptedExecutor"]
