"""``langmem-plus bench stress --scenario silent_harm|wrong_feedback``: a memory taught wrong things must repair itself.

The scripted executor learns gridtool through the reference graph, run after run over its 15 tasks, on a tool that
does not judge its own results (``silent``: only the referee can tell a wrong answer). Two memories start empty:

- **clean**: the right manual and a truthful referee throughout;
- **scenario**: for the first ``wrong_runs`` runs a manual with two wrong but valid spellings (a sort direction and a
  comparison operator: fixes that run and give wrong answers), then the right manual for ``right_runs`` runs.
  ``silent_harm`` keeps the referee truthful; ``wrong_feedback`` inverts it in the wrong phase (it passes wrong
  answers and fails right ones), and when the right referee returns the wrong phase's runs are judged again
  (``memory.correct_verdict``) unless ``correct=False``.

Per run and memory: tool errors, true pass rate, wrong answers (a result ran and was wrong) and steps. The targets:
after the right phase begins, wrong answers and steps back at the clean memory's level within ``wrong_runs`` runs;
no lesson still promoted whose true outcome is negative (applied to more wrong results than right ones); no success
episode or skill that only denied successes made still recalled.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langmem_plus.demo import LogicalClock
from langmem_plus.envs.gridtool import GridToolEnv
from langmem_plus.executors.scripted import ScriptedExecutor
from langmem_plus.graph import build_executor_referee_graph, run_task
from langmem_plus.learning.outcomes import applied_at
from langmem_plus.memory import LearningMemory
from langmem_plus.records import Step, TaskSpec, Verdict
from langmem_plus.referee import DeterministicReferee

SCENARIOS = ("silent_harm", "wrong_feedback")
WRONG_MANUAL = {"term[dir.desc]: DOWN": "term[dir.desc]: UP", "term[cmp.>=]: >=": "term[cmp.>=]: >"}
"""Two wrong but valid spellings in gridtool's manual: descending sorts ascend, ``>=`` becomes ``>``."""
WRONG_RUNS = 3
RIGHT_RUNS = 7
CLOCK_START = 1_700_000_000.0


class InvertedReferee:
    """Wrong feedback: the truthful verdict turned around (a wrong answer passes, a right one fails)."""

    def __init__(self, truth: DeterministicReferee) -> None:
        self.truth = truth

    def judge(self, task: TaskSpec, trajectory: Sequence[Step]) -> Verdict:
        verdict = self.truth.judge(task, trajectory)
        return verdict.model_copy(update={"passed": not verdict.passed, "score": 1.0 - verdict.score})


def _play(memory: LearningMemory, run: int, *, wrong_manual: bool, inverted: bool, seed: int, tag: str,
          truths: dict[str, Verdict], outcomes: dict[str, list[float]]) -> dict[str, Any]:
    """One run over every task; the true verdict of each attempt goes into ``truths``, and for each lesson applied to
    the judged result, +1 (right) or -1 (wrong) into ``outcomes``."""
    env = GridToolEnv(docs_edits=WRONG_MANUAL if wrong_manual else None, silent=True)
    truth = DeterministicReferee(env)
    graph = build_executor_referee_graph(memory, env, ScriptedExecutor(seed=seed),
                                         referee=InvertedReferee(truth) if inverted else truth)
    errors = steps = passed = wrong = 0
    for task in env.tasks():
        run_id = f"{tag}-r{run}-{task.task_id}"
        out = run_task(graph, task, run_id=run_id)
        verdict = truth.judge(task, out["steps"])
        truths[run_id] = verdict
        if verdict.step is not None:
            wrong += not verdict.passed
            for lesson_id in applied_at(next(s for s in out["steps"] if s.index == verdict.step)):
                outcomes.setdefault(lesson_id, []).append(1.0 if verdict.passed else -1.0)
        errors += out["report"].tool_errors
        steps += out["report"].steps
        passed += verdict.passed
    n = len(env.tasks())
    return {"run": run, "tool_errors": errors, "pass_rate": round(passed / n, 4), "wrong_answers": wrong, "steps": steps}


