"""LearningMiddleware: any LangChain 1.x ``create_agent`` agent learns, with nothing for the model to call.

Memory is read and written around the agent loop through a ``Run`` taken up from its state (design.md §8):

- ``before_agent``: opens a run (``lm_run_id`` in the state) and retrieves the lessons
  for its goal (the first human message, unless the caller names one); with no ``tool``
  named, the first model call does, for the agent's tools the task is likely to call.
- ``wrap_model_call``: the pre-run lessons and the on-error lessons of the latest tool
  round go into the system message, as quoted data with their ids, within a token
  budget. With ``text_rules="at_step"`` the block is the one the bench's executor is shown
  (``short_memory``): the attempt opened as the bench opens one (``triggered_start``), the
  text rules that stand after the latest tool result (``StepDelivery``), short lines
  without ids under one title (the activations in the state carry the ids). The request
  is overridden; nothing is written into the message history.
- ``wrap_tool_call``: the call guard first (``Run.check``): a call a lesson of its tool
  holds against is answered with the lesson and the call as it writes it, instead of running
  (once per call and run; ``guard="rewrite"`` runs a promoted lesson's fix); with
  ``text_rules="at_step"`` the text guard answers a proposal the same way; every tool call
  that runs becomes a ``Step``; a raised exception or a ``ToolMessage`` with ``status="error"`` is a hard
  failure, and a ``ToolReport`` in the message's artifact (``env_tool``) gives the step all four feedback
  channels; a failure is fingerprinted (``Run.observe``, on the run taken up from the state) and retrieves
  on-error lessons for the next call. The call's ``ToolMessage`` comes back inside a ``Command`` that also
  carries the step, the event and the activations into the state.
- ``after_agent``: the run taken up from the state ends inside the graph (``Run.end``: synthesis, utility,
  promotion, suppression); the ``RunReport`` goes into ``lm_report``.

Per-run data lives in the agent state, so one instance serves any number of concurrent runs and threads.

Errors and placement. A tool exception is captured and re-raised unchanged, so the
agent's error policy holds (``create_agent``'s ToolNode re-raises all but invalid-argument
errors, which ends the run). List this middleware *before* (outside) ``ToolErrorMiddleware``
/ ``ToolRetryMiddleware``: it then sees each call's final outcome, their error
``ToolMessage`` included; listed after them, a step it re-raises is captured in the event
store and audit log, not in the run. LangGraph control flow (``GraphBubbleUp``) passes
through untouched, and a tool's ``Command`` result is returned as is, never a step.

Example:
    >>> from langchain.agents import create_agent  # doctest: +SKIP
    >>> agent = create_agent(model, tools, middleware=[memory.as_middleware()])  # doctest: +SKIP
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Union

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import Command, Overwrite

try:  # langchain >= 1.2: a model call's middleware may update the state too
    from langchain.agents.middleware.types import ExtendedModelResponse
except ImportError:  # pragma: no cover - older langchain: the pre-run lessons are not scoped to the agent's tools
    ExtendedModelResponse = None  # type: ignore[assignment,misc]

from langmem_plus._text import stable_id
from langmem_plus.errors import InvalidArgument
from langmem_plus.integrations.agent_run import (
    SHORT_TITLE,
    LearningState,
    OnErrorNote,
    agent_verdict,
    applied_lessons,
    as_json,
    context_value,
    declared_task,
    exception_step,
    first_human_text,
    fit_budget,
    memory_block,
    on_error_items,
    proposed_action,
    read_records,
    read_report,
    request_tools,
    round_position,
    run_steps,
    short_memory,
    shown_items,
    tool_action,
    tool_step,
    with_memory,
)
from langmem_plus.memory.run import AsyncRun, Run
from langmem_plus.plugins import step_advisor_for
from langmem_plus.integrations.guard_answer import (
    answer_entry,
    guard_text,
    rewrite_text,
    step_guard_note,
    was_answered,
)
from langmem_plus.records import (
    Activation,
    ErrorEvent,
    Lesson,
    RunReport,
    ScoredItem,
    Step,
    TaskSpec,
    Verdict,
    WorkingContext,
)
from langmem_plus.retrieval.call_guard import Held, guard_activations
from langmem_plus.retrieval.rule_lines import joined_hint_lines

if TYPE_CHECKING:
    from langmem_plus.memory import LearningMemory
    from langmem_plus.referee import Referee


NO_CAP = 1 << 30
"""Tokens a block may take when the middleware's budget is None (no cap)."""
GUARD_NOTE = "Not run:"
"""How the message a guarded tool call gets instead of running starts (``guard_answer.step_guard_note``: the proposed
command, and whether memory holds a note against it or recommends another one)."""
GUARD_MODES = ("answer", "rewrite", "off")
"""``LearningMiddleware(guard=...)``: the call guard stops a call and answers it, applies a promoted rewrite, or is off."""
TEXT_RULE_MODES = ("pre_run", "at_step")
"""``LearningMiddleware(text_rules=...)``: text rules among the pre-run lessons, or at the steps they fire on."""


