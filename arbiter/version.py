"""The installed distribution's version (`arbiter --version`, `arbiter.__version__`)."""

from __future__ import annotations

DISTRIBUTION = "arbiter-llm"


def version() -> str:
    """The version of the installed `arbiter-llm` distribution."""
    # importlib.metadata costs ~40 ms: only a version query pays for it
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"
