"""One run of a task with memory, from the first hint to the end that learns: ``memory.start_run(task)``.

The learning loop's calls (``retrieve_pre_run``, ``capture``, ``retrieve_on_error``, ``check_call``,
``activations_for``, ``end_run``) ask the caller to carry the run's steps, events and activations between them.
A ``Run`` carries them: ``hints()`` is what memory advises now, ``record(step)`` records a step taken (and answers
a failure with the lessons for it), ``check(action)`` says what memory holds against an action before it is taken,
``end(verdict)`` learns and returns the ``RunReport``. Every lesson shown is activated once per moment, so its
utility is measured on the run's outcome. Where the task's domain has a plugin that advises at each step (a text
game), ``hints()`` and ``check()`` carry that advice too. ``AsyncRun`` (``memory.astart_run``) is the same for
``async`` code, each call on a worker thread (Chroma's embedded client is synchronous).

A loop that keeps the run in a state of its own (the LangGraph nodes, ``LearningMiddleware``) takes it up as a
``Run`` for each call (``Run(memory, task, steps=..., events=..., activations=...)``) and hands it the steps it
numbered itself with ``observe(step)``, which captures without asking for lessons. A loop that shows lessons in its
own way (within its own token budget, say) retrieves them through the run (``retrieve_pre_run``,
``retrieve_on_error``), which activates nothing, and records what it showed with ``activate``.

Example:
    >>> import tempfile
    >>> from langmem_plus import LearningMemory, Step, TaskSpec, Verdict
    >>> memory = LearningMemory.open(tempfile.mkdtemp(), namespace=("acme", "agent-7"))
    >>> with memory.start_run(TaskSpec(task_id="t1", goal="count rows", tool="sqlite3")) as run:
    ...     run.hints()
    ...     run.record(action="SELECT COUNT(*) FROM pets", observation="3")
    ...     report = run.end(Verdict(passed=True, score=1.0))
    []
    []
    >>> report.passed, len(run.steps)
    (True, 1)
    >>> memory.close()
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import ValidationError

from langmem_plus.errors import InvalidArgument
from langmem_plus.plugins import StepAdvisor, StepOpening, StepSession, step_advisor_for
from langmem_plus.records import Activation, ErrorEvent, Hint, Moment, RunReport, ScoredItem, Step, TaskSpec, Verdict, WorkingContext
from langmem_plus.retrieval.call_guard import Held, guard_activations, rewritten_args

if TYPE_CHECKING:
    from langmem_plus.memory.facade import LearningMemory

RECENT_STEPS = 5
"""Steps the working context counts recent failures over."""


def working_context(task: TaskSpec, steps: Sequence[Step], event: ErrorEvent | None = None, *, chars: int) -> WorkingContext:
    """The run's working context for a retrieval: its goal and tool, the latest observation and failure (at most
    ``chars`` characters each), the steps since progress last rose, and the failures among the recent steps."""
    stalls, best = 0, -1.0
    for s in steps:
        p = s.feedback.progress
        if p is not None and p > best:
            best, stalls = p, 0
        else:
            stalls += 1
    last = steps[-1] if steps else None
    return WorkingContext(
        goal=task.goal,
        context=task.tool or task.domain or "",
        obs=last.observation[:chars] if last else "",
        last_fail=event.error_text[:chars] if event else "",
        stalls=stalls,
        recent_failures=sum(1 for s in steps[-RECENT_STEPS:] if s.feedback.failed),
    )


class GuardedCall(NamedTuple):
    """The call guard's answer to one proposed call, as a run shows it."""

    held: list[Held]
    """Every lesson held against it, promoted first."""
    quoted: list[Held]
    """The ones an answer quotes: at most ``retrieval.guard_max_lessons``, the first of ``held``."""
    hints: list[Hint]
    """The quoted lessons as hints."""
    activations: list[Activation]
    """One activation per quoted lesson, at the step the call would be."""


def guard_call(memory: LearningMemory, tool: str, args: Mapping[str, Any], *, run_id: str, step: int) -> GuardedCall:
    """What memory holds against a proposed call of ``tool`` with ``args`` (``LearningMemory.check_call``): all of it,
    and the lessons an answer quotes (``retrieval.guard_max_lessons``) as hints, each activated (``Run.check``)."""
    held = memory.check_call(tool, args)
    quoted = held[: memory.config.retrieval.guard_max_lessons]
    items = [ScoredItem(kind="lesson", item=h.lesson, score=h.lesson.reliability) for h in quoted]
    return GuardedCall(held, quoted, memory.hints(items), guard_activations(quoted, run_id=run_id, step=step))