class _Default(enum.Enum):
    DEFAULT = "default"


DEFAULT = _Default.DEFAULT
"""Sentinel: use the default (a memory's config field, the agent-signals verdict); None means off."""

GoalOption = Union[str, Callable[[Mapping[str, Any], Any], str], None]
"""A fixed goal, a function of (state, runtime), or None for ``runtime.context`` / the first human message."""


def _task_of(state: Mapping[str, Any]) -> TaskSpec:
    """The run's task, parsed from the state's JSON."""
    return TaskSpec.model_validate(state["lm_task"])


@dataclass(frozen=True)
class _Call:
    """One tool call inside a run: what the shared core needs to turn its outcome into a state update."""

    memory: LearningMemory
    run_id: str
    task: TaskSpec
    index: int
    next_index: int
    tool: str
    action: str
    tool_call_id: str
    history: list[Step]
    shown: list[Lesson]
    budget: int | None
    docs: bool
    state: Mapping[str, Any]
    """The agent state the call was made in."""
    args: Mapping[str, Any]
    """The call's arguments, as the model gave them."""
    activated: frozenset[str] = frozenset()
    """Lessons the run has an activation for already."""
    rewritten: tuple[Held, ...] = ()
    """Promoted lessons the call guard applied to this call before it ran (``guard="rewrite"``)."""

    def run(self) -> Run:
        """The run taken up from the state for this call: its steps before it (the step advice of
        ``text_rules="at_step"`` is taken up apart, ``LearningMiddleware._advised``)."""
        return Run(self.memory, self.task, run_id=self.run_id, step_advice=False, steps=self.history)

    def step(self, message: ToolMessage) -> Step:
        applied = applied_lessons(self.action, self.shown)
        step = tool_step(self.index, self.tool, self.action, message, applied, docs=self.docs, args=self.args)
        if self.rewritten:
            step = step.model_copy(update={"info": {**step.info, "rewritten_by": [h.lesson.id for h in self.rewritten]}})
        return step

    def failed(self, exc: BaseException) -> Step:
        return exception_step(self.index, self.tool, self.action, exc, self.tool_call_id, self.args)

    def context(self, event: ErrorEvent) -> WorkingContext:
        recent = self.history[-self.memory.config.capture.repeat_window :]
        return WorkingContext(
            goal=self.task.goal,
            context=event.tool or "",
            last_fail=event.error_text[: self.memory.config.capture.context_text_chars],
            recent_failures=1 + sum(1 for s in recent if s.feedback.failed),
        )

    def update(self, run: Run, message: ToolMessage, step: Step, event: ErrorEvent | None,
               items: list[ScoredItem]) -> Command[Any]:
        """The ToolMessage plus the run's new step, event, on-error note and activations (``run`` activates the
        lessons shown), as one Command."""
        items = fit_budget(items, self.budget)
        if self.rewritten and isinstance(message.content, str):
            message = message.model_copy(update={"content": rewrite_text(self.rewritten, self.args, message.content)})
        update: dict[str, Any] = {"messages": [message], "lm_steps": as_json([step])}
        if event is not None:
            update["lm_events"] = as_json([event])
        activations = guard_activations(self.rewritten, run_id=self.run_id, step=self.index)
        if items:
            update["lm_hints"] = as_json([OnErrorNote(tool_call_id=self.tool_call_id, items=items)])
            activations += run.activate(items, moment="on_error", step=self.next_index,
                                        fingerprint_id=event.fingerprint_id if event else None)
        if activations:
            update["lm_activations"] = as_json(activations)
        return Command(update=update)


class LearningMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """An ``AgentMiddleware`` that makes a ``create_agent`` agent learn from its tool errors.

    Args:
        memory: The memory it was built from (``memory.as_middleware()``).
        goal: The run's goal: a string, a function of (state, runtime), or None for
            ``runtime.context["goal"]`` (or ``.goal``) and else the first human message.
        task_id: Names the task for baselines and pre-run context; None derives it from the goal.
        tool: The task's tool scope (lessons scoped to another tool are not retrieved before a run).
        domain: The task's domain scope.
        family: The task's family (tasks of one kind, e.g. every game of one environment), which memory's run
            statistics group by; None leaves it unset.
        docs_tools: Names of lookup tools (a schema, a manual): their calls are recorded as
            docs steps, never failures, so a fix after a lookup still pairs with its error.
        memory_from_context: ``runtime -> LearningMemory``, e.g. a memory per user named in
            ``runtime.context``; None uses ``memory``.
        budget_tokens: Token cap on the memory block per model call; ``DEFAULT`` takes the
            memory's ``MemoryConfig.context.agent_context_tokens``, None shows all retrieved lessons.
        pre_run: Retrieve lessons for the goal when the agent starts.
        on_error: Retrieve lessons when a tool call fails, for the next model call.
        end_run: Run ``memory.end_run`` when the agent ends (synthesis, utility, lifecycle).
        referee: Judges the run for ``end_run``; ``DEFAULT`` reads the agent's signals
            (``agent_verdict``), None passes no verdict.
        text_rules: How text rules (``textgames.rules``: a game's "Avoid `eat <X>`") reach the model.
            ``"pre_run"``: among the pre-run lessons, ranked with them. ``"at_step"``: as the bench delivers them
            (``textgames.delivery.StepDelivery``, ``textgames.step_rules``): at each model call the rules that
            stand after the latest tool result, on the valid actions it reported (``env_tool``), grounded on them;
            with the guard (``MemoryConfig.textgames.text_guard``, ``"all"`` by default) a warning (and with ``"all"`` a
            recommendation) waits until the model proposes what it bears on: that call is not run, its message
            gives the notes, and the model chooses again (the same call proposed again runs). So does a pre-run
            avoidance of literal actions (an avoided episode's ``close door``), until a call it quotes. Each rule
            is activated once, at the step it first stood. The block is in short lines without ids
            (``short_memory``), which ``read_memory_block`` reads back.
        guard: The call guard (``memory.check_call``), before every tool call: ``"answer"`` stops a call a lesson of
            its tool holds against and answers it with the lessons and the rewritten call (the model chooses again;
            the same call proposed again in the run runs), ``"rewrite"`` runs a promoted lesson's rewrite instead, ``"off"``
            never stops a call; ``DEFAULT`` takes ``MemoryConfig.retrieval.tool_guard``. Each answer is an activation.
        scope_tools: With no ``tool`` given, the pre-run lessons are those of the agent's tools the task is likely to
            call (``memory.retrieve_for_tools``: by the task against the tools' descriptions and the tools past runs of
            like tasks called), retrieved at the run's first model call, which knows the tools. False: lessons of
            every tool, retrieved when the agent starts.

    Example:
        >>> agent = create_agent(model, tools, middleware=[memory.as_middleware()])  # doctest: +SKIP
        >>> result = agent.invoke({"messages": [("user", "names of people over 30")]})  # doctest: +SKIP
        >>> LearningMiddleware.report(result).new_lessons  # doctest: +SKIP
    """

    state_schema = LearningState  # type: ignore[assignment]  # its own keys, as langchain's middleware declare theirs

    def __init__(
        self,
        memory: LearningMemory,
        *,
        goal: GoalOption = None,
        task_id: str | None = None,
        tool: str | None = None,
        domain: str | None = None,
        family: str | None = None,
        docs_tools: Collection[str] = (),
        memory_from_context: Callable[[Any], LearningMemory] | None = None,
        budget_tokens: int | None | _Default = DEFAULT,
        pre_run: bool = True,
        on_error: bool = True,
        end_run: bool = True,
        referee: Referee | None | _Default = DEFAULT,
        text_rules: str = "pre_run",
        guard: str | _Default = DEFAULT,
        scope_tools: bool = True,
    ) -> None:
        super().__init__()
        if text_rules not in TEXT_RULE_MODES:
            raise InvalidArgument(f"text_rules must be one of {', '.join(TEXT_RULE_MODES)}, got {text_rules!r}")
        if guard is not DEFAULT and guard not in GUARD_MODES:
            raise InvalidArgument(f"guard must be one of {', '.join(GUARD_MODES)}, got {guard!r}")
        self.guard = guard
        self.scope_tools = scope_tools
        self.text_rules = text_rules
        self._advisor = step_advisor_for(domain) if text_rules == "at_step" else None
        if text_rules == "at_step" and self._advisor is None:
            raise InvalidArgument(f"text_rules='at_step': no plugin gives step advice for domain {domain!r}")
        self._rules = self._advisor.session() if self._advisor is not None else None
        self.memory = memory
        self.goal, self.task_id, self.tool, self.domain, self.family = goal, task_id, tool, domain, family
        self.docs_tools = frozenset(docs_tools)
        self.memory_from_context = memory_from_context
        self.budget_tokens = budget_tokens
        self.pre_run, self.on_error, self.end_run = pre_run, on_error, end_run
        self.referee = referee

    @staticmethod
    def report(result: Mapping[str, Any]) -> RunReport | None:
        """The ``RunReport`` in an agent's result (the state keeps it as JSON); None before the run ended."""
        return read_report(result)

    # ------------------------------------------------------------------ shared core
    def _memory(self, runtime: Any) -> LearningMemory:
        return self.memory_from_context(runtime) if self.memory_from_context is not None else self.memory

    def _budget(self, memory: LearningMemory) -> int | None:
        return memory.config.context.agent_context_tokens if self.budget_tokens is DEFAULT else self.budget_tokens

    def _task(self, state: Mapping[str, Any], runtime: Any) -> TaskSpec:
        if callable(self.goal):
            goal = self.goal(state, runtime)
        else:
            named = context_value(runtime, "goal")
            goal = self.goal or (named if isinstance(named, str) else None) or first_human_text(state.get("messages") or [])
        task_id = self.task_id or stable_id("task", goal)
        return TaskSpec(task_id=task_id, goal=goal, tool=self.tool, domain=self.domain, family=self.family)

    def _scoped(self) -> bool:
        """Whether the pre-run lessons wait for the first model call, to be scoped to the agent's tools."""
        return (self.scope_tools and self.pre_run and self.tool is None and self.text_rules == "pre_run"
                and ExtendedModelResponse is not None)

    def _opened(self, run: Run, items: list[ScoredItem]) -> dict[str, Any]:
        """The state update that opens ``run``: fresh lists, the pre-run lessons and their activations (with
        ``text_rules="at_step"``, those of the triggered block, held ones included)."""
        memory = run.memory
        if self._advisor is not None:
            items = list(self._advisor.open(items, memory.config, budget=self._cap(memory)).fitted)
        else:
            items = fit_budget(items, self._budget(memory))
        activations = run.activate(items, moment="pre_run")
        return {
            "lm_run_id": run.run_id,
            "lm_task": run.task.model_dump(mode="json"),
            "lm_pre_run": as_json(items),
            "lm_hints": Overwrite([]),
            "lm_steps": Overwrite([]),
            "lm_events": Overwrite([]),
            "lm_activations": Overwrite(as_json(activations)),
            "lm_guard": Overwrite([]),
            "lm_pending": self._scoped(),
            "lm_report": None,
        }

    def _cap(self, memory: LearningMemory) -> int:
        """The budget as a number of tokens (no cap: as many as any block could hold)."""
        budget = self._budget(memory)
        return budget if budget is not None else NO_CAP

    def _request(self, request: ModelRequest[Any], pre_run: list[ScoredItem] | None = None) -> ModelRequest[Any]:
        """The model request with this run's lessons (``pre_run``, else the state's) in its system message (unchanged
        when there are none); with ``text_rules="at_step"``, in the short form triggered delivery shows."""
        memory = self._memory(request.runtime)
        state = request.state if isinstance(request.state, Mapping) else {}
        if self._advisor is not None and state.get("lm_task") is not None:
            run = self._advised(memory, state, run_steps(state))
            block = short_memory(run.opening(), on_error_items(state, request.messages), run.advice(),
                                 self._cap(memory), line=self._advisor.short_line)
        else:
            budget = self._budget(memory)
            block = memory_block(shown_items(state, request.messages, budget, pre_run), budget).text
        return request.override(system_message=with_memory(request.system_message, block)) if block else request

    def _pending(self, request: ModelRequest[Any]) -> tuple[Run, dict[str, str | None]] | None:
        """The state's run taken up, and the agent's tools, when its pre-run lessons wait for this model call."""
        state: Mapping[str, Any] = request.state if isinstance(request.state, Mapping) else {}
        if not state.get("lm_pending") or state.get("lm_task") is None or not state.get("lm_run_id"):
            return None
        run = Run(self._memory(request.runtime), _task_of(state), run_id=str(state["lm_run_id"]), step_advice=False,
                  steps=run_steps(state))
        return run, request_tools(request.tools or [])

    def _scoped_update(self, run: Run, items: list[ScoredItem]) -> tuple[list[ScoredItem], Command[Any]]:
        """The scoped pre-run lessons fitted to the budget, and the state update that keeps and activates them."""
        fitted = fit_budget(items, self._budget(run.memory))
        activations = run.activate(fitted, moment="pre_run")
        return fitted, Command(update={"lm_pre_run": as_json(fitted), "lm_pending": False,
                                       "lm_activations": as_json(activations)})

    def _pre_run_items(self, items: list[ScoredItem]) -> list[ScoredItem]:
        """The pre-run items to show: with ``text_rules="at_step"``, not the text rules (they come at their steps)."""
        advisor = self._advisor
        return [i for i in items if not advisor.at_step(i)] if advisor is not None else items

    def _advised(self, memory: LearningMemory, state: Mapping[str, Any], steps: list[Step]) -> Run:
        """The state's run taken up under the middleware's step advice (``text_rules="at_step"``): its ``steps``, the
        pre-run items it opened with (read from the state only when the advice needs them), the proposals answered,
        and the session kept across the middleware's runs."""
        advisor = self._advisor
        assert advisor is not None  # only with text_rules="at_step"
        return Run(memory, _task_of(state), run_id=str(state.get("lm_run_id")), step_advice=advisor, session=self._rules,
                   steps=steps, pre_run=lambda: read_records(state, "lm_pre_run", ScoredItem),
                   answers=advisor.answered(state.get("lm_guard") or []), budget=self._cap(memory))

    def _call(self, request: ToolCallRequest) -> _Call | None:
        """The run's view of a tool call; None outside a run (no ``lm_run_id`` in the state)."""
        state = request.state if isinstance(request.state, Mapping) else {}
        run_id, task = state.get("lm_run_id"), state.get("lm_task")
        if not run_id or task is None:
            return None
        memory = self._memory(request.runtime)
        steps = run_steps(state)
        call = request.tool_call
        args = call.get("args") or {}
        call_id = str(call.get("id") or "")
        position, count = round_position(state.get("messages") or [], call_id)
        shown_ids = dict.fromkeys(a.lesson_id for a in read_records(state, "lm_activations", Activation))
        shown = [l for l in map(memory.get_lesson, shown_ids) if l is not None]
        return _Call(
            memory=memory, run_id=run_id, task=_task_of(state),
            index=len(steps) + position, next_index=len(steps) + count, tool=call["name"],
            action=tool_action(call["name"], args), tool_call_id=call_id,
            history=steps, shown=shown, budget=self._budget(memory), docs=call["name"] in self.docs_tools,
            state=state, args=args, activated=frozenset(shown_ids),
        )

    def _ending(self, memory: LearningMemory, state: Mapping[str, Any]) -> tuple[Run, Verdict | None]:
        """The state's run taken up to end (``memory.run.Run``: its steps in order, events and activations; the step
        advice of ``text_rules="at_step"`` is the middleware's own session), and its verdict."""
        steps = run_steps(state)
        task = declared_task(_task_of(state), steps)
        verdict: Verdict | None
        if self.referee is DEFAULT:
            verdict = agent_verdict(state.get("messages") or [], steps)
        else:
            verdict = self.referee.judge(task, steps) if self.referee is not None else None
        run = Run(memory, task, run_id=str(state["lm_run_id"]), step_advice=False, steps=steps,
                  events=read_records(state, "lm_events", ErrorEvent),
                  activations=read_records(state, "lm_activations", Activation))
        return run, verdict

    def _ends(self, state: Mapping[str, Any]) -> bool:
        return self.end_run and bool(state.get("lm_run_id")) and state.get("lm_task") is not None

    # ------------------------------------------------------------------ before / after the agent
    def before_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Open a run and retrieve the lessons for its goal (scoped to the agent's tools: at its first model call)."""
        run = self._new_run(state, runtime)
        items = run.retrieve_pre_run() if self.pre_run and not self._scoped() else []
        return self._opened(run, self._pre_run_items(items))

    async def abefore_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Async ``before_agent``."""
        run = self._new_run(state, runtime)
        items = await AsyncRun(run).retrieve_pre_run() if self.pre_run and not self._scoped() else []
        return self._opened(run, self._pre_run_items(items))

    def _new_run(self, state: Mapping[str, Any], runtime: Any) -> Run:
        """A fresh run of the agent's task (the middleware's own step advice: ``text_rules``)."""
        return Run(self._memory(runtime), self._task(state, runtime), run_id=uuid.uuid4().hex[:12], step_advice=False)

    def after_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """End the run inside the graph (``Run.end``); its report goes into ``lm_report``."""
        if self._rules is not None:
            self._rules.drop(str(state.get("lm_run_id")))
        if not self._ends(state):
            return None
        run, verdict = self._ending(self._memory(runtime), state)
        return {"lm_report": run.end(verdict).model_dump(mode="json")}

    async def aafter_agent(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Async ``after_agent``."""
        if self._rules is not None:
            self._rules.drop(str(state.get("lm_run_id")))
        if not self._ends(state):
            return None
        run, verdict = self._ending(self._memory(runtime), state)
        report = await AsyncRun(run).end(verdict)
        return {"lm_report": report.model_dump(mode="json")}

    # ------------------------------------------------------------------ around model and tool calls
    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> Any:
        """Call the model with this run's lessons in the system message (at the first call of a scoped run, the
        lessons of the tools the task is likely to call, kept in the state with their activations)."""
        pending = self._pending(request)
        if pending is None or ExtendedModelResponse is None:
            return handler(self._request(request))
        run, tools = pending
        fitted, update = self._scoped_update(run, run.retrieve_pre_run(tools))
        return ExtendedModelResponse(model_response=handler(self._request(request, fitted)), command=update)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> Any:
        """Async ``wrap_model_call``."""
        pending = self._pending(request)
        if pending is None or ExtendedModelResponse is None:
            return await handler(self._request(request))
        run, tools = pending
        fitted, update = self._scoped_update(run, await AsyncRun(run).retrieve_pre_run(tools))
        return ExtendedModelResponse(model_response=await handler(self._request(request, fitted)), command=update)

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        """Run the tool; record its step, capture a failure and retrieve lessons for it."""
        call, request, early = self._prepare(request)
        if early is not None:
            return early
        if call is None:
            return handler(request)
        run = call.run()
        try:
            result = handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            run.observe(call.failed(exc))
            raise
        if not isinstance(result, ToolMessage):
            return result
        step = call.step(result)
        event = run.observe(step)
        items = run.retrieve_on_error(event, call.context(event)) if event is not None and self.on_error else []
        return self._with_rules(call, call.update(run, result, step, event, items))

    def _with_rules(self, call: _Call, update: Command[Any]) -> Command[Any]:
        """With ``text_rules="at_step"``: the update plus an activation for each rule delivered in the run so far
        (shown, or standing held, before this call) and not yet activated."""
        if self._rules is None or not isinstance(update.update, dict):
            return update
        fresh = [a for a in self._advised(call.memory, call.state, call.history).advised()
                 if a.lesson_id not in call.activated]
        if not fresh:
            return update
        return Command(update={**update.update, "lm_activations": [*update.update.get("lm_activations", []), *as_json(fresh)]})

    def _prepare(self, request: ToolCallRequest) -> tuple[_Call | None, ToolCallRequest, Command[Any] | None]:
        """The run's view of a call, the request to run (rewritten by the call guard) and, when memory answers the call
        instead of running it (the call guard, then the text guard), that answer."""
        call = self._call(request)
        if call is None:
            return None, request, None
        checked = self._checked(call)
        if checked is not None:
            fix = self._fix(call, checked)
            if fix is None:
                return call, request, self._stopped(call, checked)
            args, used = fix
            request = request.override(tool_call={**request.tool_call, "args": args})
            call = replace(call, args=args, action=tool_action(call.tool, args), rewritten=used)
        return call, request, self._guarded(call)

    def _guard_mode(self, memory: LearningMemory) -> str:
        return memory.config.retrieval.tool_guard if self.guard is DEFAULT else str(self.guard)

    def _checked(self, call: _Call) -> Run | None:
        """The run taken up with the call checked (``Run.check``) when the call guard holds lessons against it; None
        when it holds none, is off, the tool is a lookup tool, or the same call was answered in this run already
        (proposed again, it runs)."""
        if self._guard_mode(call.memory) == "off" or call.docs:
            return None
        if was_answered(call.state.get("lm_guard") or [], call.action):
            return None
        run = call.run()
        run.check(call.tool, call.args, step=call.index)
        return run if run.held else None

    def _fix(self, call: _Call, checked: Run) -> tuple[dict[str, Any], tuple[Held, ...]] | None:
        """With ``guard="rewrite"``: the arguments rewritten by the held promoted lessons, and those lessons."""
        if self._guard_mode(call.memory) != "rewrite":
            return None
        args = checked.rewritten_args(call.args, promoted=True)
        return (args, tuple(checked.rewriting(promoted=True))) if args is not None else None

    def _stopped(self, call: _Call, checked: Run) -> Command[Any]:
        """The answer to a call memory stops: a tool message with the lessons it quotes, the answer recorded, those
        lessons activated (by ``checked``, at the call's step)."""
        ids = [h.lesson.id for h in checked.quoted]
        message = ToolMessage(content=guard_text(checked.quoted), tool_call_id=call.tool_call_id, name=call.tool,
                              status="error", artifact={"guarded": call.action, "lessons": ids})
        return Command(update={
            "messages": [message],
            "lm_guard": [answer_entry(len(call.history), call.action, ids)],
            "lm_activations": as_json(checked.activations),
        })

    def _guarded(self, call: _Call) -> Command[Any] | None:
        """The guard (``MemoryConfig.textgames.text_guard``, ``text_rules="at_step"``): when memory holds notes on the proposed
        action, the tool is not run; its message gives the notes (the next model call's system message shows them
        too) and the state records the proposal, so proposed again at this step it runs. None: run it."""
        if self._rules is None or call.docs:
            return None
        action = proposed_action(call.tool, call.args)
        held = self._advised(call.memory, call.state, call.history).check(action)
        if not held:
            return None
        notes = "\n".join([step_guard_note(action, held), SHORT_TITLE, *joined_hint_lines(held)])  # a memory block: read_memory_block reads it
        message = ToolMessage(content=notes, tool_call_id=call.tool_call_id, name=call.tool, artifact={"guarded": action})
        return Command(update={"messages": [message], "lm_guard": [{"step": len(call.history), "action": action}]})

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        """Async ``wrap_tool_call``."""
        call, request, early = self._prepare(request)
        if early is not None:
            return early
        if call is None:
            return await handler(request)
        run = AsyncRun(call.run())
        try:
            result = await handler(request)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            await run.observe(call.failed(exc))
            raise
        if not isinstance(result, ToolMessage):
            return result
        step = call.step(result)
        event = await run.observe(step)
        items = await run.retrieve_on_error(event, call.context(event)) if event is not None and self.on_error else []
        return self._with_rules(call, call.update(run.run, result, step, event, items))


__all__ = ["DEFAULT", "LearningMiddleware"]
