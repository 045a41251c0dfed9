"""Undo pairs: steps that took back what an earlier step of the same run did (the efficiency channel).

A step costs a step whatever it does, and one that only takes back an earlier one (``close door to west``
after ``open door to west``) buys nothing for it. The game says which steps are such toggles through its valid
actions: the earlier step made the later action possible (it appeared among the valid actions after it), the
later one made the earlier action possible again, and each stopped being offered once taken. Such a pair, the
two actions sharing their object (their longest common tail of words) and differing in what comes before it, is
kept as two patterns over that object: ``("close <X>", "open <X>")``, the undo and what it undid. Other steps may
come between them, and what they change (taking the knife the opened drawer held) does not hide the toggle.
Nothing here knows a game's words; the pattern comes from the two actions, the evidence from the valid actions.
``textgames.delivery_rules.undo`` reads the pairs the tool's runs recorded (``extras.run_undone``).

Example:
    >>> from langmem_plus.records import Step, TaskSpec
    >>> task = TaskSpec(task_id="t", goal="g", context={"valid_actions": ["open door to west", "look"]})
    >>> opened = ["close door to west", "move west", "look"]
    >>> steps = [Step(index=0, action="open door to west", info={"valid_actions": opened}),
    ...          Step(index=1, action="look", info={"valid_actions": opened}),
    ...          Step(index=2, action="close door to west", info={"valid_actions": ["open door to west", "look"]})]
    >>> undo_pairs(task, steps)
    [('close <X>', 'open <X>')]
"""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.learning.textmatch import norm, norm_words
from langmem_plus.records import Step, TaskSpec

UNDO_SLOT = "<X>"
"""The placeholder an undo pair's patterns put where the two actions' shared object was."""


def shared_object(undo: str, done: str) -> tuple[str, str] | None:
    """The two actions as patterns over their longest common tail of words (``close <X>``, ``open <X>``), or None
    when they share no tail or nothing precedes it in either (no two commands to tell apart).

    Example:
        >>> shared_object("turn off the red lamp", "turn on red lamp"), shared_object("move west", "move east")
        (('turn off <X>', 'turn on <X>'), None)
    """
    a, b = norm_words(undo), norm_words(done)
    k = 0
    while k < min(len(a), len(b)) and a[-1 - k] == b[-1 - k]:
        k += 1
    if k == 0 or k == len(a) or k == len(b):
        return None
    return " ".join([*a[:-k], UNDO_SLOT]), " ".join([*b[:-k], UNDO_SLOT])


def valid_set(raw: object) -> frozenset[str]:
    """A step's valid actions, normalised (``textmatch.norm``), so ``open the drawer`` is ``open drawer``."""
    return frozenset(norm(str(a)) for a in raw or []) if isinstance(raw, (list, tuple)) else frozenset()


def undo_pairs(task: TaskSpec, steps: Sequence[Step]) -> list[tuple[str, str]]:
    """``(undo pattern, done pattern)`` for each step of the run that toggled back the latest earlier step it forms
    a toggle with (module docstring), in the run's order, each pair once.

    Only a toggle that takes something back counts: the earlier step offered more than its own undo (opening the
    door also offered the move through it), and the later one offered nothing but what the earlier one had used
    up. Closing a door open from the start and opening it again is no undo of the closing: the close offered
    only the open. A step that failed, raised or lowered the score is no undo: its outcome was more than a
    reversal; nor is one that takes back an undo (``open`` again after ``close``: it redoes what was needed).
    A game's last step offers no actions, and without the valid actions before and after a step (an environment
    that does not enumerate them) nothing is read from it.
    """
    ordered = sorted(steps, key=lambda s: s.index)
    before = valid_set((task.context or {}).get("valid_actions"))
    plain: list[tuple[Step, str, frozenset[str], frozenset[str]]] = []  # (step, action, valid before, after): plain steps
    undos: set[int] = set()
    out: dict[tuple[str, str], None] = {}
    for step in ordered:
        after = valid_set(step.info.get("valid_actions"))
        valid_before, before = before, after
        fb = step.feedback
        if not after or not valid_before or fb.failed or fb.reward != 0:
            continue
        act = norm(step.action)
        if act in valid_before and act not in after:  # it was offered, and taking it used it up
            for earlier, done, e_before, e_after in reversed(plain):
                if act not in e_before and act in e_after and done not in e_after and done in after \
                        and done not in valid_before:
                    pair = shared_object(act, done)
                    restores = (after - valid_before) <= (e_before - e_after)  # it offered only what was used up
                    if pair is not None and id(earlier) not in undos and restores and e_after - e_before - {act}:
                        out.setdefault(pair, None)
                        undos.add(id(step))
                    break
        plain.append((step, act, valid_before, after))
    return list(out)


__all__ = ["UNDO_SLOT", "shared_object", "undo_pairs", "valid_set"]