class Run:
    """One run of ``task`` with ``memory`` (module docstring). Not thread-safe: one run, one caller.

    A run whose record lives elsewhere between calls (a LangGraph state, an agent's state: the nodes and
    ``LearningMiddleware``) is taken up from what it holds so far, ``steps``, ``events`` and ``activations``, for
    the call at hand; what that call adds is what ``activations`` (and ``retrieved``) gained. Its step advice is
    taken up the same way: the pre-run items it was shown (``pre_run``, or a function that reads them, called only
    when they are needed), the proposals answered (``answers``), and
    the ``session`` that outlives the call (``StepAdvisor.session``, rebuilt from those).

    Args:
        step_advice: The step advice in force: True, the plugin of the task's domain (when it gives any); a
            ``StepAdvisor``; False, none (a loop that routes its own steps).
        budget: Tokens the step advice's opening block may take; None, ``context.agent_context_tokens``.
    """

    def __init__(self, memory: LearningMemory, task: TaskSpec, *, run_id: str | None = None,
                 step_advice: bool | StepAdvisor = True, steps: Sequence[Step] = (), events: Sequence[ErrorEvent] = (),
                 activations: Sequence[Activation] = (),
                 pre_run: Sequence[ScoredItem] | Callable[[], Sequence[ScoredItem]] | None = None,
                 answers: Sequence[tuple[int, str]] = (), session: StepSession | None = None,
                 budget: int | None = None) -> None:
        self.memory = memory
        self.task = task
        self.run_id = run_id or f"{task.task_id}-{uuid.uuid4().hex[:8]}"
        self.steps: list[Step] = list(steps)
        self.events: list[ErrorEvent] = list(events)
        self.activations: list[Activation] = list(activations)
        self.retrieved: list[ScoredItem] = []
        """The latest retrieval's items (before a run: on the first ``hints()``; after a failure: in ``record``)."""
        self.report: RunReport | None = None
        self.held: list[Held] = []
        """Every lesson the latest ``check`` of a tool call held against it (with the values it rewrites)."""
        self.quoted: list[Held] = []
        """Those of ``held`` the latest ``check`` returned as hints (``retrieval.guard_max_lessons``)."""
        self._advisor: StepAdvisor | None = (
            step_advice if not isinstance(step_advice, bool)
            else step_advisor_for(task.domain) if step_advice and task.domain else None)
        self._session: StepSession | None = (
            None if self._advisor is None else session if session is not None else self._advisor.session())
        self._pre: list[ScoredItem] | None = list(pre_run) if pre_run is not None and not callable(pre_run) else None
        self._read_pre = pre_run if callable(pre_run) else None
        self._pre_shown = pre_run is not None
        self._on_error: list[Hint] = []
        self._answers: list[tuple[int, str]] = list(answers)
        self._budget = budget if budget is not None else memory.config.context.agent_context_tokens

    # ------------------------------------------------------------------ what memory advises
    def opening(self) -> StepOpening:
        """How the run opened under its step advice: the pre-run items in force and the block shown before the first
        step (``StepAdvisor.open``).

        Raises:
            InvalidArgument: the run has no step advice.
        """
        if self._advisor is None:
            raise InvalidArgument(f"run {self.run_id!r} has no step advice; its opening is its hints()")
        return self._advisor.open(self._taken_pre() or [], self.memory.config, budget=self._budget)

    def _taken_pre(self) -> list[ScoredItem] | None:
        """The pre-run items, read on first use when the run was taken up with a function that reads them."""
        if self._pre is None and self._read_pre is not None:
            self._pre, self._read_pre = list(self._read_pre()), None
        return self._pre

    def _step_args(self) -> dict[str, Any]:
        return {"memory": self.memory, "run_id": self.run_id, "task": self.task, "steps": self.steps,
                "answers": self._answers, "opening": self.opening}

    def _pre_run(self) -> list[ScoredItem]:
        """The pre-run items, retrieved on first use and activated once."""
        items = self.retrieve_pre_run()
        if not self._pre_shown:
            self._pre_shown = True
            self.activate(list(self.opening().fitted) if self._advisor is not None else items, moment="pre_run")
        return items

    def retrieve_pre_run(self, tools: Mapping[str, str | None] | None = None) -> list[ScoredItem]:
        """The lessons for the task before it starts, retrieved once in the run's working context; with ``tools``
        (name -> description), those of the tools the task is likely to call (``LearningMemory.retrieve_for_tools``).
        Nothing is activated: ``hints()`` activates what it shows, a caller showing them itself calls ``activate``."""
        self._check_open()
        if self._taken_pre() is None:
            memory = self.memory
            if tools is not None:
                items = memory.retrieve_for_tools(self.task, tools, run_id=self.run_id)
            else:
                chars = memory.config.capture.context_text_chars
                items = memory.retrieve_pre_run(self.task, working_context(self.task, self.steps, chars=chars), run_id=self.run_id)
            self._pre, self.retrieved = items, list(items)
            return items
        return self._pre or []

    def retrieve_on_error(self, event: ErrorEvent, context: WorkingContext | None = None) -> list[ScoredItem]:
        """The lessons for a failure of this run (``observe`` returns its event), retrieved in ``context`` (default:
        the run's working context, ``working_context``) and kept in ``retrieved``; nothing is activated."""
        self._check_open()
        if context is None:
            context = working_context(self.task, self.steps, event, chars=self.memory.config.capture.context_text_chars)
        self.retrieved = self.memory.retrieve_on_error(event, context, run_id=self.run_id)
        return self.retrieved

    def activate(self, items: Sequence[ScoredItem], *, moment: Moment, step: int | None = None,
                 fingerprint_id: str | None = None) -> list[Activation]:
        """Record that ``items`` were shown at ``step`` (default: the next step) at ``moment``, so the run's outcome
        measures them; the new activations are returned and kept in ``activations``."""
        self._check_open()
        new = self.memory.activations_for(items, run_id=self.run_id, step=len(self.steps) if step is None else step,
                                          moment=moment, fingerprint_id=fingerprint_id)
        self.activations += new
        return new

    def hints(self) -> list[Hint]:
        """What memory advises now: the pre-run lessons (retrieved on the first call), the lessons for the latest
        failure (``record``), and the advice standing at this step where the task's domain gives any."""
        self._check_open()
        items = self._pre_run()
        if self._advisor is not None:
            items = [i for i in items if not self._advisor.at_step(i)]
        out = [*self.memory.hints(items), *self._on_error, *self.advice()]
        return list({h.source_id: h for h in out}.values())

    def advice(self) -> list[Hint]:
        """The step advice standing at this step (``[]`` without step advice): what the agent is shown before its
        next proposal."""
        self._check_open()
        if self._session is None:
            return []
        self._pre_run()
        return self._session.shown(**self._step_args())

    def advised(self) -> list[Activation]:
        """One activation per item the step advice gave in the run so far (shown, or standing held), at the step it
        first stood; ``end`` adds them to ``activations``."""
        self._check_open()
        if self._session is None:
            return []
        self._pre_run()
        return self._session.activations(**self._step_args())

    # ------------------------------------------------------------------ steps
    def record(self, step: Step | None = None, /, **fields: Any) -> list[Hint]:
        """Record a step taken, a ``Step`` or its fields (``action=``, ``observation=``, ``feedback=``, ``tool=``, ...),
        numbered by its place in the run; when it failed, the failure is captured and the lessons for it are returned
        (and stay among ``hints()`` until the next failure).

        Raises:
            InvalidArgument: both a step and fields, or fields a ``Step`` does not take.
        """
        self._check_open()
        memory = self.memory
        if step is not None and fields:
            raise InvalidArgument("record takes a Step or a step's fields, not both")
        unknown = sorted(set(fields) - set(Step.model_fields))
        if unknown:
            raise InvalidArgument(f"a step has no field(s) {unknown}; it has {sorted(Step.model_fields)}")
        try:
            step = (step or Step(index=0, **fields)).model_copy(update={"index": len(self.steps)})
        except ValidationError as exc:
            raise InvalidArgument(f"not a step: {exc.errors()[0]['msg']} ({exc.errors()[0]['loc']})") from exc
        event = self.observe(step)
        if event is None:
            return []
        items = self.retrieve_on_error(event)
        self.activate(items, moment="on_error", fingerprint_id=event.fingerprint_id)
        self._on_error = memory.hints(items)
        return self._on_error

    def observe(self, step: Step) -> ErrorEvent | None:
        """Record a step another loop took and numbered (a graph's act node, an agent's tool call) as it is: captured
        when it failed (the event is returned and kept), with no lessons asked for, that loop asking in its own way.
        ``record`` is this, numbered, plus the lessons for a failure.

        Raises:
            InvalidArgument: the run has ended already.
        """
        self._check_open()
        event = self.memory.capture(step, run_id=self.run_id, task=self.task, history=self.steps)
        self.steps.append(step)
        if event is not None:
            self.events.append(event)
        return event

    def check(self, action: str, args: Mapping[str, Any] | None = None, *, step: int | None = None) -> list[Hint]:
        """What memory holds against a proposed action before it is taken; ``[]``: take it.

        With ``args``, ``action`` is a tool's name and ``args`` the call's arguments: the lessons whose WRONG form
        matches inside an argument, at most ``retrieval.guard_max_lessons``, as hints, each activated at ``step``
        (default: the next step; parallel calls of one round are numbered by their place in it). ``held`` keeps every
        lesson held, ``quoted`` the ones returned, and ``rewritten_args`` gives the call as the held rewrites write
        it. Without ``args``, the step advice of the task's domain answers the action (a text game's command); a task
        without step advice has nothing held against a bare action.
        """
        self._check_open()
        memory = self.memory
        if args is not None:
            guarded = guard_call(memory, action, args, run_id=self.run_id, step=len(self.steps) if step is None else step)
            self.held, self.quoted = guarded.held, guarded.quoted
            self.activations += guarded.activations
            return guarded.hints
        if self._session is None:
            return []
        self._pre_run()
        held = self._session.check(action=action, **self._step_args())
        if held:
            self._answers.append((len(self.steps), action))
        return held

    def rewritten_args(self, args: Mapping[str, Any], *, promoted: bool = False) -> dict[str, Any] | None:
        """``args`` as the rewrites the latest ``check`` held write them (``promoted``: only promoted lessons' rewrites,
        the ones safe to apply without asking); None when none applies."""
        return rewritten_args(args, self.rewriting(promoted=promoted))

    def rewriting(self, *, promoted: bool = False) -> list[Held]:
        """The lessons of the latest ``check`` that rewrite a value (``promoted``: promoted ones only), ranked."""
        return [h for h in self.held if h.after is not None and (not promoted or h.lesson.status == "promoted")]

    # ------------------------------------------------------------------ the end
    def end(self, verdict: Verdict | None = None) -> RunReport:
        """Learn from the run: synthesize lessons from its failures, measure what it was shown by ``verdict`` (None:
        judged from the steps' own signals) and apply the lifecycle. A run ends once.

        Raises:
            InvalidArgument: the run has ended already.
        """
        self._check_open()
        if self._session is not None:
            self.activations += self.advised()
            self._session.drop(self.run_id)
        self.report = self.memory.end_run(run_id=self.run_id, task=self.task, steps=self.steps, events=self.events,
                                          activations=self.activations, verdict=verdict)
        return self.report

    def _check_open(self) -> None:
        if self.report is not None:
            raise InvalidArgument(f"run {self.run_id!r} has ended; start another with memory.start_run(task)")

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        """A run left without ``end`` ends on its steps' own signals, so nothing it recorded is lost."""
        if self.report is None:
            self.end()


