"""revision: stored avoidances are rewritten with what memory knows now.

What memory knows grows after a rule is written: a verb becomes a known command, a line turns out to be a
directive. An avoidance of a directive verb learned in a situation becomes undirected; one with several lines keeps
only those that bear on it; a bare-situation avoidance learned before its pattern was cut after its thing is cut
(``entities.unasked_head``). The new rule takes the old one's runs and names it in ``supersedes``, which retires it
(``rules.live_text_rules``): a status is a fold over evidence, so the old record itself stays as it was.
"""

from __future__ import annotations

from typing import ClassVar

from langmem_plus.textgames.direct import revise
from langmem_plus.textgames.entities import unasked_head
from langmem_plus.textgames.learners.base import RunLearning, rule_text
from langmem_plus.textgames.rules import relevant_conditions


class Revision:
    """Rewrites the tool's avoidances with what memory knows now (module docstring)."""

    name: ClassVar[str] = "revision"
    summary: ClassVar[str] = "stored avoidances are rewritten with what memory knows now"

    def learn(self, run: RunLearning) -> None:
        """Each rewrite supersedes the rule it replaces."""
        out, now = run.out, run.now
        current = {**{l.id: l for l in run.stored}, **out}
        reduce = lambda pattern, conds: relevant_conditions(pattern, conds, run.commands, run.directives)  # noqa: E731
        rewrites = [(old, lid, old.wrong or "", conds)
                    for old, lid, conds in revise(current.values(), run.directives, run.commands, reduce, run.rid)]
        for old in current.values():  # a bare-situation avoidance learned before ``unasked_head`` cut its pattern
            head = unasked_head(old.wrong or "", old.applies_when or ()) if old.wrong and old.retrievable else ""
            if head and head != old.wrong:
                rewrites.append((old, run.rid("avoid", head, "<X>"), head, ["<X>"]))
        for old, lid, pattern, conds in rewrites:
            have = out.get(lid) or current.get(lid)
            base = have if have is not None else old.model_copy(update={"id": lid, "created_at": now, "supersedes": []})
            runs = sorted({*old.provenance.run_ids, *base.provenance.run_ids})
            out[lid] = base.model_copy(update={
                "wrong": pattern, "applies_when": conds, "rule_text": rule_text(True, pattern, conds), "updated_at": now,
                "provenance": base.provenance.model_copy(update={"run_ids": runs}),
                "supersedes": sorted({*base.supersedes, old.id})})


__all__ = ["Revision"]
