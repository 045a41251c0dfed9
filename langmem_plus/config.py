"""MemoryConfig: every tunable number of langmem_plus, with its default and its source, in sections by concern.

One frozen object is passed everywhere; nothing else in the package holds a magic number. Each section is a
validated model of its own (``capture``, ``retrieval``, ``context``, ``lifecycle``, ``cognitive``, ``semantic``,
``storage``, ``textgames``); field docstrings name the unit and where the default came from. The flat keywords of
earlier releases (``MemoryConfig(mmr_lambda=0.5)``) still work, with a ``DeprecationWarning``.

Example:
    >>> from langmem_plus import MemoryConfig
    >>> cfg = MemoryConfig(retrieval={"mmr_lambda": 0.5})
    >>> cfg.retrieval.mmr_lambda, cfg.budget_for(0.9)
    (0.5, 7)
    >>> cfg.replace(context={"max_context_tokens": 100}).context.max_context_tokens
    100
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


SCAN_CEILING_CHARS = 65_536
"""The most raw text (action, observation, error) a record keeps and ``error_text_scan_chars`` may read."""
ERROR_TEXT_CEILING_CHARS = 65_536
"""The most error text an ErrorEvent keeps; ``error_text_max_chars`` may not exceed it."""
NOTE_CEILING_CHARS = 4096
"""The most text a failure note keeps; ``failure_note_chars`` may not exceed it."""


class _Section(BaseModel):
    """A config section: frozen, no unknown field, field docstrings as descriptions."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class CaptureConfig(_Section):
    """Capture: how a failed step becomes an error event (design.md §3)."""

    error_text_max_chars: int = Field(2000, ge=1, le=ERROR_TEXT_CEILING_CHARS)
    """Characters of error text (and action) kept on an ErrorEvent (design.md §2); cut where capture makes it."""
    error_text_scan_chars: int = Field(16_000, ge=256, le=SCAN_CEILING_CHARS)
    """Characters of raw error text the fingerprinter and tagger read (head and tail); bounds cost on 1 MB inputs."""
    context_text_chars: int = Field(300, ge=20)
    """Characters of the last observation and failure text put into a run's working context (design.md §5.1)."""
    query_error_chars: int = Field(500, ge=20)
    """Characters of error text in an on-error query, and of a query kept in the audit log."""
    stall_steps: int = Field(3, ge=1)
    """Steps without progress before a no_progress event (design.md §3)."""
    repeat_window: int = Field(5, ge=1)
    """Steps looked back over for 'the same failure repeated' (design.md §3)."""


