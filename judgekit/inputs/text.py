"""Text as a model reading it cannot tell it apart (light: the gate's fast reader uses it too).

>>> normal_text("Your  card is\\u200b BLOCKED.") == normal_text("your card is blocked.")
True
"""

from __future__ import annotations

import unicodedata


def cased_text(text: str) -> str:
    """`normal_text` with its case kept: what tells two replies apart when case can be what a
    question asks about (a pairwise judge asked which reply capitalises as asked sees "Yes" and
    "YES" as two replies).

    >>> cased_text("Your  card\u200b is BLOCKED.") == cased_text("Your card is blocked.")
    False
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return " ".join(text.split())


def normal_text(text: str) -> str:
    """Unicode compatibility forms made one (NFKC), invisible format characters (zero-width
    spaces, joiners, soft hyphens, byte-order marks) dropped, case folded, and every run of white
    space made one space."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return " ".join(text.casefold().split())
