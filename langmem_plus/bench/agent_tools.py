"""``langmem-plus bench agent-tools``: a real ``create_agent`` agent over real programs, with and without memory.

The world (``bench.toolworld``) puts the real ``sqlite3``, ``jq``, ``git`` and ``awk`` behind four LangChain
tools and asks a seeded stream of questions: a learning half, then a held-out half with new literal values
(tables, columns, fields, branches, files, numbers) and the same habits. The model is ``HabitModel``: a scripted
chat model with habits real language models have, which reads memory only as the notes contract writes it (the
system message and the tool messages of calls memory stopped) and was frozen before the memory it judges.

Designs, each on its own fresh world and memory, the same agent and budget:

- ``no_memory``: the agent alone;
- ``langmem_plus``: ``memory.as_middleware()`` (the call guard, notes scoped to the tools the task is likely to
  call), learning after every question; ``langmem_plus_guard_only`` the same without notes before a call;
- ``vote_memory``, ``trajectory_retrieval``, ``flat_vector``: the designs of ``bench protocol``, their notes put
  in the system message in the contract's format, updated with each question's trajectory.

Per design, over the held-out half: tool errors, habits that recur after their first error, notes shown per model
call and the share the model could apply, memory tokens per model call (the system message's notes and the
guard's answers the model reads) and the extra model calls the guard cost. Also, once: what one guard check costs
with ``--guard-lessons`` lessons for the tool, beside a real tool call's own time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import Field

from langmem_plus._llm import message_text
from langmem_plus.bench.design_notes import DesignNotes
from langmem_plus.bench.designs.baselines import make_design
from langmem_plus.bench.seeds import parse_seeds
from langmem_plus.bench.designs.base import MemoryDesign
from langmem_plus.bench.toolworld import (
    HABITS,
    HabitModel,
    MissingProgramError,
    Question,
    ToolWorld,
    form_matches,
    notes_in_lines,
    questions,
)
from langmem_plus.bench.toolworld.notes import directives
from langmem_plus.demo import LogicalClock
from langmem_plus.integrations.agent_run import MEMORY_TITLE, tool_action, tool_step
from langmem_plus.memory import LearningMemory, Trajectory
from langmem_plus.records import Lesson, LessonScope, Step, TaskSpec, Verdict
from langmem_plus.tokens import count_tokens

BENCH_NAME = "agent-tools"
DESIGNS = ("no_memory", "langmem_plus", "langmem_plus_guard_only", "vote_memory", "trajectory_retrieval", "flat_vector")
"""Every design the bench can run, in report order (``langmem_plus_guard_only``: no notes before a call, so the call
guard and the notes after an error are all memory gives)."""
DEFAULT_TASKS = 44
"""Questions in a stream: the first half learns, the second is held out."""
DEFAULT_GUARD_LESSONS = 10_000
"""Lessons for one tool in the guard's speed check."""
SPEED_CALLS = 200
"""Proposed calls timed in the guard's speed check."""
RECURSION_LIMIT = 60
"""Graph steps one question may take (model and tool calls, the guard's answers among them)."""
SYSTEM_PROMPT = (
    "You answer questions about a small company's data with your tools: run_sql (a SQLite database), "
    "jq (JSON files), git (a repository) and awk (text files). Answer with the tool's output."
)
CLOCK_START = 1_700_000_000.0
"""The memory's logical clock starts here, so runs repeat exactly."""
NAMESPACE = ("bench", "agent-tools")

Progress = Callable[[str], None]


class _Recording(HabitModel):
    """The habit model, keeping the messages of every request (the bench reads what memory showed it)."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


class AnswerReferee:
    """Passed when a tool call of the run returned the question's expected output (the truth is real output)."""

    def __init__(self, expected: Mapping[str, str]) -> None:
        self.expected = expected
        """Goal -> expected output."""

    def judge(self, task: TaskSpec, trajectory: Sequence[Step]) -> Verdict:
        want = (self.expected.get(task.goal) or "").strip()
        got = any(not s.feedback.failed and want and s.observation.strip() == want for s in trajectory)
        return Verdict(passed=got, score=1.0 if got else 0.0, source="deterministic",
                       reasons=["a call returned the expected output" if got else "no call returned the expected output"])


