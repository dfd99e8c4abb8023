"""Text as a model reading it cannot tell it apart (light: the gate's fast reader uses it too).

>>> normal_text("Your  card is\\u200b BLOCKED.") == normal_text("your card is blocked.")
True
"""

from __future__ import annotations

import re
import unicodedata

# Unicode's Default_Ignorable_Code_Point characters that are not format characters (those go by
# category): variation selectors, Hangul fillers, Mongolian free variation selectors, Khmer
# inherent vowels, the combining grapheme joiner, and the reserved ones (DerivedCoreProperties.txt).
# They are shown as nothing, so a model reads the text around them as if they were not there.
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u3164\ufe00-\ufe0f\uffa0"
    "\ufff0-\ufff8\U000e0000-\U000e0fff]"
)


def _visible(text: str) -> str:
    """`text` in NFKC without the characters shown as nothing; the blank Braille pattern, shown as
    a space, is one."""
    text = _IGNORABLE.sub("", unicodedata.normalize("NFKC", text))
    return "".join(c for c in text if unicodedata.category(c) != "Cf").replace("\u2800", " ")


def cased_text(text: str) -> str:
    """`normal_text` with its case kept: what tells two replies apart when case can be what a
    question asks about (a pairwise judge asked which reply capitalises as asked sees "Yes" and
    "YES" as two replies).

    >>> cased_text("Your  card\u200b is BLOCKED.") == cased_text("Your card is blocked.")
    False
    """
    if not text.isascii():
        text = _visible(text)
    return " ".join(text.split())


def normal_text(text: str) -> str:
    """Unicode compatibility forms made one (NFKC), invisible characters dropped (format
    characters: zero-width spaces, joiners, soft hyphens, byte-order marks; and the rest of
    Unicode's default-ignorable ones: variation selectors, fillers, the combining grapheme
    joiner), case folded, the blank Braille pattern made a space, and every run of white space
    made one space."""
    if not text.isascii():
        text = _visible(text)
    return " ".join(text.casefold().split())
