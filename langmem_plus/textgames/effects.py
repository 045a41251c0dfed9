"""What an action did, in the game's words: an effect learned from an observation.

A text game often says what a command did in other words than the command's: ``cook green
apple in stove`` answers ``You fry the green apple with the stove.`` When a task's text asks for
that effect (``fry the pork chop``), the command is its answer. So a step whose observation
names a phrase of the action right after a verb that is not the action's own and names no
command the game offers teaches a recommendation of the action with that phrase as its
placeholder, where the task says that line (``cook <X> in stove`` when ``fry <X>``): from any
step, on any thing, the recipe's or not, fatal or not (a step fatal because the task asked for
something else still shows what the command does). An echo of a command (``You take the
apple.``) says nothing the command did not. Nothing here knows a game's words.

Example:
    >>> effect_of("cook green apple in stove", "You fry the green apple with the stove.", {"cook", "take"})
    ('cook <X> in stove', 'fry <X>')
    >>> effect_of("take green apple", "You take the green apple.", {"cook", "take"}) is None
    True
    >>> effect_of("close door to west", "You close the plain door to the pantry.", {"close"}) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Collection

from langmem_plus.learning.textmatch import norm_words

_SENTENCE = re.compile(r"[.!?;\n]+")
EFFECT_VERB_POSITION = 1
"""The latest word of a sentence (counted from 0, articles skipped) that may be the verb: a sentence says what was
done at its start, or right after its subject (``You fry the green apple``); a word later on, right before the
phrase, is a modifier (``You close the plain door``)."""
_NOT_VERBS = frozenset({"you", "it", "is", "are", "was", "be", "and", "or", "of", "in", "on", "to", "at", "with", "from",
                        "into", "for", "by", "your", "this", "that", "there", "here", "not", "no"})
"""Words that precede a phrase without saying what was done to it."""


def effect_of(action: str, observation: str, commands: Collection[str], slot: str = "X") -> tuple[str, str] | None:
    """``(pattern, line)``: the action with the phrase its observation says a verb of as ``<slot>``, and the line
    ``<verb> <slot>``; None when no sentence of the observation does.

    The phrase is the longest run of the action's words after its verb that a sentence of the
    observation has right after a verb (articles skipped): a word of at least three letters, at most
    the sentence's second (``EFFECT_VERB_POSITION``), that is neither a word of the action, a command
    (``commands``) nor a function word. A phrase of digits only is no thing.
    """
    words = norm_words(action)
    if len(words) < 2:
        return None
    barred = {*commands, *words}  # a word of the action is part of its phrase, not what was done to it
    sentences = [norm_words(s) for s in _SENTENCE.split(observation)]
    for n in range(len(words) - 1, 0, -1):
        for start in range(1, len(words) - n + 1):
            phrase = words[start:start + n]
            if all(w.isdigit() or w in _NOT_VERBS for w in phrase):
                continue
            for said in sentences:
                for i in range(1, min(EFFECT_VERB_POSITION + 2, len(said) - n + 1)):
                    verb = said[i - 1]
                    if said[i:i + n] == phrase and len(verb) > 2 and verb.isalpha() and verb not in barred \
                            and verb not in _NOT_VERBS:
                        pattern = " ".join([*words[:start], f"<{slot}>", *words[start + n:]])
                        return pattern, f"{verb} <{slot}>"
    return None


__all__ = ["effect_of"]
