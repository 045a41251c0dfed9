"""The content of a tool world, drawn from a seed: tables, JSON lists, text files, git history.

This module only decides *what* the world holds (plain data, no files); `build.py` writes it
to disk and `world.py` runs the real programs on it. Questions read the same catalog to pick
their literals, so every literal a question names exists in the world.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = [
    "Branch",
    "Catalog",
    "Commit",
    "JsonList",
    "Table",
    "TextFile",
    "make_catalog",
]


@dataclass(frozen=True)
class Table:
    """One SQL table: `id`, a label column, a text column, two numeric columns.

    Every table has the same shape so that every SQL question template fits every table;
    the column names differ from table to table so that literals do not repeat across tables.
    """

    name: str
    label: str
    text: str
    nums: tuple[str, str]
    rows: tuple[tuple[int, str, str, int, int], ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """Column names in table order."""
        return ("id", self.label, self.text, *self.nums)


@dataclass(frozen=True)
class JsonList:
    """One list of objects under `key` in the JSON file `file`: a string field, two numbers."""

    file: str
    key: str
    label: str
    nums: tuple[str, str]
    items: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class TextFile:
    """A whitespace-separated file for awk: word, word, integer, integer, alphanumeric code."""

    name: str
    rows: tuple[tuple[str, str, int, int, str], ...]


@dataclass(frozen=True)
class Commit:
    """One commit: its subject and the files it writes (path -> full content)."""

    subject: str
    files: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Branch:
    """A branch forked from `main` after commit `base` (an index into the main history)."""

    name: str
    base: int
    commits: tuple[Commit, ...]

    @property
    def last_files(self) -> tuple[str, ...]:
        """Paths written by the branch's latest commit, sorted."""
        return tuple(sorted(path for path, _ in self.commits[-1].files))


@dataclass(frozen=True)
class Catalog:
    """Everything a tool world holds, as data."""

    seed: int
    tables: tuple[Table, ...]
    lists: tuple[JsonList, ...]
    texts: tuple[TextFile, ...]
    main: tuple[Commit, ...]
    branches: tuple[Branch, ...]
    default_branch: str = "main"

    @property
    def json_files(self) -> tuple[str, ...]:
        """JSON file names, in catalog order, without repeats."""
        return tuple(dict.fromkeys(jl.file for jl in self.lists))

    @property
    def text_files(self) -> tuple[str, ...]:
        """Text file names for awk."""
        return tuple(tf.name for tf in self.texts)


_Num = tuple[str, int, int]  # column or field name, low, high
_TableSpec = tuple[str, str, tuple[str, ...], str, tuple[str, ...], _Num, _Num]
_ListSpec = tuple[str, str, str, tuple[str, ...], _Num, _Num]

# table, label column, label pool, text column, text pool, two numeric columns
_TABLES: tuple[_TableSpec, ...] = (
    ("students", "student",
     ("Ada", "Bruno", "Chen", "Dalia", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jade"),
     "house", ("red", "blue", "green"), ("age", 17, 25), ("score", 40, 100)),
    ("orders", "customer",
     ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Wonka", "Tyrell"),
     "status", ("open", "paid", "shipped"), ("quantity", 1, 20), ("total", 10, 500)),
    ("readings", "sensor",
     ("Alder", "Birch", "Cedar", "Maple", "Rowan", "Spruce", "Willow", "Hazel"),
     "site", ("roof", "cellar", "yard"), ("celsius", -5, 35), ("humidity", 20, 95)),
    ("products", "title",
     ("Lamp", "Kettle", "Blender", "Toaster", "Mixer", "Heater", "Fan", "Router"),
     "category", ("kitchen", "office", "garden"), ("price", 5, 200), ("stock", 0, 50)),
    ("employees", "employee",
     ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Silva", "Kowalski", "Haddad"),
     "department", ("sales", "ops", "legal", "it"), ("salary", 30000, 90000), ("tenure", 1, 20)),
    ("cities", "city",
     ("Lisbon", "Oslo", "Nairobi", "Quito", "Hanoi", "Perth", "Bergen", "Dakar"),
     "country", ("north", "south", "east"), ("population", 100000, 5000000),
     ("elevation", 0, 2800)),
)

# file, list key, label field, label pool, two numeric fields
_LISTS: tuple[_ListSpec, ...] = (
    ("pupils.json", "pupils", "pupil",
     ("Mira", "Tomas", "Ines", "Yusuf", "Greta", "Pavel", "Lior"),
     ("grade", 1, 12), ("credits", 0, 40)),
    ("pupils.json", "tutors", "tutor",
     ("Reyes", "Becker", "Ito", "Mensah", "Duarte", "Larsen"), ("rooms", 1, 9), ("hours", 2, 30)),
    ("sensors.json", "probes", "probe",
     ("p-north", "p-south", "p-east", "p-west", "p-deep", "p-high"), ("value", 1, 99),
     ("battery", 5, 100)),
    ("inventory.json", "items", "sku",
     ("bolt", "nut", "washer", "gear", "spring", "hinge", "rivet"),
     ("qty", 0, 300), ("cost", 1, 60)),
    ("inventory.json", "depots", "depot",
     ("Leeds", "Turin", "Gdansk", "Porto", "Ghent", "Lyon"),
     ("capacity", 100, 900), ("staff", 2, 40)),
    ("flights.json", "flights", "code",
     ("AX101", "BY202", "CZ303", "DW404", "EV505", "FU606"),
     ("seats", 50, 300), ("minutes", 40, 600)),
    ("library.json", "books", "book",
     ("Dune", "Emma", "Ulysses", "Beloved", "Solaris", "Middlemarch", "Kindred"),
     ("pages", 120, 900), ("year", 1800, 2020)),
    ("league.json", "teams", "team",
     ("Falcons", "Otters", "Comets", "Pilots", "Wolves", "Ravens"),
     ("wins", 0, 30), ("losses", 0, 30)),
    ("league.json", "players", "player",
     ("Okoye", "Brandt", "Sato", "Varga", "Nilsen", "Castro"), ("goals", 0, 40), ("caps", 1, 90)),
)

# file, word pool for column 1, word pool for column 2
_TEXTS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("scores.txt", ("anna", "bela", "carla", "dana", "elsa", "fatima", "gala"),
     ("alpha", "beta", "gamma")),
    ("sales.txt", ("oslo", "rome", "cairo", "lima", "baku", "doha", "kiev"),
     ("spring", "summer", "autumn")),
    ("temps.txt", ("monday", "tuesday", "friday", "sunday", "saturday", "thursday"),
     ("clear", "rainy", "windy")),
    ("stock.txt", ("banana", "mango", "papaya", "guava", "kiwi", "lemon", "apple"),
     ("crate", "box", "bag")),
    ("visits.txt", ("kara", "omar", "lara", "sami", "tara", "zara"), ("clinic", "lab", "ward")),
    ("parcels.txt", ("tanker", "barge", "ferry", "schooner", "yacht", "galley"),
     ("harbor", "canal", "bay")),
)

