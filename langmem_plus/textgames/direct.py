"""Directed commands: what memory knows about commands a task's text directs, and how that knowledge revises text rules.

A line of the task's text that starts with a verb the game also offers as a command (``chop the red apple``) is a
directive; such a command (a directive verb) is right where it is directed and, as far as one fatal run shows,
fatal where it is not. From that: the undirected avoidance (``undirected``: "unless the task says so"), the
revision of stored rules with what is known now (``revise``), and the kin that share the evidence (``extend_to_kin``,
``widened_kin``, ``instrument_kin``). Nothing here knows a game: verbs, lines and patterns all come from runs and
stored rules. ``docs/text-games.md`` ("Directed commands") gives each and why.

Example:
    >>> undirected("chop <X>", {"X": "red apple"}, ["fry red apple"], {"chop"})
    ['!chop <X>']
    >>> undirected("chop <X>", {"X": "red apple"}, ["chop red apple"], {"chop"}) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence

from langmem_plus.learning.textmatch import SLOT, UNNAMED, bind, command_and_object, is_negative, negated_line, says_line
from langmem_plus.records import Lesson, Step


def pattern_verb(lesson: Lesson) -> str:
    """First word of a text rule's action pattern ("" when it has none or starts with a placeholder)."""
    words = (lesson.wrong or lesson.correct or "").split()
    return words[0] if words and not SLOT.fullmatch(words[0]) else ""


def sibling_key(lesson: Lesson) -> tuple[str, tuple[str, ...]]:
    """What a text rule's pattern shares with its siblings: its verb and its placeholders, in order (``cook <X> in oven``
    and ``cook <X> in stove`` are siblings)."""
    return pattern_verb(lesson), tuple(SLOT.findall(lesson.wrong or lesson.correct or ""))


def is_directed(lesson: Lesson) -> bool:
    """Whether the rule recommends its command where the task says that command (``slice <X>`` when ``slice <X>``)."""
    return bool(lesson.correct) and lesson.correct in (lesson.applies_when or ())


def known_verbs(rules: Iterable[Lesson]) -> set[str]:
    """Verbs of the tool's stored text rules' patterns: commands memory has seen taken."""
    return {v for v in map(pattern_verb, rules) if v}


def condition_verbs(rules: Iterable[Lesson]) -> set[str]:
    """First words of the tool's stored rules' condition lines (negated ones too, bare placeholders not): verbs
    that task texts have been seen to start a line with."""
    out: set[str] = set()
    for lesson in rules:
        for cond in lesson.applies_when or ():
            line = negated_line(cond) or ("" if is_negative(cond) else cond)
            words = line.split()
            if words and not SLOT.fullmatch(words[0]):
                out.add(words[0])
    return out


def undirected(pattern: str, bindings: Mapping[str, str], lines: Sequence[str], directives: Collection[str]) -> list[str] | None:
    """The condition of a fatal action of a directive verb that the task's text did not direct (module docstring),
    or None when its verb is no directive verb, it has no placeholder, or a line says it."""
    words = pattern.split()
    if not words or words[0] not in directives or not bindings:
        return None
    said = bind(pattern, dict(bindings))
    if said is None or says_line(said, lines):
        return None
    return [f"{UNNAMED}{pattern}"]


def revise(rules: Iterable[Lesson], directives: Collection[str], command_verbs: Collection[str],
           reduce: Callable[[str, list[str]], list[str]], rid: Callable[..., str]) -> list[tuple[Lesson, str, list[str]]]:
    """Stored avoidances to rewrite with what memory knows now: ``(old rule, new id, new conditions)``.

    ``reduce(pattern, conditions)`` is ``relevant_conditions`` with the current verbs. An avoidance
    of a directive verb with only positive conditions, none of them its own directive, becomes
    undirected; any other avoidance with several positive lines, none of them its own directive,
    keeps those ``reduce`` keeps, when that is fewer. Placeholder-free rules, negative conditions,
    rules fatal where directed (a line opening with their own verb) and recommendations stay.
    """
    out: list[tuple[Lesson, str, list[str]]] = []
    for lesson in rules:
        pattern = lesson.wrong or ""
        conds = list(lesson.applies_when or ())
        if not pattern or not SLOT.search(pattern) or any(is_negative(c) for c in conds) or not lesson.retrievable:
            continue
        verb = pattern.split()[0]
        directed = any(c.split()[:1] == [verb] for c in conds)  # fatal although the task directed it: kept as learned
        if verb in directives and verb in command_verbs and not directed:
            new = [f"{UNNAMED}{pattern}"]
        elif len(conds) > 1 and not directed:
            new = sorted(reduce(pattern, conds))
            if not new or len(new) >= len(conds):
                continue
        else:
            continue
        out.append((lesson, rid("avoid", pattern, *new), new))
    return out


