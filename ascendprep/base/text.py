"""Values from outside (inventory, hosts, tools, switches) as terminal text that cannot act.

Every such value reaches the terminal through this module, for two reasons:

* rich reads ``[...]`` in a printed string as markup: an inventory user ``[/bold]`` raised a
  MarkupError (a traceback), and a tool message ``[/home/x/ip.c:553]`` crashed the apply report;
* rich passes ESC through: an LLDP system name ``ESC ]0;title BEL`` retitled the operator's
  terminal, ``ESC c`` cleared it, a CR overwrote the line before it.

:func:`visible` spells C0/C1 control characters (and the Unicode line separators and bidi
overrides that reorder a line) as ``\\x1b``-style escapes; newline and tab stay, since tool
messages are multi-line. :func:`cell` makes a rich ``Text`` (never parsed as markup) for tables;
:func:`markup_safe` is for a value put inside a markup string. Machines get the raw value: JSON
escapes control characters itself, so ``--format json`` carries exactly what the host said.
Values longer than :data:`~ascendprep.base.limits.TERMINAL_VALUE_MAX_CHARS` are cut on the terminal
(the JSON and the bundle keep them whole).
"""

from __future__ import annotations

import re

from rich.markup import escape
from rich.text import Text

from ascendprep.base.limits import TERMINAL_VALUE_MAX_CHARS

#: C0 (but newline and tab), DEL, C1, the Unicode line/paragraph separators, and the bidi
#: embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) that reorder what follows.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _spelled(match: "re.Match[str]") -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value: object, limit: int = TERMINAL_VALUE_MAX_CHARS) -> str:
    """``str(value)`` with every control character spelled out: ``"a\\x1b]0;t\\x07"``, and cut
    after ``limit`` characters (a host that prints megabytes must not fill the terminal)."""
    text = "" if value is None else str(value)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    return _UNSAFE.sub(_spelled, text)


def cell(value: object, style: str = "") -> Text:
    """A table cell or printable showing ``value`` as it is: no markup, controls made visible."""
    return Text(visible(value), style=style)


def markup_safe(value: object) -> str:
    """``value`` ready to sit inside a rich markup string (``f"[red]{markup_safe(x)}[/]"``)."""
    return escape(visible(value))
