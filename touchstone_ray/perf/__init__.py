"""``touchstone-ray perf``: speed of every model on every host (SPEC §6, §7b).

Modules: :mod:`.corpus` (the shipped prose), :mod:`.workload` (prompts of a target length,
forced output length), :mod:`.plan` (points and keys), :mod:`.client` (the per-host actor's
closed loop), :mod:`.records` (one request), :mod:`.summary` (per-point figures),
:mod:`.capacity` (the SLO search), :mod:`.bundle` and :mod:`.run` (the driver).
"""