def extend_to_kin(has: Callable[[str], Lesson | None], directives: Collection[str], about_things: Collection[str],
                  rid: Callable[..., str]) -> list[tuple[str, str, Lesson]]:
    """Undirected avoidances for every directive verb that directs something done to a thing, once one of them is
    avoided where undirected or recommended where directed: ``(new id, pattern, source rule)`` for each kin not yet
    avoided (module docstring); the source is that avoidance, else that recommendation.

    A kin is a directive verb memory recommends where directed (``<v> <X>`` when the task says
    ``<v> <X>``) or has seen start a condition line, which is always about a thing
    (``about_things``, ``condition_verbs``); a directive about no thing (``prepare meal``) has none.
    """
    def undirected_rule(v: str) -> Lesson | None:
        return has(rid("avoid", f"{v} <X>", f"{UNNAMED}{v} <X>"))

    source = next((a for a in map(undirected_rule, sorted(directives)) if a is not None), None)
    if source is None:  # no undirected one lost a game yet: one recommended where directed is the evidence
        source = next((d for d in map(lambda v: directed_rule(has, rid, v), sorted(directives)) if d is not None), None)
    if source is None:
        return []
    kin = sorted(v for v in directives if (v in about_things or has(rid("prefer", f"{v} <X>")) is not None)
                 and undirected_rule(v) is None)
    return [(rid("avoid", f"{v} <X>", f"{UNNAMED}{v} <X>"), f"{v} <X>", source) for v in kin]


def first_offered(steps: Sequence[Step], first_valid: Sequence[str]) -> Iterator[tuple[Step, set[str]]]:
    """Each step with the actions it first offered (valid after it, not before it). The first step is read against
    ``first_valid``; with none known, it only sets what was offered. A step that offered no actions is read as
    leaving them as they were."""
    before: set[str] | None = set(first_valid) or None  # unknown before the first step: nothing is new there
    for step in steps:
        after = {str(a) for a in step.info.get("valid_actions") or []}
        if before is None:
            before = after or None
            continue
        yield step, after - before
        before = after or before


def offered_together(steps: Sequence[Step], first_valid: Sequence[str]) -> list[dict[str, frozenset[str]]]:
    """Per step, the commands it first offered (``first_offered``), verb -> the things it offered them on, other than
    the step's own object (taking a knife offers ``slice``, ``chop`` and ``dice`` on every ingredient held); a step
    that offered none adds nothing."""
    out: list[dict[str, frozenset[str]]] = []
    for step, new in first_offered(steps, first_valid):
        own = " ".join(step.action.lower().split()[1:])
        things: dict[str, set[str]] = {}
        for action in new:
            words = action.lower().split()
            if len(words) >= 2 and " ".join(words[1:]) != own:
                things.setdefault(words[0], set()).add(" ".join(words[1:]))
        if things:
            out.append({verb: frozenset(objects) for verb, objects in things.items()})
    return out


def offered_on_own(steps: Sequence[Step], first_valid: Sequence[str], seen: dict[str, set[str]]) -> list[dict[str, frozenset[str]]]:
    """Per step, the commands it first offered on its own object (``first_offered``) that no earlier step of the same
    command first offered on its own: taking an ingredient while holding a knife offers ``slice``, ``chop`` and
    ``dice`` on it, where an earlier ``take`` offered ``eat`` or nothing. ``offered_together`` leaves the own object
    out, since holding a thing offers commands on it; this compares like with like, so it reads the knife's cuts when
    the knife was taken before any ingredient. A step counts only after an earlier step of its command (``seen``,
    command -> the commands its steps first offered on their own objects, updated in place) gave the comparison.

    Example:
        >>> def took(thing, *offered): return Step(index=0, action=f"take {thing}", info={"valid_actions": list(offered)})
        >>> steps = [took("knife", "look"), took("book", "look"), took("apple", "look", "eat apple", "slice apple", "dice apple")]
        >>> offered_on_own(steps, ["look"], {})
        [{'dice': frozenset({'apple'}), 'eat': frozenset({'apple'}), 'slice': frozenset({'apple'})}]
    """
    out: list[dict[str, frozenset[str]]] = []
    for step, new in first_offered(steps, first_valid):
        command, own = command_and_object(step.action)
        if not own:
            continue
        mine = {verb for verb, thing in map(command_and_object, new) if thing == own}
        if command in seen and len(mine - seen[command]) >= 2:
            out.append({verb: frozenset({own}) for verb in sorted(mine - seen[command])})
        seen.setdefault(command, set()).update(mine)
    return out


def kin_of(groups: Iterable[Mapping[str, frozenset[str]]], directives: Collection[str]) -> set[str]:
    """Commands offered together with a directive verb (``offered_together``), on the same things, other than the
    directive verbs themselves: its kin."""
    out: set[str] = set()
    for things in groups:
        for verb in set(directives) & things.keys():
            out |= {w for w, objects in things.items() if w != verb and objects == things[verb]}
    return out - set(directives)


