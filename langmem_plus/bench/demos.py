"""``langmem-plus bench env --demos N``: memory designs that learn from demonstrations, task by task.

Per task (``--tasks``, default every task of the env family), the env's own demonstrations of ``N`` train variations
(ScienceWorld's gold action sequences, replayed so their observations and scores are real) are handed to every
design; then the first ``--variations K`` variations of ``--fold`` (test by default) are played by the same
executor, once per repeat, memory frozen (``--mode static``, the default) or folding each attempt in (``dynamic``).
TextWorldExpress's cooking games work the same way, the setting standing for the task and its gold sequences of
train games for the demonstrations. With ``--own-runs N`` instead, no design sees a demonstration: each first plays
``N`` train variations itself and learns from its own runs (``learn_own``). The designs, each told the task's family
and handed the same demonstrations:

- ``no_memory``: nothing;
- ``literal_replay``: the demonstration nearest the task's goal (cosine of the offline embeddings) replayed word
  for word, one next action per step;
- ``trajectory_retrieval``: the bench's text-game trajectory retrieval, the demonstrations folded in as won
  trajectories (its procedure hint and the trajectory's text);
- ``awm_workflows``: a workflow per task family kept as a literal action list (the actions every demonstration
  took, in order: Agent Workflow Memory without the abstraction), one next action per step;
- ``langmem_plus``: ``LearningMemory.learn_from_trajectories`` (workflows with slots), grounded at each step by
  ``memory.advisor.WorkflowAdvisor``.

The literal designs get the same step delivery and the same skip-ahead recovery as langmem_plus (one
recommendation per step, the next of their actions that is offered), so the comparison measures the slots.
Scores are clamped at 0 (the convention); ``minus_100`` counts attempts that ended the task failed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from langmem_plus.bench.designs.base import Context, Embedder, MemoryDesign, goal_of, run_episode
from langmem_plus.bench.designs.baselines import LangmemPlus, NoMemory
from langmem_plus.bench.designs.evaluation import mean_se
from langmem_plus.bench.designs.textdesigns import TextTrajectoryRetrieval
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.envs.registry import make_env
from langmem_plus.errors import EnvError
from langmem_plus.executors.base import Executor
from langmem_plus.learning.skills import common_subsequence
from langmem_plus.learning.textmatch import norm
from langmem_plus.learning.procedures import learned_part
from langmem_plus.learning.trajectory_import import from_run, from_steps
from langmem_plus.learning.workflows import Demonstration
from langmem_plus.memory import Trajectory
from langmem_plus.memory.advisor import done_actions, offered_actions
from langmem_plus.records import Feedback, Hint, Step, TaskSpec, Verdict
from langmem_plus.tokens import count_tokens

DEMO_DESIGNS: tuple[str, ...] = ("no_memory", "literal_replay", "trajectory_retrieval", "awm_workflows", "langmem_plus")
"""The designs ``--demos`` compares, in report order."""
DEFAULT_DEMOS_MAX_STEPS = 60
"""Commands per attempt with demonstrations (longer than the collection bench's: a procedure can be long)."""

Progress = Callable[[str], None]
DemoSource = Callable[[str, int], list[Demonstration]]
"""(task, n) -> n demonstrations of the task from its train variations."""


def spaced(seeds: Sequence[int], n: int) -> list[int]:
    """``n`` of ``seeds`` spread evenly over them, first one first (all of them when there are fewer).

    Example:
        >>> spaced(list(range(10)), 3), spaced([4, 5], 3)
        ([0, 3, 6], [4, 5])
    """
    seeds = list(seeds)
    if n >= len(seeds):
        return seeds
    step = len(seeds) / n
    return [seeds[int(k * step)] for k in range(n)]


def sciworld_demonstrations(simplifications: str | None = None) -> DemoSource:
    """ScienceWorld's gold action sequences of ``n`` train variations spread over the fold (``spaced``), replayed in
    the game (``envs.sciworld_gold.gold_demonstrations``), in one JVM."""
    from langmem_plus.envs.sciworld import DEFAULT_SIMPLIFICATIONS, SciWorldServer
    from langmem_plus.envs.sciworld_gold import gold_demonstrations

    simp = DEFAULT_SIMPLIFICATIONS if simplifications is None else simplifications
    server = SciWorldServer()

    def source(task: str, n: int) -> list[Demonstration]:
        chosen = spaced(server.fold_seeds(task, "train", simp), n)
        return [from_steps(d.goal, [(s.action, s.observation, s.score) for s in d.steps], source=f"gold:{task}:{d.variation}")
                for d in gold_demonstrations(task, n, simplifications=simp, variations=chosen, server=server)]

    return source


def twx_demonstrations(game: str) -> DemoSource:
    """TextWorldExpress's gold action sequences of ``n`` train games spread over the fold (``spaced``), replayed
    (``envs.twx.TwxBackend.gold_games``); the "task" is the setting (``easy``, ``medium``, ``rooms3``)."""
    from langmem_plus.envs.twx import TwxBackend

    def source(setting: str, n: int) -> list[Demonstration]:
        backend = TwxBackend(game, setting)
        try:
            games = backend.gold_games(spaced(backend.fold_seeds("train"), n))
        finally:
            backend.close()
        return [from_steps(g.goal, list(g.steps), source=f"gold:{game}:{setting}:{g.seed}") for g in games]

    return source


# ---------------------------------------------------------------------------- literal step delivery


class SequenceSteps:
    """Step hints that recommend the next action of a literal action list that is offered (the literal designs'
    delivery): the list's first action after those the attempt took in order, or one of the next
    ``workflow_skip_lookahead`` after it."""

    def __init__(self, actions: Sequence[str], label: str, lookahead: int = DEFAULT_CONFIG.workflows.workflow_skip_lookahead) -> None:
        self.actions, self.label, self.lookahead = [norm(a) for a in actions], label, lookahead
        self.lines: dict[str, None] = {}

    def _at(self, done: Sequence[str]) -> int:
        at = 0
        for action in map(norm, done):
            for j in range(at, len(self.actions)):
                if self.actions[j] == action:
                    at = j + 1
                    break
        return at

    def __call__(self, task: TaskSpec, history: Sequence[Step]) -> list[Hint]:
        at = self._at(done_actions(history))
        offered = {norm(a): a for a in offered_actions(task, history)}
        for action in self.actions[at : at + 1 + self.lookahead]:
            if action in offered:
                line = f"Prefer `{offered[action]}` (the next step of {self.label})"
                self.lines.setdefault(line, None)
                return [Hint(text=line, source_kind="episode", source_id=self.label)]
        return []

    def check(self, task: TaskSpec, history: Sequence[Step], action: str) -> list[Hint]:
        return []

    @property
    def tokens(self) -> int:
        return count_tokens("\n".join(self.lines)).n if self.lines else 0


class LiteralReplay:
    """The demonstration nearest the task's goal, replayed word for word (module docstring)."""

    name = "literal_replay"

    def __init__(self) -> None:
        self.embedder = Embedder()
        self.demos: list[tuple[str | None, Demonstration, Any]] = []

    def learn_demonstrations(self, demos: Sequence[Demonstration], family: str | None) -> None:
        self.demos.extend((family, d, self.embedder.vector(d.goal)) for d in demos)

    def general_update(self, trajectory: Trajectory) -> None:
        """Own runs add nothing: this design replays demonstrations."""

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        pool = [x for x in self.demos if x[0] == task.family] or self.demos
        if not pool:
            return Context()
        q = self.embedder.vector(goal_of(task))
        _, demo, _ = max(pool, key=lambda x: float(q @ x[2]))
        return Context(step_hints=SequenceSteps([s.action for s in demo.steps], "the nearest demonstration"))

    def close(self) -> None:
        self.demos.clear()


class AwmWorkflows:
    """A workflow per family as a literal action list: the actions every demonstration took, in order."""

    name = "awm_workflows"

    def __init__(self) -> None:
        self.workflows: dict[str | None, list[str]] = {}
        self._demos: dict[str | None, list[list[str]]] = {}

    def learn_demonstrations(self, demos: Sequence[Demonstration], family: str | None) -> None:
        self._demos.setdefault(family, []).extend([norm(s.action) for s in d.steps] for d in demos)
        self.workflows[family] = common_subsequence(self._demos[family])

    def general_update(self, trajectory: Trajectory) -> None:
        """Own runs add nothing: the workflows come from demonstrations."""

    def general_retrieve(self, task: TaskSpec, *, run_id: str | None = None) -> Context:
        actions = self.workflows.get(task.family)
        return Context(step_hints=SequenceSteps(actions, "a workflow")) if actions else Context()

    def close(self) -> None:
        self.workflows.clear()


def as_trajectory(demo: Demonstration, task: TaskSpec) -> Trajectory:
    """A demonstration as a won trajectory of ``task``'s kind, for designs that fold trajectories in."""
    steps = [Step(index=i, action=s.action, observation=s.observation, feedback=Feedback(progress=s.score))
             for i, s in enumerate(demo.steps)]
    final = max(0.0, next((s.score for s in reversed(demo.steps) if s.score is not None), 0.0) or 0.0)  # -1: failed
    spec = task.model_copy(update={"task_id": demo.source or task.task_id, "goal": demo.goal,
                                   "context": {**task.context, "goal": demo.goal}})
    return Trajectory(task=spec, steps=steps, verdict=Verdict(passed=final >= 1.0, score=final, source="deterministic"),
                      run_id=demo.source or f"demo-{task.task_id}")


class DemoLangmemPlus(LangmemPlus):
    """``LangmemPlus`` that learns demonstrations as workflows (``learn_from_trajectories``) and hands their steps
    over at each step (``WorkflowAdvisor`` around its text-rule delivery)."""

    def learn_demonstrations(self, demos: Sequence[Demonstration], family: str | None) -> None:
        self.memory.learn_from_trajectories(demos, family=family)


def make_demo_design(name: str) -> MemoryDesign:
    """A fresh design of ``DEMO_DESIGNS`` by name."""
    factories: dict[str, Callable[[], Any]] = {
        "no_memory": NoMemory, "literal_replay": LiteralReplay, "trajectory_retrieval": TextTrajectoryRetrieval,
        "awm_workflows": AwmWorkflows, "langmem_plus": lambda: DemoLangmemPlus(delivery="triggered"),
    }
    if name not in factories:
        raise EnvError(f"unknown design {name!r} for --demos; choose from {', '.join(DEMO_DESIGNS)}")
    return factories[name]()


def learn_own(design: MemoryDesign, trajectory: Trajectory, *, min_progress: float) -> None:
    """Hand one of ``design``'s own collection runs back to it: folded in as a trajectory (``general_update``); a
    design that learns only from demonstrations (the literal ones) gets the run's part up to the most progress it
    made as one (``procedures.learned_part``), the part langmem_plus's own-run workflows learn from."""
    design.general_update(trajectory)
    learn = getattr(design, "learn_demonstrations", None)
    if not callable(learn) or isinstance(design, LangmemPlus):  # ours learns its own runs through its run's end
        return
    part = learned_part(trajectory.steps, min_progress=min_progress)
    if part:
        learn([from_run(goal_of(trajectory.task), part, source=trajectory.run_id)], trajectory.task.family)


def _collect_tasks(env: Any, n: int, family: str) -> list[TaskSpec]:
    """``n`` train variations spread over the fold (``spaced``), as tasks to collect own runs on."""
    chosen = spaced(list(env.fold_seeds("train")), n) if n else []
    return _deploy_tasks(env, "train", len(chosen), family, seeds=chosen)


def teach(design: MemoryDesign, demos: Sequence[Demonstration], task: TaskSpec) -> None:
    """Hand ``demos`` of ``task``'s kind to ``design``: as demonstrations where it reads them, else as trajectories."""
    learn = getattr(design, "learn_demonstrations", None)
    if callable(learn):
        learn(demos, task.family)
        return
    for demo in demos:
        design.general_update(as_trajectory(demo, task))


# ---------------------------------------------------------------------------- the bench


def _deploy_tasks(env: Any, fold: str, k: int, family: str, *, seeds: Sequence[int] | None = None) -> list[TaskSpec]:
    """The first ``k`` variations of ``fold`` (or the given ``seeds``) as tasks of ``family``."""
    seeds = list(env.fold_seeds(fold))[:k] if seeds is None else list(seeds)
    out = []
    for seed in seeds:
        task_id = f"{fold}-{seed}"
        env.reset(task_id)
        out.append(TaskSpec(task_id=task_id, goal=str(getattr(env, "goal", "")), tool=env.name, domain=env.domain,
                            family=family))
    return out


def run_demo_bench(
    *,
    env_base: str,
    tasks: Sequence[str],
    simplifications: str | None = None,
    demos: int,
    variations: int,
    fold: str,
    repeats: int,
    max_steps: int,
    designs: Sequence[str],
    mode: str = "static",
    seed: int,
    executor_factory: Callable[[int], Executor],
    source: DemoSource | None,
    own_runs: int = 0,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """``{"env", "simplifications", "fold", "demos", "own_runs", "variations", "tasks", "designs": {NAME: {"score",
    "success", "minus_100", "tokens_per_step", "steps", "per_task": {TASK: {...}}}}}`` (module docstring);
    ``simplifications`` None plays the env's default. With ``own_runs`` (and no ``source``), each design first plays
    that many train variations of each task itself, learning from each (``learn_own``), instead of being taught
    demonstrations."""
    if mode not in ("static", "dynamic"):
        raise EnvError(f"mode must be static or dynamic, got {mode!r}")
    if (source is None) == (own_runs <= 0):
        raise EnvError("learn from demonstrations (a source and demos) or from own runs (own_runs > 0), one of them")
    min_progress = DEFAULT_CONFIG.workflows.workflow_own_min_progress
    for name in designs:
        make_demo_design(name).close()  # an unknown name is refused before any game is played
    rows: dict[str, dict[str, list[list[dict[str, Any]]]]] = {d: {} for d in designs}
    for t_i, task in enumerate(tasks):
        started = time.perf_counter()
        shown = source(task, demos) if source is not None else []
        env = make_env(f"{env_base}:{task}" + (f":{simplifications}" if simplifications else ""))
        try:
            deploy = _deploy_tasks(env, fold, variations, task)
            collect = _collect_tasks(env, own_runs, task)
            for name in designs:
                for r in range(repeats):
                    design = make_demo_design(name)
                    executor = executor_factory(seed + r)
                    try:
                        if deploy and source is not None:
                            teach(design, shown, deploy[0])
                        for t in collect if not isinstance(design, NoMemory) else ():  # it would learn nothing
                            run_id = f"r{r}-{t.task_id}"
                            ctx = design.general_retrieve(t, run_id=run_id)
                            learn_own(design, run_episode(env, executor, t, ctx, run_id=run_id, max_steps=max_steps),
                                      min_progress=min_progress)
                        rep: list[dict[str, Any]] = []
                        for t in deploy:
                            run_id = f"r{r}-{t.task_id}"
                            ctx = design.general_retrieve(t, run_id=run_id)
                            traj = run_episode(env, executor, t, ctx, run_id=run_id, max_steps=max_steps)
                            if mode == "dynamic":  # static: memory is what the demonstrations taught
                                design.general_update(traj)
                            score = traj.verdict.score if traj.verdict else 0.0
                            rep.append({"score": max(score, 0.0), "passed": bool(traj.verdict and traj.verdict.passed),
                                        "minus_100": int(any(s.feedback.constraint_failure for s in traj.steps)),
                                        "steps": len(traj.steps), "tokens": ctx.tokens})
                        rows[name].setdefault(task, []).append(rep)
                    finally:
                        design.close()
        finally:
            close = getattr(env, "close", None)
            if callable(close):
                close()
        if progress:
            parts = [f"{n} {statistics.fmean(x['score'] for rep in rows[n][task] for x in rep):.2f}"
                     for n in designs if rows[n].get(task) and rows[n][task][0]]
            progress(f"[env --demos] {t_i + 1}/{len(tasks)} {task}: {', '.join(parts)} ({time.perf_counter() - started:.0f}s)")
    return {"env": env_base, "simplifications": simplifications or "default", "fold": fold, "mode": mode,
            "demos": demos if source is not None else 0, "own_runs": own_runs, "variations": variations, "repeats": repeats,
            "max_steps": max_steps, "tasks": list(tasks), "designs": {n: summarize_demo_rows(rows[n]) for n in designs}}


def _figures(reps: Sequence[Sequence[dict[str, Any]]]) -> dict[str, Any]:
    """Mean over repeats of one task's (or every task's) attempts."""
    def per_rep(key: str) -> list[float]:
        return [statistics.fmean(float(x[key]) for x in rep) for rep in reps if rep]

    score, score_se = mean_se(per_rep("score"))
    steps_all = sum(x["steps"] for rep in reps for x in rep)
    tokens_all = sum(x["tokens"] for rep in reps for x in rep)
    return {"score": score, "score_se": score_se, "success": mean_se(per_rep("passed"))[0],
            "minus_100": round(statistics.fmean(sum(x["minus_100"] for x in rep) for rep in reps), 3) if reps else 0.0,
            "steps": mean_se(per_rep("steps"))[0], "tokens_per_step": round(tokens_all / steps_all, 2) if steps_all else 0.0}


def summarize_demo_rows(by_task: dict[str, list[list[dict[str, Any]]]]) -> dict[str, Any]:
    """Per task and overall figures of one design; overall is the mean over tasks (each task counts once)."""
    per_task = {task: _figures(reps) for task, reps in by_task.items()}
    if not per_task:
        return {"score": 0.0, "success": 0.0, "minus_100": 0.0, "tokens_per_step": 0.0, "steps": 0.0, "per_task": {}}
    figs = list(per_task.values())
    return {"score": round(statistics.fmean(f["score"] for f in figs), 4),
            "success": round(statistics.fmean(f["success"] for f in figs), 4),
            "minus_100": round(sum(f["minus_100"] for f in figs), 3),
            "tokens_per_step": round(statistics.fmean(f["tokens_per_step"] for f in figs), 2),
            "steps": round(statistics.fmean(f["steps"] for f in figs), 2), "per_task": per_task}


def format_demo_text(result: dict[str, Any]) -> str:
    """A table for people: one line per design, then per task the score of each design."""
    names = list(result["designs"])
    lines = [f"{result['env']} fold {result['fold']} demos {result['demos']} variations {result['variations']} "
             f"repeats {result['repeats']}", f"{'design':<22}{'score':>7}{'success':>9}{'-100':>7}{'steps':>7}{'tok/step':>9}"]
    for n, d in result["designs"].items():
        lines.append(f"{n:<22}{d['score']:>7.3f}{d['success']:>9.2f}{d['minus_100']:>7.1f}{d['steps']:>7.1f}{d['tokens_per_step']:>9.1f}")
    lines.append("")
    lines.append(f"{'task':<46}" + "".join(f"{n[:14]:>15}" for n in names))
    for task in result["tasks"]:
        cells = [result["designs"][n]["per_task"].get(task, {}).get("score") for n in names]
        lines.append(f"{task:<46}" + "".join(f"{c:>15.3f}" if c is not None else f"{'-':>15}" for c in cells))
    return "\n".join(lines)


__all__ = [
    "DEMO_DESIGNS",
    "AwmWorkflows",
    "DemoLangmemPlus",
    "LiteralReplay",
    "SequenceSteps",
    "as_trajectory",
    "format_demo_text",
    "learn_own",
    "make_demo_design",
    "run_demo_bench",
    "sciworld_demonstrations",
    "spaced",
    "twx_demonstrations",
    "summarize_demo_rows",
    "teach",
]