class RetrievalConfig(_Section):
    """Retrieval: candidates, scoring, the graph step, budgets by difficulty, the call guard and tool scope (design.md §5)."""

    candidates_k: int = Field(20, ge=1)
    """Candidates fetched before re-ranking, K (design.md §5.2)."""
    error_graph_k: int = Field(10, ge=0)
    """On error, how many of the graph step's best lessons (personalized PageRank) join the candidates;
    before a run the graph gives ``candidates_k``. Every candidate costs scoring, guards and MMR, and the graph's
    lower ranks that no other source finds are rarely the fix (docs/PERFORMANCE.md). 0: no graph candidates on error."""
    budget_easy: int = Field(3, ge=0)
    """K' when difficulty <= difficulty_easy_max (design.md §5.6)."""
    budget_medium: int = Field(5, ge=0)
    """K' when difficulty <= difficulty_medium_max (design.md §5.6)."""
    budget_hard: int = Field(7, ge=0)
    """K' above difficulty_medium_max (design.md §5.6)."""
    difficulty_easy_max: float = Field(0.3, ge=0.0, le=1.0)
    """Upper difficulty bound of the easy budget (design.md §5.6)."""
    difficulty_medium_max: float = Field(0.7, ge=0.0, le=1.0)
    """Upper difficulty bound of the medium budget (design.md §5.6)."""
    mmr_lambda: float = Field(0.4, ge=0.0, le=1.0)
    """MMR trade-off: lambda * score - (1 - lambda) * max_sim (design.md §5.5)."""
    w_fingerprint: float = 0.40
    """Lesson score weight of the exact fingerprint match (design.md §5.3)."""
    w_tags: float = 0.25
    """Lesson score weight of tag overlap (Jaccard) (design.md §5.3)."""
    w_text: float = 0.20
    """Lesson score weight of text (embedding cosine) similarity (design.md §5.3)."""
    w_reliability: float = 0.10
    """Lesson score weight of reliability (design.md §5.3)."""
    w_recency: float = 0.05
    """Lesson score weight of recency (design.md §5.3)."""
    ep_w_cos: float = 1.0
    """Episode score weight of cosine similarity (design.md §5.3, AMM spec)."""
    ep_w_goal: float = 0.5
    """Episode score weight of goal token overlap (design.md §5.3)."""
    ep_w_success: float = 0.3
    """Episode score weight of log(1 + success_weight) (design.md §5.3)."""
    ep_w_recency: float = 0.2
    """Episode score weight of recency (design.md §5.3)."""
    recency_tau_hours: float = Field(72.0, gt=0.0)
    """Recency time constant: recency = exp(-dt / tau), hours (design.md §5.3)."""
    tag_bucket_cap: int = Field(2, ge=1)
    """At most this many chosen items share a primary tag (design.md §5.4)."""
    per_run_cap: int = Field(3, ge=1)
    """At most this many chosen items come from any one earlier run (design.md §5.4)."""
    graph_seed_weight_fp: float = 1.0
    """Personalization mass on the event's fingerprint node for PageRank (design.md §5.2)."""
    graph_seed_weight_tag: float = Field(0.5, ge=0.0)
    """Personalization mass on each of the event's tag nodes, relative to the fingerprint's (design.md §5.2)."""
    graph_seed_weight_scope: float = Field(0.25, ge=0.0)
    """Personalization mass on tool / domain / task nodes (design.md §5.2)."""
    graph_hops: int = Field(2, ge=1)
    """Neighbourhood radius, in edges, around the seeds that PageRank runs on (design.md §5.2)."""
    graph_max_nodes: int = Field(100, ge=10)
    """Largest neighbourhood PageRank runs on, so its cost does not grow with the graph (design.md §5.2; the size
    chosen is measured in docs/performance-log.md, "Cuts of wt/lat3")."""
    pagerank_alpha: float = Field(0.85, gt=0.0, lt=1.0)
    """PageRank damping factor (networkx default; Page et al. 1999)."""
    pagerank_rtol: float = Field(1.0e-4, gt=0.0, lt=1.0)
    """Where the graph step's PageRank solve stops (``store.ppr.sparse_ppr``'s ``rtol``): conjugate
    gradients until the residual is below this share of the right-hand side's, and no power-iteration
    check after. Only the top lessons' order is used, so a loose solve serves (docs/PERFORMANCE.md)."""
    rewrite_miss_factor: float = Field(0.5, ge=0.0, le=1.0)
    """Share of the fingerprint-match credit kept by a rewrite lesson whose WRONG pattern is
    absent from the failing action: one fingerprint (``unknown command <str>``) can have many
    fixes, and the one that applies to the action is the answer (measured on gridtool)."""
    action_match_credit: float = Field(0.5, ge=0.0, le=1.0)
    """Fingerprint-match credit of a rewrite lesson whose fingerprint differs from the event's
    but whose WRONG pattern occurs in the failing action: the same mistake behind reworded
    error text or fresh literals (measured with ``bench retrieval`` on paraphrased queries)."""
    pitfall_scale: float = Field(3.0, gt=0.0)
    """Pre-run difficulty = 1 - exp(-pitfalls / scale), pitfalls being the lessons a task needed
    before plus the failures its last run still had (design.md §5.6 "from recent failures")."""
    overlap_store_calls: bool | None = True
    """On error, run the Chroma vector query (and a stored-vector read the snapshot cannot answer)
    on a worker thread beside the in-memory work (True), inline (False), or whichever has been
    faster lately (None). chromadb releases the GIL in those calls, so on a quiet machine the overlap
    saves most of the query; on a saturated one a thread wake-up can cost more than it saves, and None
    adapts to that (``retrieval.worker``; docs/PERFORMANCE.md)."""
    vector_cache_size: int = Field(20_000, ge=1)
    """Lessons whose relevance and content vectors the retrieval engine keeps in memory, least
    recently used evicted first."""
    episode_candidates_k: int = Field(5, ge=0)
    """Episodes and skills fetched per retrieval by vector search, each kind (design.md §5.3)."""
    episode_budget: int = Field(1, ge=0)
    """Episodes or skills shown beside the K' lessons; the avoidance reminder is extra (design.md §5.6)."""
    fact_budget: int = Field(1, ge=0)
    """Facts (``SemanticMemory``) shown beside the lessons, episodes and skills of a retrieval; they compete
    for the same token budget in instant memory, ranked below lessons (``instant_support_weight`` x cosine)
   . 0 shows none."""
    fact_min_cos: float = Field(0.2, ge=-1.0, le=1.0)
    """Least cosine between a fact's text and the retrieval's query for the fact to be shown. Below
    ``episode_min_cos``: a fact is a few words against a query of goal and context, so even a fact
    about the task's very objects scores ~0.25 with the offline embedder (an unrelated one ~0.05)."""
    episode_min_cos: float = Field(0.3, ge=-1.0, le=1.0)
    """Cosine to the query an episode or skill needs to count as relevant (chosen so that
    unrelated hashing-embedded texts, cosine ~0.1, stay out; design.md §5.6 "when relevant")."""
    tool_guard: Literal["answer", "rewrite", "off"] = "answer"
    """The call guard (``LearningMiddleware``, ``nodes.check_call_node``): before a tool call runs, the tool's lessons
    whose WRONG form matches its arguments hold against it. ``"answer"``: the call is not run and the model gets the
    lessons and the rewritten call as a tool message, then chooses again (the same call proposed again runs);
    ``"rewrite"``: a promoted lesson's rewrite is applied and the fixed call runs (other lessons answer as before);
    ``"off"``: calls always run."""
    tool_scope_runs: int = Field(500, ge=0)
    """Latest runs whose goals teach which words call which tool (``retrieval.tool_scope``)."""
    tool_scope_min_score: float = Field(0.3, ge=0.0, le=1.0)
    """Least posterior (``tool_scope.tool_scores``) for a tool's lessons to be shown before its first call."""
    tool_scope_max_tools: int = Field(2, ge=1)
    """Most tools whose lessons are shown before a run (the likeliest first)."""
    tool_scope_ratio: float = Field(0.75, ge=0.0, le=1.0)
    """A tool after the likeliest is in scope only with at least this share of the likeliest's score: a task that
    clearly calls one tool is not shown the lessons of another it merely might."""
    guard_max_lessons: int = Field(3, ge=1)
    """Lessons one guard answer quotes at most (the best first: promoted, then by reliability)."""

    @model_validator(mode="after")
    def _check_bounds(self) -> "RetrievalConfig":
        if self.difficulty_easy_max > self.difficulty_medium_max:
            raise ValueError(
                "difficulty_easy_max must be <= difficulty_medium_max "
                f"(got {self.difficulty_easy_max} > {self.difficulty_medium_max})"
            )
        return self

    def budget_for(self, difficulty: float) -> int:
        """K' for a difficulty in [0, 1] (design.md §5.6): 3 / 5 / 7 by default."""
        if difficulty <= self.difficulty_easy_max:
            return self.budget_easy
        if difficulty <= self.difficulty_medium_max:
            return self.budget_medium
        return self.budget_hard


