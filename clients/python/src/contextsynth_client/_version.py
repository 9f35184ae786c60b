"""The client's version, as in pyproject.toml (sent in its User-Agent)."""

__version__ = "0.1.0"
