"""A seeded stream of questions about a tool world, in a learning half and a held-out half.

Each question comes from a template, with literals drawn from the world's catalog; the
held-out half draws its tables, files, lists, branches, column numbers and small numbers
from pools disjoint from the learning half's, with the same habits. `expected` is the output
of the correct call, run on the real world when the questions are built.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from langmem_plus.bench.toolworld.fixtures import Catalog, JsonList, Table, TextFile
from langmem_plus.bench.toolworld.habits import HABITS
from langmem_plus.bench.toolworld.templates import TEMPLATES, Template
from langmem_plus.bench.toolworld.world import ToolWorld

__all__ = ["PHASES", "TOOLS", "Pools", "Question", "questions", "split_pools"]

PHASES = ("learn", "heldout")
TOOLS = ("run_sql", "jq", "git", "awk")
_CONTROL_SHARE = 4 / 22


@dataclass(frozen=True)
class Question:
    """One question and the truth about it.

    Attributes:
        text: The question, as a user would ask it.
        tool: The tool that answers it.
        habit: The habit the question invites, or None for a control question.
        expected: The correct call's real output (None when built from a catalog alone).
        phase: "learn" (first half of the stream) or "heldout" (second half).
        args: The correct call's arguments.
        template: The id of the template the question comes from.
    """

    text: str
    tool: str
    habit: str | None
    expected: str | None
    phase: str
    args: dict[str, str] = field(hash=False)
    template: str = ""


@dataclass(frozen=True)
class Pools:
    """The literals one half may use."""

    tables: tuple[Table, ...]
    lists: tuple[JsonList, ...]
    texts: tuple[TextFile, ...]
    branches: tuple[str, ...]
    numbers: tuple[int, ...]
    letter_cols: tuple[int, ...]
    number_cols: tuple[int, ...]
    digit_cols: tuple[int, ...]


def _halves(items: Sequence[object], rng: random.Random) -> tuple[list[int], list[int]]:
    order = list(range(len(items)))
    rng.shuffle(order)
    cut = (len(order) + 1) // 2
    return sorted(order[:cut]), sorted(order[cut:])


def split_pools(catalog: Catalog, seed: int) -> tuple[Pools, Pools]:
    """Split the catalog's literals into a learning pool and a disjoint held-out pool."""
    rng = random.Random(f"toolworld-pools-{seed}")
    t_l, t_h = _halves(catalog.tables, rng)
    files = catalog.json_files
    f_l, f_h = _halves(files, rng)
    x_l, x_h = _halves(catalog.texts, rng)
    branches = tuple(b.name for b in catalog.branches)
    b_l, b_h = _halves(branches, rng)
    numbers = (1, 2, 3, 4, 5, 6)
    n_l, n_h = _halves(numbers, rng)
    letters = [1, 2]
    nums = [3, 4]
    rng.shuffle(letters)
    rng.shuffle(nums)
    five_learn = rng.random() < 0.5

    def pools(ti: list[int], fi: list[int], xi: list[int], bi: list[int], ni: list[int],
              side: int, five: bool) -> Pools:
        chosen = {files[i] for i in fi}
        return Pools(
            tables=tuple(catalog.tables[i] for i in ti),
            lists=tuple(jl for jl in catalog.lists if jl.file in chosen),
            texts=tuple(catalog.texts[i] for i in xi),
            branches=tuple(branches[i] for i in bi),
            numbers=tuple(numbers[i] for i in ni),
            letter_cols=(letters[side],),
            number_cols=(nums[side],),
            digit_cols=(nums[side], 5) if five else (nums[side],),
        )

    return (pools(t_l, f_l, x_l, b_l, n_l, 0, five_learn),
            pools(t_h, f_h, x_h, b_h, n_h, 1, not five_learn))


def _median(values: Sequence[int]) -> int:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def _sql_literals(t: Table, pools: Pools, rng: random.Random) -> dict[str, str]:
    labels = [row[1] for row in t.rows]
    texts = [row[2] for row in t.rows]
    lengths = sorted(len(lab) for lab in labels)
    cut = _median(lengths)
    if cut >= lengths[-1]:
        cut = lengths[-1] - 1
    word = rng.choice(texts)
    start = rng.randrange(max(1, len(word) - 1))
    return {
        "table": t.name, "label": t.label, "text": t.text, "num": rng.choice(t.nums),
        "n": str(rng.choice([k for k in pools.numbers if k >= 2])),
        "prefix": rng.choice(labels)[0].lower(),
        "infix": word[start:start + 2].upper(),
        "len": str(cut),
    }