class ContextConfig(_Section):
    """Context: the token budgets of what a model is shown and the instant memory it is assembled in (design.md §10)."""

    max_context_tokens: int = Field(170, ge=0)
    """Token budget of the hint block one retrieval hands the agent, header included: the
    capacity of the ``InstantMemory`` the block is assembled in, where lessons, episodes and
    skills compete for it by relevance, the least relevant compressed to one short line, then evicted.
    170 (was 800): the header and about twelve compressed rewrite lines. On ``bench protocol --seed
    0 / 1 / 2`` the 800-token sheet cost 364 / 360 / 377 tokens per task for 9 / 9 / 9 tool errors;
    170 costs 156 / 157 / 158 for 9 / 9 / 9 (vote memory: 164 / 159 / 166 for 12 / 11 / 12; a
    160-token budget gave ~147 for 9 / 9 / 11 in a probe of the same evaluation)."""
    agent_context_tokens: int = Field(1200, ge=0)
    """Token cap on the memory block ``LearningMiddleware`` adds to an agent's system message at each
    model call: the header plus one line per lesson (its hint and its WRONG -> CORRECT rule, about
    twice the hint's tokens), pre-run lessons and the latest on-error lessons together. Its own
    number, not derived from ``max_context_tokens``: an agent's prompt carries the rules beside the
    hints and both moments' lessons, so it needs several times the executor's budget."""
    pre_run_sheet_max: int = Field(20, ge=0)
    """Before a run, at most this many of the task's tool's rewrite lessons are shown beyond the K'
    chosen by difficulty (the "tool sheet", ``select.sheet_fill``), most proven first, while the hints
    fit in ``max_context_tokens``: K' is the floor, the token cap the ceiling. A rewrite rule is one
    short line, and an agent about to use a tool gains from all of its verified fixes, including
    those the task's own history never pointed at (a comparison fix needed in an aggregate task;
    measured on ``bench protocol``). Lessons measured net harmful and suppressed ones never join.
    0 keeps K' only (design.md §5.6 as written)."""
    instant_capacity_tokens: int = Field(2000, ge=1)
    """Capacity, in tokens, of an ``InstantMemory`` built without one (seed 002 bounds instant memory
    by a token capacity and names no number; 2000 is a modest share of any chat model's window)."""
    instant_decay_rate: float = Field(0.001, ge=0.0)
    """Exponential decay of an unrefreshed item's priority, per second: priority = p0 * exp(-rate * dt)
    since the last refresh (seed 002 ``tick``); 0.001 halves it in ln 2 / 0.001 ~ 11.6 minutes."""
    instant_eviction_threshold: float = Field(0.1, ge=0.0, le=1.0)
    """Items whose priority falls below this are evicted by ``tick`` (seed 002); 0.1, the strength under
    which an episode is no longer recalled (``episode_recall_min_strength``)."""
    instant_refresh_boost: float = Field(0.2, ge=0.0, le=1.0)
    """Default priority added by ``refresh`` (seed 002: priority = min(1, priority + boost))."""
    instant_compress_ratio: float = Field(0.5, gt=0.0, le=1.0)
    """Target size of a compressed item relative to its content (seed 002 ``CompressLowest``: "e.g., 0.5")."""
    instant_batch_size: int = Field(3, ge=2)
    """Items summarized together by ``SummarizeBatch`` (seed 002 names the strategy, not the size)."""
    instant_batch_tokens: int = Field(64, ge=1)
    """Target tokens of a ``SummarizeBatch`` summary (seed 002 ``target_tokens``)."""
    instant_keep_depth: int = Field(0, ge=0)
    """Indentation depth of the lines ``Hierarchical`` keeps (seed 002 ``keep_depth``; 0: top-level lines)."""
    instant_habit_runs: int = Field(20, ge=1)
    """Before a run, a lesson's relevance in instant memory is its habit rate: the share of the tool's
    last this-many runs whose opening attempt made its mistake or that applied it, with a (1, 1) prior
    (measured on ``bench protocol``: fixes of an agent's first guesses score 0.2-0.9, fixes of its
    second guesses, which it only tries after a failure, stay near the prior's floor)."""
    instant_support_weight: float = Field(0.25, ge=0.0, le=1.0)
    """Episodes and skills enter instant memory with relevance = this * their cosine to the query: a
    lesson's relevance is a measured need rate, an episode's only a similarity, so worked examples get
    what the likely-needed fixes leave (at 0.5 they crowded needed fixes out on ``bench protocol``)."""


