"""How the scripted model acts on notes: apply rewrites, and heed avoidances it can tie to a call.

A rewrite applies wherever its wrong form matches inside an argument value. An avoidance
counts only when its form matches the call and its quoted error is one the model's own
recovery understands; the model then fixes the call up front, as a model told of an error
before making it would (which may mean making a look-up call first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from langmem_plus.bench.toolworld.forms import form_matches, rewrite_value
from langmem_plus.bench.toolworld.habits import Lookup, habits_for
from langmem_plus.bench.toolworld.notes import Avoid, Note, Rewrite, directives

__all__ = ["Pending", "apply_notes", "finish_recovery", "recover_call"]


@dataclass(frozen=True)
class Pending:
    """A fix waiting for a look-up: the error, the call to fix, and the look-up to make."""

    error: str
    tool: str
    failed: dict[str, str] = field(hash=False)
    lookup: Lookup = field(hash=False)

    def is_lookup(self, tool: str, args: Mapping[str, object]) -> bool:
        """True when the call `tool(args)` is this fix's look-up."""
        return tool == self.lookup.tool and dict(args) == self.lookup.args


def recover_call(tool: str, error: str, args: Mapping[str, str]) -> dict[str, str] | Pending | None:
    """The model's own fix of `tool(args)` after `error`: new args, a look-up first, or None."""
    for habit in habits_for(tool):
        fix = habit.recover(error, args, None)
        if isinstance(fix, Lookup):
            return Pending(error, tool, dict(args), fix)
        if fix is not None:
            return fix
    return None


def finish_recovery(pending: Pending, lookup_output: str) -> dict[str, str] | None:
    """Fix the pending call from its look-up's output; None when the output does not help."""
    for habit in habits_for(pending.tool):
        fix = habit.recover(pending.error, pending.failed, lookup_output)
        if isinstance(fix, dict):
            return fix
    return None


def _rewrite(args: dict[str, str], rule: Rewrite) -> dict[str, str]:
    out = dict(args)
    for key, value in args.items():
        if isinstance(value, str):
            new = rewrite_value(rule.wrong, rule.right, value)
            if new is not None:
                out[key] = new
    return out


def _ties(args: Mapping[str, str], rule: Avoid) -> bool:
    return any(isinstance(v, str) and form_matches(rule.form, v) for v in args.values())


def apply_notes(
    tool: str, args: Mapping[str, str], notes: Iterable[Note]
) -> tuple[dict[str, str], Pending | None]:
    """Apply notes to the call `tool(args)`.

    Returns the call's new arguments and, when an avoidance calls for a fix that needs a
    look-up, the pending fix (its look-up is the call to make next).
    """
    items = directives(notes)
    current = dict(args)
    for item in items:
        if isinstance(item, Rewrite):
            current = _rewrite(current, item)
    for item in items:
        if isinstance(item, Avoid) and item.error and _ties(current, item):
            fix = recover_call(tool, item.error, current)
            if isinstance(fix, Pending):
                return current, fix
            if fix is not None:
                current = fix
    return current, None
