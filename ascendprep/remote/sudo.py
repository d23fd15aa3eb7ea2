"""The sudo password, kept out of logs, exceptions and reprs.

It comes from ``ASCENDPREP_SUDO_PASSWORD`` (read only when a host actually asks for one) or from
a prompt (``--ask-sudo-password``), and only ever leaves this process on the stdin of ``sudo -S``,
as exactly one line.

A wrong password must not lock accounts (``pam_faillock deny=3``) across a fleet: the
:class:`SudoGate` of a command lets the first host that asks check it, once, while the other
hosts wait; a rejected password is then never sent to another host.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Dict, Mapping, Optional, Union

from ascendprep.remote.errors import SudoError

SUDO_PASSWORD_ENV = "ASCENDPREP_SUDO_PASSWORD"
#: The environment variables ascendprep reads secrets from. None of them is ever handed on: not
#: to a script run on this machine, not to an ``--exec-via`` wrapper, not to srun or its steps.
SECRET_ENV = frozenset({SUDO_PASSWORD_ENV})


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


def without_secrets(environ: Mapping[str, str]) -> Dict[str, str]:
    """``environ`` less every variable of :data:`SECRET_ENV`: the environment a child process gets."""
    return {name: value for name, value in environ.items() if name not in SECRET_ENV}


def password_required_message(host: str) -> str:
    return (
        f"sudo on {host} requires a password: set {SUDO_PASSWORD_ENV}, use --ask-sudo-password, or configure NOPASSWD"
    )


class SudoGate:
    """The sudo password of one command, checked on one host before any other host gets it.

    Shared by every transport of a Session. :meth:`admit` is called by a host about to send the
    password for the first time: the first caller runs ``check`` (one password line, one
    attempt) while later callers wait; afterwards they either go ahead (accepted) or fail at once
    with a SudoError naming the host that rejected it, without sending the password anywhere.
    A check that could not decide (host unreachable, timed out) leaves the next host to check.
    """

    def __init__(self, password: Optional[SudoPassword] = None) -> None:
        self._password = password
        self._lock = threading.Lock()
        self._accepted = False
        self._rejected_on: Optional[str] = None

    def __repr__(self) -> str:
        state = (
            "accepted" if self._accepted else f"rejected on {self._rejected_on}" if self._rejected_on else "unchecked"
        )
        return f"SudoGate({state})"

    def password(self) -> Optional[SudoPassword]:
        """The password to use (the prompted one, else the environment's), or None."""
        if self._password is None:
            self._password = sudo_password_from_env()
        return self._password

    def admit(self, host: str, check: Callable[[], bool]) -> None:
        """Return when ``host`` may send the password; raise SudoError when it must not."""
        with self._lock:
            if self._accepted:
                return
            if self._rejected_on is None:
                if check():
                    self._accepted = True
                    return
                self._rejected_on = host
            if self._rejected_on == host:
                raise SudoError(
                    host,
                    f"sudo on {host} rejected the sudo password (from {SUDO_PASSWORD_ENV} or --ask-sudo-password); "
                    "it was tried once, here only, and not sent to any other host",
                )
        raise SudoError(
            host,
            f"sudo password not tried on {host}: it was rejected on {self._rejected_on}, so it was sent nowhere else "
            "(one typo must not lock the account on every node); correct it and run again",
        )


def as_gate(value: Union[SudoPassword, SudoGate, None]) -> SudoGate:
    """A transport's gate: the Session's shared one, or a gate of its own around a password."""
    return value if isinstance(value, SudoGate) else SudoGate(value)