class LifecycleConfig(_Section):
    """Lifecycle: synthesis, deduplication, utility, promotion, suppression, archiving, episodes and skills (design.md §6)."""

    verified_fix_lessons: bool = True
    """A failure seen once becomes a candidate rewrite lesson when the next retry verifiably got past
    it (a contrastive pair): the environment checked the fix, which says more than a second
    occurrence. "Avoid" lessons (no verified fix) still need ``min_occurrences``. Candidates are
    never promoted without measured utility (refinement of design.md §6, measured on bench protocol)."""
    min_occurrences: int = Field(2, ge=1)
    """A fingerprint seen this often in a run, or in this many runs, gets a candidate lesson."""
    simhash_bits: int = Field(64, ge=16, le=64)
    """SimHash width used for dedup (design.md §6)."""
    dedup_max_hamming: int = Field(3, ge=0)
    """Near-duplicate threshold, in differing SimHash bits (design.md §6)."""
    dedup_simhash_bands: int = Field(4, ge=1)
    """Bands of the SimHash index that finds a candidate's near duplicates without a scan
    (``store.lesson_index``). Two hashes within ``dedup_max_hamming`` bits agree on a whole band
    whenever there are more bands than that (pigeonhole), so the index uses
    ``max(dedup_simhash_bands, dedup_max_hamming + 1)`` bands, and scans every lesson only when
    that exceeds ``simhash_bits``. Four 16-bit bands: every hash within 3 bits. The
    episode index (``learning.episode_index``) bands episodes the same way against
    ``episode_dedup_max_hamming``."""
    end_run_indexes: bool = True
    """``end_run`` reads its indexes (SimHash bands and fingerprints for dedup and conflicts,
    the sweep's due runs, the status counts, a text game's rules by tool): its cost follows the run's change, not
    the store (~1 s -> tens of ms at 100k lessons, docs/PERFORMANCE.md). False scans every lesson as
    before: the reference the indexes are tested against, and the bench's comparison."""
    shared_refresh_s: float = Field(0.0, ge=0.0)
    """Least seconds between two reads of what other writers appended (lessons, runs, evidence) at a
    run's start (``retrieve_pre_run`` with a run id); 0 reads at every run's start. ``end_run``
    always reads first, and ``LearningMemory.refresh`` reads on demand."""
    utility_w_errors: float = 0.65
    """Utility weight of error_reduction without an LLM referee (design.md §6)."""
    utility_w_steps: float = 0.35
    """Utility weight of step_efficiency_gain without an LLM referee (design.md §6)."""
    utility_w_errors_ref: float = 0.50
    """Utility weight of error_reduction with an LLM referee (design.md §6)."""
    utility_w_steps_ref: float = 0.30
    """Utility weight of step_efficiency_gain with an LLM referee (design.md §6)."""
    utility_w_referee_ref: float = 0.20
    """Utility weight of referee_score_gain with an LLM referee (design.md §6)."""
    utility_w_outcome: float = Field(0.5, ge=0.0, le=1.0)
    """Share of an activation's utility that is a good outcome of the calls the lesson was applied to (``learning.
    outcomes``: a result the verdict passed). A bad outcome (a result judged wrong, a failed constraint) is the
    whole utility, -1: a fix that silences an error and does the wrong thing measures below zero, whatever error it
    silenced."""
    outcome_from_progress: bool = True
    """A call the lesson was applied to that ran and moved the run's progress (a game's score) is an outcome:
    -1 when progress fell, +1 when it rose and nothing else judged the call (``learning.outcomes``)."""
    promote_min_runs: int = Field(3, ge=1)
    """Runs with activations needed before promotion (design.md §6)."""
    promote_min_utility: float = 0.20
    """Mean utility needed for promotion (design.md §6)."""
    promote_max_pass_drop: float = Field(0.10, ge=0.0, le=1.0)
    """Promotion is refused if the pass rate is more than this under baseline (design.md §6)."""
    suppress_min_activations: int = Field(3, ge=1)
    """Evidence-bearing activations needed before suppression (design.md §6)."""
    suppress_max_utility: float = 0.0
    """Mean utility at or below which a lesson is suppressed (design.md §6)."""
    demote_window: int = Field(5, ge=1)
    """Latest utilities a promoted lesson is judged on: when their mean falls to ``suppress_max_utility`` or below,
    its evidence has turned, and it is suppressed whatever it earned before."""
    conflict_losses_to_suppress: int = Field(3, ge=1)
    """Conflict-cluster losses after which a lesson is suppressed (design.md §6)."""
    archive_unused_runs: int = Field(50, ge=1)
    """Runs without activation before a low-reliability lesson is archived (design.md §6)."""
    archive_max_reliability: float = Field(0.35, ge=0.0, le=1.0)
    """Reliability at or below which an unused lesson may be archived (design.md §6)."""
    nearmiss_cap: int = Field(1, ge=0)
    """Near-miss episodes kept per (subgoal template, context) (design.md §6)."""
    avoidance_ttl_episodes: int = Field(50, ge=1)
    """Avoidance episodes expire after this many episodes (design.md §6)."""
    skill_min_successes: int = Field(3, ge=1)
    """A subgoal template solved this often becomes a skill (design.md §6)."""
    skill_match_cosine: float = Field(0.6, ge=0.0, le=1.0)
    """Cosine above which a skill matches a goal (design.md §6)."""
    skill_ema_alpha: float = Field(0.1, gt=0.0, le=1.0)
    """EMA factor of a skill's success rate (design.md §6)."""
    episode_recall_min_strength: float = Field(0.1, ge=0.0, le=1.0)
    """Episodes weaker than this are not recalled (design.md §6)."""
    utility_window: int = Field(20, ge=1)
    """Utilities kept per lesson (newest last) for the promotion/suppression means: the design.md §6
    "evidence window"; old evidence ages out so a lesson that stops helping can still be suppressed."""
    pair_min_similarity: float = Field(0.5, ge=0.0, le=1.0)
    """Least token-sequence similarity (difflib ratio) for a later action to count as a retry of the
    failed one, "the same intent" of design.md §6 synthesis; halfway is the least that says it is a retry."""
    fix_lookahead: int = Field(2, ge=0)
    """Steps that are not a retry (a lookup such as ``git branch``) that may come between a failed call and
    the retry that fixed it; the pair is still a WRONG -> CORRECT lesson."""
    nearmiss_min_progress: float = Field(0.5, ge=0.0, le=1.0)
    """Progress a failed run must reach, on a step that raised it, for a near-miss: the "credible
    progress" of the AMM spec (seeds/000 §3); halfway is the least that says the approach was right."""
    avoidance_min_repeats: int = Field(2, ge=1)
    """Occurrences of one fingerprint in a run that make an avoidance episode ("the same failure
    repeated", design.md §6)."""
    episode_dedup_max_hamming: int = Field(3, ge=0)
    """Episodes of one kind whose SimHash (goal_signature + summary) differ in at most this many bits
    are merged, counts added and last_seen updated (design.md §6; same threshold as lesson dedup)."""
    episode_half_life_hours: float = Field(72.0, gt=0.0)
    """Half-life of an ordinary episode's strength while unused, hours (design.md §6 decay; the
    retrieval recency tau of design.md §5.3)."""
    episode_significance_slowdown: float = Field(4.0, ge=0.0)
    """A fully significant episode (significance 1) decays this many times slower than one of
    significance 0: half-life * (1 + slowdown * significance) (design.md §6 "slower for significant ones")."""
    consolidate_min_episodes: int = Field(3, ge=2)
    """Similar episodes (same kind, template and context) that consolidate into a skill (successes)
    or an avoid lesson (avoidances) (design.md §6 decay: "clusters of >= 3")."""
    skill_match_min_overlap: float = Field(0.5, ge=0.0, le=1.0)
    """Token overlap (Jaccard) of a goal template with a skill's template at or above which the skill
    matches without an embedding (design.md §6 "template token overlap")."""
    skill_max_steps: int = Field(12, ge=1)
    """Longest step list of a skill: the common action subsequence is cut here (keeps hints short)."""
    conflict_loss_needs_winner_help: bool = True
    """Count a conflict loss only in a run where the cluster's winner was measured to help
    (utility > 0), at most once per run: losing to a rival merely more trusted a priori is not
    evidence (design.md §6 "consistently loses to an alternative"; a refinement, docs/DESIGN_DELTA.md)."""
    failures_kept_per_run: int = Field(50, ge=1)
    """Failures (fingerprint, action, error) a run record keeps for lesson-specific baselines."""
    failure_note_chars: int = Field(300, ge=20, le=NOTE_CEILING_CHARS)
    """Characters of action and error text a failure note keeps."""
    recent_runs: int = Field(10, ge=1)
    """Earlier runs of a task / tool looked at for pre-run failure context and difficulty."""
    run_goal_chars: int = Field(300, ge=0)
    """Characters of a run's goal its record keeps (``RunRecord.goal``), for the tool scope of later tasks."""


