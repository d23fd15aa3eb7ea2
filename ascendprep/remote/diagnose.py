"""Turn the exceptions of a failed SSH connection into messages a person can act on.

paramiko and the socket layer report the same few situations in many shapes
(``NoValidConnectionsError`` wrapping ``ECONNREFUSED``, ``socket.timeout``, ``SSHException``
with a banner message...). :func:`describe_connect_failure` maps them to a
:class:`~ascendprep.remote.errors.RemoteError` whose kind drives retry and reporting.
"""

from __future__ import annotations

import errno
import socket
from typing import Optional, Sequence

import paramiko
from paramiko.ssh_exception import NoValidConnectionsError

from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import AuthError, HostKeyError, RemoteError, UnreachableError, step_timeout
from ascendprep.remote.hostkeys import KnownKey, changed_key_message

_NO_ROUTE = {errno.EHOSTUNREACH, errno.ENETUNREACH}


def _errno_of(exc: BaseException) -> Optional[int]:
    if isinstance(exc, NoValidConnectionsError):
        codes = {getattr(e, "errno", None) for e in exc.errors.values()}
        if errno.ECONNREFUSED in codes:
            return errno.ECONNREFUSED
        return next((c for c in codes if c in _NO_ROUTE), None)
    return getattr(exc, "errno", None)


def describe_connect_failure(exc: BaseException, access: HostAccess, known: Sequence[KnownKey] = ()) -> RemoteError:
    """The RemoteError for a failed connection to ``access`` (``known``: keys on file)."""
    if isinstance(exc, RemoteError):
        return exc
    name, where = access.name, f"{access.address}:{access.port}"
    if isinstance(exc, paramiko.BadHostKeyException):
        return HostKeyError(name, changed_key_message(access, exc.key, known))
    if isinstance(exc, paramiko.AuthenticationException) and "timeout" in str(exc).lower():
        return step_timeout(name, "auth", access.connect_timeout, f"{where} did not answer the login in time")
    if isinstance(exc, paramiko.AuthenticationException):
        return AuthError(name, auth_failure_message(access, exc))
    if isinstance(exc, socket.gaierror):
        return UnreachableError(name, f"{name}: cannot resolve host name {access.address!r} ({exc.strerror})")
    code = _errno_of(exc)
    if code == errno.ECONNREFUSED:
        return UnreachableError(
            name, f"{name}: connection refused by {where}: nothing listens there (is sshd running? is the port right?)"
        )
    if code in _NO_ROUTE:
        return UnreachableError(name, f"{name}: no route to host {access.address} (host down or network unreachable)")
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return UnreachableError(
            name,
            f"{name}: timed out in connect: no answer from {where} within {access.connect_timeout:g}s "
            "(host down, wrong address, or a firewall dropping packets)",
        )
    if isinstance(exc, paramiko.ChannelException):
        jump = access.jump.name if access.jump else "the jump host"
        return UnreachableError(name, f"{name}: {jump} could not open a tunnel to {where}: {exc}")
    if isinstance(exc, paramiko.SSHException) and "banner" in str(exc).lower():
        return UnreachableError(
            name,
            f"{name}: timed out in SSH greeting: {where} accepted the connection but sent no SSH greeting within "
            f"{access.connect_timeout:g}s (not an SSH server, or sshd overloaded: MaxStartups)",
        )
    if isinstance(exc, paramiko.SSHException) and str(exc) == "No existing session":
        # paramiko's start_client gives up at its timeout without saying so; the login then
        # finds no session. The server sent a greeting but never finished the key exchange.
        return step_timeout(
            name,
            "key exchange",
            access.connect_timeout,
            f"{where} sent its SSH greeting but did not complete the handshake",
        )
    if isinstance(exc, (paramiko.SSHException, EOFError, ConnectionError)):
        return UnreachableError(name, f"{name}: SSH session setup with {where} failed: {exc or type(exc).__name__}")
    if isinstance(exc, OSError):
        return UnreachableError(name, f"{name}: cannot connect to {where}: {exc.strerror or exc}")
    return RemoteError(name, f"{name}: unexpected error while connecting to {where}: {type(exc).__name__}: {exc}")


def auth_failure_message(access: HostAccess, exc: BaseException) -> str:
    if isinstance(exc, paramiko.PasswordRequiredException):
        return f"{access.name}: the SSH key {access.key_file} is protected by a passphrase: load it with ssh-add first"
    if access.key_file:
        tried = f"the key {access.key_file}"
    else:
        tried = "ssh-agent and the default keys in ~/.ssh"
    return (
        f"{access.name}: authentication as {access.user} on {access.address}:{access.port} failed: "
        f"the server accepted none of {tried} (is the public key in ~{access.user}/.ssh/authorized_keys?)"
    )
