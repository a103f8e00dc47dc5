"""touchstone-ray: a distributed evaluation runner for self-hosted LLMs on a Ray cluster.

Packs (YAML use cases) are loaded by :func:`touchstone_ray.pack.load_pack`; the CLI lives in
:mod:`touchstone_ray.cli`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
