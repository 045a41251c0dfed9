"""Text games as an environment plugin: the learning, delivery and executor that only text games use.

Games that enumerate their valid actions (TextWorldExpress, ScienceWorld, TextWorld) teach text rules ("Avoid
`eat <X>`", "Prefer `cook <X> in oven` when the task says `roast <X>`") from lost and won games; this package
learns them (``rules`` and the mechanisms beside it), delivers them at the step they bear on (``delivery``), and
plays the games (``executor``). The core reaches it only through ``plugins.EnvPlugin`` (``plugin.PLUGIN``),
registered for the ``text-game`` domain.
"""
