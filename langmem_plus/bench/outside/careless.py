"""``careless``: a careless cook that picks commands by word overlap with the recipe, and on impulse.

It reads the cookbook when it can, takes what the recipe names, scores every other command by the
words it shares with the recipe and the goal, and 30 % of the time types a random valid command.
Memory's notes reach it through ``careless_reader`` (its own, loose reader): it takes a recommended
command when one is valid and not typed yet and skips a command a note warns against, ignoring the notes' conditions.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from langmem_plus.bench.outside._chat import OutsideChatModel
from langmem_plus.bench.outside._game import GameView, words
from langmem_plus.bench.outside.careless_reader import read_loosely

IMPULSE_SHARE = 0.3
"""Share of decisions made on impulse: a random valid command (one no note warns against)."""
TAKE_BONUS = 10.0
"""Score added to ``take <X>`` when the recipe names X: the cook gathers ingredients first."""
READ_BONUS = 100.0
"""Score added to reading the cookbook while the recipe is unknown."""
REPEAT_PENALTY = 1.5
"""Score taken off a command per time it was already typed (a careless cook still gets bored)."""
RECIPE_MARK = "Ingredients:"
"""A text containing this is the recipe."""
COOKBOOK_COMMANDS = ("read cookbook", "examine cookbook")
"""The commands that read the cookbook."""
FINISH_BONUS = 20.0
"""Score added to the commands that finish a dish (``FINISH_COMMANDS``): the goal says to enjoy the meal."""
FINISH_COMMANDS = ("prepare meal", "eat meal")
"""What a cook types once the ingredients are in hand."""
SET_DOWN_VERBS = ("put ", "drop ")
"""A cook does not set things down on purpose (on impulse it may)."""
STOPWORDS = frozenset({"the", "a", "an", "and", "to", "of", "in", "on", "with", "your", "this", "all", "you", "is", "it", "from"})
"""Words too common to count as overlap."""


def recipe_of(view: GameView) -> str | None:
    """The latest text that is a recipe, if the cook has read one."""
    found = [t for t in view.texts() if RECIPE_MARK in t]
    return found[-1] if found else None


def ingredients_of(recipe: str) -> list[str]:
    """The indented lines under ``Ingredients:`` (one ingredient each)."""
    lines = recipe.split(RECIPE_MARK, 1)[1].splitlines()
    out: list[str] = []
    for line in lines[1:] if lines and not lines[0].strip() else lines:
        if not line.strip():
            if out:
                break
            continue
        if line.strip().endswith(":"):
            break
        out.append(line.strip().lower())
    return out


class CarelessCook(OutsideChatModel):
    """Word overlap with the recipe, a 30 % impulse, and memory's notes taken at face value."""

    @property
    def _llm_type(self) -> str:
        """LangChain's name for this model."""
        return "outside-careless"

    def choose(self, view: GameView) -> str:
        """Impulse, else a recommended command, else the cookbook, else the best overlap with the recipe."""
        rng = view.rng(self.seed)
        notes = read_loosely(view.system, [e.answer for e in view.exchanges[-1:]])
        allowed = [c for c in view.valid if not notes.warns(c)] or list(view.valid)
        impulse = rng.random() < IMPULSE_SHARE
        if impulse:
            return rng.choice(allowed)
        typed = {e.command for e in view.exchanges}
        recommended = [c for c in allowed if notes.recommends(c) and c not in typed]
        if recommended:
            return recommended[0]
        recipe = recipe_of(view)
        tried = [e.command for e in view.exchanges]
        target = words(f"{recipe or ''} {view.goal}") - STOPWORDS
        wanted = ingredients_of(recipe) if recipe else []

        def score(command: str) -> float:
            """How much this command looks like what the recipe asks, less boredom."""
            value = float(len((words(command) - STOPWORDS) & target)) - REPEAT_PENALTY * tried.count(command)
            if recipe is None and command in COOKBOOK_COMMANDS:
                value += READ_BONUS
            if command in FINISH_COMMANDS:
                value += FINISH_BONUS
            if command.startswith("take ") and command[len("take "):] in wanted:
                value += TAKE_BONUS
            return value

        deliberate = [c for c in allowed if not c.startswith(SET_DOWN_VERBS)] or allowed
        best = max(score(c) for c in deliberate)
        return rng.choice([c for c in deliberate if score(c) == best])


def make_careless(*, seed: int, max_steps: int) -> BaseChatModel:
    """The careless cook with a seed and a step cap."""
    return CarelessCook(seed=seed, max_steps=max_steps)
