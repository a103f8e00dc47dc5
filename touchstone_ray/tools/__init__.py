"""``touchstone-ray tools``: the judge-free tool-calling and code bench on the fleet (SPEC §3b,
§7c). :func:`touchstone_ray.tools.run.run_tools` is the entry point."""
