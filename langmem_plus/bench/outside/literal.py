"""``literal``: a literal reader with no game knowledge, exploring methodically and following notes to the letter.

It ranks valid commands: untried first, then by the words they share with the goal, the text the goal
pointed it to (the cookbook) and the latest observation, then moves to rooms not yet seen; ties by seed.
Memory's notes (``literal_reader``) come first: it never runs a command a note forbids when the note's
condition holds on the text seen, follows a "start with" plan while it has run nothing else, and runs a
recommended valid command whose condition holds. Guard answers ("Not run: ...") stay read for the rest of the game.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from langmem_plus.bench.outside._chat import OutsideChatModel
from langmem_plus.bench.outside._game import GameView, words
from langmem_plus.bench.outside.literal_reader import Seen, is_held, read_literally

GOAL_WEIGHT = 3.0
"""Weight of a word the goal mentions."""
GUIDE_WEIGHT = 2.0
"""Weight of a word in a text the goal pointed to (the answer to a command about a thing the goal names)."""
LATEST_WEIGHT = 1.0
"""Weight of a word the latest observation mentions."""
NEW_PLACE_BONUS = 2.0
"""Added to an untried command that names a direction: it may lead to a room not yet seen."""
RECENT_WINDOW = 3
"""A recommended command run within this many latest game answers is not run again on the note's word."""
DIRECTIONS = frozenset({"north", "south", "east", "west", "up", "down"})
"""Words of a command that goes somewhere (plain English, no game rule)."""
STOPWORDS = frozenset({"the", "a", "an", "and", "to", "of", "in", "on", "with", "your", "you", "is", "it", "that", "this", "there", "also", "see"})
"""Words too common to count as a mention."""


def seen_of(view: GameView) -> tuple[Seen, list[str]]:
    """What was seen (commands run, task text, game texts) and the blocks of memory text to read."""
    run: list[str] = []
    texts = [view.opening]
    guide: list[str] = []
    goal_words = words(view.goal) - STOPWORDS
    for exchange in view.exchanges:
        if is_held(exchange.answer):
            continue
        run.append(exchange.command)
        texts.append(exchange.answer)
        thing = words(" ".join(exchange.command.split()[1:])) - STOPWORDS
        if thing and thing <= goal_words:
            guide.append(exchange.answer)
    task = "\n".join([view.goal, *guide])
    blocks = [*view.system, *(e.answer for e in view.exchanges if is_held(e.answer))]  # every guard answer stays in view
    return Seen(run=run, task=task, texts=texts, latest=texts[-1]), blocks


class LiteralReader(OutsideChatModel):
    """Methodical exploration from the text alone; memory's notes obeyed as written."""

    @property
    def _llm_type(self) -> str:
        """LangChain's name for this model."""
        return "outside-literal"

    def choose(self, view: GameView) -> str:
        """A plan step or a recommendation memory gives, else the best untried, mentioned command; never a forbidden one."""
        seen, blocks = seen_of(view)
        notes = read_literally(blocks)
        allowed = [c for c in view.valid if not notes.forbids(c, seen)] or list(view.valid)
        plan = notes.plan()
        if plan and seen.run == plan[: len(seen.run)] and len(seen.run) < len(plan):
            step = plan[len(seen.run)]
            if step in allowed:
                return step
        recent = seen.run[-RECENT_WINDOW:]
        for command in notes.recommended(allowed, seen):
            if command not in recent:
                return command
        goal, latest = words(view.goal) - STOPWORDS, words(seen.latest) - STOPWORDS
        guide = words(seen.task) - STOPWORDS - goal
        rng = view.rng(self.seed)
        order = {c: rng.random() for c in allowed}

        def rank(command: str) -> tuple[int, float, float]:
            """Untried first, then how much the texts mention it, then the seeded tie-break."""
            said = words(command) - STOPWORDS
            mention = GOAL_WEIGHT * len(said & goal) + GUIDE_WEIGHT * len(said & guide) + LATEST_WEIGHT * len(said & latest)
            untried = command not in seen.run
            if untried and said & DIRECTIONS:
                mention += NEW_PLACE_BONUS
            return (int(untried), mention, order[command])

        return max(allowed, key=rank)


def make_literal(*, seed: int, max_steps: int) -> BaseChatModel:
    """The literal reader with a seed and a step cap."""
    return LiteralReader(seed=seed, max_steps=max_steps)