def design_block(design_name: str, context: Any) -> str:
    """A baseline's context as a memory block: each hint a note line; a retrieved trajectory, line by line."""
    lines = [json.dumps(h.text, ensure_ascii=False) for h in context.hints]
    if design_name == "trajectory_retrieval" and context.text:
        lines += [json.dumps(line, ensure_ascii=False) for line in context.text.splitlines()]
    return "\n".join([MEMORY_TITLE, *(f"- {line}" for line in lines)]) if lines else ""


def _errors(on_error: BaseException, request: Any) -> str:
    return str(on_error)


@dataclass
class Asked:
    """What one question cost and showed."""

    question: Question
    tool_errors: int = 0
    habit_errors: list[str] = field(default_factory=list)
    """The habits shown by the calls that failed."""
    model_calls: int = 0
    guard_answers: int = 0
    notes: int = 0
    applicable: int = 0
    tool_notes: int = 0
    """Notes (with a lesson id) whose lesson is scoped to the question's tool."""
    identified: int = 0
    """Notes whose lesson the bench could look up (``tool_notes``' denominator)."""
    memory_tokens: int = 0
    correct: bool = False


def _memory_text(system: str) -> str:
    """What memory added to the system prompt: everything after the prompt itself."""
    return system.replace(SYSTEM_PROMPT, "", 1).strip()


def _note_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- ")]


def _applicable(lines: Sequence[str], draft: Mapping[str, str]) -> int:
    """Notes whose WRONG form (read as the model reads it) matches inside the habit's draft of the call."""
    count = 0
    for note in notes_in_lines(lines):
        forms = [getattr(d, "wrong", None) or getattr(d, "form", None) for d in directives([note])]
        if any(f and any(form_matches(f, v) for v in draft.values()) for f in forms):
            count += 1
    return count


def _lesson_tool(line: str, lesson_of: Callable[[str], Lesson | None] | None) -> str | None | bool:
    """The tool of a note's lesson (by the id in its line); False when the note names no lesson the bench knows."""
    if lesson_of is None or not line.startswith("- [lesson:"):
        return False
    lesson = lesson_of(line[len("- [lesson:"):].split("]", 1)[0])
    return False if lesson is None else lesson.scope.tool


def read_messages(q: Question, seen: list[list[BaseMessage]], final: list[BaseMessage],
                  lesson_of: Callable[[str], Lesson | None] | None) -> Asked:
    """One question's figures from the requests the model was sent and the conversation it ended with."""
    asked = Asked(q, model_calls=len(seen))
    draft = HABITS[q.habit].draft(q.args) if q.habit else {}
    calls = {c["id"]: c for m in final if isinstance(m, AIMessage) for c in m.tool_calls}
    for m in final:
        if not isinstance(m, ToolMessage):
            continue
        if isinstance(m.artifact, dict) and "guarded" in m.artifact:
            asked.guard_answers += 1
        elif m.status == "error":
            asked.tool_errors += 1
            call = calls.get(m.tool_call_id)
            if call is not None:
                asked.habit_errors += [h.name for h in HABITS.values() if h.present(call["name"], call["args"])]
    for request in seen:
        system = next((message_text(m) for m in request if isinstance(m, SystemMessage)), "")
        block = _memory_text(system)
        guard = [message_text(m) for m in request if isinstance(m, ToolMessage)
                 and isinstance(m.artifact, dict) and "guarded" in m.artifact]
        asked.memory_tokens += (count_tokens(block).n if block else 0) + sum(count_tokens(g).n for g in guard)
        lines = _note_lines(block)
        asked.notes += len(lines)
        asked.applicable += _applicable(lines, draft)
        for line in lines:
            tool = _lesson_tool(line, lesson_of)
            if tool is not False:
                asked.identified += 1
                asked.tool_notes += tool == q.tool
    last = final[-1] if final else None
    asked.correct = bool(q.expected) and isinstance(last, AIMessage) and (q.expected or "").strip() in message_text(last)
    return asked


