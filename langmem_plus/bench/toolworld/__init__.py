"""Toolworld: real programs behind LangChain tools, questions about them, and a habit model.

The outside agent a bench uses to judge a memory: `ToolWorld` builds fixtures for sqlite3,
jq, git and awk; `questions` asks about them (a learning half, a held-out half); `HabitModel`
answers as a model with known habits would, reading memory only through its messages.
"""

from langmem_plus.bench.toolworld.fixtures import Catalog, make_catalog
from langmem_plus.bench.toolworld.forms import compile_form, form_matches, rewrite_value
from langmem_plus.bench.toolworld.habits import HABITS, Habit, Lookup, Recovery, habits_for
from langmem_plus.bench.toolworld.model import UNKNOWN_QUESTION, HabitModel, decide
from langmem_plus.bench.toolworld.notes import (
    Avoid,
    Note,
    Rewrite,
    directives,
    notes_in_lines,
    notes_in_system,
    parse_note_line,
)
from langmem_plus.bench.toolworld.questions import PHASES, TOOLS, Question, questions, split_pools
from langmem_plus.bench.toolworld.templates import TEMPLATES, Template, parse_question
from langmem_plus.bench.toolworld.world import MissingProgramError, ToolRunError, ToolWorld

__all__ = [
    "HABITS",
    "PHASES",
    "TEMPLATES",
    "TOOLS",
    "UNKNOWN_QUESTION",
    "Avoid",
    "Catalog",
    "Habit",
    "HabitModel",
    "Lookup",
    "MissingProgramError",
    "Note",
    "Question",
    "Recovery",
    "Rewrite",
    "Template",
    "ToolRunError",
    "ToolWorld",
    "compile_form",
    "decide",
    "directives",
    "form_matches",
    "habits_for",
    "make_catalog",
    "notes_in_lines",
    "notes_in_system",
    "parse_note_line",
    "parse_question",
    "questions",
    "rewrite_value",
    "split_pools",
]
