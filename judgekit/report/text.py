"""The small formatting rules every report and shell shares: a number, a printable name, a
Markdown-safe text (judgekit.report.render re-exports them).

>>> fmt_number(float("nan")), fmt_number(0.8123, 2), printable("ok\\x1b[2J")
('n/a', '0.81', 'ok\\\\x1b[2J')
"""

from __future__ import annotations

import math
import re


def fmt_number(x: float | None, digits: int = 3) -> str:
    """A figure for people: fixed digits, n/a when undefined."""
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def printable(text: object) -> str:
    r"""Text from a file or a model made safe for a terminal: control and format characters
    (escape sequences, carriage returns, bidirectional overrides) are shown as Python escapes;
    letters, accents, CJK, emoji and spaces stay as they are.

    >>> print(printable("café 日本 \x1b[2J\u202eevil"))
    café 日本 \x1b[2J\u202eevil
    """
    import unicodedata

    text = str(text)
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() or unicodedata.category(ch) == "Zs" else repr(ch)[1:-1]
        for ch in text
    )


def md_escape(text: str | None, limit: int = 300) -> str:
    r"""Make model or example text inert in Markdown (and in HTML rendered from it): on one line,
    its control and format characters escaped (`printable`), Markdown's own characters as
    entities; an underscore inside a word, which Markdown never reads as emphasis, stays as it is.

    >>> md_escape("ORD_1212 _em_ *b* \x1b[2J")
    'ORD_1212 \\_em\\_ &#42;b&#42; \\x1b&#91;2J'
    """
    if text is None:
        return ""
    # a backslash of the text is one in Markdown too; `printable`'s escapes (\x1b) read as written
    text = printable(" ".join(text.split()).replace("\\", "\\\\"))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    for char, entity in (
        ("&", "&amp;"),
        ("<", "&lt;"),
        (">", "&gt;"),
        ("|", "&#124;"),
        ("`", "&#96;"),
        ("[", "&#91;"),
        ("]", "&#93;"),
        ("*", "&#42;"),
    ):
        text = text.replace(char, entity)
    return _WORD_UNDERSCORE.sub(r"\\_", text)


# An underscore that could open or close emphasis: one not between two letters or digits.
_WORD_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