class CognitiveConfig(_Section):
    """Cognitive memory: working and episodic capacities, routing, consolidation (design.md §10)."""

    cognitive_working_capacity: int = Field(10, ge=1)
    """Items a cognitive memory's working store holds; the oldest is evicted beyond it
    (seed 004 §5.1 WORKING_CAPACITY; §2.1 "5-10 items")."""
    cognitive_episodic_capacity: int = Field(50, ge=1)
    """Items a cognitive memory's episodic store holds; the lowest decayed score is evicted beyond it
    (seed 004 §5.1 EPISODIC_CAPACITY)."""
    cognitive_routing_threshold: float = Field(0.7, ge=0.0, le=1.0)
    """``add_experience`` sends an item of at least this importance to episodic, else to working
    (seed 004 §5.1, §2.3, §4.1)."""
    cognitive_consolidation_threshold: float = Field(0.7, ge=0.0, le=1.0)
    """``consolidate`` moves working items of at least this importance to episodic
    (seed 004 §5.1 CONSOLIDATION_THRESHOLD, §4.3)."""
    cognitive_decay: float = Field(0.95, gt=0.0, le=1.0)
    """Per-year decay of an episodic item's score: importance x decay ** (years passed)
    (seed 004 §5.1 DECAY_RATE, §3.1)."""
    cognitive_top_k: int = Field(5, ge=0)
    """Memories ``CognitiveMemory.retrieve`` returns by default (seed 004 §5.1, §3.2 ``top_k``)."""
    cognitive_max_top_k: int = Field(5, ge=1)
    """Largest ``top_k`` the ``retrieve_memory`` tool accepts from a model (seed 004 §5.1, §8.1
    ``max_retrieve: 5``)."""


