"""The delivery rules beyond the trigger: named, switchable, each in its own module, run by ``StepDelivery``.

``textgames.delivery.StepDelivery`` triggers the stored rules (``textgames.trigger``), then asks each rule of
``PIPELINE``, in its order, for the firings it adds at the step; one verdict per action follows (``delivery``).
``never_seen_right`` adds none: it widens the trigger. The guard (``MemoryConfig.textgames.text_guard``) is the last
stage, in ``delivery``. ``MemoryConfig.textgames.text_rules_off`` (``bench env --without NAME``) switches any rule
here off by name; ``docs/text-games.md`` gives each one's reasons and the ablation.
"""

from __future__ import annotations

from langmem_plus.config import MemoryConfig
from langmem_plus.textgames.delivery_rules.base import DeliveryRule, Firing, Known
from langmem_plus.textgames.delivery_rules.elimination import Elimination
from langmem_plus.textgames.delivery_rules.kin_in_attempt import KinInAttempt
from langmem_plus.textgames.delivery_rules.never_seen_right import NeverSeenRight
from langmem_plus.textgames.delivery_rules.undo import Undo
from langmem_plus.textgames.delivery_rules.unknown_kin import UnknownKin
from langmem_plus.textgames.delivery_rules.using_up import UsingUp
from langmem_plus.textgames.switches import switched_off

PIPELINE: tuple[type[DeliveryRule], ...] = (NeverSeenRight, Elimination, UnknownKin, Undo, UsingUp, KinInAttempt)
"""The rules in the order they run at each step."""

SWITCHABLE_RULES: dict[str, str] = {rule.name: rule.summary for rule in PIPELINE}
"""Each rule's name and what it does."""

INFERRED_PREFIXES: tuple[str, ...] = tuple(dict.fromkeys(rule.prefix for rule in PIPELINE if rule.prefix))
"""Id prefixes of the lines inferred at delivery rather than stored as lessons."""


def rules_off(config: MemoryConfig) -> frozenset[str]:
    """The switched-off rules of ``config``.

    Raises:
        InvalidArgument: a name that is not in ``SWITCHABLE_RULES``.
    """
    return switched_off(config.textgames.text_rules_off, SWITCHABLE_RULES, "delivery rule")


def build(known: Known) -> list[DeliveryRule]:
    """The rules in force for one attempt, built from what memory knows, in pipeline order."""
    off = rules_off(known.config)
    return [rule(known) for rule in PIPELINE if rule.name not in off]  # type: ignore[call-arg]


__all__ = ["INFERRED_PREFIXES", "PIPELINE", "SWITCHABLE_RULES", "DeliveryRule", "Firing", "Known", "build", "rules_off"]
