"""TextGameExecutor: one policy for every text environment, knowing nothing about any particular game.

At each step it reads the goal, the observations of this attempt and the valid actions (``task.context`` before
the first step, ``Step.info["valid_actions"]`` after each) and picks one valid action: avoided actions out, the rest
scored by the words they share with the task's text, bonuses for recommended actions and a followed procedure's
next step, ties broken by a generator seeded with (seed, task id, step). Across attempts everything it knows comes
from the hints it is given, which it reads with its own matcher as a user's agent would; it never calls the
library's synthesis or rewrite code. ``docs/text-games.md`` gives the policy in full and the contract it reads
hints by (the one any agent can follow).

Example:
    >>> from langmem_plus.records import Hint, TaskSpec
    >>> task = TaskSpec(task_id="t", goal="Cook a meal.", context={
    ...     "observation": "Directions: roast the red apple",
    ...     "valid_actions": ["cook red apple in oven", "cook red apple in stove", "eat red apple"]})
    >>> avoid = Hint(text="Avoid `eat <X>`", source_id="l1")
    >>> prefer = Hint(text="Prefer `cook <X> in oven`", precondition="when the task says `roast the <X>`", source_id="l2")
    >>> TextGameExecutor(seed=0).act(task, [], [avoid, prefer]).action
    'cook red apple in oven'
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from langmem_plus.conditions import encode, read_precondition
from langmem_plus.executors.base import Decision
from langmem_plus.learning.textmatch import (
    ARTICLES,
    SLOT,
    UNNAMED,
    Pattern,
    avoidance_stands,
    bind,
    clauses,
    directing_lines,
    done_line,
    grounded_conditions,
    is_avoidance,
    is_procedure,
    listed_only,
    names_phrase,
    negated_line,
    next_step,
    norm,
    norm_words,
    quoted_actions,
    says_line,
    unnamed_slot,
)
from langmem_plus.textgames.rules import is_read
from langmem_plus.textgames.policy import DEFAULT_POLICY, ExecutorPolicy
from langmem_plus.records import Hint, Step, TaskSpec
from langmem_plus.retrieval.rule_lines import spelt_out

STOP_WORDS = frozenset(
    "a an the in on to of for and or is are you your it its s let once done with at from into this that".split()
)
"""Words that carry no content (overlap on them would favour every action with ``in``)."""

_WORD = re.compile(r"[a-z0-9]+")
_SLOT = SLOT


def content_words(text: str) -> set[str]:
    """Content words of ``text`` (stop words removed)."""
    return set(_WORD.findall(text.lower())) - STOP_WORDS


@dataclass(frozen=True)
class ReadHint:
    """A hint as this executor understood it."""

    hint: Hint
    avoid: bool
    patterns: tuple[Pattern, ...]
    conditions: tuple[str, ...]
    procedure: bool = False
    """The patterns are steps followed in order (``textmatch.is_procedure``), not alternatives."""
    said_so: bool = False
    """"Unless the task says so": each pattern holds only where no line of the task says it (bound)."""

    def conditions_of(self, pattern: Pattern) -> tuple[str, ...]:
        """The conditions as they bear on ``pattern``, one of the hint's own: with "unless the task says so", that the
        task does not say the pattern itself (``Avoid `chop <X>`, `slice <X>` unless the task says so``: each its own)."""
        return (*self.conditions, UNNAMED + pattern.text) if self.said_so else self.conditions


def read_hint(hint: Hint) -> ReadHint | None:
    """Parse one hint by the contract of the module docstring; None when it is unusable."""
    try:
        text = str(hint.text or "")
        avoid = is_avoidance(text)
        raws = quoted_actions(spelt_out(text))  # not what a rewrite replaces; alternatives each their own
        patterns = tuple(p for p in (Pattern.parse(r) for r in raws) if p is not None)
        if not patterns:
            return None
        pre = read_precondition(hint.precondition)  # the conditions in their stored form, as the matcher reads them
        conditions, said_so = [encode(c) for c in pre.conditions], pre.said_so
        return ReadHint(hint, avoid, patterns, tuple(conditions), is_procedure(text), said_so)
    except (TypeError, ValueError, AttributeError):
        return None


def _reads(goal: str, history: Sequence[Step]) -> list[Step]:
    """Steps that read something the goal names (``rules.is_read``: object words all in the goal, not a move)."""
    goal_words = set(norm_words(goal))
    return [step for step in history if is_read(step, goal_words)]


def _word_weights(view: "_View", history: Sequence[Step], policy: ExecutorPolicy) -> dict[str, float]:
    """Weight of each word the attempt has seen: 1 in the task's text, ``paragraph_weight`` elsewhere.

    The task's text is the goal and what the agent read in things the goal names (the
    answer to an action whose object words all occur in the goal, such as a cookbook the
    goal points at); everything else the game printed (room descriptions, echoes of the
    agent's own moves) describes the world rather than the task.
    """
    goal_words = content_words(view.goal)
    weight: dict[str, float] = {w: 1.0 for w in goal_words}
    for obs in view.observations:
        for word in content_words(obs):
            weight.setdefault(word, policy.paragraph_weight)
    reads = view.reads
    for step in reads:
        for word in content_words(step.observation):
            weight[word] = 1.0
    state = history[-1].state_after if history else None
    if not isinstance(state, dict):
        state = view.start_state
    here = _location(state)
    for item in [*_held(state), *([here] if here is not None else [])]:
        if item != here and content_words(item) <= goal_words and not _consulted(item, goal_words, reads):
            continue  # a thing the goal names whole (the cookbook), held but not read yet: it still draws the agent
        for word in content_words(item):
            weight.pop(word, None)  # what is already held, or where the agent is, no longer draws it
    return weight


def _held(state: Any) -> list[str]:
    """The state's ``inventory`` (empty when the env reports none)."""
    held = state.get("inventory") if isinstance(state, dict) else None
    return [str(item) for item in held] if isinstance(held, list) else []


def _consulted(item: str, goal_words: set[str], reads: Sequence[Step]) -> bool:
    """Whether the attempt read ``item`` and learnt something: one of its ``reads`` (``_reads``) acted on it, other than
    the step that got it (whose answer only acknowledges that: "Adding the meal to your inventory."), and answered with
    a word that is neither the goal's (``goal_words``) nor the action's. Until then a held thing the goal names (a
    cookbook to check) still draws the agent by the goal's words: holding it is not having read it."""
    words = content_words(item)
    for step in reads:
        said = content_words(step.observation) - goal_words - content_words(step.action)
        got = item in _held(step.state_after) and item not in _held(step.state_before)  # its answer acknowledges that
        if words <= content_words(step.action) and said and not got:
            return True
    return False


@dataclass
class _View:
    goal: str
    observations: list[str]
    valid: list[str]
    state: str
    start_state: Any = None
    history: Sequence[Step] = ()

    @cached_property
    def reads(self) -> list[Step]:
        """The attempt's steps that read something the goal names (``_reads``)."""
        return _reads(self.goal, self.history)

    @cached_property
    def task_lines(self) -> list[str]:
        """Normalised lines of what the agent read in things the goal names (the task's text beyond its goal), read
        once a step: every hint's conditions check it."""
        return [line for step in self.reads for line in map(norm, step.observation.splitlines()) if line]

    @cached_property
    def directing(self) -> list[str]:
        """The lines of the task's text that direct a command (``textmatch.directing_lines``)."""
        return directing_lines(self.goal, self.task_lines)

    @cached_property
    def done(self) -> frozenset[str]:
        """The attempt's actions that did not fail, normalised: what a history condition (``after `open <X>```) needs."""
        return frozenset(norm(s.action) for s in self.history if not s.feedback.failed)

    @property
    def seen(self) -> str:
        """The observations' clauses, one a line: a condition must occur within one (``textmatch.clauses``)."""
        return "\n".join(c for obs in self.observations for c in clauses(obs))

    def short_lines(self, max_words: int) -> str:
        lines = (norm(line) for obs in self.observations for line in obs.splitlines())
        return "\n".join(line for line in lines if line and len(line.split()) <= max_words)


def _view(task: TaskSpec, history: Sequence[Step]) -> _View:
    ctx = task.context or {}
    goal = str(ctx.get("goal") or task.goal or "")
    observations = [str(ctx.get("observation") or "")] + [s.observation for s in history]
    if history:
        valid = [str(a) for a in history[-1].info.get("valid_actions") or []]
        state = history[-1].state_after
    else:
        valid = [str(a) for a in ctx.get("valid_actions") or []]
        state = ctx.get("state")
    key = json.dumps(state, sort_keys=True, default=str) + "\n" + "\n".join(sorted(valid))
    return _View(goal, observations, valid, key, ctx.get("state"), history)


def _location(state: Any) -> str | None:
    """The state's ``location`` (None when the env reports none)."""
    loc = state.get("location") if isinstance(state, dict) else None
    return loc if isinstance(loc, str) else None


def _names_place(action: str, location: str | None) -> bool:
    """Whether ``action`` names ``location`` (every content word of it), as ``teleport to kitchen`` names the kitchen."""
    words = content_words(location) if location else set()
    return bool(words) and words <= content_words(action)


def _verb(action: str) -> str:
    """The action's first word ("" for an empty action)."""
    words = action.split()
    return words[0] if words else ""


def _takes(history: Sequence[Step], here: str | None, moving: set[str]) -> dict[str, int]:
    """How often each action was taken in the attempt, as the repeat penalty counts it (module docstring, step 3):
    a move that does not name where it leads only from ``here``; a failed action not once it is ``_retryable``."""
    retry = _retryable(history)
    out: dict[str, int] = {}
    for s in history:
        if s.feedback.failed and s.action in retry:
            continue
        local = _verb(s.action) in moving and not _names_place(s.action, _location(s.state_after))
        if not local or _location(s.state_before) == here:
            out[s.action] = out.get(s.action, 0) + 1
    return out


def _lapsed(history: Sequence[Step]) -> set[str]:
    """Actions whose every taking got the agent something it no longer holds (``take knife``, then the knife put
    away): a recommendation of them is followed again, as their effect is gone."""
    held = set(_held(history[-1].state_after)) if history else set()
    lapsed: set[str] = set()
    standing: set[str] = set()
    for s in history:
        if s.feedback.failed:
            continue
        gained = set(_held(s.state_after)) - set(_held(s.state_before))
        (lapsed if gained and not gained & held else standing).add(s.action)
    return lapsed - standing


def _retryable(history: Sequence[Step]) -> set[str]:
    """Failed actions worth trying again: a later action on one of their objects succeeded (``open door to north`` after
    ``move north`` failed), so what stood in their way may have changed."""
    out: set[str] = set()
    later: set[str] = set()  # the objects' words of every successful step after the one at hand (one pass, backwards)
    for step in reversed(history):
        objects = content_words(" ".join(step.action.split()[1:]))
        if not step.feedback.failed:
            later |= objects
        elif objects & later:
            out.add(step.action)
    return out


class TextGameExecutor:
    """Picks among a text game's valid actions by word overlap and hints (module docstring).

    Args:
        seed: Seed of the tie-break; the same seed, task and history give the same action.
        policy: How it scores an action (``textgames.policy.ExecutorPolicy``).
    """

    def __init__(self, seed: int = 0, policy: ExecutorPolicy = DEFAULT_POLICY) -> None:
        self.seed = seed
        self.policy = policy

    # ---- binding -------------------------------------------------------------
    def _named(self, phrase: str, view: _View, goal_words: set[str]) -> bool:
        """Whether ``phrase`` is something the task names beyond its goal (in a short line of an observation)."""
        words = phrase.split()
        if not words or all(w in goal_words or w in STOP_WORDS for w in words):
            return False
        return re.search(r"\b" + re.escape(phrase) + r"\b", view.short_lines(self.policy.short_line_words)) is not None

    def _applies(self, rh: ReadHint, pattern: Pattern, action: str, view: _View, goal_words: set[str]) -> bool:
        """Whether ``pattern`` of ``rh`` bears on ``action`` in the attempt ``view`` sees (its placeholders bound to
        what the task names, and every condition holding)."""
        binding = pattern.match(action)
        if binding is None:
            return False
        conditions = rh.conditions_of(pattern)
        negated = {s for s in map(unnamed_slot, conditions) if s is not None}
        free = {s for c in conditions for s in _SLOT.findall(negated_line(c) or done_line(c) or "")}  # undirected
        # placeholders bind anything, and a history condition's are bound by the action it names
        if rh.avoid:  # an avoidance's placeholder in a stated condition is bound by that condition
            free |= {s for c in conditions if not c.startswith(UNNAMED) for s in _SLOT.findall(c)}
        if not all(self._named(v, view, goal_words) or k in free
                   or (k in negated and not all(w in goal_words for w in v.split())) for k, v in binding.items()):
            return False
        for cond in conditions:
            done = done_line(cond)
            if done is not None:  # the attempt took the bound action earlier, and it did not fail
                bound = bind(done, binding)
                if bound is None or bound not in view.done:
                    return False
                continue
            neg = unnamed_slot(cond)
            if neg is not None:  # the task's text does not name the bound phrase
                if names_phrase(binding.get(neg, ""), view.goal, view.task_lines):
                    return False
                continue
            unsaid = negated_line(cond)
            if unsaid is not None:  # no line of the task's text says the bound line
                bound = bind(unsaid, binding)
                if bound is None or says_line(bound, view.directing):
                    return False
                continue
            slot = _SLOT.fullmatch(cond.strip())
            if slot is not None:  # a bare placeholder: the task names it and says nothing more about it
                if not listed_only(binding.get(slot.group(1), ""), view.task_lines):  # listed, nothing said of it
                    return False
                continue
            line = norm(_SLOT.sub(lambda m: binding.get(m.group(1), m.group(0)), cond))
            if "<" in line or not line or re.search(r"(^|\n)[^\n]*\b" + re.escape(line) + r"\b", view.seen) is None:
                return False
        return True

    def _following(self, rh: ReadHint, history: Sequence[Step], view: _View, goal_words: set[str]) -> Pattern | None:
        """The next step of a procedure hint this attempt is following (``textmatch.next_step``, each step read with
        its conditions), or None while it is away from the procedure."""
        done = [s.action for s in history if not s.feedback.failed]
        return next_step(rh.patterns, done, lambda p, a: self._applies(rh, p, a, view, goal_words))

    # ---- the policy ----------------------------------------------------------
    def act(self, task: TaskSpec, history: Sequence[Step], hints: Sequence[Hint]) -> Decision:
        """The next valid action (module docstring), or ``done`` when none is left."""
        view = _view(task, history)
        tried = self._tried(task, history, view)
        options = [a for a in view.valid if a not in tried]
        if not options:
            return Decision(kind="done", note="no untried valid action")
        read = [r for r in (read_hint(h) for h in hints) if r is not None]
        weight = _word_weights(view, history, self.policy)
        df: dict[str, int] = {}
        for a in view.valid:
            for w in content_words(a):
                df[w] = df.get(w, 0) + 1
        here = _location(history[-1].state_after if history else view.start_state)
        visited = {loc for loc in (_location(view.start_state), *(_location(s.state_after) for s in history)) if loc}
        done = [s for s in history if not s.feedback.failed]
        verbs_used = {_verb(s.action) for s in done} - {""}
        moving = {_verb(s.action) for s in done if _location(s.state_before) != _location(s.state_after)} - {""}
        taken = _takes(history, here, moving)
        lapsed = _lapsed(history)
        judged_all = {a: j for a in options if (j := self._hint_bonus(a, read, view, history)) is not None}  # None: avoided
        task_words = {w for w, x in weight.items() if x >= 1.0}
        looked_through = not any(  # nothing left here that the task's text names: leaving is worth a step
            content_words(a) & task_words for a in judged_all if not taken.get(a) and _verb(a) not in moving)
        scored: list[tuple[float, str, tuple[str, ...]]] = []
        for action, (bonus, sources) in judged_all.items():
            if taken.get(action) and action not in lapsed:
                bonus = 0.0  # a recommendation is followed once (step 3's count), while what it got is still held
            # sorted: a float sum in set order would differ between processes (hash seeds) and flip ties
            overlap = sum(weight[w] / df[w] for w in sorted(content_words(action)) if w in weight)
            verb = _verb(action)
            novel = self.policy.new_verb_bonus if verb and verb not in verbs_used else 0.0
            if looked_through and verb in moving and not taken.get(action) and not any(_names_place(action, loc) for loc in visited):
                novel += self.policy.explore_bonus  # a way out of here to somewhere not seen yet
            scored.append((round(overlap + novel + bonus - taken.get(action, 0), 9), action, sources))
        if not scored:
            return Decision(kind="done", note="every untried action is avoided")
        top = max(sc for sc, _, _ in scored)
        ties = sorted((a, src) for sc, a, src in scored if sc == top)
        rng = random.Random(f"{self.seed}:{task.task_id}:{len(history)}")
        action, sources = ties[rng.randrange(len(ties))]
        return Decision(kind="command", action=action, applied_hints=sources, note=f"score {top:g} among {len(ties)}")

    def _hint_bonus(
        self, action: str, read: Sequence[ReadHint], view: _View, history: Sequence[Step]
    ) -> tuple[float, tuple[str, ...]] | None:
        """What the hints add to ``action``'s score and which hints did; None when it is avoided (rule 2)."""
        policy = self.policy
        goal_words = content_words(view.goal)
        avoided_in: list[frozenset[str]] = []
        recommended_in: list[frozenset[str]] = []
        bonus = 0.0
        used: list[str] = []
        for rh in read:
            if rh.procedure:
                nxt = self._following(rh, history, view, goal_words)
                if nxt is not None and self._applies(rh, nxt, action, view, goal_words):
                    bonus += policy.sequence_bonus
                    used.append(rh.hint.source_id)
                continue
            matched = next((p for p in rh.patterns if self._applies(rh, p, action, view, goal_words)), None)
            if matched is None:
                continue
            used.append(rh.hint.source_id)
            conds = grounded_conditions(rh.conditions_of(matched), matched.match(action) or {})  # a negative one adds none
            if rh.avoid:
                avoided_in.append(conds)
            else:
                recommended_in.append(conds)
                bonus += policy.prefer_bonus + policy.condition_bonus * len(conds)
        if any(avoidance_stands(a, recommended_in) for a in avoided_in):
            return None
        return bonus, tuple(dict.fromkeys(used))

    @staticmethod
    def _tried(task: TaskSpec, history: Sequence[Step], view: _View) -> set[str]:
        """Actions already taken from the current state (same structured state and valid actions)."""
        out: set[str] = set()
        for i, step in enumerate(history):
            before = _view(task, history[:i]).state
            if before == view.state:
                out.add(step.action)
        return out


__all__ = ["ARTICLES", "STOP_WORDS", "Pattern", "ReadHint", "TextGameExecutor", "content_words", "norm", "norm_words", "read_hint"]