class SemanticConfig(_Section):
    """Semantic memory: evidence strength, contradictions, confidence, hops (design.md §10)."""

    semantic_evidence_base: tuple[tuple[str, float], ...] = (
        ("axiomatic", 1.0), ("observed", 0.95), ("computed", 0.9), ("consensus", 0.7), ("reported", 0.4),
        ("inferred", 0.3), ("hypothetical", 0.2), ("hearsay", 0.1), ("unknown", 0.0),
    )
    """Strength of one piece of evidence by kind, before its level (seed 002 ``epistemic_strength``);
    a kind missing here counts 0.5, the seed's default arm."""
    semantic_evidence_slope: tuple[tuple[str, float], ...] = (("consensus", 0.2), ("reported", 0.3), ("inferred", 0.4))
    """Strength added per unit of an evidence's level (agreement, trust, confidence) for these kinds:
    consensus 0.7 + 0.2 x agreement, reported 0.4 + 0.3 x trust, inferred 0.3 + 0.4 x confidence (seed 002)."""
    semantic_contradiction_margin: float = Field(0.3, ge=0.0)
    """A contradicting position must lead the others' support by more than this to be held (the rest
    retracted); within it they are all contested (seed 002 ``handle_contradiction``: ``new > old + 0.3``)."""
    semantic_min_confidence: float = Field(0.1, ge=0.0, le=1.0)
    """Query keeps a fact whose confidence is above this, or that is contested (seed 002 ``query``:
    ``confidence > 0.1 || epistemic.is_uncertain()``)."""
    semantic_confidence_floor: float = Field(0.5, ge=0.0, le=1.0)
    """Query score is relevance x max(confidence, this) (seed 002 ``query``: ``confidence.max(0.5)``)."""
    semantic_candidates_factor: int = Field(3, ge=1)
    """Vector candidates per wanted result before the graph expansion (seed 002 ``query``: ``k: limit * 3``)."""
    semantic_hop_decay: float = Field(0.5, ge=0.0, le=1.0)
    """A fact reached one hop from a vector hit scores at least this share of the hit's relevance
    (our addition to seed 002 ``query``: there a neighbour is scored only by its own cosine, so a
    neighbour unlike the query text could never surface, which defeats the expansion)."""
    semantic_from_runs: bool = True
    """At the end of each run, learn the facts the run's verified lessons state about their tool
    (``LearningMemory.semantic``); False leaves semantic memory to explicit ``learn`` calls."""
    semantic_from_observations: bool = False
    """``end_run`` also reads a text-game run's observations into facts (``SemanticMemory.learn_from_observation``,
    heuristic: where things are, what contains what, what is open). Off by default: it writes to Chroma
    once per observation that states something, and its facts in a retrieval are not measured yet."""
    semantic_lesson_min_utility: float = 0.0
    """A lesson that helped with utility above this in a run (or was promoted) states a fact about
    its tool (a lesson whose fix is verified)."""


class StorageConfig(_Section):
    """Storage: embeddings, Chroma's index, the snapshot (design.md §4)."""

    embedding_dim: int = Field(256, ge=8)
    """Dimensions of the offline HashingEmbeddings (design.md §4)."""
    hnsw_ef_construction: int = Field(100, ge=1)
    """Candidates Chroma's HNSW index keeps while inserting a vector, for collections created from now on
    (an existing collection keeps the value it was created with). 100 is Chroma's default; smaller builds
    the index faster (the bulk of a write's time at 100k+ lessons) and trades the vector search's recall
    (docs/performance-log.md, "A million lessons")."""
    snapshot: bool = True
    """Keep a local snapshot of lessons, links, skills, runs and the graph next to the store
    (``store.snapshot``), checked against Chroma's write generation, so an open reads three
    files instead of every record (100k lessons: 46 s from Chroma; see docs/PERFORMANCE.md)."""
    warm_lessons: bool = True
    """After an open from the snapshot, parse the lessons on a background thread (in small chunks,
    yielding between them), then build the episode index, so the first retrievals and the first
    ``end_run`` do not pay for them; False keeps lessons unparsed until used (least memory: 100k
    parsed lessons hold a few hundred MB) and leaves the index to the first ``end_run``."""
    parsed_lessons_max: int | None = Field(100_000, ge=1)
    """Parsed lessons kept in memory whose JSON is also held (the snapshot's file or a write's text):
    beyond it the longest-parsed is dropped and parsed again when next read, and the warm
    parse after an open stops there. A parsed lesson takes ~6 KB, so a million would need ~6 GB
    beside Chroma's index; 100,000 parses every lesson of the 100k bench (docs/performance-log.md,
    "A million lessons"). None keeps every parsed lesson."""
    snapshot_rebase_share: float = Field(0.05, ge=0.0)
    """On close, the snapshot's journal is folded into a new base once it holds more records
    than this share of the stored ones (replaying a long journal would slow the next open)."""
    snapshot_segment_live_min: float = Field(0.5, ge=0.0)
    """A new base keeps its records where they already are, as byte ranges of earlier files (the journal
    the import wrote, the previous base's records: ``store.snapshot``, format 5) instead of writing 100 MB
    again at a 100k import's close. Such a segment whose live records fill less than this share of the
    file is copied into the new base's own file instead, so dead bytes (replaced records, journal end
    lines) stay under about half the folder; above 1 every record is rewritten (the format 4 way)."""
    snapshot_segments_max: int = Field(8, ge=1)
    """Files a base's records may lie in besides its own: beyond it the segments with the fewest live
    bytes are copied into the new base's own file (each rebase adds at most one, its journal)."""
    graph_rewrite_slack: int = Field(4096, ge=0)
    """Characters a new base's rewrite text (the lessons' WRONG and CORRECT patterns, ``store.lesson_columns``) may
    hold beyond twice the live patterns' before it is rebuilt from the live ones alone: a rewritten pair appends its
    text, so rewriting the same lessons again and again cannot grow the saved text without bound. Small on purpose
    (a few pairs); the value predates this field (the columnar snapshot, format 4) and was not measured."""