def steps_of(messages: Sequence[BaseMessage]) -> list[Step]:
    """The tool calls of a conversation as steps (a baseline's trajectory); the guard's answers are not steps."""
    calls = {c["id"]: c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    steps: list[Step] = []
    for m in messages:
        if not isinstance(m, ToolMessage) or (isinstance(m.artifact, dict) and "guarded" in m.artifact):
            continue
        call = calls.get(m.tool_call_id)
        name, args = (call["name"], call["args"]) if call is not None else (m.name or "", {})
        steps.append(tool_step(len(steps), name, tool_action(name, args), m, args=args))
    return steps


@contextmanager
def _design(name: str, root: Path, expected: Mapping[str, str], guard: str) -> Iterator[tuple[list[Any], Any]]:
    """The middleware list of one design (before ``ToolErrorMiddleware``) and its handle (memory or design)."""
    if name == "no_memory":
        yield [], None
    elif name.startswith("langmem_plus"):
        memory = LearningMemory.open(root / "memory", namespace=NAMESPACE, clock=LogicalClock(CLOCK_START))
        try:
            yield [memory.as_middleware(referee=AnswerReferee(expected), guard=guard,
                                        pre_run=name != "langmem_plus_guard_only")], memory
        finally:
            memory.close()
    else:
        design = make_design(name)
        try:
            yield [DesignNotes()], design
        finally:
            design.close()


def run_design(name: str, seed: int, tasks: int, *, guard: str = "answer", progress: Progress | None = None) -> dict[str, Any]:
    """One design on one seed's world and stream: per-question figures and the summary."""
    with tempfile.TemporaryDirectory(prefix="lm-agent-tools-") as tmp:
        root = Path(tmp)
        world = ToolWorld(root / "world", seed=seed)
        stream = questions(world, tasks, seed=seed)
        expected = {q.text: q.expected or "" for q in stream}
        asked: list[Asked] = []
        with _design(name, root, expected, guard) as (middleware, handle):
            model = _Recording()
            agent = create_agent(model, world.tools, system_prompt=SYSTEM_PROMPT,
                                 middleware=[*middleware, ToolErrorMiddleware(on_error=_errors)])
            baseline = isinstance(handle, MemoryDesign) and not isinstance(handle, LearningMemory)
            lesson_of = handle.get_lesson if isinstance(handle, LearningMemory) else None
            for k, q in enumerate(stream):
                model.seen = []
                task = TaskSpec(task_id=f"q{k}", goal=q.text)
                if baseline:
                    middleware[0].block = design_block(name, handle.general_retrieve(task, run_id=f"q{k}"))
                result = agent.invoke({"messages": [HumanMessage(q.text)]}, {"recursion_limit": RECURSION_LIMIT})
                messages = result["messages"]
                asked.append(read_messages(q, model.seen, messages, lesson_of))
                if baseline:
                    passed = asked[-1].correct
                    handle.general_update(Trajectory(task=task, steps=steps_of(messages), run_id=f"q{k}",
                                                     verdict=Verdict(passed=passed, score=float(passed))))
                if progress is not None:
                    progress(f"[agent-tools] {name} seed {seed}: question {k + 1}/{len(stream)}")
        return summarize(asked)


def _recurrence(asked: Sequence[Asked]) -> dict[str, int]:
    """Per habit that failed at least once: the later questions in which it failed again."""
    first: dict[str, int] = {}
    again: dict[str, int] = {}
    for k, a in enumerate(asked):
        for habit in dict.fromkeys(a.habit_errors):
            if habit in first:
                again[habit] = again.get(habit, 0) + 1
            else:
                first[habit] = k
    return {h: again.get(h, 0) for h in first}


def _share(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def summarize(asked: Sequence[Asked]) -> dict[str, Any]:
    """A design's figures over the held-out half (recurrence over the whole stream), and per question."""
    held = [a for a in asked if a.question.phase == "heldout"]
    recur = _recurrence(asked)
    calls = sum(a.model_calls for a in held)
    notes = sum(a.notes for a in held)
    identified = sum(a.identified for a in held)
    return {
        "heldout_tool_errors": sum(a.tool_errors for a in held),
        "heldout_habit_questions": sum(1 for a in held if a.question.habit),
        "learn_tool_errors": sum(a.tool_errors for a in asked if a.question.phase != "heldout"),
        "habits_never_recur_share": _share(sum(1 for n in recur.values() if n == 0), len(recur)),
        "recurring_habits": sorted(h for h, n in recur.items() if n),
        "notes_per_model_call": _share(notes, calls),
        "applicable_note_share": _share(sum(a.applicable for a in held), notes),
        "tool_note_share": _share(sum(a.tool_notes for a in held), identified),
        "memory_tokens_per_model_call": _share(sum(a.memory_tokens for a in held), calls),
        "guard_extra_model_calls": sum(a.guard_answers for a in held),
        "model_calls": calls,
        "heldout_correct": sum(1 for a in held if a.correct),
        "heldout_questions": len(held),
        "per_question": [
            {"phase": a.question.phase, "tool": a.question.tool, "habit": a.question.habit,
             "tool_errors": a.tool_errors, "guard_answers": a.guard_answers, "model_calls": a.model_calls,
             "notes": a.notes, "applicable": a.applicable, "memory_tokens": a.memory_tokens, "correct": a.correct}
            for a in asked
        ],
    }


def _synthetic_lessons(tool: str, n: int) -> list[Lesson]:
    """``n`` distinct rewrite lessons for ``tool``, each on its own made-up function, half of them beside words every
    query has (``SELECT``, ``FROM``): what a large memory of one tool holds."""
    def wrong(k: int) -> str:
        return f"SELECT fn{k}(<id>) FROM" if k % 2 else f"fn{k}(<id>)"

    return [Lesson(id=f"les_speed_{k}", namespace=NAMESPACE, rule_text=f"WRONG: {wrong(k)} -> CORRECT: fun{k}(<id>)",
                   wrong=wrong(k), correct=f"fun{k}(<id>)", scope=LessonScope(tool=tool), status="promoted")
            for k in range(n)]


def guard_speed(lessons: int, *, calls: int = SPEED_CALLS) -> dict[str, Any]:
    """p50 of one guard check (``memory.check_call``) with ``lessons`` lessons for the tool, beside the p50 of the
    same call run by the real program, in one run (milliseconds)."""
    with tempfile.TemporaryDirectory(prefix="lm-guard-speed-") as tmp:
        world = ToolWorld(Path(tmp) / "world", seed=0)
        stream = [q for q in questions(world, DEFAULT_TASKS, seed=0) if q.tool == "run_sql"]
        memory = LearningMemory.open(Path(tmp) / "memory", namespace=NAMESPACE)
        try:
            memory.add_lessons(_synthetic_lessons("run_sql", lessons))
            memory.check_call("run_sql", {"query": "SELECT 1"})  # the tool's forms are indexed at its first check
            check, run = [], []
            for k in range(calls):
                q = stream[k % len(stream)]
                args = HABITS[q.habit].draft(q.args) if q.habit else q.args
                started = time.perf_counter()
                memory.check_call("run_sql", args)
                check.append(time.perf_counter() - started)
                if k < calls // 4:  # the program's own time settles quickly; it costs far more per call
                    started = time.perf_counter()
                    try:
                        world.call("run_sql", q.args)
                    finally:
                        run.append(time.perf_counter() - started)
        finally:
            memory.close()
    p50_check, p50_run = statistics.median(check) * 1000, statistics.median(run) * 1000
    return {"lessons_for_tool": lessons, "guard_check_ms_p50": round(p50_check, 4),
            "tool_call_ms_p50": round(p50_run, 3), "guard_share_of_tool_call": round(p50_check / p50_run, 4)}


MEAN_KEYS = ("heldout_tool_errors", "habits_never_recur_share", "notes_per_model_call", "applicable_note_share",
             "tool_note_share", "memory_tokens_per_model_call", "guard_extra_model_calls", "heldout_correct")


def run_bench(*, seeds: Sequence[int], tasks: int = DEFAULT_TASKS, designs: Sequence[str] = DESIGNS,
              guard: str = "answer", guard_lessons: int = DEFAULT_GUARD_LESSONS,
              progress: Progress | None = None) -> dict[str, Any]:
    """Every design on every seed: ``{"seeds", "tasks", "guard", "designs": {NAME: {**means, "seeds": {S: ...}}},
    "guard_speed"}``; a design's top-level figures are the means over the seeds."""
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        raise ValueError(f"unknown design(s) {', '.join(unknown)}; choose from {', '.join(DESIGNS)}")
    out: dict[str, Any] = {"seeds": list(seeds), "tasks": tasks, "guard": guard, "designs": {}}
    for name in designs:
        per_seed = {str(s): run_design(name, s, tasks, guard=guard, progress=progress) for s in seeds}
        means: dict[str, Any] = {}
        for key in MEAN_KEYS:
            values = [v[key] for v in per_seed.values() if v[key] is not None]
            means[key] = round(statistics.fmean(values), 3) if values else None
        out["designs"][name] = {**means, "seeds": per_seed}
    if "no_memory" in out["designs"] and "langmem_plus" in out["designs"]:
        base = sum(v["heldout_tool_errors"] for v in out["designs"]["no_memory"]["seeds"].values())
        ours = sum(v["heldout_tool_errors"] for v in out["designs"]["langmem_plus"]["seeds"].values())
        out["heldout_errors_vs_no_memory"] = round(ours / base, 3) if base else None
    if guard_lessons > 0:
        if progress is not None:
            progress(f"[agent-tools] guard speed with {guard_lessons} lessons for one tool")
        out["guard_speed"] = guard_speed(guard_lessons)
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``langmem-plus bench agent-tools``."""
    parser.add_argument("--seeds", default=None, help="several seeds, e.g. 0-2 or 0,5 (default: --seed)")
    parser.add_argument("--tasks", type=int, default=DEFAULT_TASKS, help=f"questions per stream (default {DEFAULT_TASKS})")
    parser.add_argument("--designs", default=",".join(DESIGNS), help="comma-separated designs (default: all)")
    parser.add_argument("--guard", default="answer", choices=("answer", "rewrite", "off"), help="the call guard's mode")
    parser.add_argument("--guard-lessons", type=int, default=DEFAULT_GUARD_LESSONS,
                        help=f"lessons for one tool in the guard speed check, 0 to skip (default {DEFAULT_GUARD_LESSONS})")


def _table(result: Mapping[str, Any]) -> str:
    keys = ("heldout_tool_errors", "habits_never_recur_share", "applicable_note_share", "tool_note_share",
            "memory_tokens_per_model_call", "guard_extra_model_calls", "heldout_correct")
    rows = [f"{'design':<22}" + "".join(f"{k[:18]:>20}" for k in keys)]
    for name, d in result["designs"].items():
        rows.append(f"{name:<22}" + "".join(f"{str(d[k]):>20}" for k in keys))
    speed = result.get("guard_speed")
    if speed:
        rows.append(f"guard check p50 {speed['guard_check_ms_p50']} ms with {speed['lessons_for_tool']} lessons; "
                    f"the tool call itself {speed['tool_call_ms_p50']} ms")
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``langmem-plus bench agent-tools``."""
    def show(line: str) -> None:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    seeds = parse_seeds(args.seeds) if args.seeds else [args.seed]
    designs = [d for d in args.designs.split(",") if d]
    try:
        result = run_bench(seeds=seeds, tasks=args.tasks, designs=designs, guard=args.guard,
                           guard_lessons=args.guard_lessons, progress=show)
    except (ValueError, MissingProgramError) as exc:  # an unknown design, or a program the world needs is missing
        show(f"error: {exc}")
        return 2
    print(json.dumps(result) if args.json else _table(result))
    return 0


__all__ = ["AnswerReferee", "BENCH_NAME", "DESIGNS", "add_arguments", "guard_speed", "read_messages", "run",
           "run_bench", "run_design", "steps_of", "summarize"]
