"""What can go wrong when talking to a host, as exceptions that carry a *kind*.

The fan-out records a failed host as ``(kind, message)``; reports group hosts by kind
("3 unreachable, 1 host_key"), so every failure the transport knows about is raised as a
:class:`RemoteError` subclass whose ``kind`` is one of :data:`HOST_ERROR_KINDS`. Messages name the
host and say what to do next, because they are shown to people as they are.
"""

from __future__ import annotations

from typing import Tuple

#: Every kind of host failure, in the order reports list them.
HOST_ERROR_KINDS: Tuple[str, ...] = ("unreachable", "auth", "host_key", "timeout", "sudo", "error")


class RemoteError(Exception):
    """A host could not do what was asked; ``kind`` says which sort of failure it was."""

    kind = "error"

    def __init__(self, host: str, message: str) -> None:
        super().__init__(message)
        self.host = host
        self.message = message

    def __str__(self) -> str:
        return self.message


class UnreachableError(RemoteError):
    """No SSH session could be set up: refused, timed out, no route, name not resolved."""

    kind = "unreachable"


class AuthError(RemoteError):
    """The host answered but did not accept us: key rejected, key file missing or unreadable."""

    kind = "auth"


class HostKeyError(RemoteError):
    """The host's key is unknown (and not accepted) or has changed since it was recorded."""

    kind = "host_key"


class CommandTimeout(RemoteError):
    """A remote step (a script, a session request, an SFTP operation) ran past its deadline.

    Messages say ``timed out in STEP`` so a report names where the host got stuck.
    """

    kind = "timeout"


def step_timeout(host: str, step: str, seconds: float, detail: str = "") -> CommandTimeout:
    """``host: timed out in STEP after Ns (detail)``: the one wording for every step deadline."""
    extra = f": {detail}" if detail else ""
    return CommandTimeout(host, f"{host}: timed out in {step} after {seconds:g}s{extra}")


class OutputTooLarge(RemoteError):
    """A host printed (or a fetched file held) more than the controller keeps for one step.

    The bytes past the cap were read and dropped, so what was kept is not handed to a parser as
    if it were whole: the step fails for this host only. ``limit`` names the constant in
    :mod:`ascendprep.base.limits` that was hit, and ``cap`` its value in bytes.
    """

    kind = "error"

    def __init__(self, host: str, message: str, limit: str, cap: int) -> None:
        super().__init__(host, message)
        self.limit = limit
        self.cap = cap


class SudoError(RemoteError):
    """``sudo`` refused to run the script: password needed or wrong, user not in sudoers."""

    kind = "sudo"


class CommandFailed(RemoteError):
    """A remote script ran and exited non-zero."""

    kind = "error"
