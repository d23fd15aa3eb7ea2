"""The sudo password, kept out of logs, exceptions and reprs.

It comes from ``ASCENDPREP_SUDO_PASSWORD`` (read only when a host actually asks for one) or from
a prompt (``--ask-sudo-password``), and only ever leaves this process on the stdin of ``sudo -S``.
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

SUDO_PASSWORD_ENV = "ASCENDPREP_SUDO_PASSWORD"


class SudoPassword:
    """A password that will not print itself: ``repr``/``str`` show ``'***'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if "\n" in value or "\r" in value or "\0" in value:
            # sudo -S reads one line: a newline would split the password and feed the rest to sh.
            raise ValueError(f"{SUDO_PASSWORD_ENV} must be a single line")
        self._value = value

    def stdin_line(self) -> bytes:
        """The bytes to send ahead of the script on sudo's stdin."""
        return self._value.encode() + b"\n"

    def __repr__(self) -> str:
        return "SudoPassword('***')"

    __str__ = __repr__

    def __reduce__(self):
        # Keep it from travelling to other processes by accident (multiprocessing, caches).
        raise TypeError("a SudoPassword cannot be pickled")


def sudo_password_from_env(environ: Optional[Mapping[str, str]] = None) -> Optional[SudoPassword]:
    """The password from ``ASCENDPREP_SUDO_PASSWORD``, or None when unset or empty."""
    value = (os.environ if environ is None else environ).get(SUDO_PASSWORD_ENV)
    return SudoPassword(value) if value else None


def password_required_message(host: str) -> str:
    return (
        f"sudo on {host} requires a password: set {SUDO_PASSWORD_ENV}, use --ask-sudo-password, or configure NOPASSWD"
    )
