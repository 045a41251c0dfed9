"""Workflows: procedures induced from trajectories, with slots for what differs between them (design.md §6).

A workflow keeps what several trajectories of one kind of task share and turns what differs into slots:

1. **Loops fold.** A block of up to ``workflow_loop_period`` actions repeated back to back (look, measure, look,
   measure) becomes one block marked ``repeat``.
2. **Goal slots.** The goals are aligned word by word (``skills.common_subsequence``); each stretch where they differ
   is a slot (``<A>``, ``<B>``, ...) of the goal's pattern, and its words in each trajectory's actions become that
   slot. One trajectory (or several whose goals never differ) has no goal to differ from: a phrase naming a thing
   that its goal and its actions share becomes a slot.
3. **Steps.** The trajectories' actions are aligned (a longest common subsequence in which two actions that differ
   in a phrase, ``review pull request 12`` / ``review pull request 40``, align as one step ``review pull request <Z>``); a step at least
   ``workflow_min_share`` of the trajectories took is kept, with a slot for each phrase that differs and the values
   it took (the facts that bind it). Two steps whose phrases agree in every trajectory that took both share a slot.
4. **Effects.** A step after which the score rose in most trajectories is marked as progress.

``ground`` turns a workflow into the next action of an attempt: the goal's slots bound from the task's own text, a
step's other slots from what the attempt already did (a step it took binds them, and a slot the trajectories named
the same thing with, ``Workflow.kin``), from the values the trajectories gave them, or else from a short line of
what the attempt was told (a list, a note; never one every trajectory was told and never chose from), and only to
an action the environment offers now. A step that names its thing with where it is matches the offered action
without that phrase (``_shortened``); an action that gets where a step goes another way counts as that step
(``_reaches``). A proposal that takes a scoring step on another thing than the task's text names is held
(``against``) where every trajectory took that step only on what its own task named (``only_named``), and such an
action is never handed over. When the next step cannot be taken, an
offered action that ends with its thing in the same relation (``... to <thing>``: a way to it, once, and not the
step itself with another thing) comes first; failing that, the first later
step that can be taken is handed over, passing over steps whose slot nothing here binds and at most
``workflow_skip_lookahead`` others, and never past a scoring step (its effect is needed later). Everything here is
pure and knows no environment: it reads goals, actions, observations and scores.

Example:
    >>> demos = [Demonstration("draw a green chart", (DemoStep("load table in editor"), DemoStep("save editor", score=1.0))),
    ...          Demonstration("draw a violet chart", (DemoStep("load table in viewer"), DemoStep("save viewer", score=1.0)))]
    >>> wf = induce_workflow(demos)
    >>> wf.goal, [s.action for s in wf.steps]
    ('draw <A> chart', ['load table in <Z>', 'save <Z>'])
    >>> ground(wf, "Draw an orange chart.", ["load table in notebook"], ["save notebook", "save editor", "list files"]).action
    'save notebook'
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from langmem_plus.config import DEFAULT_CONFIG, WorkflowConfig
from langmem_plus.learning.skills import common_subsequence, lcs_pairs
from langmem_plus.learning.textmatch import norm, norm_words

GOAL_LETTERS = "ABCDEFGHIJKLM"
"""Letters of goal slots, in the order the goal's differing stretches come."""
STEP_LETTERS = "ZYXWVUTSRQPON"
"""Letters of step slots (a phrase the actions differ in), from the end of the alphabet."""
FUNCTION_WORDS = frozenset(
    {"a", "an", "the", "some", "to", "in", "on", "of", "at", "for", "with", "into", "from", "by", "and", "or", "it",
     "is", "are", "be", "your", "you", "this", "that", "then", "first", "when", "which", "its", "as", "there", "up",
     "down", "out", "off"})
"""Words that alone make no slot: a slot's phrase names a thing, so it holds at least one other word."""

_SLOT = re.compile(r"<([A-Z])>")


@dataclass(frozen=True)
class DemoStep:
    """One step of a trajectory: the action, what came back, the score after it (None: not known)."""

    action: str
    observation: str = ""
    score: float | None = None


@dataclass(frozen=True)
class Demonstration:
    """A trajectory memory learns a procedure from: the goal it pursued and its steps, with where it came from."""

    goal: str
    steps: tuple[DemoStep, ...]
    source: str = ""
    """Where it came from (a run id, ``gold``, an expert's name): provenance, not read by induction."""


@dataclass(frozen=True)
class WorkflowStep:
    """One step of a workflow: an action pattern in the lessons' language (``<Z>`` a phrase), and what it did."""

    action: str
    repeat: bool = False
    """The trajectories took it in a loop (folded): it may be taken again before the next step."""
    progress: bool = False
    """The score rose after it in most trajectories: its expected effect."""
    only_named: bool = False
    """Its slots are all goal slots, and every trajectory that took an action of its form (any values) took it on
    the values its own goal gave them (``only_named``): what the task's text names is all it acts on."""


