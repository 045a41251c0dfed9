"""Measure the text-game adapters: speed, and a memory-free valid-action baseline.

Needs the ``envs`` extra and Java 17::

    pip install -e ".[envs]"
    python examples/text_env_baseline.py            # both measurements
    python examples/text_env_baseline.py --seeds 10 --max-steps 50

1. Steps per second of each env through the adapter (valid actions chosen by a
   seeded random generator, a reset whenever a game ends), plus JVM start and reset
   times.
2. The success rate of a simple policy on the first test-fold seeds of
   twx-cooking:easy and :medium: pick the valid action with the most content words
   (stop words removed) in common with the goal, never repeating an action in the same state (ties go to
   the first action in sorted order).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from typing import Any

from langmem_plus.envs.registry import make_env
from langmem_plus.envs.textgame import TextGameEnv
from langmem_plus.errors import EnvError

SPEED_ENVS = (
    "twx-cooking:easy",
    "twx-coin:easy",
    "twx-twc:easy",
    "twx-cooking:rooms3",
    "sciworld:boil",
    "sciworld:find-living-thing",
    "tw-cooking:easy",
    "tw-treasure:easy",
)
SPEED_SEEDS = 3
"""Train seeds the speed run cycles through (TextWorld generates each game once, a few seconds)."""
_WORD = re.compile(r"[a-z]+")
STOP_WORDS = frozenset("a an the in on to of for and or is are you your it its s let once done with".split())
"""Words that carry no content; without this "put meal in counter" beats "eat meal" on the word "in"."""


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - STOP_WORDS


def _text_env(name: str) -> TextGameEnv:
    env = make_env(name)
    if not isinstance(env, TextGameEnv):
        raise SystemExit(f"{name} is not a text game")
    return env


def speed(name: str, steps: int, seed: int = 0) -> dict[str, Any]:
    """Steps per second of random valid actions through the adapter, with start and reset times."""
    rng = random.Random(seed)
    started = time.perf_counter()
    env = _text_env(name)
    task_ids = [f"train-{s}" for s in env.fold_seeds("train")[:SPEED_SEEDS]]
    start_s = time.perf_counter() - started
    resets, reset_s, step_s = 0, 0.0, 0.0
    try:
        for i in range(steps):
            if i == 0 or env.done or not env.valid_actions:
                t = time.perf_counter()
                env.reset(task_ids[resets % len(task_ids)])
                reset_s += time.perf_counter() - t
                resets += 1
            t = time.perf_counter()
            env.step(rng.choice(env.valid_actions))
            step_s += time.perf_counter() - t
    finally:
        env.close()
    return {
        "env": name,
        "steps_per_s": round(steps / step_s, 1),
        "jvm_start_s": round(start_s, 2),
        "reset_ms": round(1000 * reset_s / max(resets, 1), 1),
        "steps": steps,
        "resets": resets,
    }


def overlap_policy(env: TextGameEnv, tried: dict[str, set[str]], rng: random.Random | None = None) -> str | None:
    """The valid action sharing most words with the goal, never one already tried in this state.

    Ties go to the first action in sorted order, or to a random one when ``rng`` is given.
    """
    # The state: location, inventory, score and the valid actions (which show what is open or held).
    key = json.dumps(env.state, sort_keys=True) + "\n".join(env.valid_actions)
    done_here = tried.setdefault(key, set())
    goal = _words(env.goal)
    options = [a for a in env.valid_actions if a not in done_here]
    if not options:
        return None
    top = max(len(_words(a) & goal) for a in options)
    ties = [a for a in options if len(_words(a) & goal) == top]
    best = rng.choice(ties) if rng is not None else ties[0]
    done_here.add(best)
    return best


def success_rate(name: str, seeds: int, max_steps: int, *, random_ties: bool = False) -> dict[str, Any]:
    """Share of the first ``seeds`` test seeds the overlap policy wins within ``max_steps`` commands."""
    env = _text_env(name)
    wins, lost, scores, steps_used = 0, 0, [], []
    try:
        for seed in env.fold_seeds("test")[:seeds]:
            env.reset(f"test-{seed}")
            tried: dict[str, set[str]] = {}
            rng = random.Random(seed) if random_ties else None
            n = 0
            while n < max_steps and not env.done:
                action = overlap_policy(env, tried, rng)
                if action is None:
                    break
                env.step(action)
                n += 1
            verdict = env.evaluate()
            wins += int(verdict.passed)
            lost += int(env.done and not env.won)
            scores.append(verdict.score)
            steps_used.append(n)
    finally:
        env.close()
    return {
        "env": name,
        "ties": "random" if random_ties else "first",
        "seeds": seeds,
        "max_steps": max_steps,
        "success_rate": wins / seeds,
        "lost": lost,
        "mean_score": round(sum(scores) / len(scores), 3),
        "mean_steps": round(sum(steps_used) / len(steps_used), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--speed-steps", type=int, default=300)
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args()
    if not args.skip_speed:
        for name in SPEED_ENVS:
            try:
                print(json.dumps(speed(name, args.speed_steps)))
            except EnvError as exc:  # an extra that is not installed
                print(json.dumps({"env": name, "skipped": str(exc)}))
    for random_ties in (False, True):
        for name in ("twx-cooking:easy", "twx-cooking:medium"):
            print(json.dumps(success_rate(name, args.seeds, args.max_steps, random_ties=random_ties)))


if __name__ == "__main__":
    main()
