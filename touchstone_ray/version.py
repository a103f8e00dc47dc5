"""The package version, on the ground floor so that every layer may record it."""

__version__ = "0.1.0"