_SUBJECTS = ("Tidy imports", "Explain setup", "Add config loader", "Rename helper",
             "Pin versions", "Split module", "Log startup", "Handle empty input",
             "Speed up parser", "Add example")

# branch name, files its commits touch (one tuple per commit)
_BRANCHES: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    ("fix-typo", (("README.md",),)),
    ("feature-login", (("src/auth.py",), ("src/app.py", "tests/test_auth.py"))),
    ("docs-update", (("docs/guide.md", "README.md"),)),
    ("refactor-db", (("src/db.py",), ("src/db.py", "src/app.py"))),
    ("add-tests", (("tests/test_app.py", "tests/test_db.py"),)),
)

_MAIN_FILES = ("README.md", "src/app.py", "src/db.py", "docs/guide.md", "tests/test_app.py",
               "CHANGELOG.md")
_WORDS = ("alpha", "beacon", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "indigo",
          "juniper")


def _tables(rng: random.Random) -> tuple[Table, ...]:
    out = []
    for name, label, lpool, text, tpool, (n1, lo1, hi1), (n2, lo2, hi2) in _TABLES:
        labels = rng.sample(lpool, rng.randint(6, min(8, len(lpool))))
        rows = tuple(
            (i + 1, lab, rng.choice(tpool), rng.randint(lo1, hi1), rng.randint(lo2, hi2))
            for i, lab in enumerate(labels)
        )
        out.append(Table(name, label, text, (n1, n2), rows))
    return tuple(out)


def _lists(rng: random.Random) -> tuple[JsonList, ...]:
    out = []
    for file, key, label, pool, (n1, lo1, hi1), (n2, lo2, hi2) in _LISTS:
        labels = rng.sample(pool, rng.randint(5, len(pool)))
        items = tuple((lab, rng.randint(lo1, hi1), rng.randint(lo2, hi2)) for lab in labels)
        out.append(JsonList(file, key, label, (n1, n2), items))
    return tuple(out)


def _texts(rng: random.Random) -> tuple[TextFile, ...]:
    out = []
    for name, pool1, pool2 in _TEXTS:
        words = rng.sample(pool1, rng.randint(5, len(pool1)))
        rows = tuple(
            (
                w,
                rng.choice(pool2),
                rng.randint(1, 90),
                rng.randint(100, 999),
                "".join((rng.choice("abcdkmxz"), str(rng.randint(1, 9)), rng.choice("pqrstu"),
                         str(rng.randint(10, 99)))),
            )
            for w in words
        )
        out.append(TextFile(name, rows))
    return tuple(out)


def _content(rng: random.Random, path: str, version: int) -> str:
    lines = [f"{path} v{version}"]
    lines += [f"{rng.choice(_WORDS)} {rng.randint(1, 999)}" for _ in range(3)]
    if path.endswith(".py"):
        lines = [f"# {line}" for line in lines]
    return "\n".join(lines) + "\n"


def _history(rng: random.Random) -> tuple[tuple[Commit, ...], tuple[Branch, ...]]:
    version = 0

    def commit(subject: str, paths: tuple[str, ...]) -> Commit:
        nonlocal version
        version += 1
        return Commit(subject, tuple((p, _content(rng, p, version)) for p in paths))

    subjects = rng.sample(_SUBJECTS, len(_SUBJECTS))
    main = [commit("Initial commit", _MAIN_FILES)]
    for k in range(5):
        main.append(commit(subjects[k], tuple(sorted(rng.sample(_MAIN_FILES, 2)))))
    branches = []
    for name, plan in _BRANCHES:
        base = rng.randint(1, len(main) - 2)
        words = name.replace("-", " ")
        commits = tuple(commit(f"{words.capitalize()}: step {i + 1}", paths)
                        for i, paths in enumerate(plan))
        branches.append(Branch(name, base, commits))
    return tuple(main), tuple(branches)


def make_catalog(seed: int) -> Catalog:
    """Draw a world's content from `seed` (the same seed always gives the same catalog)."""
    rng = random.Random(f"toolworld-catalog-{seed}")
    tables = _tables(rng)
    lists = _lists(rng)
    texts = _texts(rng)
    main, branches = _history(rng)
    return Catalog(seed, tables, lists, texts, main, branches)