class TextGamesConfig(_Section):
    """Text games: the text-game plugin's learning and delivery (the executor's policy is its own,
    ``textgames.policy.ExecutorPolicy``)."""

    text_short_line_words: int = Field(6, ge=1)
    """Delivery: a placeholder binds only a phrase found in a line of an observation
    with at most this many words (a direct statement such as a recipe step or a listed item),
    never one found only in a description of everything in a room."""
    text_guard: Literal["off", "avoidances", "all"] = "all"
    """``StepDelivery``'s guard, delivery at the agent's proposal: ``"avoidances"`` holds a step's avoidances back until
    the agent proposes an action one stands on (``StepDelivery.check``); ``"all"`` holds its recommendations too, until
    the agent proposes something else; ``"off"`` lists them before it chooses. What an agent does unprompted costs no line."""
    text_rules_off: frozenset[str] = frozenset()
    """Delivery rules switched off by name, for ablation (``textgames.delivery_rules.SWITCHABLE_RULES``; ``bench env
    --without NAME``); an unknown name is refused when a delivery is built."""
    text_learners_off: frozenset[str] = frozenset()
    """Learning mechanisms switched off by name, for ablation (``textgames.learners.SWITCHABLE_LEARNERS``; ``bench env
    --without NAME``); an unknown name is refused when a run is learned from."""
    text_rule_max_entity_words: int = Field(4, ge=1)
    """Longest phrase (in words) of an action that text-rule learning turns into a placeholder."""
    text_rule_max_conditions: int = Field(4, ge=0)
    """Most task-text lines a text rule keeps as its condition (``Lesson.applies_when``)."""


class WorkflowConfig(_Section):
    """Workflows: procedures induced from trajectories (``learning.workflows``) and grounded at each step."""

    workflow_max_steps: int = Field(120, ge=1)
    """Longest workflow kept (steps after loops are folded); a longer alignment is cut here."""
    workflow_min_share: float = Field(0.6, gt=0.0, le=1.0)
    """Share of the trajectories that must have taken a step (aligned) for the workflow to keep it: what most of
    them did (more than half of two or of five), so a detour one start position needed is left out."""
    workflow_loop_period: int = Field(3, ge=1)
    """Longest block of actions (in steps) that, repeated back to back, is folded into one repeated step."""
    workflow_skip_lookahead: int = Field(4, ge=0)
    """Later steps tried when the next one cannot be taken now (its action is not offered): the first of them that
    can be is handed over instead (recovery by skipping)."""
    workflow_max_sources: int = Field(20, ge=1)
    """Trajectories a workflow keeps to be induced again from (the newest)."""
    workflow_suppress_rate: float = Field(0.2, ge=0.0, le=1.0)
    """A workflow whose success rate (``SkillStats.success_rate``) has fallen below this, once it has been followed
    ``workflow_min_executions`` times, is no longer handed over."""
    workflow_min_executions: int = Field(3, ge=1)
    """Runs that followed a workflow before its success rate can suppress it."""
    workflow_short_line_words: int = Field(6, ge=1)
    """A slot no trajectory's value binds may take a phrase named in a line of the attempt's observations of at most
    this many words (a list's item, a note), never one only a description of everything in view names."""
    workflow_min_goal_overlap: float = Field(0.5, ge=0.0, le=1.0)
    """Word overlap (Jaccard) of two goals at or above which their trajectories are of one kind of task and are
    induced into one workflow."""
    workflow_own_runs: bool = False
    """The memory's own runs that made progress are trajectories too: at a run's end its part up to the most progress
    it made (``procedures.learned_part``) joins the workflow of its kind."""
    workflow_own_min_progress: float = Field(1.0, gt=0.0, le=1.0)
    """Progress (the steps' ``Feedback.progress``) one of the memory's own runs must have reached for a workflow to
    be learned from it."""