def _jq_literals(jl: JsonList, pools: Pools, rng: random.Random) -> dict[str, str]:
    k = rng.randrange(2)
    values = [item[1] if k == 0 else item[2] for item in jl.items]
    return {
        "file": jl.file, "key": jl.key, "label": jl.label, "num": jl.nums[k],
        "field": rng.choice((jl.label, *jl.nums)),
        "i": str(rng.choice([x for x in pools.numbers if x < len(jl.items)])),
        "n": str(rng.choice([x for x in pools.numbers if x >= 2])),
        "above": str(_median(values)),
    }


def _git_literals(pools: Pools, rng: random.Random) -> dict[str, str]:
    return {"branch": rng.choice(pools.branches),
            "n": str(rng.choice([k for k in pools.numbers if k >= 2]))}


def _awk_literals(tf: TextFile, pools: Pools, rng: random.Random) -> dict[str, str]:
    col = rng.choice(pools.letter_cols)
    letters = sorted({ch for row in tf.rows for ch in str(row[col - 1]) if ch.isalpha()})
    a = rng.choice(letters)
    ncol = rng.choice(pools.number_cols)
    return {
        "file": tf.name, "col": str(col), "a": a, "b": rng.choice((a.upper(), "_", "*")),
        "dcol": str(rng.choice(pools.digit_cols)), "ncol": str(ncol),
        "above": str(_median([int(row[ncol - 1]) for row in tf.rows])),
    }


def _literals(tool: str, pools: Pools, rng: random.Random) -> dict[str, str]:
    if tool == "run_sql":
        return _sql_literals(rng.choice(pools.tables), pools, rng)
    if tool == "jq":
        return _jq_literals(rng.choice(pools.lists), pools, rng)
    if tool == "git":
        return _git_literals(pools, rng)
    return _awk_literals(rng.choice(pools.texts), pools, rng)


def _plan(size: int, rng: random.Random) -> list[tuple[str, str | None]]:
    """(tool, habit) for each question of a half: habits round-robin, then controls."""
    controls = round(size * _CONTROL_SHARE) if size >= 4 else 0
    habit_names = list(HABITS)
    rng.shuffle(habit_names)
    tools = list(TOOLS)
    rng.shuffle(tools)
    plan: list[tuple[str, str | None]] = [
        (HABITS[habit_names[k % len(habit_names)]].tool, habit_names[k % len(habit_names)])
        for k in range(size - controls)
    ]
    plan += [(tools[k % len(tools)], None) for k in range(controls)]
    return plan


def _make_half(source: ToolWorld | Catalog, phase: str, size: int, pools: Pools,
               rng: random.Random, avoid: dict[str, set[str]]) -> list[Question]:
    """One half; literals in `avoid` (slot -> values used by the other half) are avoided
    where a fresh draw allows, and the literals this half uses are added to `avoid`."""
    world = source if isinstance(source, ToolWorld) else None
    turn: dict[tuple[str, str | None], int] = {}
    out: list[Question] = []
    texts: set[str] = set()
    used: dict[str, set[str]] = {}
    for tool, habit in _plan(size, rng):
        group: list[Template] = [t for t in TEMPLATES if t.tool == tool and t.habit == habit]
        start = turn.setdefault((tool, habit), rng.randrange(len(group)))
        turn[(tool, habit)] += 1
        template = group[start % len(group)]
        chosen: tuple[dict[str, str], str] | None = None
        for _ in range(30):
            literals = _literals(tool, pools, rng)
            text = template.render(literals)
            if text in texts:
                continue
            if all(literals[s] not in avoid.get(s, ()) for s in template.slots):
                chosen = (literals, text)
                break
            chosen = chosen or (literals, text)
        literals, text = chosen or (literals, text)
        texts.add(text)
        for slot in template.slots:
            used.setdefault(slot, set()).add(literals[slot])
        args = template.call(literals)
        expected = world.call(tool, args) if world is not None else None
        out.append(Question(text, tool, habit, expected, phase, args, template.id))
    rng.shuffle(out)
    for slot, values in used.items():
        avoid.setdefault(slot, set()).update(values)
    return out


def questions(world_or_catalog: ToolWorld | Catalog, n: int = 44, seed: int = 0) -> list[Question]:
    """`n` questions about the world: the first half "learn", the second half "heldout".

    Args:
        world_or_catalog: The world (its correct calls are run to fill `expected`), or only
            its catalog (nothing runs; `expected` is None).
        n: Number of questions.
        seed: Draws the pools split, the literals and the order within each half.
    """
    source = world_or_catalog
    catalog = source.catalog if isinstance(source, ToolWorld) else source
    learn_pools, heldout_pools = split_pools(catalog, seed)
    rng = random.Random(f"toolworld-questions-{seed}")
    learn_size = n // 2
    seen: dict[str, set[str]] = {}
    learn = _make_half(source, "learn", learn_size, learn_pools, rng, seen)
    return learn + _make_half(source, "heldout", n - learn_size, heldout_pools, rng, seen)