class AsyncRun:
    """``Run`` for ``async`` code: the same calls, awaited, each on a worker thread."""

    def __init__(self, run: Run) -> None:
        self.run = run

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.run.run_id

    @property
    def report(self) -> RunReport | None:
        """The ``RunReport`` once the run has ended."""
        return self.run.report

    async def hints(self) -> list[Hint]:
        """``Run.hints``."""
        return await asyncio.to_thread(self.run.hints)

    async def record(self, step: Step | None = None, /, **fields: Any) -> list[Hint]:
        """``Run.record``."""
        return await asyncio.to_thread(lambda: self.run.record(step, **fields))

    async def observe(self, step: Step) -> ErrorEvent | None:
        """``Run.observe``."""
        return await asyncio.to_thread(self.run.observe, step)

    async def check(self, action: str, args: Mapping[str, Any] | None = None, *, step: int | None = None) -> list[Hint]:
        """``Run.check``."""
        return await asyncio.to_thread(lambda: self.run.check(action, args, step=step))

    async def retrieve_pre_run(self, tools: Mapping[str, str | None] | None = None) -> list[ScoredItem]:
        """``Run.retrieve_pre_run``."""
        return await asyncio.to_thread(self.run.retrieve_pre_run, tools)

    async def retrieve_on_error(self, event: ErrorEvent, context: WorkingContext | None = None) -> list[ScoredItem]:
        """``Run.retrieve_on_error``."""
        return await asyncio.to_thread(self.run.retrieve_on_error, event, context)

    async def end(self, verdict: Verdict | None = None) -> RunReport:
        """``Run.end``."""
        return await asyncio.to_thread(self.run.end, verdict)

    async def __aenter__(self) -> AsyncRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """As ``Run.__exit__``."""
        if self.run.report is None:
            await self.end()


__all__ = ["AsyncRun", "GuardedCall", "Run", "guard_call", "working_context"]