_SECTION_MODELS: dict[str, type[_Section]] = {
    "capture": CaptureConfig,
    "retrieval": RetrievalConfig,
    "context": ContextConfig,
    "lifecycle": LifecycleConfig,
    "cognitive": CognitiveConfig,
    "semantic": SemanticConfig,
    "storage": StorageConfig,
    "textgames": TextGamesConfig,
    "workflows": WorkflowConfig,
}
SECTIONS: tuple[str, ...] = tuple(_SECTION_MODELS)
"""The sections, in the order ``MemoryConfig`` holds them."""
SECTION_OF: dict[str, str] = {field: name for name, model in _SECTION_MODELS.items() for field in model.model_fields}
"""Each field's section: what the flat keywords of earlier releases map to."""


MOVED_OUT: dict[str, str] = {
    name: f"textgames.policy.ExecutorPolicy.{name.removeprefix('text_')}"
    for name in ("text_prefer_bonus", "text_condition_bonus", "text_sequence_bonus", "text_paragraph_weight",
                 "text_new_verb_bonus", "text_explore_bonus")
}
"""Keywords of earlier releases that are no part of the memory's config any more, with where they went: the
memory never read them (they were ``TextGameExecutor``'s policy), so they are accepted, warned of and dropped."""


def _drop_moved(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` without the ``MOVED_OUT`` keywords, flat or in the ``textgames`` section, warning of each."""
    out = dict(data)
    section = out.get("textgames")
    held = dict(section) if isinstance(section, Mapping) else None
    moved = [k for k in out if k in MOVED_OUT] + [k for k in (held or {}) if k in MOVED_OUT]
    if not moved:
        return out
    warnings.warn("executor policy is no part of MemoryConfig; ignored here, pass it to the executor: "
                  + ", ".join(f"{k} -> {MOVED_OUT[k]}" for k in moved), DeprecationWarning, stacklevel=5)
    out = {k: v for k, v in out.items() if k not in MOVED_OUT}
    if held is not None:
        out["textgames"] = {k: v for k, v in held.items() if k not in MOVED_OUT}
    return out


def _flat_warning(names: list[str]) -> None:
    moved = ", ".join(f"{n} -> {SECTION_OF[n]}.{n}" for n in names)
    warnings.warn(f"flat MemoryConfig keywords are deprecated; use the sections: {moved}", DeprecationWarning, stacklevel=4)


def nest(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with every flat keyword moved into its section (merged over the section's own values).

    Example:
        >>> nest({"mmr_lambda": 0.5, "retrieval": {"candidates_k": 10}})
        {'retrieval': {'candidates_k': 10, 'mmr_lambda': 0.5}}
    """
    out = {k: v for k, v in fields.items() if k not in SECTION_OF}
    for name, value in fields.items():
        section = SECTION_OF.get(name)
        if section is None:
            continue
        held = out.get(section) or {}
        held = held.model_dump() if isinstance(held, BaseModel) else dict(held)
        out[section] = {**held, name: value}
    return out


class MemoryConfig(BaseModel):
    """All tunable numbers, in sections by concern. Immutable; ``replace(section={...})`` builds a changed copy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    capture: CaptureConfig = Field(default_factory=CaptureConfig)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)
    cognitive: CognitiveConfig = Field(default_factory=CognitiveConfig)
    semantic: SemanticConfig = Field(default_factory=SemanticConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    textgames: TextGamesConfig = Field(default_factory=TextGamesConfig)
    workflows: WorkflowConfig = Field(default_factory=WorkflowConfig)

    @model_validator(mode="before")
    @classmethod
    def _flat_keywords(cls, data: Any) -> Any:
        """The flat keywords of earlier releases, moved into their sections, with a ``DeprecationWarning``."""
        if not isinstance(data, Mapping):
            return data
        data = _drop_moved(data)
        flat = [k for k in data if k in SECTION_OF]
        if not flat:
            return data
        _flat_warning(flat)
        return nest(data)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            section = SECTION_OF.get(name)
            if section is None:
                return super().__getattr__(name)
            _flat_warning([name])
            return getattr(getattr(self, section), name)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> "MemoryConfig":
        """A copy with ``update`` applied: sections as models or mappings (merged), flat keywords deprecated."""
        if not update:
            return super().model_copy(deep=deep)
        flat = [k for k in update if k in SECTION_OF]
        if flat:
            _flat_warning(flat)
        return self.replace(**nest(update))

    def replace(self, **sections: Any) -> "MemoryConfig":
        """A copy with each named section's fields replaced (``replace(retrieval={"mmr_lambda": 0.5})``), validated.

        Raises:
            pydantic.ValidationError: an unknown section or field, or a value out of its bounds.
        """
        data = self.model_dump()
        for name, fields in sections.items():
            if name not in SECTIONS:
                data[name] = fields  # refused or dropped by validation, with its reason
                continue
            given = fields.model_dump() if isinstance(fields, BaseModel) else dict(fields)
            data[name] = {**data.get(name, {}), **given}
        return MemoryConfig.model_validate(data)

    def budget_for(self, difficulty: float) -> int:
        """K' for a difficulty in [0, 1] (``RetrievalConfig.budget_for``)."""
        return self.retrieval.budget_for(difficulty)


def config_value(config: MemoryConfig, name: str) -> Any:
    """A field read by its name alone, wherever its section is (for code that names fields in tables)."""
    return getattr(getattr(config, SECTION_OF[name]), name)


DEFAULT_CONFIG = MemoryConfig()
"""The defaults of design.md §9."""