def instrument_kin(steps: Sequence[Step], first_valid: Sequence[str], directives: Collection[str]) -> set[str]:
    """Commands a step first offered together with a directive verb, on the same things, other than the step's own
    object (``offered_together``, ``kin_of``): kin of that directive, directive verbs too, though no task text has
    named them yet.

    Example:
        >>> took = Step(index=0, action="take knife", info={"valid_actions": [
        ...     "slice apple", "dice apple", "eat apple", "drop knife", "eat knife", "look"]})
        >>> sorted(instrument_kin([took], ["eat apple", "look"], {"slice"}))
        ['dice']
    """
    return kin_of(offered_together(steps, first_valid), directives)


def fatal_where_undirected(rules: Iterable[Lesson]) -> bool:
    """Whether memory knows a command that is fatal where the task's text does not direct it: a conditional command
    (``conditional_command``: ``cook <X> in stove`` where the task says ``fry <X>``) avoided in a situation without
    its directive line (widened to every situation, or kept to another one: ``roast <X>``)."""
    rules = list(rules)
    directed: dict[str, list[set[str]]] = {}
    for lesson in rules:
        pattern = conditional_command(lesson)
        if pattern:
            directed.setdefault(pattern, []).append({c for c in lesson.applies_when or () if not is_negative(c)})
    return any(lesson.wrong in directed and lesson.retrievable
               and any(not lines & set(lesson.applies_when or ()) for lines in directed[lesson.wrong])
               for lesson in rules)


def directed_rule(has: Callable[[str], Lesson | None], rid: Callable[..., str], verb: str) -> Lesson | None:
    """Memory's recommendation of ``<verb> <X>`` where the task says ``<verb> <X>`` (``is_directed``), if it has one."""
    known = has(rid("prefer", f"{verb} <X>"))
    return known if known is not None and is_directed(known) else None


def directed_kin(has: Callable[[str], Lesson | None], directives: Collection[str], about_things: Collection[str],
                 rid: Callable[..., str]) -> list[tuple[str, str, Lesson]]:
    """Recommendations ``<v> <X>`` where the task says ``<v> <X>`` for every directive verb about things, once memory
    recommends one of them so: ``(new id, pattern, source rule)`` for each kin not yet recommended.

    The other half of ``extend_to_kin``: a command of that kind is right where the task directs
    it, so memory need not have seen each one score (a verb the executor would otherwise leave,
    since nothing else draws it) before it follows the directive.
    """
    source = next((d for d in map(lambda v: directed_rule(has, rid, v), sorted(directives)) if d is not None), None)
    if source is None:
        return []
    kin = sorted(v for v in directives if v in about_things and has(rid("prefer", f"{v} <X>")) is None)
    return [(rid("prefer", f"{v} <X>"), f"{v} <X>", source) for v in kin]


def conditional_command(lesson: Lesson) -> str:
    """The pattern of a recommendation right only where the task says a line about its thing (a positive condition
    with a word besides placeholders: ``cook <X> in stove`` when ``fry <X>``), else ""."""
    pattern = lesson.correct or ""
    if lesson.wrong or not SLOT.search(pattern) or not lesson.retrievable:
        return ""
    lines = [c for c in lesson.applies_when or () if not is_negative(c)]
    return pattern if any(SLOT.sub("", c).strip() for c in lines) else ""


def widened_kin(rules: Iterable[Lesson], has: Callable[[str], Lesson | None],
                rid: Callable[..., str]) -> list[tuple[str, str, Lesson]]:
    """Avoidances in every situation (the widened form) for each conditional command whose sibling already has one
    (module docstring): ``(new id, pattern, source rule)``, the source being the sibling's widened avoidance.

    Siblings share the verb and the placeholders, in order (``cook <X> in oven``, ``cook <X> in stove``). A
    pattern whose widened avoidance exists in any state (a suppressed one too) is left as memory has it.
    """
    families: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    for lesson in rules:
        pattern = conditional_command(lesson)
        if pattern and pattern_verb(lesson):
            families.setdefault(sibling_key(lesson), set()).add(pattern)
    out: list[tuple[str, str, Lesson]] = []
    for _, patterns in sorted(families.items()):
        widened = [(p, has(rid("avoid", p))) for p in sorted(patterns)]
        source = next((w for _, w in widened if w is not None and w.retrievable and not w.applies_when), None)
        if source is not None:
            out.extend((rid("avoid", p), p, source) for p, w in widened if w is None)
    return out


__all__ = ["conditional_command", "condition_verbs", "directed_kin", "directed_rule", "extend_to_kin", "fatal_where_undirected",
           "first_offered", "instrument_kin", "is_directed", "kin_of", "known_verbs", "offered_on_own", "offered_together", "pattern_verb", "revise", "sibling_key", "undirected", "widened_kin"]
