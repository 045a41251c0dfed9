"""Consuming commands: commands whose step made the thing it acted on disappear.

Some actions use a thing up: after ``eat carrot`` no valid action names the carrot any more. The game says so
through its valid actions, in any run, won or lost, whatever the thing was: before the step other commands took
the same thing as their whole object (``drop carrot``, ``examine carrot``); after it, none of the valid actions
names it. A run keeps the commands it saw do this (``extras.run_consumed``), and ``textgames.delivery_rules.using_up``
keeps the next attempt from using up a thing (but the goal's own words) that its task does not ask it to use so. A thing is
what a command's object is whole, so ``put carrot in fridge`` (whose rest no other command takes) says nothing;
and the rest of the world must still be there (the agent did not move; most other actions are still offered), so
leaving a room or a game's end, which also take things out of the valid actions, say nothing either. Nothing here
knows a game's words.

Example:
    >>> from langmem_plus.records import Step, TaskSpec
    >>> task = TaskSpec(task_id="t", goal="g", context={"valid_actions": ["eat carrot", "drop carrot", "look"]})
    >>> steps = [Step(index=0, action="look", info={"valid_actions": ["eat carrot", "drop carrot", "look"]}),
    ...          Step(index=1, action="eat carrot", info={"valid_actions": ["look"]})]
    >>> consumed_commands(task, steps)
    ['eat']
"""

from __future__ import annotations

from collections.abc import Sequence

from langmem_plus.learning.textmatch import command_and_object, says_line
from langmem_plus.textgames.rules import moved
from langmem_plus.textgames.undo import valid_set
from langmem_plus.records import Step, TaskSpec


def consumed_commands(task: TaskSpec, steps: Sequence[Step]) -> list[str]:
    """The commands of ``steps`` that used their object up (module docstring), in the run's order, each once.

    A step counts when it did not fail, the valid actions before and after it are known (a game's last step offers
    none), another command took its object whole before it, and no valid action after it names the object, while
    the rest of the world is still there: the agent is where it was (the state's ``location``, when the game gives
    one: leaving a room takes its things out of the valid actions too), and at least half of the actions before it
    that do not name the object are still offered (not a list cut short or replaced, as a game's end replaces it).
    """
    before = valid_set((task.context or {}).get("valid_actions"))
    out: dict[str, None] = {}
    for step in sorted(steps, key=lambda s: s.index):
        after = valid_set(step.info.get("valid_actions"))
        valid_before, before = before, after
        if not after or not valid_before or step.feedback.failed:
            continue
        verb, thing = command_and_object(step.action)
        if not thing or verb in out or moved(step):
            continue
        others = {command_and_object(a) for a in valid_before}
        if not any(v != verb and t == thing for v, t in others) or says_line(thing, list(after)):
            continue
        rest = {a for a in valid_before if not says_line(thing, [a])}
        if 2 * len(rest & after) >= len(rest):
            out[verb] = None
    return list(out)


__all__ = ["consumed_commands"]
