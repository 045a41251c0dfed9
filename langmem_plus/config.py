"""MemoryConfig: every tunable number of langmem_plus, with its default and its source.

One frozen object is passed everywhere; nothing else in the package holds a magic
number. Field docstrings name the unit and where the default came from (a section
of DESIGN.md, a paper, or a measurement).

Example:
    >>> from langmem_plus import MemoryConfig
    >>> cfg = MemoryConfig(mmr_lambda=0.5)
    >>> cfg.budget_for(0.9)
    7
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class MemoryConfig(BaseModel):
    """All tunable numbers. Immutable; build a new one with ``model_copy(update=...)``."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    # ---- capture (DESIGN §3) -------------------------------------------------
    error_text_max_chars: int = Field(2000, ge=1)
    """Characters of error text kept on an ErrorEvent (DESIGN §2)."""
    error_text_scan_chars: int = Field(16_000, ge=256)
    """Characters of raw error text the fingerprinter reads (head and tail); bounds cost on 1 MB inputs."""
    stall_steps: int = Field(3, ge=1)
    """Steps without progress before a no_progress event (DESIGN §3)."""
    repeat_window: int = Field(5, ge=1)
    """Steps looked back over for 'the same failure repeated' (DESIGN §3)."""

    # ---- retrieval (DESIGN §5) ----------------------------------------------
    candidates_k: int = Field(20, ge=1)
    """Candidates fetched before re-ranking, K (DESIGN §5.2)."""
    budget_easy: int = Field(3, ge=0)
    """K' when difficulty <= difficulty_easy_max (DESIGN §5.6)."""
    budget_medium: int = Field(5, ge=0)
    """K' when difficulty <= difficulty_medium_max (DESIGN §5.6)."""
    budget_hard: int = Field(7, ge=0)
    """K' above difficulty_medium_max (DESIGN §5.6)."""
    difficulty_easy_max: float = Field(0.3, ge=0.0, le=1.0)
    """Upper difficulty bound of the easy budget (DESIGN §5.6)."""
    difficulty_medium_max: float = Field(0.7, ge=0.0, le=1.0)
    """Upper difficulty bound of the medium budget (DESIGN §5.6)."""
    mmr_lambda: float = Field(0.4, ge=0.0, le=1.0)
    """MMR trade-off: lambda * score - (1 - lambda) * max_sim (DESIGN §5.5)."""
    w_fingerprint: float = 0.40
    """Lesson score weight of the exact fingerprint match (DESIGN §5.3)."""
    w_tags: float = 0.25
    """Lesson score weight of tag overlap (Jaccard) (DESIGN §5.3)."""
    w_text: float = 0.20
    """Lesson score weight of text (embedding cosine) similarity (DESIGN §5.3)."""
    w_reliability: float = 0.10
    """Lesson score weight of reliability (DESIGN §5.3)."""
    w_recency: float = 0.05
    """Lesson score weight of recency (DESIGN §5.3)."""
    ep_w_cos: float = 1.0
    """Episode score weight of cosine similarity (DESIGN §5.3, AMM spec)."""
    ep_w_goal: float = 0.5
    """Episode score weight of goal token overlap (DESIGN §5.3)."""
    ep_w_success: float = 0.3
    """Episode score weight of log(1 + success_weight) (DESIGN §5.3)."""
    ep_w_recency: float = 0.2
    """Episode score weight of recency (DESIGN §5.3)."""
    recency_tau_hours: float = Field(72.0, gt=0.0)
    """Recency time constant: recency = exp(-dt / tau), hours (DESIGN §5.3)."""
    tag_bucket_cap: int = Field(2, ge=1)
    """At most this many chosen items share a primary tag (DESIGN §5.4)."""
    per_run_cap: int = Field(3, ge=1)
    """At most this many chosen items come from any one earlier run (DESIGN §5.4)."""
    graph_seed_weight_fp: float = 1.0
    """Personalization mass on the event's fingerprint node for PageRank (DESIGN §5.2)."""
    graph_hops: int = Field(2, ge=1)
    """Neighbourhood radius, in edges, around the seeds that PageRank runs on (DESIGN §5.2)."""
    graph_max_nodes: int = Field(400, ge=10)
    """Largest neighbourhood PageRank runs on, so its cost does not grow with the graph (DESIGN §5.2)."""
    pagerank_alpha: float = Field(0.85, gt=0.0, lt=1.0)
    """PageRank damping factor (networkx default; Page et al. 1999)."""
    rewrite_miss_factor: float = Field(0.5, ge=0.0, le=1.0)
    """Share of the fingerprint-match credit kept by a rewrite lesson whose WRONG pattern is
    absent from the failing action: one fingerprint (``unknown command <str>``) can have many
    fixes, and the one that applies to the action is the answer (measured on gridtool)."""
    pitfall_scale: float = Field(3.0, gt=0.0)
    """Pre-run difficulty = 1 - exp(-pitfalls / scale), pitfalls being the lessons a task needed
    before plus the failures its last run still had (DESIGN §5.6 "from recent failures")."""
    max_context_tokens: int = Field(800, ge=0)
    """Token cap on the hints one retrieval hands the agent (issue 3)."""

    # ---- learning (DESIGN §6) -----------------------------------------------
    min_occurrences: int = Field(2, ge=1)
    """A fingerprint seen this often in a run, or in this many runs, gets a candidate lesson."""
    simhash_bits: int = Field(64, ge=16, le=64)
    """SimHash width used for dedup (DESIGN §6)."""
    dedup_max_hamming: int = Field(3, ge=0)
    """Near-duplicate threshold, in differing SimHash bits (DESIGN §6)."""
    utility_w_errors: float = 0.65
    """Utility weight of error_reduction without an LLM referee (DESIGN §6)."""
    utility_w_steps: float = 0.35
    """Utility weight of step_efficiency_gain without an LLM referee (DESIGN §6)."""
    utility_w_errors_ref: float = 0.50
    """Utility weight of error_reduction with an LLM referee (DESIGN §6)."""
    utility_w_steps_ref: float = 0.30
    """Utility weight of step_efficiency_gain with an LLM referee (DESIGN §6)."""
    utility_w_referee_ref: float = 0.20
    """Utility weight of referee_score_gain with an LLM referee (DESIGN §6)."""
    promote_min_runs: int = Field(3, ge=1)
    """Runs with activations needed before promotion (DESIGN §6)."""
    promote_min_utility: float = 0.20
    """Mean utility needed for promotion (DESIGN §6)."""
    promote_max_pass_drop: float = Field(0.10, ge=0.0, le=1.0)
    """Promotion is refused if the pass rate is more than this under baseline (DESIGN §6)."""
    suppress_min_activations: int = Field(3, ge=1)
    """Evidence-bearing activations needed before suppression (DESIGN §6)."""
    suppress_max_utility: float = 0.0
    """Mean utility at or below which a lesson is suppressed (DESIGN §6)."""
    conflict_losses_to_suppress: int = Field(3, ge=1)
    """Conflict-cluster losses after which a lesson is suppressed (DESIGN §6)."""
    archive_unused_runs: int = Field(50, ge=1)
    """Runs without activation before a low-reliability lesson is archived (DESIGN §6)."""
    archive_max_reliability: float = Field(0.35, ge=0.0, le=1.0)
    """Reliability at or below which an unused lesson may be archived (DESIGN §6)."""
    nearmiss_cap: int = Field(1, ge=0)
    """Near-miss episodes kept per (subgoal template, context) (DESIGN §6)."""
    avoidance_ttl_episodes: int = Field(50, ge=1)
    """Avoidance episodes expire after this many episodes (DESIGN §6)."""
    skill_min_successes: int = Field(3, ge=1)
    """A subgoal template solved this often becomes a skill (DESIGN §6)."""
    skill_match_cosine: float = Field(0.6, ge=0.0, le=1.0)
    """Cosine above which a skill matches a goal (DESIGN §6)."""
    skill_ema_alpha: float = Field(0.1, gt=0.0, le=1.0)
    """EMA factor of a skill's success rate (DESIGN §6)."""
    episode_recall_min_strength: float = Field(0.1, ge=0.0, le=1.0)
    """Episodes weaker than this are not recalled (DESIGN §6)."""

    failures_kept_per_run: int = Field(50, ge=1)
    """Failures (fingerprint, action, error) a run record keeps for lesson-specific baselines."""
    failure_note_chars: int = Field(300, ge=20)
    """Characters of action and error text a failure note keeps."""

    # ---- storage (DESIGN §4) ------------------------------------------------
    embedding_dim: int = Field(256, ge=8)
    """Dimensions of the offline HashingEmbeddings (DESIGN §4)."""

    @model_validator(mode="after")
    def _check_bounds(self) -> "MemoryConfig":
        if self.difficulty_easy_max > self.difficulty_medium_max:
            raise ValueError(
                "difficulty_easy_max must be <= difficulty_medium_max "
                f"(got {self.difficulty_easy_max} > {self.difficulty_medium_max})"
            )
        return self

    def budget_for(self, difficulty: float) -> int:
        """K' for a difficulty in [0, 1] (DESIGN §5.6): 3 / 5 / 7 by default."""
        if difficulty <= self.difficulty_easy_max:
            return self.budget_easy
        if difficulty <= self.difficulty_medium_max:
            return self.budget_medium
        return self.budget_hard


DEFAULT_CONFIG = MemoryConfig()
"""The defaults of DESIGN §9."""
