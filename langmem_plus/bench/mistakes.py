"""Repeated mistakes: a lost game's fatal step named in the task's own terms, so a later loss can be told apart
as the same mistake made again or a new one (agents repeat the same mistakes).

Counting games lost mixes two things a memory design answers for differently: a mistake
nothing before it showed (a situation no earlier episode met; no memory can know it) and
one an earlier episode already paid for. Only the second is the memory's failure. So each
fatal step gets a **signature**: its action with the task's volatile entities as
placeholders, and the lines of the task's text that set its situation, the same
abstraction ``textgames.rules`` learns from, in its order (``abstract_action``,
``conditions_for``, ``relevant_conditions``, ``undirected``, ``unasked_head``; and, where the
action names nothing of the task's text, the goal-based forms of ``textgames.entities``).
``cook red apple in stove`` when the recipe says
``roast the red apple`` and ``cook milk in stove`` when it says ``roast the milk`` are one
mistake, ``cook <X> in stove`` when the task says ``roast <X>``; the same action when it
says ``fry <X>`` is another. A loss is **repeated** when an earlier episode of the same
sequence (collection, then deployment, one design and repeat) was lost to a mistake with
the same signature that memory was given: in static mode memory is frozen after collection,
so only collection episodes count as shown; in dynamic mode every earlier episode does.

The signature is langmem_plus's own reading of a situation, applied to every design's
episodes alike; it is a measure of the episodes, not of what any design stored.

Example:
    >>> from langmem_plus.records import Feedback, Step
    >>> def game(food: str, verb: str) -> list[Step]:
    ...     return [Step(index=0, action="read cookbook", observation=f"Directions:\\n  {verb} the {food}",
    ...                  info={"valid_actions": [f"cook {food} in stove", "eat meal"]}),
    ...             Step(index=1, action=f"cook {food} in stove", info={"valid_actions": []},
    ...                  feedback=Feedback(constraint_failure=True, error_text="lost"))]
    >>> goal = "Check the cookbook for the recipe."
    >>> played = [Episode(goal, game(f, v), shown=True) for f, v in [("red apple", "roast"), ("milk", "roast"), ("milk", "fry")]]
    >>> repeated_losses(played)
    [False, True, False]
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.textgames.direct import undirected
from langmem_plus.textgames.entities import goal_directed, goal_entity, unasked_head, unnamed_entity
from langmem_plus.learning.textmatch import UNNAMED, directing_lines
from langmem_plus.textgames.rules import abstract_action, conditions_for, offered_verbs, relevant_conditions, task_text_lines
from langmem_plus.records import Step


class Mistake(NamedTuple):
    """A fatal step in the task's own terms: the action pattern and the situation lines, sorted."""

    pattern: str
    situation: tuple[str, ...]


def fatal_step(steps: Sequence[Step]) -> Step | None:
    """The first step that lost the game (the constraint channel), or None."""
    return next((s for s in sorted(steps, key=lambda s: s.index) if s.feedback.constraint_failure), None)


def mistake_signature(goal: str, steps: Sequence[Step], config: MemoryConfig = DEFAULT_CONFIG,
                      verbs: Collection[str] | None = None, observation: str = "",
                      directives: Collection[str] | None = None) -> Mistake | None:
    """The signature of the episode's fatal step (module docstring), or None when no step lost the game.

    The steps of ``learn_text_rules`` for an avoidance, in its order: over the task's text (what
    the agent read in things the goal names) the action's phrases that text names become
    placeholders and the situation is the lines naming them that bear on the action
    (``relevant_conditions``); a directive verb spent where no line says it is "where the task
    does not say it" (``undirected``); where the action names nothing of the task's text, the
    goal's own relation to its object decides (a command the goal directs, spent on something
    else; a thing the task never names; a thing in the role the goal gives it); otherwise the
    literal action; and a bare situation keeps only the verb and the thing (``unasked_head``).

    ``verbs`` are the game's commands and ``directives`` those of them that open a line of a task's
    text (``repeated_losses`` passes the whole sequence's, so a directive another command carries out,
    ``chop <X>``, is no part of the situation of ``cook <X> in stove`` in an episode that never held
    the knife); by default this episode's own. ``observation`` is what the game showed before the first step.
    """
    ordered = sorted(steps, key=lambda s: s.index)
    step = fatal_step(ordered)
    if step is None:
        return None
    lines = task_text_lines(goal, ordered)
    verbs = offered_verbs(ordered) if verbs is None else verbs
    directives = directive_verbs(verbs, [lines]) if directives is None else directives
    pattern, bindings = abstract_action(step.action, lines, goal, config)
    conds = conditions_for(bindings, lines, config.textgames.text_rule_max_conditions) if bindings else []
    conds = relevant_conditions(pattern, conds, verbs, directives)
    undirected_when = undirected(pattern, bindings, directing_lines(goal, lines), directives)
    if undirected_when is not None:
        conds = undirected_when
    elif not bindings:
        seen = [observation, *(s.observation for s in ordered)]
        directed = goal_directed(step.action, goal)
        unnamed = unnamed_entity(step.action, seen, goal, config) if directed is None else None
        role = goal_entity(step.action, goal, config) if directed is None and unnamed is None else None
        if directed is not None:
            pattern, conds = directed
        elif unnamed is not None:
            pattern, conds = unnamed[0], [f"{UNNAMED}<X>"]
        elif role is not None:
            pattern, conds = role
    return Mistake(unasked_head(pattern, conds), tuple(sorted(conds)))


def directive_verbs(verbs: Collection[str], texts: Iterable[Sequence[str]]) -> set[str]:
    """The commands among ``verbs`` that open a line of one of the task texts ``texts`` (``chop the red apple``)."""
    return {line.split()[0] for lines in texts for line in lines if line.split()} & set(verbs)


class Episode(NamedTuple):
    """One played episode as the count needs it: its goal, its steps, whether memory was shown it, what the game
    showed before the first step, and the actions it offered then."""

    goal: str
    steps: Sequence[Step]
    shown: bool
    observation: str = ""
    opening: Sequence[str] = ()


def repeated_losses(episodes: Sequence[Episode], config: MemoryConfig = DEFAULT_CONFIG) -> list[bool]:
    """Per episode of a sequence, in order: whether it was lost to a mistake memory had been shown losing an earlier
    episode (module docstring).

    Each comparison reads both losses with the game's commands as memory could know them then: the
    verbs offered in the episodes it had been shown and in this one, and those of them that opened a
    line of one of their task texts. An episode memory was not shown (static deployment) adds nothing
    to what later ones are read with.
    """
    known: set[str] = set()
    texts: list[list[str]] = []
    out: list[bool] = []
    for i, episode in enumerate(episodes):
        own = {str(a).split()[0].lower() for a in episode.opening if str(a).split()} | offered_verbs(episode.steps)
        own_text = task_text_lines(episode.goal, episode.steps)
        verbs = known | own
        directives = directive_verbs(verbs, [*texts, own_text])

        def signature(e: Episode) -> Mistake | None:
            return mistake_signature(e.goal, e.steps, config, verbs, e.observation, directives)

        mistake = signature(episode)
        shown = (signature(e) for e in episodes[:i] if e.shown and fatal_step(e.steps) is not None)
        out.append(mistake is not None and mistake in set(shown))
        if episode.shown:
            known |= own
            texts.append(own_text)
    return out


__all__ = ["Episode", "Mistake", "directive_verbs", "fatal_step", "mistake_signature", "repeated_losses"]
