"""kin_in_attempt: commands first offered together with an avoided directive are avoided with it.

Once memory knows a command fatal where the task does not direct it (``chop <X>`` unless the task says so), the
attempt's own directive verbs (offered together on the same things, named by a line that opens with them:
``attempt_directives``) and their kin (the commands a step first offered with them: ``dice`` and ``slice`` come with
the knife, ``direct.kin_of``) are avoided where the task does not say them. A command memory has any rule about is
left to that rule; a kin offered beyond a directive's things (the meal) is avoided by name, not as a pattern.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import ClassVar

from langmem_plus.learning.textmatch import UNNAMED, Pattern, command_and_object, norm
from langmem_plus.records import ScoredItem, Step, TaskSpec
from langmem_plus.textgames.delivery_rules.base import Firing, Known, inferred
from langmem_plus.textgames.delivery_rules.unknown_kin import KIN_PREFIX
from langmem_plus.textgames.direct import fatal_where_undirected, kin_of, offered_on_own, offered_together
from langmem_plus.textgames.trigger import StepView, firings, head_verb


def attempt_kin_item(wrong: str) -> tuple[ScoredItem, Pattern]:
    """The avoidance of ``wrong`` where the task does not say it, as an item and its pattern: ``<verb> <X>``, or, for a
    kin offered on things no directive is offered on, its own action (``eat red apple`` beside the meal)."""
    pattern = Pattern.parse(wrong)
    assert pattern is not None
    return inferred(KIN_PREFIX, wrong, wrong, [f"{UNNAMED}{wrong}"], "a directive verb of the attempt, or its kin"), pattern


def object_phrase(thing: str, group: Collection[str], valid: Sequence[str]) -> bool:
    """Whether a valid action of a command outside ``group`` takes ``thing`` as its object, whole or followed by more
    words (``put red apple in counter``): a thing of its own, not a phrase that runs on past it
    (``red apple with knife``, which every command of the knife's group shares)."""
    thing = norm(thing)
    return any(verb and verb not in group and (rest == thing or rest.startswith(f"{thing} "))
               for verb, rest in map(command_and_object, valid))


def attempt_directives(groups: Sequence[dict[str, frozenset[str]]], view: StepView,
                       known: Collection[str] = frozenset()) -> set[str]:
    """Commands this attempt's own text directs. A step first offered them together with another command on the same
    things (an instrument's commands: ``offered_together``), one of those things is a phrase the task's text names
    (``StepView.names``), and a clause of the goal or a line of the task's text opens with the command.

    ``known`` are the tool's directive verbs (``extras.run_directed``): one of them offered together with another
    command on the same things is a directive verb here whether or not this task's text says it yet, on things that
    text names or that are objects of their own (``object_phrase``).

    Example:
        >>> view = StepView(frozenset(), "", ("red apple", "dice red apple"), (), (), directing=("dice red apple",))
        >>> knife = {"slice": frozenset({"red apple"}), "dice": frozenset({"red apple"}), "drop": frozenset({"knife"})}
        >>> sorted(attempt_directives([knife], view)), attempt_directives([{"dice": frozenset({"red apple"})}], view)
        (['dice'], set())
    """
    opening = {line.split()[0] for line in view.directing if line.split()}
    out: set[str] = set()
    for things in groups:
        for verb, objects in things.items():
            group = {other for other, same in things.items() if same == objects}  # the commands on the same things
            if verb in out or len(group) < 2:
                continue
            if verb in opening and any(view.names(thing) for thing in objects):
                out.add(verb)
            elif verb in known and any(view.names(thing) or object_phrase(thing, group, view.valid) for thing in objects):
                out.add(verb)
    return out


class KinInAttempt:
    """Avoids the attempt's directive verbs and their kin where the task does not say them (module docstring)."""

    name: ClassVar[str] = "kin_in_attempt"
    summary: ClassVar[str] = "commands first offered together with an avoided directive are avoided with it"
    prefix: ClassVar[str] = KIN_PREFIX

    def __init__(self, known: Known) -> None:
        self._config = known.config
        self._undirected = known.undirected
        self._directive_verbs = known.directive_verbs
        self._guarded = bool(known.undirected) or fatal_where_undirected(known.live)
        self._ruled = frozenset(head_verb(p) for _, p in known.parsed)
        self._read: list[Step] = []
        self._groups: list[dict[str, frozenset[str]]] = []
        self._own_seen: dict[str, set[str]] = {}

    def fire(self, view: StepView, task: TaskSpec, history: Sequence[Step]) -> list[Firing]:
        """The directives' and their kin's avoidances at this step (none before the first step, or while memory knows
        no command fatal where undirected)."""
        if not (self._guarded and history):
            return []
        groups = self._offered(task, history)
        directives = set(self._undirected) | attempt_directives(groups, view, self._directive_verbs)
        kin = kin_of(groups, directives)  # kin are avoided only on things a directive is offered on now
        verbs = sorted((directives | kin) - self._ruled)
        parsed = [(*command_and_object(a), norm(a)) for a in view.valid] if verbs else []  # (verb, thing, action)
        directed_on = {thing for verb, thing, _ in parsed if verb in directives}
        out: list[Firing] = []
        for verb in verbs:
            on = [(a, thing) for v, thing, a in parsed if v == verb]
            wrongs = [f"{verb} <X>"] if verb in directives or all(t in directed_on for _, t in on) else [
                a for a, t in on if t in directed_on]  # a kin offered beyond a directive's things (the meal): by name
            for wrong in wrongs:
                it, p = attempt_kin_item(wrong)
                out += [(it, a) for a in firings(it.item, p, view, self._config)]  # type: ignore[arg-type]
        return out

    def _offered(self, task: TaskSpec, history: Sequence[Step]) -> list[dict[str, frozenset[str]]]:
        """``offered_together`` and ``offered_on_own`` over the attempt so far, reading only the steps added since the
        last call: the same groups as reading the whole history (a step's new actions are against the last step that
        offered any)."""
        read = self._read
        if len(read) > len(history) or any(a is not b for a, b in zip(read, history)):
            read, self._groups, self._own_seen = [], [], {}  # another attempt's history: read from its start
        offered = [s.info.get("valid_actions") for s in reversed(read) if s.info.get("valid_actions")]
        before = [str(a) for a in (offered[0] if offered else (task.context or {}).get("valid_actions")) or []]
        added = history[len(read):]
        self._groups += offered_together(added, before) + offered_on_own(added, before, self._own_seen)
        self._read = list(history)
        return self._groups


__all__ = ["KinInAttempt", "attempt_directives", "attempt_kin_item", "object_phrase"]
