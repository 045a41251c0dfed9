"""What a fatal action did wrong, when the run read nothing beyond its goal: its object, abstracted.

``textgames.rules`` abstracts an action over the phrases of the task's text (what the
agent read in things the goal names). Where the goal is the whole task's text (nothing was
read), a fatal action's object is abstracted here instead, through how the goal relates to
that object. Each function returns the avoidance's pattern and condition, or None, and they
are tried in this order:

- **Goal-directed commands** (``goal_directed``): the goal itself directs the command (one of
  its clauses opens with the action's head, ``First, focus on the thing.``, or says it after
  "to", ``Your task is to focus on the life stages of the frog``) and does not say this action. The lesson is the command's head on anything the task does not direct it to:
  ``focus on <X>`` where the task does not say ``focus on <X>`` (shown "unless the task says so"). One rule covers every object
  the command was fatal on, the things the goal never names (``air``) and the things it
  names in another role (``the red box`` it says to move the thing into) alike, where the
  object-by-object lessons below would each cover one kind of thing.
- **Unnamed things** (``unnamed_entity``): an action on something the game showed but the task
  does not name becomes ``<verb> <X>`` "when the task does not name `<X>`"; an action on what
  the goal names with something it does not (``cook meal with oven``) becomes
  ``cook meal with <X>``, the instrument being the unnamed thing.
- **Goal roles** (``goal_entity``): an action on a thing the goal names becomes ``<verb> <X>``
  under the role the goal gives that thing (``located around <X>``).
- **Bare situations** (``unasked_head``): an avoidance whose whole condition is that the task
  names the thing and says nothing more about it keeps only the verb and the thing.

Nothing here knows a game: heads, objects and roles all come from the action and the goal.

Example:
    >>> goal = "Find a living thing. First, focus on the thing. Then, move it to the red box."
    >>> goal_directed("focus on red box", goal)
    ('focus on <X>', ['!focus on <X>'])
    >>> goal_directed("focus on thing", goal) is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.learning.textmatch import (
    SLOT,
    UNNAMED,
    clauses,
    norm_words,
    occurs,
    says_line,
)

STOP_WORDS = frozenset(["in", "on", "to", "of", "for", "and", "or", "with", "at", "from", "into", "is", "are", "it"])
"""Words that are never a placeholder's whole content (and that join a verb to its object: ``focus on``)."""
FUNCTION_WORDS = STOP_WORDS | frozenset(
    "about above across after along around away back behind below beside between by down inside near off out "
    "outside over through under up upon within".split()
)
"""English prepositions and adverbs: an object made only of them (``look around``) names no thing."""
PREPOSITIONS = FUNCTION_WORDS - frozenset(["and", "or", "is", "are", "it"])
"""Words that open a phrase saying how or where an action is done (``with oven``, ``in pot``)."""
GOAL_ROLE_WORDS = 2
"""Goal words before a goal-named phrase that state its role (``around <X>``, ``it to <X>``)."""


def split_object(action: str) -> tuple[list[str], list[str]]:
    """``(head, object)`` of an action: its verb with the prepositions after it, and the words that follow.

    Example:
        >>> split_object("focus on the red box")
        (['focus', 'on'], ['red', 'box'])
    """
    words = norm_words(action)
    i = 1
    while i < len(words) and words[i] in STOP_WORDS:
        i += 1
    return words[:i], words[i:]


def _directs(head: str, clause: str) -> bool:
    """Whether ``clause`` directs the command ``head``: it opens with it (an imperative, ``focus on the thing``) or
    states it as what is to be done (``your task is to focus on ...``), not merely mentions its verb."""
    padded = f" {clause} "
    return padded.startswith(f" {head} ") or f" to {head} " in padded


def goal_directed(action: str, goal: str) -> tuple[str, list[str]] | None:
    """A fatal action of a command the goal directs, on a thing the goal does not direct it to, or None.

    The goal directs a command when one of its clauses (``textmatch.clauses``) opens with the
    action's head (``focus on``) or says it after "to" (``your task is to focus on ...``): an
    instruction, not a mention (``let's cook a meal`` directs no ``cook`` command). When no clause says the action
    itself, what the command was spent on is the mistake, whatever the thing was, so the
    avoidance is the head on a placeholder with the negative line condition
    ``!<head> <X>``: it binds any object and holds wherever the task does not say the command
    on it (``textmatch.says_line``, the goal included). None when the action has no object, the
    goal directs no such command, or says this action (the goal asked for it: the role decides).

    Example:
        >>> goal_directed("focus on air", "First, focus on the thermometer.")
        ('focus on <X>', ['!focus on <X>'])
        >>> goal_directed("focus on air", "Let us focus on a meal.") is None
        True
    """
    head, obj = split_object(action)
    said = clauses(goal)
    if not obj or not any(_directs(" ".join(head), c) for c in said):
        return None
    if says_line(" ".join([*head, *obj]), said):
        return None
    pattern = " ".join([*head, "<X>"])
    return pattern, [f"{UNNAMED}{pattern}"]


