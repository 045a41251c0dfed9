"""Gold demonstrations of ScienceWorld tasks, from train variations only.

The game ships a gold action sequence for every variation. ``gold_demonstrations``
replays it in the game, so each step's observation and score are what an agent
would see, and it reads only ``get_variations_train()``: a learner can be shown
solutions without ever seeing the dev and test variations it is measured on.
A number in a gold sequence answers the command before it: the replay passes it
as that command's answer when the game asks which reading was meant, and never
sends it as a command of its own. The replay stops when the game
ends; a gold path that falls short of the full score under the chosen
simplifications is kept, with its final score. The game may build a different
gold sequence for the same variation on another load (it picks among equivalent
objects and orders), so two calls need not return the same steps.

Example (needs the ``envs`` extra and Java 17):
    >>> [demo] = gold_demonstrations("find-non-living-thing", 1)     # doctest: +SKIP
    >>> demo.variation, demo.won, demo.steps[0].action               # doctest: +SKIP
    (0, True, 'open door to kitchen')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from langmem_plus.envs.sciworld import (
    AMBIGUITY_ANSWER,
    DEFAULT_SIMPLIFICATIONS,
    SciWorldServer,
    check_task,
    parse_simplifications,
)
from langmem_plus.errors import EnvError


class DemoStep(NamedTuple):
    """One command of a demonstration and what the game answered."""

    action: str
    observation: str
    """The game's answer, as the env shows it (an ambiguous command carries the adapter's note)."""
    score: float
    """The game's score after the command, normalised as ``Turn.score`` (1.0 is a won game, -1.0 a failed one)."""


@dataclass(frozen=True)
class Demonstration:
    """The game's gold action sequence for one train variation, replayed in the game."""

    task: str
    variation: int
    goal: str
    """The task description, as the env gives it."""
    steps: tuple[DemoStep, ...]
    """The replayed commands, up to the one that ended the game (the gold sequence may run on past it)."""
    simplifications: str
    """ScienceWorld's simplification string it was replayed under ("" for none)."""

    @property
    def final_score(self) -> float:
        """Score after the last step (0.0 for an empty demonstration)."""
        return self.steps[-1].score if self.steps else 0.0

    @property
    def won(self) -> bool:
        """Whether the replay reached the full score (a gold path may fall short under some simplifications)."""
        return self.final_score >= 1.0


def gold_demonstrations(
    task: str,
    n: int,
    *,
    simplifications: str = DEFAULT_SIMPLIFICATIONS,
    variations: Sequence[int] | None = None,
    server: SciWorldServer | None = None,
) -> list[Demonstration]:
    """Gold demonstrations of ``task`` on train variations only, replayed so observations and scores are real.

    Args:
        task: A ScienceWorld task name.
        n: How many: the first ``n`` train variations in the game's order (all of them when the fold is smaller).
        simplifications: As for ``SciWorldEnv``.
        variations: Train variations to use instead of the first ``n`` (at most ``n`` of them).
        server: A JVM to reuse (e.g. ``env.server``; its game in progress is lost, so reset the env afterwards);
            by default one is started and stopped.

    Raises:
        EnvError: an unknown task, ``n < 0``, or a variation outside the train fold.
    """
    check_task(task)
    if n < 0:
        raise EnvError(f"n must be >= 0, got {n}")
    simplified = parse_simplifications(simplifications)
    own = server is None
    jvm = server or SciWorldServer()
    try:
        train = jvm.fold_seeds(task, "train", simplified)
        chosen = list(train[:n] if variations is None else variations[:n])
        outside = [v for v in chosen if v not in train]
        if outside:
            raise EnvError(f"variations {outside} of {task!r} are not train variations (train: {min(train)}..{max(train)})")
        return [_replay_gold(jvm, task, v, simplified) for v in chosen]
    finally:
        if own:
            jvm.close()


def _replay_gold(server: SciWorldServer, task: str, variation: int, simplifications: str) -> Demonstration:
    """Replay the gold sequence of one variation; a number after a command is its answer, if the game asks."""
    opening, gold = server.gold_game(task, variation, simplifications)
    steps: list[DemoStep] = []
    i = 0
    while i < len(gold):
        action, following = gold[i], gold[i + 1] if i + 1 < len(gold) else ""
        answer = following if following.isdigit() else AMBIGUITY_ANSWER
        turn = server.act(action, answer, full=False)
        i += 2 if following.isdigit() else 1  # a number answers its command; alone it is no command
        steps.append(DemoStep(action, turn.observation, turn.score))
        if turn.won or turn.lost:
            break
    return Demonstration(task, variation, opening.goal, tuple(steps), simplifications)


__all__ = ["DemoStep", "Demonstration", "gold_demonstrations"]