def _denied_still_recalled(memory: LearningMemory, truths: dict[str, Verdict]) -> dict[str, list[str]]:
    """Success episodes and skills made only by runs that truly failed, which memory still recalls."""
    failed = {r for r, v in truths.items() if not v.passed}
    episodes = [e for e in memory.episodes() if e.kind == "success" and e.retired is None
                and (set(e.run_ids) or {e.run_id or ""}) <= failed]
    ids = {e.episode_id for e in episodes}
    skills = [s.id for s in memory.skills.values() if s.retired is None and s.source_episodes
              and set(s.source_episodes) <= ids | {e.episode_id for e in memory.episodes() if e.retired}]
    return {"episodes": [e.episode_id for e in episodes], "skills": skills}


def run_scenario(scenario: str, *, seed: int = 0, wrong_runs: int = WRONG_RUNS, right_runs: int = RIGHT_RUNS,
                 correct: bool = True, store: str | Path | None = None,
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One scenario on one seed: per-run rows of both memories, and the targets."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")
    inverted = scenario == "wrong_feedback"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(store) if store is not None else Path(tmp)
        clean = LearningMemory.open(root, namespace=("stress", f"{scenario}-clean"), clock=LogicalClock(CLOCK_START))
        taught = LearningMemory.open(root, namespace=("stress", scenario), clock=LogicalClock(CLOCK_START))
        truths: dict[str, Verdict] = {}
        outcomes: dict[str, list[float]] = {}
        rows: list[dict[str, Any]] = []
        corrected = 0
        try:
            for run in range(1, wrong_runs + right_runs + 1):
                wrong_phase = run <= wrong_runs
                if run == wrong_runs + 1 and inverted and correct:  # the right referee judges the wrong phase again
                    for run_id, verdict in list(truths.items()):
                        stored = next((r for r in taught.runs if r.run_id == run_id), None)
                        if stored is not None and stored.passed != verdict.passed:
                            taught.correct_verdict(run_id, verdict)
                            corrected += 1
                row = {"phase": "wrong" if wrong_phase else "right",
                       "clean": _play(clean, run, wrong_manual=False, inverted=False, seed=seed, tag="clean",
                                      truths={}, outcomes={}),
                       "scenario": _play(taught, run, wrong_manual=wrong_phase, inverted=inverted and wrong_phase,
                                         seed=seed, tag=scenario, truths=truths, outcomes=outcomes)}
                rows.append(row)
                if progress is not None:
                    progress(f"[stress] {scenario} seed {seed}: run {run}/{wrong_runs + right_runs}")
            right = rows[wrong_runs:]
            back = next((k + 1 for k, r in enumerate(right) if r["scenario"]["wrong_answers"] <= r["clean"]["wrong_answers"]
                         and r["scenario"]["steps"] <= r["clean"]["steps"]), None)
            harmful = {i for i, seen in outcomes.items() if sum(seen) < 0}  # more often applied to wrong results than right
            promoted = sorted(l.id for l in taught.list_lessons() if l.status == "promoted" and l.id in harmful)
            denied = _denied_still_recalled(taught, truths)
        finally:
            clean.close()
            taught.close()
    return {
        "scenario": scenario, "seed": seed, "wrong_runs": wrong_runs, "right_runs": right_runs,
        "verdicts_corrected": corrected, "runs": rows, "runs_to_clean_level": back,
        "harmful_still_promoted": promoted, "denied_still_recalled": denied,
        "meets_target": back is not None and back <= wrong_runs and not promoted and not any(denied.values()),
    }


__all__ = ["InvertedReferee", "RIGHT_RUNS", "SCENARIOS", "WRONG_MANUAL", "WRONG_RUNS", "run_scenario"]