def unnamed_entity(action: str, observations: Sequence[str], goal: str, config: MemoryConfig = DEFAULT_CONFIG
                   ) -> tuple[str, dict[str, str]] | None:
    """An avoided action abstracted over a thing the game showed but the task does not name, or None.

    The action's object (the words after its verb and any prepositions), when it is not all
    goal words and its first word is one the game printed in the run, becomes ``<X>``. Used for a fatal action that names nothing of the task's text: what it did to
    something the task never asked for is the lesson ("focus on <X>" when the task does not
    name X), where the literal action would only warn against that one object.

    Example:
        >>> shown = ["In it, you see:\\n  a door to the hallway"]
        >>> unnamed_entity("focus on door to hallway", shown, "Find a living thing. Focus on it.")
        ('focus on <X>', {'X': 'door to hallway'})
    """
    head, obj = split_object(action)
    goal_words = set(norm_words(goal))
    if not obj or all(w in goal_words or w in STOP_WORDS for w in obj) or all(w in FUNCTION_WORDS for w in obj):
        return None  # the goal's own things, or no thing at all ("look around")
    head, obj = _past_named_object(head, obj, goal_words)
    shown = [" ".join(norm_words(line)) for o in observations for line in o.splitlines()]
    if not any(occurs(obj[0], line) for line in shown if line):
        return None  # not something the game showed
    return " ".join([*head, "<X>"]), {"X": " ".join(obj)}


def _past_named_object(head: list[str], obj: list[str], goal_words: set[str]) -> tuple[list[str], list[str]]:
    """``(head, object)`` moved past an object the goal names to what follows its preposition (the instrument,
    ``PREPOSITIONS``; not a co-object after "and"):
    ``cook meal with oven`` becomes ``cook meal with`` and ``oven``, so the unnamed thing is the oven the meal was
    cooked with, not "meal with oven", which a reader would take for the goal's meal. Unchanged when the object's
    first words (up to a preposition) are not all goal words."""
    for i in range(1, len(obj)):
        if obj[i] in PREPOSITIONS and all(w in goal_words for w in obj[:i]):
            j = i
            while j < len(obj) and obj[j] in PREPOSITIONS:
                j += 1
            if j < len(obj):
                return [*head, *obj[:j]], obj[j:]
    return head, obj


def goal_entity(action: str, goal: str, config: MemoryConfig = DEFAULT_CONFIG) -> tuple[str, list[str]] | None:
    """An avoided action on a thing the goal names, abstracted over that thing through the goal's words, or None.

    Goals of one family differ in their entities (the room, the box's colour) and agree on the
    words around them, which say the entity's role. The action's object (after its verb and any
    prepositions) becomes ``<X>`` and the condition is the role as the goal states it (the
    ``GOAL_ROLE_WORDS`` words before the object's first mention), so the rule binds the next
    goal's entity in the same role. None when the object is not in the goal, is longer than
    ``text_rule_max_entity_words``, or the role holds the action's own verb (the goal asks for
    this very action: ``focus on <X>``). When a clause of the goal says the action all the same
    (it was fatal although directed: done too early), that directive is a condition too, so the
    rule is never read as one about where the task does not direct the command
    (``direct.revise`` leaves such a rule as it is).

    Example:
        >>> goal_entity("focus on living room", "Measure the wire, located around the living room.")
        ('focus on <X>', ['located around <X>'])
        >>> goal_entity("focus on red box", "First, focus on the red box.") is None
        True
        >>> goal_entity("focus on wire", "Measure the temperature of wire. First, focus on a tool. Next, focus on the wire.")
        ('focus on <X>', ['temperature of <X>', 'focus on <X>'])
    """
    head, obj = split_object(action)
    said = norm_words(goal)
    if not obj or len(obj) > config.textgames.text_rule_max_entity_words:
        return None
    for k in range(GOAL_ROLE_WORDS, len(said) - len(obj) + 1):
        if said[k : k + len(obj)] == obj:
            role = said[k - GOAL_ROLE_WORDS : k]
            if head[0] in role:
                return None
            pattern = " ".join([*head, "<X>"])
            directed = [pattern] if says_line(" ".join([*head, *obj]), clauses(goal)) else []
            return pattern, [" ".join([*role, "<X>"]), *directed]
    return None


def unasked_head(pattern: str, conds: Sequence[str]) -> str:
    """An avoidance's pattern cut after its placeholder when its condition is the bare placeholder alone.

    The task named the thing and said nothing more about it, so nothing in the task asked for
    the action in any form: what follows the thing (``in toaster``) is not what made it fatal,
    and the rule holds for the verb on that thing whatever follows (``cook <X>``, which
    ``textmatch.listed_only`` checks on the leading part of what ``<X>`` binds).

    Example:
        >>> unasked_head("cook <X> in toaster", ["<X>"]), unasked_head("cook <X> in toaster", ["fry <X>"])
        ('cook <X>', 'cook <X> in toaster')
    """
    words = pattern.split()
    if [c.strip() for c in conds] != ["<X>"] or "<X>" not in words[1:2] or any(SLOT.fullmatch(w) for w in words[2:]):
        return pattern
    return " ".join(words[:2])


__all__ = ["FUNCTION_WORDS", "GOAL_ROLE_WORDS", "PREPOSITIONS", "STOP_WORDS", "goal_directed", "goal_entity", "split_object", "unasked_head", "unnamed_entity"]
