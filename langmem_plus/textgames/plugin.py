"""The text-game plugin: what a text-game run keeps, the rules it teaches, the steps its episodes keep.

Served for tasks of the ``text-game`` domain (``plugins.register_plugin``); a run is claimed when the game
enumerated its valid actions (its steps carry ``info["valid_actions"]``): a failure there is a wrong choice, which
text rules learn from, not a malformed call to rewrite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langmem_plus.config import MemoryConfig
from langmem_plus.plugins import LearnInput
from langmem_plus.records import Lesson, Step, TaskSpec
from langmem_plus.textgames.advisor import ADVISOR, TextGameAdvisor
from langmem_plus.textgames.consume import consumed_commands
from langmem_plus.textgames.episodes import key_steps
from langmem_plus.textgames.extras import NAME, run_commands, run_consumed, run_directed, run_undone
from langmem_plus.textgames.learn import learn_text_rules
from langmem_plus.textgames.rules import applies_to_text_envs, directed_verbs, offered_verbs
from langmem_plus.textgames.undo import undo_pairs

DOMAIN = "text-game"
"""The domain text-game environments declare."""


class TextGamePlugin:
    """``plugins.EnvPlugin`` for text games."""

    name = NAME
    domains = (DOMAIN,)

    def claims(self, steps: Sequence[Step]) -> bool:
        """A run whose game enumerated its actions."""
        return applies_to_text_envs(steps)

    def run_extras(self, task: TaskSpec, steps: Sequence[Step]) -> dict[str, list[Any]]:
        """The commands offered, the verbs the task text directed, the undo pairs and the consuming commands."""
        goal = str(task.context.get("goal") or task.goal or "")
        return {
            "commands": sorted(offered_verbs(steps, task)),
            "directed": sorted(directed_verbs(goal, steps, task)),
            "undone": [list(pair) for pair in undo_pairs(task, steps)],
            "consumed": consumed_commands(task, steps),
        }

    def learn(self, given: LearnInput) -> dict[str, Lesson]:
        """The text rules the run teaches (``learn.learn_text_rules``), read with what the tool's runs kept."""
        return learn_text_rules(
            namespace=given.namespace, run_id=given.run_id, task=given.task, steps=given.steps, existing=given.existing,
            config=given.config, now=given.now, offered_before=given.tool_extras("commands"),
            directed_before=given.tool_extras("directed"), tool_rules=given.tool_rules,
        )

    def episode_steps(self, task: TaskSpec, commands: Sequence[Step], config: MemoryConfig) -> list[Step]:
        """The steps that mattered, entities as placeholders (``episodes.key_steps``)."""
        return key_steps(task, commands, config)

    @property
    def step_advisor(self) -> TextGameAdvisor:
        """Text rules at the steps they fire on, and the guard (``advisor``)."""
        return ADVISOR


PLUGIN = TextGamePlugin()
"""The plugin object ``plugins.plugin_for`` loads for the ``text-game`` domain."""

__all__ = ["DOMAIN", "NAME", "PLUGIN", "TextGamePlugin", "run_commands", "run_consumed", "run_directed", "run_undone"]
