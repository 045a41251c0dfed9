"""A tool's text rules are read through the graph's tool node (``MemoryView.tool_text_rules``), not a scan of
every lesson: the same rules as the scan, before and after a reopen, and the same lessons learned."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fixed_executor import Fixed
from langmem_plus import LearningMemory
from langmem_plus.bench.designs.base import Context, run_episode
from langmem_plus.envs.textgame import TextGameEnv
from langmem_plus.memory import Trajectory
from langmem_plus.records import Lesson, LessonScope, TaskSpec

NS = ("t", "tool-rules")


def _rule(i: str, tool: str | None, *, text: bool = True, wrong: str = "eat <X>") -> Lesson:
    return Lesson(id=i, namespace=NS, rule_text=f"AVOID: {wrong} ({i})", wrong=wrong, applies_when=["<X>"] if text else None,
                  scope=LessonScope(tool=tool))


def _scan(memory: LearningMemory, tool: str | None) -> list[str]:
    return sorted(l.id for l in memory.list_lessons() if l.applies_when is not None and l.scope.tool == tool)


def _ids(rules: Sequence[Lesson]) -> list[str]:
    return sorted(l.id for l in rules)


def test_a_tools_text_rules_are_those_a_scan_of_every_lesson_finds(tmp_path: Path) -> None:
    memory = LearningMemory.open(tmp_path / "m", namespace=NS)
    memory.add_lessons([
        _rule("a1", "game-a"), _rule("a2", "game-a", wrong="cook <X> in stove"), _rule("a3", "game-a", text=False),
        _rule("b1", "game-b"), _rule("n1", None), _rule("n2", None, text=False),
        *(_rule(f"x{i}", f"other-{i % 7}", text=i % 2 == 0) for i in range(60)),
    ])
    memory.add_lessons([_rule("a2", "game-b", wrong="cook <X> in stove")])  # the same rule, moved to another tool
    tools = ["game-a", "game-b", None, "other-3", "unknown"]
    expected = {"game-a": ["a1"], "game-b": ["a2", "b1"], None: ["n1"]}
    for tool in tools:
        assert _ids(memory.text_rules(tool)) == _scan(memory, tool)
        if tool in expected:
            assert _ids(memory.text_rules(tool)) == expected[tool]
    # rules written in the run being ended win over the table, whatever their tool
    changed = {"a1": _rule("a1", "game-a", text=False), "a9": _rule("a9", "game-a")}
    assert _ids(memory.view.tool_text_rules("game-a", [changed])) == ["a9"]
    memory.close()
    reopened = LearningMemory.open(tmp_path / "m", namespace=NS)  # from the snapshot: the graph's saved columns
    for tool in tools:
        assert _ids(reopened.text_rules(tool)) == _scan(reopened, tool)
    reopened.close()


ROAST = "train-18"
"""Recipe: chop the yellow potato, roast the yellow potato, prepare meal."""
SLICE_ROAST = "train-20"
"""Recipe: slice the orange bell pepper, roast the orange bell pepper."""
PLAYS = [
    (ROAST, ["read cookbook", "take yellow potato", "cook yellow potato in stove"]),
    (SLICE_ROAST, ["read cookbook", "open cutlery drawer", "take knife", "open fridge", "take orange bell pepper"]),
    (ROAST, ["read cookbook", "take yellow potato", "cook yellow potato in oven"]),
    (SLICE_ROAST, ["read cookbook", "open fridge", "take orange bell pepper", "cook orange bell pepper in stove"]),
    (SLICE_ROAST, ["read cookbook", "open fridge", "take orange bell pepper", "eat orange bell pepper"]),
]


def _play(env: TextGameEnv, task_id: str, actions: Sequence[str], run_id: str) -> Trajectory:
    env.reset(task_id)
    task = TaskSpec(task_id=task_id, goal=env.goal, tool=env.name, domain=env.domain, family=env.family)
    return run_episode(env, Fixed(actions), task, Context(), run_id=run_id, max_steps=len(actions))


def test_rules_learned_through_the_index_equal_those_learned_with_a_scan(cooking: TextGameEnv, tmp_path: Path) -> None:
    trajectories = [_play(cooking, task_id, actions, f"r{n}") for n, (task_id, actions) in enumerate(PLAYS)]
    learned = []
    for name, scan in (("indexed", False), ("scanned", True)):
        memory = LearningMemory.open(tmp_path / name, namespace=NS)
        memory.add_lessons([_rule(f"x{i}", cooking.name if i % 3 == 0 else "other", text=i % 2 == 0) for i in range(40)])
        if scan:  # the brute-force reference: every lesson read, as before the index
            view = memory.view
            view.tool_text_rules = lambda tool, changed=(), view=view: [  # type: ignore[method-assign]
                l for l in {**view.lessons, **{k: v for m in reversed(list(changed)) for k, v in m.items()}}.values()
                if l.applies_when is not None and l.scope.tool == tool]
        for traj in trajectories:
            memory.general_update(traj)
        learned.append(sorted((l.id, l.wrong, l.correct, tuple(l.applies_when or ()), tuple(l.supersedes), l.status)
                              for l in memory.list_lessons() if l.applies_when is not None))
        memory.close()
    assert learned[0] == learned[1]
    assert any(wrong == "eat <X>" for _, wrong, *_ in learned[0])  # the runs taught text rules at all
