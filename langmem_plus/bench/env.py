"""``langmem-plus bench env``: memory designs on a text game, ALMA's protocol.

Per repeat ``r`` (executor seed ``seed + r``) and per design, with the same executor
(``TextGameExecutor`` by default; ``--llm-base-url`` / ``--llm-model`` run ``LLMExecutor``
over an OpenAI-compatible chat model instead) and the same seeds for every design:

1. collection: the train-fold seeds ``--collect-seeds`` are played with no retrieval,
   each trajectory folded in with ``general_update``;
2. deployment: the ``--fold`` seeds ``--seeds`` are played with ``general_retrieve``'s
   hints; ``static`` keeps memory frozen, ``dynamic`` keeps calling ``general_update``.

Seed ranges ``A-B`` are positions in the fold's own seed list (0-based, inclusive), so
``--seeds 0-19 --fold test`` means the first twenty test seeds (20000..20019 in
TextWorldExpress). Figures per design are means over repeats with standard errors;
curves are per episode of the whole sequence (collection then deployment), averaged over
repeats: cumulative fatal failures (games lost), cumulative repeated fatal failures (games
lost to a mistake memory had already been shown losing a game, in the task's own terms:
``bench.mistakes``) and success.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from langmem_plus.bench.contradicted import contradicted_notes
from langmem_plus.bench.demos import DEMO_DESIGNS
from langmem_plus.bench.designs.base import Context, MemoryDesign, goal_of, run_episode
from langmem_plus.config import DEFAULT_CONFIG
from langmem_plus.textgames.delivery_rules import SWITCHABLE_RULES
from langmem_plus.textgames.learners import SWITCHABLE_LEARNERS
from langmem_plus.bench.designs.baselines import LangmemPlus, NoMemory
from langmem_plus.bench.designs.evaluation import mean_se
from langmem_plus.bench.designs.textdesigns import (
    DynamicCheatsheet,
    Expel,
    ReasoningBank,
    TextTrajectoryRetrieval,
    abstracted_designs,
)
from langmem_plus.bench.mistakes import Episode, repeated_losses
from langmem_plus.envs.registry import make_env
from langmem_plus.errors import EnvError, InvalidArgument
from langmem_plus.executors.base import Executor
from langmem_plus.textgames.executor import TextGameExecutor
from langmem_plus.memory import Trajectory
from langmem_plus.records import TaskSpec

BENCH_NAME = "env"
DEFAULT_ENV = "twx-cooking:easy"
DEFAULT_COLLECT = "0-19"
"""Train-fold positions played in the collection phase."""
DEFAULT_SEEDS = "0-29"
"""Deployment positions in the chosen fold."""
DEFAULT_REPEATS = 3
DEFAULT_DELIVERY = "triggered"
"""How langmem_plus hands text rules over: at the steps they fire on (``textgames.delivery``), or ``pre_run``."""
DEFAULT_MAX_STEPS = 50
"""Commands per attempt (the issue's measurement used 50)."""
TEXT_DESIGNS: dict[str, Callable[[], MemoryDesign]] = {
    "no_memory": NoMemory,
    "trajectory_retrieval": TextTrajectoryRetrieval,
    "reasoning_bank": ReasoningBank,
    "dynamic_cheatsheet": DynamicCheatsheet,
    "expel": Expel,
    **abstracted_designs(),
    "langmem_plus": LangmemPlus,
}
"""Design name -> factory of a fresh, empty design: each baseline literal and abstracted (``textdesigns``)."""
TEXT_DESIGN_NAMES: tuple[str, ...] = tuple(TEXT_DESIGNS)
SWITCHABLE_NAMES: tuple[str, ...] = (*SWITCHABLE_RULES, "guard", *SWITCHABLE_LEARNERS)
"""What ``--without`` takes: the delivery rules, the guard, and the learning mechanisms."""

Progress = Callable[[str], None]
ExecutorFactory = Callable[[int], Executor]
"""seed -> a fresh executor for one repeat of one design (the same factory serves every design)."""


def text_executor(seed: int) -> Executor:
    """The default: ``TextGameExecutor`` with the repeat's seed."""
    return TextGameExecutor(seed=seed)


def llm_executor_factory(base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY") -> ExecutorFactory:
    """``LLMExecutor`` over an OpenAI-compatible chat model (``langchain-openai``), built once and shared.

    Raises:
        InvalidArgument: ``langchain-openai`` is missing (the message names the extra), or a name is empty.
    """
    import os

    from langmem_plus.executors.llm import LLMExecutor, openai_compatible_chat

    chat = openai_compatible_chat(base_url, model, api_key=os.environ.get(api_key_env) or None)
    return lambda seed: LLMExecutor(chat, docs_allowed=False)  # text games have no manual to read


def parse_range(text: str) -> list[int]:
    """``"A-B"`` (inclusive) or ``"A"`` as a list of positions.

    Example:
        >>> parse_range("2-4"), parse_range("7")
        ([2, 3, 4], [7])
    """
    a, _, b = str(text).partition("-")
    try:
        lo, hi = int(a), int(b or a)
    except ValueError as exc:
        raise EnvError(f"seed range {text!r} is not 'A-B' with integers") from exc
    if lo < 0 or hi < lo:
        raise EnvError(f"seed range {text!r} must satisfy 0 <= A <= B")
    return list(range(lo, hi + 1))


def default_range(default: str, size: int) -> str:
    """A default range ``A-B`` cut to a fold of ``size`` seeds (a small fold is used whole, not refused).

    Example:
        >>> default_range("0-19", 6), default_range("0-19", 150)
        ('0-5', '0-19')
    """
    lo, hi = parse_range(default)[0], parse_range(default)[-1]
    return f"{lo}-{min(hi, max(size - 1, lo))}"


def _fold_size(env: Any, fold: str) -> int:
    return len(env.fold_seeds(fold))


def _tasks(env: Any, fold: str, positions: Sequence[int]) -> list[TaskSpec]:
    seeds = env.fold_seeds(fold)
    if positions and positions[-1] >= len(seeds):
        raise EnvError(f"the {fold} fold has {len(seeds)} seeds; position {positions[-1]} is out of range")
    family = getattr(env, "family", "") or env.name
    out = []
    for p in positions:
        task_id = f"{fold}-{seeds[p]}"
        env.reset(task_id)  # the goal a design retrieves by
        out.append(TaskSpec(task_id=task_id, goal=str(getattr(env, "goal", "")), tool=env.name, domain=env.domain, family=family))
    return out


def _row(traj: Trajectory, ctx: Context, seconds: float) -> dict[str, Any]:
    return {
        "task_id": traj.task.task_id,
        "passed": bool(traj.verdict and traj.verdict.passed),
        "score": traj.verdict.score if traj.verdict else 0.0,
        "steps": len(traj.steps),
        "fatal": int(any(s.feedback.constraint_failure for s in traj.steps)),
        "invalid": sum(1 for s in traj.steps if s.feedback.hard_failure),
        "guarded": sum(len(s.info.get("guarded") or ()) for s in traj.steps) + len(traj.guarded),
        "context_tokens": ctx.tokens,
        "seconds": seconds,
    }


def rules_config(without: Collection[str] = ()) -> dict[str, Any]:
    """The config section that switches the named delivery rules (``textgames.delivery_rules.SWITCHABLE_RULES``, and
    ``guard``: ``text_guard="off"``) and learning mechanisms (``textgames.learners.SWITCHABLE_LEARNERS``) off.

    Raises:
        EnvError: a name that is none of them.
    """
    unknown = sorted(set(without) - set(SWITCHABLE_NAMES))
    if unknown:
        raise EnvError(f"unknown rule(s) {unknown} for --without; choose from {', '.join(SWITCHABLE_NAMES)}")
    fields: dict[str, Any] = {"text_rules_off": frozenset(without) & set(SWITCHABLE_RULES),
                              "text_learners_off": frozenset(without) & set(SWITCHABLE_LEARNERS)}
    if "guard" in without:
        fields["text_guard"] = "off"
    return {"textgames": fields}


def rules_in_force(without: Collection[str] = ()) -> list[str]:
    """The switchable delivery rules and learning mechanisms left on, for the bench's JSON."""
    return [r for r in SWITCHABLE_NAMES if r not in without]


def make_design(name: str, context_tokens: int | None = None, delivery: str = DEFAULT_DELIVERY,
                without: Collection[str] = ()) -> MemoryDesign:
    """A fresh design; for langmem_plus, ``context_tokens`` sets ``max_context_tokens`` (None: the default config),
    ``delivery`` how text rules reach the executor (``pre_run`` or ``triggered``) and ``without`` the delivery rules
    switched off (``rules_config``)."""
    if name == "langmem_plus":
        sections = {**({"context": {"max_context_tokens": context_tokens}} if context_tokens is not None else {}),
                    **(rules_config(without) if without else {})}
        config = DEFAULT_CONFIG.replace(**sections) if sections else None
        return LangmemPlus(config=config, delivery=delivery)
    return TEXT_DESIGNS[name]()


PlayOne = Callable[[str, TaskSpec, bool], tuple[Trajectory, dict[str, Any]]]
"""(phase, task, shown: whether memory learns from the attempt) -> the attempt and its row (``_row``)."""
RunOne = Callable[[str, Any, list[TaskSpec], list[TaskSpec], int], dict[str, list[dict[str, Any]]]]
"""(design, env, collection tasks, deployment tasks, repeat) -> that repeat's rows (``play_phases``)."""


def play_phases(collect: list[TaskSpec], deploy: list[TaskSpec], mode: str, play: PlayOne) -> dict[str, list[dict[str, Any]]]:
    """Collection then deployment, one ``play`` per task; the rows with each one's repeated loss (``bench.mistakes``,
    over the whole sequence: in static mode only collection attempts count as shown to memory)."""
    out: dict[str, list[dict[str, Any]]] = {"collection": [], "deployment": []}
    played: list[Episode] = []
    for phase, tasks in (("collection", collect), ("deployment", deploy)):
        for t in tasks:
            shown = phase == "collection" or mode == "dynamic"
            traj, row = play(phase, t, shown)
            out[phase].append(row)
            played.append(Episode(goal_of(t), traj.steps, shown,
                                  str(traj.task.context.get("observation") or ""),
                                  [str(a) for a in traj.task.context.get("valid_actions") or []]))
    for row, repeated in zip([*out["collection"], *out["deployment"]], repeated_losses(played)):
        row["repeated_fatal"] = int(repeated)
    return out


def run_design(name: str, env: Any, collect: list[TaskSpec], deploy: list[TaskSpec], *, mode: str, seed: int,
               repeat: int, max_steps: int, context_tokens: int | None = None,
               executor_factory: ExecutorFactory = text_executor, delivery: str = DEFAULT_DELIVERY,
               without: Collection[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """One repeat of one design: per-episode rows of collection and deployment."""
    design = make_design(name, context_tokens, delivery, without)
    executor = executor_factory(seed + repeat)

    def play(phase: str, t: TaskSpec, shown: bool) -> tuple[Trajectory, dict[str, Any]]:
        run_id = f"r{repeat}-{phase[0]}-{t.task_id}"
        started = time.perf_counter()
        ctx = design.general_retrieve(t, run_id=run_id) if phase == "deployment" else Context()
        notes: set[tuple[str, str | None]] = set()
        traj = run_episode(env, executor, t, ctx, run_id=run_id, max_steps=max_steps, shown=notes)
        if shown:
            design.general_update(traj)
        row = _row(traj, ctx, time.perf_counter() - started)
        row["contradicted_notes"] = contradicted_notes(notes, goal_of(traj.task), traj.task.context, traj.steps)
        return traj, row

    try:
        return play_phases(collect, deploy, mode, play)
    finally:
        design.close()


def run_designs(env_name: str, *, designs: Sequence[str], collect: str | None, seeds: str | None, fold: str, mode: str,
                repeats: int, run_one: RunOne, progress: Progress | None, about: Mapping[str, Any],
                tag: str = "env") -> dict[str, Any]:
    """Every design's repeats on one env (opened and closed here): the bench's JSON, ``{"env", "setting", "fold",
    "mode", **about, "collect_seeds", "seeds", "designs", "curves"}`` (``about``: how the games were played, such as
    the executor and ``max_steps``). ``collect`` / ``seeds`` left None are the defaults cut to the fold's size
    (``default_range``); progress lines start with ``[tag]``. ``mode`` is checked here; ``run_one`` plays by it."""
    if mode not in ("static", "dynamic"):
        raise EnvError(f"mode must be static or dynamic, got {mode!r}")
    if repeats < 1:
        raise EnvError(f"repeats must be >= 1, got {repeats}")
    env = make_env(env_name)
    base, _, setting = env_name.partition(":")
    try:
        if collect is None:
            collect = default_range(DEFAULT_COLLECT, _fold_size(env, "train"))
        if seeds is None:
            seeds = default_range(DEFAULT_SEEDS, _fold_size(env, fold))
        collect_tasks = _tasks(env, "train", parse_range(collect))
        deploy_tasks = _tasks(env, fold, parse_range(seeds))
        out_designs: dict[str, Any] = {}
        curves: dict[str, Any] = {}
        for name in designs:
            reps = []
            for r in range(repeats):
                started = time.perf_counter()
                reps.append(run_one(name, env, collect_tasks, deploy_tasks, r))
                if progress:
                    dep = reps[-1]["deployment"]
                    progress(f"[{tag}] {name} repeat {r + 1}/{repeats}: success {statistics.fmean(x['passed'] for x in dep):.2f} "
                             f"fatal {sum(x['fatal'] for x in dep)} ({time.perf_counter() - started:.1f}s)")
            out_designs[name], curves[name] = summarize(reps)
    finally:
        close = getattr(env, "close", None)
        if callable(close):
            close()
    return {"env": base, "setting": setting or "default", "fold": fold, "mode": mode, **about, "collect_seeds": collect,
            "seeds": seeds, "designs": out_designs, "curves": curves}


def summarize(repeats: list[dict[str, list[dict[str, Any]]]]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Deployment figures (mean and SE over repeats) and the per-episode curves over the whole sequence."""
    def per_rep(key: str) -> list[float]:
        return [statistics.fmean(float(r[key]) for r in rep["deployment"]) if rep["deployment"] else 0.0 for rep in repeats]

    success, success_se = mean_se(per_rep("passed"))
    fig: dict[str, Any] = {"success": success, "success_se": success_se}
    for key, out in (("score", "score"), ("steps", "steps"), ("invalid", "invalid_actions"),
                     ("context_tokens", "context_tokens_per_task"), ("guarded", "guarded_proposals"),
                     ("contradicted_notes", "contradicted_notes"), ("seconds", "seconds")):
        fig[out], fig[f"{out}_se"] = mean_se(per_rep(key))
    fig["fatal_failures"] = round(statistics.fmean(sum(r["fatal"] for r in rep["deployment"]) for rep in repeats), 3)
    fig["fatal_failures_per_episode"] = mean_se(per_rep("fatal"))[0]
    fig["collection_fatal_failures"] = round(statistics.fmean(sum(r["fatal"] for r in rep["collection"]) for rep in repeats), 3)
    fig["repeated_fatal_failures"] = round(statistics.fmean(sum(r["repeated_fatal"] for r in rep["deployment"]) for rep in repeats), 3)
    fig["collection_repeated_fatal_failures"] = round(
        statistics.fmean(sum(r["repeated_fatal"] for r in rep["collection"]) for rep in repeats), 3)
    fig["collection_success"] = round(statistics.fmean(statistics.fmean(float(r["passed"]) for r in rep["collection"]) if rep["collection"] else 0.0 for rep in repeats), 4)
    fig["repeats"] = len(repeats)
    seqs = [rep["collection"] + rep["deployment"] for rep in repeats]
    n = min(len(s) for s in seqs) if seqs else 0

    def cumulative(key: str) -> list[float]:
        sums = [list(itertools.accumulate(row[key] for row in s[:n])) for s in seqs]
        return [round(statistics.fmean(c[i] for c in sums), 3) for i in range(n)]

    curves = {
        "cumulative_fatal_failures": cumulative("fatal"),
        "cumulative_repeated_fatal_failures": cumulative("repeated_fatal"),
        "success": [round(statistics.fmean(float(s[i]["passed"]) for s in seqs), 3) for i in range(n)],
    }
    return fig, curves


def run_env_bench(*, env_name: str = DEFAULT_ENV, collect: str | None = None, seeds: str | None = None,
                  fold: str = "test", mode: str = "static", repeats: int = DEFAULT_REPEATS,
                  max_steps: int = DEFAULT_MAX_STEPS, designs: Sequence[str] = TEXT_DESIGN_NAMES, seed: int = 0,
                  progress: Progress | None = None, context_tokens: int | None = None,
                  executor_factory: ExecutorFactory = text_executor, executor_name: str = "text",
                  delivery: str = DEFAULT_DELIVERY, without: Collection[str] = ()) -> dict[str, Any]:
    """The whole bench: ``{"env", "setting", "fold", "mode", "executor", "designs": {...}, "curves": {...}}``.

    ``executor_factory`` builds the executor of each repeat (``text_executor`` by default,
    ``llm_executor_factory(...)`` for a chat model); ``executor_name`` labels it in the result.
    ``collect`` / ``seeds`` left None are ``DEFAULT_COLLECT`` / ``DEFAULT_SEEDS`` cut to the fold's size
    (``default_range``: ScienceWorld's identify-life-stages-1 has 6 train and 5 test seeds); a range given
    explicitly past the fold's end is an error.
    """
    unknown = [d for d in designs if d not in TEXT_DESIGNS]
    if unknown:
        raise EnvError(f"unknown design(s) {unknown}; choose from {', '.join(TEXT_DESIGN_NAMES)}")
    rules_config(without)  # an unknown rule name is refused before any game is played

    def run_one(name: str, env: Any, collect_tasks: list[TaskSpec], deploy_tasks: list[TaskSpec], r: int) -> dict[str, list[dict[str, Any]]]:
        return run_design(name, env, collect_tasks, deploy_tasks, mode=mode, seed=seed, repeat=r, max_steps=max_steps,
                          context_tokens=context_tokens, executor_factory=executor_factory, delivery=delivery,
                          without=without)

    return run_designs(env_name, designs=designs, collect=collect, seeds=seeds, fold=fold, mode=mode, repeats=repeats,
                       run_one=run_one, progress=progress,
                       about={"executor": executor_name, "delivery": delivery, "max_steps": max_steps,
                              "rules": rules_in_force(without)})


def format_text(result: dict[str, Any]) -> str:
    """A table for people."""
    lines = [f"{result['env']}:{result['setting']} fold {result['fold']} mode {result['mode']} executor {result.get('executor', 'text')}",
             f"{'design':<31}{'success':>14}{'score':>7}{'steps':>7}{'fatal':>7}{'repeat':>7}{'invalid':>8}{'tok/task':>9}{'guarded':>8}{'contra':>7}"]
    for name, d in result["designs"].items():
        lines.append(f"{name:<31}{d['success']:>8.2f}±{d['success_se']:<5.2f}{d['score']:>7.2f}{d['steps']:>7.1f}"
                     f"{d['fatal_failures']:>7.1f}{d['repeated_fatal_failures']:>7.1f}{d['invalid_actions']:>8.2f}{d['context_tokens_per_task']:>9.0f}"
                     f"{d.get('guarded_proposals', 0.0):>8.2f}{d.get('contradicted_notes', 0.0):>7.2f}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench env``."""
    parser.add_argument("--env", default=DEFAULT_ENV, help=f"NAME[:SETTING] (default {DEFAULT_ENV})")
    parser.add_argument("--collect-seeds", default=None,
                        help=f"train-fold positions A-B (default {DEFAULT_COLLECT}, cut to a smaller fold)")
    parser.add_argument("--seeds", default=None, help=f"deployment positions A-B (default {DEFAULT_SEEDS}, cut to a smaller fold)")
    parser.add_argument("--fold", default="test", choices=("train", "dev", "test"))
    parser.add_argument("--mode", default="static", choices=("static", "dynamic"))
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS)
    parser.add_argument("--designs", nargs="+", default=None, choices=list(dict.fromkeys([*TEXT_DESIGN_NAMES, *DEMO_DESIGNS])),
                        help="the designs to compare (default: every design of the mode; with --demos, bench.demos.DEMO_DESIGNS)")
    parser.add_argument("--context-tokens", type=int, default=None,
                        help="langmem_plus's max_context_tokens (default: the config's)")
    parser.add_argument("--delivery", default=DEFAULT_DELIVERY, choices=("triggered", "pre_run"),
                        help="how langmem_plus hands text rules over: at the steps they fire on (default), or all before the task")
    parser.add_argument("--without", default="", metavar="NAME[,NAME]",
                        help=f"switch langmem_plus's delivery rules or learning mechanisms off by name, for ablation: "
                             f"{', '.join(SWITCHABLE_NAMES)}")
    parser.add_argument("--agent", action="store_true",
                        help="play every game as a LangChain create_agent agent (TextGameExecutor inside a chat model, "
                             "env_tool; langmem_plus through LearningMiddleware, a baseline's notes in the system message: bench.agent_env)")
    parser.add_argument("--executor", default="text", choices=("text", "careless", "literal"),
                        help="who plays: the bench's TextGameExecutor (default), or an outside chat model written to "
                             "memory's public text only (bench.outside; implies --agent)")
    parser.add_argument("--demos", type=int, default=None, metavar="N",
                        help="learn from N demonstrations per task (the env's gold sequences of train variations) "
                             "instead of collection runs, and compare the demonstration designs (bench.demos)")
    parser.add_argument("--own-runs", type=int, default=None, metavar="N",
                        help="task by task like --demos, but each design first plays N train variations of the task "
                             "itself and learns from its own runs (no demonstrations; bench.demos.learn_own)")
    parser.add_argument("--variations", type=int, default=1, metavar="K",
                        help="with --demos or --own-runs: variations of --fold played per task (default 1)")
    parser.add_argument("--tasks", default=None, metavar="A,B",
                        help="with --demos or --own-runs: the tasks to play (default: every task of the env, e.g. all 30 "
                             "of sciworld)")
    parser.add_argument("--llm-base-url", default=None,
                        help="run LLMExecutor over this OpenAI-compatible endpoint instead of TextGameExecutor "
                             "(e.g. http://127.0.0.1:8000/v1; needs the `openai` extra)")
    parser.add_argument("--llm-model", default=None, help="the chat model's name at --llm-base-url")
    parser.add_argument("--llm-api-key-env", default="OPENAI_API_KEY",
                        help="environment variable holding the endpoint's key (default OPENAI_API_KEY; local servers need none)")


def executor_from_args(args: argparse.Namespace) -> tuple[ExecutorFactory, str]:
    """The executor factory and its label from ``--llm-base-url`` / ``--llm-model`` (both or neither)."""
    url, model = getattr(args, "llm_base_url", None), getattr(args, "llm_model", None)
    if url is None and model is None:
        return text_executor, "text"
    if not url or not model:
        raise InvalidArgument("--llm-base-url and --llm-model go together: give both to run LLMExecutor")
    return llm_executor_factory(url, model, api_key_env=getattr(args, "llm_api_key_env", "OPENAI_API_KEY")), f"llm:{model}"


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench env``."""
    factory, label = executor_from_args(args)
    started = time.perf_counter()
    outside = getattr(args, "executor", "text")
    if getattr(args, "demos", None) is not None or getattr(args, "own_runs", None) is not None:
        return _run_demos(args, factory)
    if getattr(args, "agent", False) or outside != "text":
        if label != "text":
            raise InvalidArgument("--agent plays a chat model of the bench's inside the agent; it does not take --llm-* options")
        if args.without:
            raise InvalidArgument("--without switches rules of the bench's own loop; it does not go with --agent or --executor")
        from langmem_plus.bench.agent_env import run_agent_bench

        result = run_agent_bench(env_name=args.env, collect=args.collect_seeds, seeds=args.seeds, fold=args.fold,
                                 mode=args.mode, repeats=args.repeats, max_steps=args.max_steps, designs=args.designs or list(TEXT_DESIGN_NAMES),
                                 seed=args.seed, progress=lambda m: print(m, file=sys.stderr, flush=True),
                                 delivery=args.delivery, executor=outside)
    else:
        result = run_env_bench(env_name=args.env, collect=args.collect_seeds, seeds=args.seeds, fold=args.fold, mode=args.mode,
                               repeats=args.repeats, max_steps=args.max_steps, designs=args.designs or list(TEXT_DESIGN_NAMES), seed=args.seed,
                               progress=lambda m: print(m, file=sys.stderr, flush=True), context_tokens=args.context_tokens,
                               executor_factory=factory, executor_name=label, delivery=args.delivery,
                               without=[n.strip() for n in args.without.split(",") if n.strip()])
    print(f"[env] done in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    print(json.dumps(result) if args.json else format_text(result))
    return 0


def _run_demos(args: argparse.Namespace, factory: ExecutorFactory) -> int:
    """``bench env --demos N`` (or ``--own-runs N``): the demonstration designs task by task (``bench.demos``)."""
    from langmem_plus.bench.demos import DEFAULT_DEMOS_MAX_STEPS, DemoSource, format_demo_text, run_demo_bench
    from langmem_plus.bench.demos import sciworld_demonstrations, twx_demonstrations
    from langmem_plus.bench.designs.evaluation import stderr_lines

    base, _, setting = args.env.partition(":")
    own_runs = getattr(args, "own_runs", None)
    if (args.demos is None) == (own_runs is None):
        raise InvalidArgument("give --demos N (learn from demonstrations) or --own-runs N (learn from own runs), not both")
    if (args.demos if own_runs is None else own_runs) < 1 or args.variations < 1:
        raise InvalidArgument("--demos, --own-runs and --variations must be at least 1")
    chosen = list(args.designs or DEMO_DESIGNS)
    if any(d not in DEMO_DESIGNS for d in chosen):
        raise InvalidArgument(f"--demos compares {', '.join(DEMO_DESIGNS)}; not {[d for d in chosen if d not in DEMO_DESIGNS]}")
    max_steps = args.max_steps if args.max_steps != DEFAULT_MAX_STEPS else DEFAULT_DEMOS_MAX_STEPS
    simplifications: str | None = None
    source: DemoSource | None
    if base == "twx-cooking":  # one "task": the setting; demonstrations are the game's gold sequences of train games
        tasks, source = [setting or "default"], twx_demonstrations("cooking")
    elif base == "sciworld":
        from langmem_plus.envs.sciworld import task_names

        names = task_names()
        listed, _, simplifications = setting.partition(":")  # sciworld:TASKS[:SIMPLIFICATIONS]
        if args.tasks:
            tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
        elif listed and listed != "all":
            tasks = [t.strip() for t in listed.split(",") if t.strip()]
        else:
            tasks = names
        unknown = [t for t in tasks if t not in names]
        if unknown:
            raise InvalidArgument(f"unknown ScienceWorld task(s) {unknown}; choose from {', '.join(names)}")
        simplifications = simplifications or None
        source = sciworld_demonstrations(simplifications) if own_runs is None else None  # no JVM of gold replays
    else:
        raise InvalidArgument(f"--demos needs an env with demonstrations (sciworld, twx-cooking); {base!r} has none here")
    started = time.perf_counter()
    result = run_demo_bench(env_base=base, simplifications=simplifications, tasks=tasks, demos=args.demos or 0,
                            variations=args.variations, fold=args.fold, repeats=args.repeats, max_steps=max_steps,
                            designs=chosen, mode=args.mode, seed=args.seed, executor_factory=factory,
                            source=source if own_runs is None else None, own_runs=own_runs or 0, progress=stderr_lines)
    print(f"[env --demos] done in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    print(json.dumps(result) if args.json else format_demo_text(result))
    return 0


__all__ = ["BENCH_NAME", "ExecutorFactory", "PlayOne", "RunOne", "play_phases", "run_designs", "TEXT_DESIGNS", "TEXT_DESIGN_NAMES", "add_arguments", "default_range", "executor_from_args",
           "format_text",
           "llm_executor_factory", "parse_range", "run", "run_env_bench", "summarize", "text_executor"]
