"""Facts from what the memory already sees: verified lessons and text observations.

Two pure sources of (subject, relation, object) claims:

- ``claims_from_lesson``: a lesson whose fix was verified states facts about its tool:
  ``WRONG: filter -> CORRECT: KEEP`` for gridtool gives (gridtool, rejects, filter),
  (gridtool, accepts, KEEP) and (filter, corrected_to, KEEP), the patterns kept as
  case-sensitive ``token`` entities scoped to the tool. Two lessons with different fixes
  for the same wrong text (design.md §6 conflicts) then contradict on ``corrected_to``.
- ``facts_from_observation``: a **heuristic** reading of text-game observations with a
  small, general pattern set (no game's vocabulary): "The fridge contains milk." ->
  (fridge, contains, milk). It reads containers (``contains``), surfaces ("a counter
  that has a knife on it"), open/closed states (also "You open the X"), "X is in/on Y", "X is a Y", and the
  player's room ("You are in the kitchen", after which things "you see" are located in
  it). It misses anything phrased otherwise and can misread unusual sentences; facts
  learned from it carry ``observed`` evidence naming the observation, so a wrong one
  can be traced and retracted.

Example:
    >>> facts_from_observation("You open the fridge. The fridge contains a block of cheese, and a white onion.")
    [('fridge', 'has_state', 'open'), ('fridge', 'contains', 'block of cheese'), ('fridge', 'contains', 'white onion')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from langmem_plus.config import DEFAULT_CONFIG, MemoryConfig
from langmem_plus.records import Evidence, Lesson

Triple = tuple[str, str, str]
"""(subject, relation, object) as plain labels."""

PLAYER = "player"
"""Subject of the player's own location, "You are in the kitchen" -> (player, located_in, kitchen)."""

STATE_WORDS = ("open", "closed", "locked", "unlocked", "on", "off", "empty", "clean", "dirty")
"""Adjectives read as a state: "a fridge that is closed", "An open fridge"."""


@dataclass(frozen=True)
class Claim:
    """A fact to learn: labels, their node kinds, and the evidence behind it.

    Example:
        >>> Claim("fridge", "contains", "milk").relation
        'contains'
    """

    subject: str
    relation: str
    object: str
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)
    """Evidence for (or, with ``against``, against) the claim."""
    subject_kind: str = "thing"
    object_kind: str = "thing"
    scope: str = ""
    """Scope of ``token`` labels (the tool), so ``mean`` of one tool is not ``mean`` of another."""


# --------------------------------------------------------------------------- lessons


def lesson_evidence(
    lesson: Lesson, *, promoted: bool, utility: float | None, run_id: str | None, config: MemoryConfig = DEFAULT_CONFIG
) -> Evidence | None:
    """Evidence a lesson's fix gives in a run: ``observed`` when promoted, ``inferred`` when it helped, else None.

    A promotion rests on measured utility over several runs (design.md §6), so it counts as an
    observation; one run's positive utility is an inference whose confidence is that utility.
    """
    if promoted:
        return Evidence(kind="observed", source=f"lesson:{lesson.id}", detail=lesson.rule_text, level=1.0, run_id=run_id)
    if utility is not None and utility > config.semantic.semantic_lesson_min_utility:
        return Evidence(
            kind="inferred", source=f"lesson:{lesson.id}", detail=lesson.rule_text,
            level=min(1.0, max(0.0, utility)), run_id=run_id,
        )
    return None


def claims_from_lesson(lesson: Lesson, evidence: Evidence) -> list[Claim]:
    """The facts a verified lesson states about its tool (or domain); none without a tool or wrong text."""
    tool = lesson.scope.tool or lesson.scope.domain
    wrong = (lesson.wrong or "").strip()
    if not tool or not wrong:
        return []
    ev = (evidence,)
    claims = [Claim(tool, "rejects", wrong, ev, subject_kind="tool", object_kind="token", scope=tool)]
    correct = (lesson.correct or "").strip()
    if correct:
        claims.append(Claim(tool, "accepts", correct, ev, subject_kind="tool", object_kind="token", scope=tool))
        claims.append(Claim(wrong, "corrected_to", correct, ev, subject_kind="token", object_kind="token", scope=tool))
    return claims


# --------------------------------------------------------------------------- observations

