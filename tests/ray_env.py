"""Ray auth isolation for tests that start Ray more than once in one pytest process.

Ray 2.60 caches the auth mode and token for the whole process and a local ``ray.init`` sets
``RAY_AUTH_MODE=token`` in the environment: a second ``ray.init`` with another HOME would
otherwise fail (its GCS finding no token, or the driver sending the old one). Ray's own tests
reset the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

RAY_AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def reset_ray_auth() -> None:
    """Forget the auth mode and token this process cached."""
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


@contextlib.contextmanager
def isolated_ray_auth() -> Iterator[None]:
    """Unset the ``RAY_AUTH_*`` variables and reset the cached auth state, before and after
    (whatever Ray sets in between is undone)."""
    with pytest.MonkeyPatch.context() as mp:
        for name in RAY_AUTH_VARS:
            mp.setenv(name, "")  # records the old value, so what ray.init sets is undone
            mp.delenv(name)
        reset_ray_auth()
        try:
            yield
        finally:
            reset_ray_auth()