@dataclass(frozen=True)
class Workflow:
    """A procedure induced from trajectories of one kind of task."""

    goal: str
    """The goal's pattern: its words, ``<A>`` where the trajectories' goals differed."""
    steps: tuple[WorkflowStep, ...]
    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each slot's values in the trajectories, first seen first: the facts a run binds a step slot with."""
    sources: int = 1
    """How many trajectories it was induced from."""
    cues: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    """Per slot and value, the short lines the trajectories were told before the step that took it, another slot's
    value made that slot (``roast <X>`` before ``cook <X> in oven``): the facts that choose the value in a new
    attempt whose observations say the same of its own thing."""
    kin: Mapping[str, str] = field(default_factory=dict)
    """Step slot -> another slot whose value, in most trajectories, held its value or was part of it (``slot_kin``):
    one thing the trajectories named two ways, so a run that bound one binds the other."""
    passed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Step slot -> the short lines every trajectory was told before its step and never took a value from
    (``slot_passed``): they name no value for that slot in a new attempt either."""

    def slots(self) -> list[str]:
        """Every slot letter the goal and the steps use, in order of first use."""
        text = " ".join([self.goal, *(s.action for s in self.steps)])
        return list(dict.fromkeys(_SLOT.findall(text)))


@dataclass(frozen=True)
class Grounded:
    """The action ``ground`` hands over and why: the workflow's step ``index``, taken as it stands, after skipping
    steps that could not be taken, or an action that first brings the step within reach."""

    action: str
    index: int
    how: str
    """``step``, ``skip`` or ``reach``."""


# ---------------------------------------------------------------------------- loops and goals


def fold_loops(actions: Sequence[str], period: int) -> list[tuple[str, bool]]:
    """``actions`` with every block of up to ``period`` actions repeated back to back kept once, marked repeated.

    Example:
        >>> fold_loops(["go", "look", "measure", "look", "measure", "look", "done"], 2)
        [('go', False), ('look', True), ('measure', True), ('look', False), ('done', False)]
    """
    return [(a, r) for a, r, _ in _fold(actions, period)]


def _fold(actions: Sequence[str], period: int) -> list[tuple[str, bool, int]]:
    """``fold_loops`` with, for each kept action, the index of the last original action it stands for."""
    out: list[tuple[str, bool, int]] = []
    i = 0
    while i < len(actions):
        for p in range(period, 0, -1):
            block = list(actions[i : i + p])
            if len(block) == p and list(actions[i + p : i + 2 * p]) == block:
                k = i + p
                while list(actions[k : k + p]) == block:
                    k += p
                out.extend((a, True, k - p + n) for n, a in enumerate(block))
                i = k
                break
        else:
            out.append((actions[i], False, i))
            i += 1
    return out


def _content(words: Sequence[str]) -> bool:
    return any(w not in FUNCTION_WORDS for w in words)


def _gaps(words: Sequence[str], anchors: Sequence[str]) -> list[list[str]]:
    """The stretches of ``words`` around ``anchors`` matched greedily left to right (len(anchors) + 1 stretches)."""
    gaps: list[list[str]] = [[]]
    k = 0
    for w in words:
        if k < len(anchors) and w == anchors[k]:
            gaps.append([])
            k += 1
        else:
            gaps[-1].append(w)
    gaps.extend([] for _ in range(len(anchors) + 1 - len(gaps)))
    return gaps


def goal_slots(goals: Sequence[str]) -> tuple[str, list[dict[str, str]]]:
    """The goals' shared pattern (``<A>`` where they differ) and each goal's slot values.

    Example:
        >>> goal_slots(["draw green chart now", "draw orange chart now"])
        ('draw <A> chart now', [{'A': 'green'}, {'A': 'orange'}])
    """
    words = [norm_words(g) for g in goals]
    anchors = common_subsequence(words)
    gaps = [_gaps(w, anchors) for w in words]
    pattern: list[str] = []
    values: list[dict[str, str]] = [{} for _ in goals]
    letters = iter(GOAL_LETTERS)
    by_values: dict[tuple[str, ...], str] = {}  # stretches that agree in every goal are one slot
    for k in range(len(anchors) + 1):
        stretch = [g[k] for g in gaps]
        if any(stretch) and len({tuple(s) for s in stretch}) > 1:
            if all(_content(s) for s in stretch):
                key = tuple(" ".join(s) for s in stretch)
                letter = by_values.get(key) or next(letters, None)
                if letter is not None:
                    by_values[key] = letter
                    pattern.append(f"<{letter}>")
                    for v, s in zip(values, stretch):
                        v[letter] = " ".join(s)
                else:
                    pattern.extend(stretch[0])
            else:
                pattern.extend(stretch[0])
        elif stretch and stretch[0]:
            pattern.extend(stretch[0])
        if k < len(anchors):
            pattern.append(anchors[k])
    return " ".join(pattern), values


def shared_phrases(goal: str, actions: Sequence[str]) -> list[str]:
    """Phrases naming a thing (not only function words, and not an action's command) that a goal and some action
    share, longest first: a single trajectory's slots.

    Example:
        >>> shared_phrases("draw the green chart", ["label green chart", "save file"])
        ['green chart']
    """
    goal_words = norm_words(goal)
    found: set[str] = set()
    for action in actions:
        words = norm_words(action)
        for i in range(1, len(words)):  # an action's first word is its command, not a thing
            for j in range(len(words), i, -1):
                phrase = words[i:j]
                if phrase[0] in FUNCTION_WORDS or phrase[-1] in FUNCTION_WORDS:
                    continue
                if _content(phrase) and _contains(goal_words, phrase) and not any(
                        _contains(norm_words(f), phrase) for f in found):
                    found.add(" ".join(phrase))
                    break
    longest = sorted(found, key=lambda p: (-len(p.split()), p))
    return [p for p in longest if not any(p != q and _contains(q.split(), p.split()) for q in longest)]


def _contains(words: Sequence[str], phrase: Sequence[str]) -> bool:
    n = len(phrase)
    return any(list(words[i : i + n]) == list(phrase) for i in range(len(words) - n + 1))


def substitute(action: str, values: Mapping[str, str]) -> str:
    """``action`` normalised, with each slot value (longest first, whole words) replaced by its ``<letter>``.

    Example:
        >>> substitute("copy budget sheet to red folder", {"A": "red", "Z": "budget sheet"})
        'copy <Z> to <A> folder'
    """
    text = norm(action)
    for letter, value in sorted(values.items(), key=lambda kv: (-len(kv[1].split()), kv[0])):
        if value.split():
            text = substitute_words(text, value, letter)
    return text


# ---------------------------------------------------------------------------- step alignment


def _slot_only(words: Sequence[str]) -> bool:
    """Whether ``words`` are one slot token (``<A>``): the goal's thing, which a step slot may take as a value."""
    return len(words) == 1 and _SLOT.fullmatch(words[0]) is not None


def _template(actions: Sequence[str]) -> tuple[list[str], list[list[str]]] | None:
    """The words ``actions`` share (``?`` in each stretch where they differ) and each action's phrases there; None
    when they do not share their first word or a differing stretch does not name a thing in one of them.

    Example:
        >>> _template(["copy notes in main branch in repo", "copy notes in docs in site"])
        (['copy', 'notes', 'in', '?', 'in', '?'], [['main branch', 'repo'], ['docs', 'site']])
    """
    words = [a.split() for a in actions]
    if not words[0] or any(not w or w[0] != words[0][0] for w in words):
        return None
    anchors = common_subsequence(words)
    gaps = [_gaps(w, anchors) for w in words]
    pattern: list[str] = []
    phrases: list[list[str]] = [[] for _ in actions]
    for k in range(len(anchors) + 1):
        stretch = [g[k] for g in gaps]
        if len({tuple(x) for x in stretch}) > 1:
            if not all(stretch) or not all(_content(x) or _slot_only(x) for x in stretch) or any(
                    _SLOT.search(" ".join(x)) and not _slot_only(x) for x in stretch):
                return None  # a differing stretch names a thing: a phrase, or a slot of the goal whole
            pattern.append("?")
            for ph, x in zip(phrases, stretch):
                ph.append(" ".join(x))
        elif stretch[0]:
            pattern.extend(stretch[0])
        if k < len(anchors):
            pattern.append(anchors[k])
    return pattern, phrases


def _aligns(column: Sequence[str], action: str) -> int:
    """How well ``action`` joins an aligned column of actions: 2 the same action, 1 apart only in phrases naming
    things (``_template``), 0 not."""
    if all(a == action for a in column):
        return 2
    return 1 if _template([*column, action]) is not None else 0


def align(sequences: Sequence[Sequence[str]], scoring: Sequence[Sequence[bool]] | None = None) -> list[list[int | None]]:
    """A progressive alignment of action sequences: rows of indices (one per sequence, None where it has no step),
    in order; rows every sequence has a step in are the shared steps.

    ``scoring`` marks the steps after which a sequence's score rose: two such steps aligned count double, so
    where two alignments are otherwise as good, the one that keeps the steps that made progress together wins.
    """
    if not sequences:
        return []
    rose = [list(r) for r in scoring] if scoring is not None else [[False] * len(s) for s in sequences]
    rows: list[list[int | None]] = [[i] for i in range(len(sequences[0]))]
    for k, seq in enumerate(sequences[1:], start=1):
        columns = [[sequences[d][i] for d, i in enumerate(row) if i is not None] for row in rows]
        scored = [any(rose[d][i] for d, i in enumerate(row) if i is not None) for row in rows]
        n, m = len(rows), len(seq)
        score = [[0] * (m + 1) for _ in range(n + 1)]
        fit = [[_aligns(columns[i], seq[j]) * (2 if scored[i] and rose[k][j] else 1) for j in range(m)] for i in range(n)]
        for i in range(n - 1, -1, -1):
            for j in range(m - 1, -1, -1):
                best = max(score[i + 1][j], score[i][j + 1])
                if fit[i][j]:
                    best = max(best, score[i + 1][j + 1] + fit[i][j])
                score[i][j] = best
        merged: list[list[int | None]] = []
        i = j = 0
        while i < n or j < m:
            if i < n and j < m and fit[i][j] and score[i][j] == score[i + 1][j + 1] + fit[i][j]:
                merged.append([*rows[i], j])
                i, j = i + 1, j + 1
            elif i < n and (j >= m or score[i + 1][j] >= score[i][j + 1]):
                merged.append([*rows[i], None])
                i += 1
            else:
                merged.append([*([None] * k), j])
                j += 1
        rows = merged
    return rows


# ---------------------------------------------------------------------------- induction


def induce_workflow(demos: Sequence[Demonstration], config: WorkflowConfig = DEFAULT_CONFIG.workflows) -> Workflow:
    """The workflow several trajectories of one kind of task share (module docstring); one trajectory gives one.

    Raises:
        ValueError: no trajectory, or none with a step.
    """
    demos = [d for d in demos if d.steps]
    if not demos:
        raise ValueError("a workflow needs at least one trajectory with a step")
    goal, goal_values = goal_slots([d.goal for d in demos])
    if not _SLOT.search(goal):  # one trajectory, or goals that never differ: what they act on is the slot
        goal, goal_values = _slot_shared(goal, goal_values, demos)
    folded = [_fold([substitute(s.action, v) for s in d.steps], config.workflow_loop_period)
              for d, v in zip(demos, goal_values)]
    rises = [_rises(d) for d in demos]
    need = max(1, math.ceil(config.workflow_min_share * len(demos)))
    scoring = [[last in up for _, _, last in f] for f, up in zip(folded, rises)]
    rows = [r for r in align([[a for a, _, _ in f] for f in folded], scoring) if sum(i is not None for i in r) >= need]
    values: dict[str, list[str]] = {k: list(dict.fromkeys(v[k] for v in goal_values)) for k in goal_values[0]}
    step_slots: dict[str, dict[int, str]] = {}  # letter -> the phrase it took in each trajectory that has it
    letters = iter(STEP_LETTERS)
    steps: list[WorkflowStep] = []
    for row in rows[: config.workflow_max_steps]:
        present = [(d, folded[d][i]) for d, i in enumerate(row) if i is not None]
        actions = [a for _, (a, _, _) in present]
        action = actions[0]
        if len(set(actions)) > 1:
            tpl = _template(actions)
            if tpl is None:  # no one template: the action most of them took, if enough did
                common, count = Counter(actions).most_common(1)[0]
                if count < need:
                    continue
                present = [(d, f) for d, f in present if f[0] == common]
                actions, tpl = [common], None
            if tpl is None:
                action = actions[0]
                repeat = any(r for _, (_, r, _) in present)
                rose = sum(1 for d, (_, _, last) in present if last in rises[d])
                steps.append(WorkflowStep(action=action, repeat=repeat, progress=rose * 2 > len(present)))
                continue
            words, phrases = tpl
            filled: list[str] = []
            for n in range(len(phrases[0])):
                took = {d: p[n] for (d, _), p in zip(present, phrases)}
                letter = next((k for k, v in step_slots.items() if _agree(v, took)), None) or next(letters, None)
                if letter is None:
                    break
                step_slots[letter] = {**step_slots.get(letter, {}), **took}
                values[letter] = list(dict.fromkeys([*values.get(letter, []), *took.values()]))
                filled.append(f"<{letter}>")
            if len(filled) < len(phrases[0]):
                continue
            slots = iter(filled)
            action = " ".join(next(slots) if w == "?" else w for w in words)
        repeat = any(r for _, (_, r, _) in present)
        rose = sum(1 for d, (_, _, last) in present if last in rises[d])
        steps.append(WorkflowStep(action=action, repeat=repeat, progress=rose * 2 > len(present)))
    per_slot = {**{k: {d: v[k] for d, v in enumerate(goal_values)} for k in goal_values[0]}, **step_slots}
    named = tuple(replace(s, only_named=only_named(s.action, demos, goal_values)) for s in steps)
    wf = Workflow(goal=goal, steps=named, values={k: tuple(v) for k, v in values.items()}, sources=len(demos),
                  kin=slot_kin(per_slot, len(demos), config.workflow_min_share))
    return replace(wf, cues=slot_cues(wf, demos, config), passed=slot_passed(wf, demos, config))


def only_named(pattern: str, demos: Sequence[Demonstration], goal_values: Sequence[Mapping[str, str]]) -> bool:
    """Whether ``pattern``'s slots are all goal slots and every action of the trajectories of its form (its slots
    free) took it on the values that trajectory's goal gave them, one at least.

    Example:
        >>> demos = [Demonstration("sign tax form", (DemoStep("sign tax form"),)),
        ...          Demonstration("sign rent form", (DemoStep("sign lease form"),))]
        >>> only_named("sign <A> form", demos[:1], [{"A": "tax"}])
        True
        >>> only_named("sign <A> form", demos, [{"A": "tax"}, {"A": "rent"}])
        False
    """
    letters = _SLOT.findall(pattern)
    if not letters or any(k not in GOAL_LETTERS for k in letters):
        return False
    took = False
    for demo, given in zip(demos, goal_values):
        for step in demo.steps:
            hit = match_step(pattern, step.action, {})
            if hit is None:
                continue
            if any(norm(hit.get(k, "")) != norm(given.get(k, "")) for k in letters):
                return False
            took = True
    return took


def _walk(
    workflow: Workflow, demos: Sequence[Demonstration], config: WorkflowConfig
) -> Iterator[tuple[int, dict[str, str], list[str]]]:
    """Each trajectory's actions matched to the workflow's steps in order (``advance``): for every action that is a
    step, its index, the slots bound so far and the short lines (``told_lines``) told before it, its goal's first."""
    for demo in demos:
        bound = bind_goal(workflow, demo.goal, 0.0) or {}
        told = told_lines(demo.goal, config.workflow_short_line_words)
        at = 0
        for step in demo.steps:
            at, bound, j = advance(workflow, at, bound, step.action)
            if j is not None:
                yield j, bound, told
            told = [*told, *told_lines(step.observation, config.workflow_short_line_words)]


def slot_cues(
    workflow: Workflow, demos: Sequence[Demonstration], config: WorkflowConfig = DEFAULT_CONFIG.workflows
) -> dict[str, dict[str, tuple[str, ...]]]:
    """``Workflow.cues`` from the trajectories: each one's actions matched to the steps in order (``advance``), and
    at each step with two slots or more, the short lines told so far (``told_lines``) that name one of the step's
    other values, that value made its slot; a line that came before other values of the slot as well is no cue for
    any of them."""
    out: dict[str, dict[str, dict[str, None]]] = {}
    for j, bound, told in _walk(workflow, demos, config):
        own = list(dict.fromkeys(_SLOT.findall(workflow.steps[j].action)))
        for letter in own:
            value = bound.get(letter, "")
            for other in own:
                known = bound.get(other, "")
                if other == letter or not _content(known.split()):
                    continue
                for line in told:
                    if _said(known, [line]) and not _said(value, [line]):
                        cue = substitute_words(line, known, other)
                        out.setdefault(letter, {}).setdefault(value, {})[cue] = None
    cues: dict[str, dict[str, tuple[str, ...]]] = {}
    for letter, vals in out.items():  # a cue tells one value from the others only if none of them had it
        if len(vals) < 2:
            continue  # one value: nothing to tell it from
        for value, lines in vals.items():
            others = {c for v, cs in vals.items() if v != value for c in cs}
            kept = tuple(c for c in lines if c not in others)
            if kept:
                cues.setdefault(letter, {})[value] = kept
    return cues


def slot_passed(
    workflow: Workflow, demos: Sequence[Demonstration], config: WorkflowConfig = DEFAULT_CONFIG.workflows
) -> dict[str, tuple[str, ...]]:
    """``Workflow.passed`` from the trajectories: per step slot, the short lines (``told_lines``) every trajectory
    that took the slot's step was told before it and that do not name the value it took there (what is always in
    view and never chosen: ``robot`` of every room's list). At least two trajectories must have taken the step.

    Example:
        >>> demos = [Demonstration("tidy up", (DemoStep("look", "the robot\\npen"), DemoStep(f"take {x}")))
        ...          for x in ("pen", "cup")]
        >>> slot_passed(induce_workflow(demos), demos)
        {'Z': ('robot', 'tidy up')}
    """
    seen: dict[str, list[set[str]]] = {}
    for j, bound, told in _walk(workflow, demos, config):
        for letter in dict.fromkeys(_SLOT.findall(workflow.steps[j].action)):
            if letter in GOAL_LETTERS:
                continue
            value = bound.get(letter, "")
            seen.setdefault(letter, []).append({line for line in told if not (value and _said(value, [line]))})
    out: dict[str, tuple[str, ...]] = {}
    for letter, sets in seen.items():
        if len(sets) >= 2 and (always := set.intersection(*sets)):
            out[letter] = tuple(sorted(always))
    return out


def _agree(held: Mapping[int, str], took: Mapping[int, str]) -> bool:
    """Whether a slot's phrases (by trajectory) and a new stretch's are one slot: equal in every trajectory both
    have, and there is one."""
    both = held.keys() & took.keys()
    return bool(both) and all(held[d] == took[d] for d in both)


def _slot_shared(goal: str, goal_values: list[dict[str, str]], demos: Sequence[Demonstration]) -> tuple[str, list[dict[str, str]]]:
    """``goal`` with each phrase of its words that an action of every trajectory names made a slot too: the goals
    agree on it, yet it is what the actions act on (the one trajectory's slots, ``shared_phrases``)."""
    used = set(_SLOT.findall(goal))
    free = iter(c for c in GOAL_LETTERS if c not in used)
    literal = " ".join(w for w in goal.split() if not _SLOT.fullmatch(w))
    per_demo = [set(shared_phrases(literal, [substitute(s.action, v) for s in d.steps])) for d, v in zip(demos, goal_values)]
    common = sorted(set.intersection(*per_demo), key=lambda p: (-len(p.split()), p)) if per_demo else []
    values = [dict(v) for v in goal_values]
    for phrase in common:
        if not _contains([w for w in goal.split()], phrase.split()):
            continue  # a longer phrase holding it is a slot already
        letter = next(free, None)
        if letter is None:
            break
        goal = substitute_words(goal, phrase, letter)
        for v in values:
            v[letter] = phrase
    return goal, values


def substitute_words(text: str, phrase: str, letter: str) -> str:
    """``text`` (already normalised words, slots kept) with each whole-word ``phrase`` replaced by ``<letter>``."""
    words, target = text.split(), phrase.split()
    out: list[str] = []
    i = 0
    while i < len(words):
        if words[i : i + len(target)] == target:
            out.append(f"<{letter}>")
            i += len(target)
        else:
            out.append(words[i])
            i += 1
    return " ".join(out)


def _rises(demo: Demonstration) -> set[int]:
    """Indices of the steps after which the score rose."""
    out: set[int] = set()
    last = 0.0
    for i, s in enumerate(demo.steps):
        if s.score is not None:
            if s.score > last:
                out.add(i)
            last = s.score
    return out


# ---------------------------------------------------------------------------- grounding


def bind_goal(workflow: Workflow, goal: str, min_overlap: float = DEFAULT_CONFIG.workflows.workflow_min_goal_overlap) -> dict[str, str] | None:
    """The goal slots' values in ``goal`` when it fits the workflow's goal pattern, else None.

    A goal fits when it is the pattern with its slots filled, or, failing that, when the pattern's words it holds
    in order (a longest common subsequence) are at least ``min_overlap`` of them; each slot then takes the words
    between the words around it.

    Example:
        >>> wf = Workflow(goal="draw <A> chart then label <A> chart", steps=())
        >>> bind_goal(wf, "Draw the orange chart. Then label the orange chart.")
        {'A': 'orange'}
        >>> bind_goal(wf, "Draw orange chart, then label it.")
        {'A': 'orange'}
    """
    hit = _step_regex(workflow.goal, {}).fullmatch(norm(goal))
    if hit is not None:
        return dict(hit.groupdict())
    pattern, words = workflow.goal.split(), norm_words(goal)
    literal = [w for w in pattern if not _SLOT.fullmatch(w)]
    if not literal:
        return None
    pairs = lcs_pairs(pattern, words)
    if len(pairs) < min_overlap * len(literal):
        return None
    out: dict[str, str] = {}
    matched = dict(pairs)
    for i, w in enumerate(pattern):
        m = _SLOT.fullmatch(w)
        if m is None or m.group(1) in out:
            continue
        left = max((matched[k] for k in range(i) if k in matched), default=-1)
        right = min((matched[k] for k in range(i + 1, len(pattern)) if k in matched), default=len(words))
        value = words[left + 1 : right]
        if not value or not _content(value):
            return None
        out[m.group(1)] = " ".join(words[left + 1 : right])
    return out


def _step_regex(pattern: str, bound: Mapping[str, str]) -> re.Pattern[str]:
    parts = re.split(r"(<[A-Z]>)", pattern)
    out: list[str] = []
    seen: set[str] = set()
    for p in parts:
        m = _SLOT.fullmatch(p)
        if m is None:
            out.append(re.escape(p))
        elif m.group(1) in bound:
            out.append(re.escape(bound[m.group(1)]))
        elif m.group(1) in seen:
            out.append(f"(?P={m.group(1)})")
        else:
            seen.add(m.group(1))
            out.append(f"(?P<{m.group(1)}>.+?)")
    return re.compile("".join(out))


def match_step(pattern: str, action: str, bound: Mapping[str, str]) -> dict[str, str] | None:
    """The slot values under which ``action`` is the step ``pattern`` (given ``bound``), or None: word for word, else
    with one qualifying phrase of the step left out (``_shortened``).

    Example:
        >>> match_step("copy <Z> to <A> folder", "copy budget sheet to red folder", {"A": "red"})
        {'Z': 'budget sheet'}
        >>> match_step("copy <Z> on desk to <A> folder", "copy memo to red folder", {"A": "red"})
        {'Z': 'memo'}
    """
    for form in (pattern, *_shortened(pattern)):
        hit = _step_regex(form, bound).fullmatch(norm(action))
        if hit is not None:
            return {k: v for k, v in hit.groupdict().items()}
    return None


def _shortened(pattern: str) -> list[str]:
    """``pattern`` without one qualifying phrase, shortest cut first: a run of its literal words after the command
    that holds a function word, ends with a word that is not one, and comes before one (``pen in tray`` of ``move
    <X> pen in tray to <A>``). A trajectory may name a thing with where it is, where the environment offers the same
    action by its name alone.

    Example:
        >>> _shortened("use meter in drawer on <Z>"), _shortened("move big pot to <Z>")
        (['use meter on <Z>', 'use on <Z>'], [])
    """
    words = pattern.split()
    cut = max((i for i, w in enumerate(words) if w in FUNCTION_WORDS), default=-1)
    cuts: list[tuple[int, int, int]] = []
    for i in range(1, cut):
        for j in range(i + 1, cut + 1):
            span = words[i:j]
            if (any(_SLOT.fullmatch(w) for w in span) or not any(w in FUNCTION_WORDS for w in span)
                    or span[-1] in FUNCTION_WORDS or words[j] not in FUNCTION_WORDS):
                continue  # a phrase ends with what it names, and a function word follows it
            cuts.append((j - i, i, j))
    return [" ".join(words[:i] + words[j:]) for _, i, j in sorted(cuts)]


def _reaches(pattern: str, action: str, bound: Mapping[str, str]) -> dict[str, str] | None:
    """The slot values under which ``action`` gets where the step ``pattern`` goes another way, or None: both are a
    command, a function word and a thing (``go to <Z>``, ``walk to hall``), with the same function word and thing.

    Example:
        >>> _reaches("go to <Z>", "walk to hall", {}), _reaches("go to hall", "walk to yard", {})
        ({'Z': 'hall'}, None)
    """
    step, took = pattern.split(), norm(action).split()
    if len(step) < 3 or len(took) < 3 or step[1] not in FUNCTION_WORDS or step[1] != took[1] or step[0] == took[0]:
        return None
    hit = _step_regex(" ".join(step[1:]), bound).fullmatch(" ".join(took[1:]))
    return {k: v for k, v in hit.groupdict().items()} if hit else None


def advance(workflow: Workflow, at: int, bound: Mapping[str, str], action: str) -> tuple[int, dict[str, str], int | None]:
    """Where an attempt at step ``at`` with ``bound`` is after taking ``action``: past the first step from ``at`` on
    that the action is (``match_step``), else the first it reaches another way (``_reaches``), with the slots it
    bound, and that step's index (None: the action is no step, nothing moves)."""
    for way in (match_step, _reaches):
        for j in range(at, len(workflow.steps)):
            hit = way(workflow.steps[j].action, action, bound)
            if hit is not None:
                return j + 1, {**bound, **hit}, j
    return at, dict(bound), None


def progress(workflow: Workflow, goal_binding: Mapping[str, str], done: Sequence[str]) -> tuple[int, dict[str, str]]:
    """How far an attempt that took ``done`` has come through the workflow (the index of its next step) and the
    slots its actions bound (``advance``, action by action)."""
    bound = dict(goal_binding)
    at = 0
    for action in done:
        at, bound, _ = advance(workflow, at, bound, action)
    return at, bound


def _candidates(
    pattern: str, bound: Mapping[str, str], offered: Sequence[str], workflow: Workflow, lines: Sequence[str] = ()
) -> list[str]:
    """Offered actions that are the step under ``bound``: with every slot bound, the one action; else, first, those
    whose values the trajectories were told of as this attempt is now (``Workflow.cues``); then those whose values
    the slot's kin (``Workflow.kin``) names in this attempt; then those whose phrases
    are values the trajectories gave the slot and that a short line of what the attempt was told names (``lines``:
    a list's item, a note); then those the lines name when they single out at most half of those offered; then
    those with values the trajectories gave (first seen first). The step word for word first, else without a
    qualifying phrase (``_shortened``)."""
    for form in (pattern, *_shortened(pattern)):
        regex = _step_regex(form, bound)
        out = _ranked(pattern, [(a, m) for a in offered if (m := regex.fullmatch(norm(a))) is not None], bound,
                      workflow, lines)
        if out:
            return out
    return []


def _ranked(
    pattern: str, hits: Sequence[tuple[str, re.Match[str]]], bound: Mapping[str, str], workflow: Workflow,
    lines: Sequence[str],
) -> list[str]:
    """``_candidates`` of one form of the step: the offered actions it matched (``hits``), those it can hand over
    in order."""
    if all(s in bound for s in _SLOT.findall(pattern)):
        return [a for a, _ in hits]

    def seen(slot: str) -> list[str]:  # a value that is a goal slot stands for what the goal binds it to
        return [substitute_slots(v, bound) for v in workflow.values.get(slot, ())]

    def known(m: re.Match[str]) -> int | None:
        ranks = [seen(k).index(v) for k, v in m.groupdict().items() if v in seen(k)]
        return min(ranks) if len(ranks) == len(m.groupdict()) else None

    def cued(m: re.Match[str]) -> bool:  # what the trajectories were told before this value, told now of this thing
        here = {**bound, **m.groupdict()}
        return any(substitute_slots(c, here) in lines for k, v in m.groupdict().items()
                   for c in workflow.cues.get(k, {}).get(v, ()) if _SLOT.sub("", c) != c)

    told = [a for a, m in hits if cued(m)]
    if told:
        return told
    named = [a for a, m in hits if _named_by_kin(m.groupdict(), bound, workflow.kin)]
    if named:
        return named  # the thing another slot of this attempt names, as the trajectories' values named each other
    free = [k for k in _SLOT.findall(pattern) if k not in bound]
    said = {a for a, m in hits
            if all(_said(m.group(k), [line for line in lines if line not in workflow.passed.get(k, ())]) for k in free)}
    ranks = [(known(m), a) for a, m in hits]
    ranked = [a for _, a in sorted((r, a) for r, a in ranks if r is not None)]
    singled = len(said) * 2 <= len(hits)  # the lines single out a few of those offered, not list them all
    both = [a for a in ranked if a in said]
    return both or ([a for a, _ in hits if a in said] if singled and said else []) or ranked


def _part_of(a: str, b: str) -> bool:
    """Whether one of two different phrases is a run of the other's words (``giant moth``, ``egg giant moth``)."""
    wa, wb = a.split(), b.split()
    return a != b and _content(wa) and _content(wb) and (_contains(wa, wb) or _contains(wb, wa))


def _named_by_kin(values: Mapping[str, str], bound: Mapping[str, str], kin: Mapping[str, str]) -> bool:
    """Whether every value ``values`` gives a slot with a bound kin (``Workflow.kin``) is that kin's value, part of
    it, or holds it, and at least one does."""
    tied = [(v, bound[kin[k]]) for k, v in values.items() if k in kin and kin[k] in bound]
    return bool(tied) and len(tied) == len(values) and all(v == w or _part_of(v, w) for v, w in tied)


def slot_kin(per_slot: Mapping[str, Mapping[int, str]], trajectories: int, min_share: float) -> dict[str, str]:
    """Step slots whose value, in at least ``min_share`` of the trajectories that gave both, is part of another
    slot's value or holds it (``move <X> to box`` where ``focus on <Y>`` took ``egg moth`` and ``<X>`` took
    ``moth``): slot -> that other slot. ``per_slot`` is each slot's value per trajectory index; at least two
    trajectories must show it (one, when there is one).

    Example:
        >>> slot_kin({"Y": {0: "egg moth", 1: "egg wasp"}, "X": {0: "moth", 1: "wasp"}}, 2, 0.6)
        {'Y': 'X', 'X': 'Y'}
    """
    need = min(2, trajectories)
    out: dict[str, str] = {}
    for letter, took in per_slot.items():
        if letter in GOAL_LETTERS:
            continue  # the task's text binds a goal slot
        for other, theirs in per_slot.items():
            shared = [d for d in took if d in theirs]
            held = sum(1 for d in shared if _part_of(took[d], theirs[d]))
            if other != letter and held >= need and held >= min_share * len(shared):
                out[letter] = other
                break
    return out


def _said(phrase: str, lines: Sequence[str]) -> bool:
    """Whether a normalised line names ``phrase`` whole."""
    return any(re.search(rf"\b{re.escape(phrase)}\b", line) for line in lines)


def told_lines(seen: str, max_words: int) -> list[str]:
    """The short lines of what an attempt was told (at most ``max_words`` words), normalised: direct statements (a
    list's items, a note) rather than a description of everything in view.

    Example:
        >>> told_lines("You see a desk, a lamp, a chair and a tall shelf here.\\nIngredients:\\n  red pen", 6)
        ['ingredients', 'red pen']
    """
    lines = (norm(line) for line in seen.splitlines())
    return [line for line in lines if line and len(line.split()) <= max_words]


def substitute_slots(text: str, bound: Mapping[str, str]) -> str:
    """``text`` with each bound ``<X>`` replaced by its value (unbound ones kept).

    Example:
        >>> substitute_slots("open <A> in <Z>", {"A": "notes"})
        'open notes in <Z>'
    """
    return _SLOT.sub(lambda m: bound.get(m.group(1), m.group(0)), text)


def _thing(pattern: str, bound: Mapping[str, str]) -> tuple[str, list[str]]:
    """The words naming a step's thing, and the function word before them: what follows the step's last function
    word, slots bound; ``("", [])`` when it has none or a slot there is unbound.

    Example:
        >>> _thing("copy <Z> to <A> folder", {"A": "red"}), _thing("open door to <Z>", {}), _thing("save file", {})
        (('to', ['red', 'folder']), ('', []), ('', []))
    """
    words = pattern.split()
    cut = max((i for i, w in enumerate(words) if w in FUNCTION_WORDS), default=-1)
    if cut < 1:
        return "", []
    out: list[str] = []
    for w in words[cut + 1 :]:
        m = _SLOT.fullmatch(w)
        if m is not None:
            if m.group(1) not in bound:
                return "", []
            out.extend(bound[m.group(1)].split())
        else:
            out.append(w)
    return (words[cut], out) if out else ("", [])


def ground(
    workflow: Workflow,
    goal: str,
    done: Sequence[str],
    offered: Sequence[str],
    config: WorkflowConfig = DEFAULT_CONFIG.workflows,
    seen: str = "",
) -> Grounded | None:
    """The next action of an attempt at ``goal`` that took ``done``, among ``offered`` (module docstring), or None
    when the goal does not fit the workflow, it is finished, or nothing offered carries it on. ``seen`` is what the
    attempt was told (its observations): a slot no value of the trajectories binds may take a phrase a short line of
    it names."""
    goal_binding = bind_goal(workflow, goal, config.workflow_min_goal_overlap)
    if goal_binding is None:
        return None
    # a note quotes its action in back-quotes: never one it cannot quote whole, nor one a step on the task's thing holds
    holding = _holding(workflow, goal_binding)
    offered = [a for a in offered
               if "`" not in a and (not holding or _held_by(workflow, goal_binding, a, holding) is None)]
    at, bound = progress(workflow, goal_binding, done)
    taken = {norm(a) for a in done}
    lines = told_lines(seen, config.workflow_short_line_words)
    passed = 0
    for k in range(at, len(workflow.steps)):
        step = workflow.steps[k]
        hits = _candidates(step.action, bound, offered, workflow, lines)
        if hits:
            return Grounded(hits[0], k, "step" if k == at else "skip")
        if any(slot not in bound for slot in _SLOT.findall(step.action)):
            continue  # a slot nothing here binds: the step cannot be taken here, nor brought nearer
        relation, thing = _thing(step.action, bound)
        if thing:
            tail = re.compile(rf"\b{re.escape(relation)} {re.escape(' '.join(thing))}$")  # the same relation to it
            command = step.action.split()[0]
            reached = any(tail.search(a) for a in taken)  # one way to the thing was taken: it is where it leads
            reach = [] if reached else [a for a in offered if tail.search(norm(a)) and norm(a).split()[0] != command]
            if reach:
                return Grounded(sorted(reach, key=lambda a: (len(a), a))[0], k, "reach")
        if step.progress:
            return None  # what it brings about is needed later, and nothing offered brings it nearer
        passed += 1
        if passed > config.workflow_skip_lookahead:
            return None
    return None


def against(workflow: Workflow, goal: str, action: str,
            min_overlap: float = DEFAULT_CONFIG.workflows.workflow_min_goal_overlap) -> str | None:
    """The workflow's step that ``action`` takes on another thing than the task's text names, bound, or None: a
    scoring step that every trajectory took only on what its task named (``WorkflowStep.only_named``), proposed
    with another value, where the action is no other step of the workflow. The task's own text then says all that
    step acts on, the one fact the procedure is sure of.

    Example:
        >>> wf = Workflow("file <A> report", (WorkflowStep("open drawer"),
        ...                                   WorkflowStep("sign <A> report", progress=True, only_named=True)))
        >>> against(wf, "File the tax report.", "sign rent report")
        'sign tax report'
        >>> against(wf, "File the tax report.", "sign tax report") is None
        True
    """
    return _held_by(workflow, bind_goal(workflow, goal, min_overlap) or {}, action)


def _holding(workflow: Workflow, goal_binding: Mapping[str, str]) -> list[WorkflowStep]:
    """The steps that can hold a proposal under ``goal_binding``: scoring, taken only on what each task named, every
    slot bound by the goal."""
    return [s for s in workflow.steps
            if s.progress and s.only_named and all(k in goal_binding for k in _SLOT.findall(s.action))]


def _held_by(workflow: Workflow, goal_binding: Mapping[str, str], action: str,
             holding: Sequence[WorkflowStep] | None = None) -> str | None:
    """``against`` with the goal's slots already bound (``{}``: the goal does not fit, nothing is held), and the steps
    that can hold (``_holding``) when the caller has them."""
    holding = _holding(workflow, goal_binding) if holding is None else holding
    if not holding or any(match_step(s.action, action, goal_binding) is not None for s in workflow.steps):
        return None  # nothing to hold with; or another step of the procedure, or this one on the task's thing
    for step in holding:
        letters = _SLOT.findall(step.action)
        hit = match_step(step.action, action, {})
        if hit is not None and any(norm(hit.get(k, "")) != norm(goal_binding[k]) for k in letters):
            return substitute_slots(step.action, goal_binding)
    return None


def workflow_line(grounded: Grounded, workflow: Workflow) -> str:
    """The note a reader gets for a grounded step: a recommendation of the one action, with where it comes from."""
    step = workflow.steps[grounded.index]
    why = {"step": "the next step", "skip": "the next step that can be taken now",
           "reach": f"first, to reach the next step `{step.action}`"}[grounded.how]
    return f"Prefer `{grounded.action}` ({why} of a procedure from {workflow.sources} trajectories)"


__all__ = [
    "DemoStep",
    "Demonstration",
    "Grounded",
    "Workflow",
    "WorkflowStep",
    "advance",
    "against",
    "align",
    "bind_goal",
    "fold_loops",
    "goal_slots",
    "ground",
    "induce_workflow",
    "match_step",
    "only_named",
    "progress",
    "shared_phrases",
    "slot_kin",
    "slot_passed",
    "substitute",
    "workflow_line",
]