_NOUN = r"[A-Za-z][A-Za-z' -]*?"
_SENTENCE = re.compile(r"[^.!?\n]+")
_ROOM = re.compile(rf"^you are (?:now )?in (?:the |a |an )?(?P<room>{_NOUN})$", re.IGNORECASE)
_CONTAINS = re.compile(rf"^(?:the |an? )?(?P<x>{_NOUN}),? (?:that |which )?contains (?P<items>.+)$", re.IGNORECASE)
_HAS_ON = re.compile(rf"(?:the |an? )?(?P<x>{_NOUN}),? (?:that |which )has (?P<items>.+?) on it", re.IGNORECASE)
_THAT_IS = re.compile(rf"(?:the |an? )(?P<x>{_NOUN}),? (?:that|which) is (?P<state>{'|'.join(STATE_WORDS)})\b", re.IGNORECASE)
_ADJ = re.compile(rf"\b(?:an?|the) (?P<state>{'|'.join(STATE_WORDS)}) (?P<x>{_NOUN})(?=,|$| that| which)", re.IGNORECASE)
_IS_STATE = re.compile(rf"^(?:the )?(?P<x>{_NOUN}) is (?:now )?(?P<state>{'|'.join(STATE_WORDS)})$", re.IGNORECASE)
_IS_IN = re.compile(rf"^(?:the |an? )?(?P<x>{_NOUN}) (?:is|are) (?P<prep>in|on|inside|under) (?:the |an? )?(?P<y>{_NOUN})$", re.IGNORECASE)
_IS_A = re.compile(rf"^(?:the )?(?P<x>{_NOUN}) is (?:an?|a kind of) (?P<y>{_NOUN})$", re.IGNORECASE)
_SEE = re.compile(
    rf"(?:you (?:also )?see|there is(?: also)?) (?:an? |the |some )(?P<x>{_NOUN})(?=,|$| that| which)", re.IGNORECASE
)
_CLAUSE_WORDS = {"you", "see", "that", "which", "there"}
_ACT = re.compile(rf"^you (?P<verb>open|close|unlock|lock|turn on|turn off|switch on|switch off) (?:the |an? )?(?P<x>{_NOUN})$", re.IGNORECASE)
_ACT_STATE = {"open": "open", "close": "closed", "unlock": "unlocked", "lock": "locked", "turn on": "on",
              "turn off": "off", "switch on": "on", "switch off": "off"}
_PREP_RELATION = {"in": "located_in", "inside": "located_in", "on": "located_on", "under": "located_under"}
_NOTHING = {"nothing", "anything", "no items", "nothing else"}


def _clean(label: str) -> str:
    label = re.sub(r"^(?:and |the |an? |some )+", "", label.strip(" ,"), flags=re.IGNORECASE)
    return label.strip(" ,").casefold()


def _items(text: str) -> list[str]:
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", text)
    return [item for item in (_clean(p) for p in parts) if item and item not in _NOTHING]


def _sentence_facts(sentence: str, room: str | None) -> list[Triple]:
    out: list[Triple] = []
    if m := _CONTAINS.search(sentence):
        container = _clean(m["x"].split(" see ")[-1])
        if state := _ADJ.search(f"a {m['x']}"):
            container = _clean(state["x"])
        out += [(container, "contains", item) for item in _items(m["items"])]
    if m := _HAS_ON.search(sentence):
        surface = _clean(m["x"].split(" see ")[-1])
        out += [(item, "located_on", surface) for item in _items(m["items"])]
    for pattern in (_THAT_IS, _ADJ):
        for m in pattern.finditer(sentence):
            out.append((_clean(m["x"].split(" see ")[-1]), "has_state", m["state"].casefold()))
    if _CLAUSE_WORDS.isdisjoint(sentence.casefold().split(" is ")[0].split()):  # "X is ..." with a plain subject
        if m := _IS_STATE.match(sentence):
            out.append((_clean(m["x"]), "has_state", m["state"].casefold()))
        elif m := _IS_IN.match(sentence):
            out.append((_clean(m["x"]), _PREP_RELATION[m["prep"].casefold()], _clean(m["y"])))
        elif m := _IS_A.match(sentence):
            out.append((_clean(m["x"]), "is_a", _clean(m["y"])))
    if room:
        for m in _SEE.finditer(sentence):
            thing = _clean(m["x"])
            if thing.split(" ")[0] not in STATE_WORDS:
                out.append((thing, "located_in", room))
    return out


def facts_from_observation(text: str) -> list[Triple]:
    """Heuristic (subject, relation, object) facts stated by a text observation, in order, no repeats.

    See the module docstring for the patterns and their limits.

    Example:
        >>> facts_from_observation("You are in the kitchen. You also see a fridge that is closed.")
        [('player', 'located_in', 'kitchen'), ('fridge', 'has_state', 'closed'), ('fridge', 'located_in', 'kitchen')]
    """
    out: list[Triple] = []
    room: str | None = None
    for raw in _SENTENCE.findall(text):
        sentence = raw.strip()
        if not sentence:
            continue
        if m := _ROOM.match(sentence):
            room = _clean(m["room"])
            out.append((PLAYER, "located_in", room))
            continue
        if m := _ACT.match(sentence):  # "You open the fridge." states the fridge's new state
            out.append((_clean(m["x"]), "has_state", _ACT_STATE[m["verb"].casefold()]))
            continue
        out += _sentence_facts(sentence, room)
    seen: set[Triple] = set()
    return [t for t in out if t[0] and t[2] and t[0] != t[2] and not (t in seen or seen.add(t))]  # type: ignore[func-returns-value]


__all__ = [
    "PLAYER",
    "STATE_WORDS",
    "Claim",
    "Triple",
    "claims_from_lesson",
    "facts_from_observation",
    "lesson_evidence",
]
