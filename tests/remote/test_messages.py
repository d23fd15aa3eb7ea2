"""What people read when a connection fails, and the input checks of HostAccess and sudo."""

from __future__ import annotations

import errno
import os
import socket

import paramiko
import pytest
from paramiko.ssh_exception import NoValidConnectionsError

from ascendprep.remote.access import HostAccess, known_hosts_files
from ascendprep.remote.diagnose import describe_connect_failure
from ascendprep.remote.sudo import SudoPassword, sudo_password_from_env

ACCESS = HostAccess(name="node3", address="10.0.0.13", port=2222, user="ops", key_file="/keys/lab", connect_timeout=7)


def _error(exc: BaseException):
    return describe_connect_failure(exc, ACCESS)


def test_connection_refused() -> None:
    exc = NoValidConnectionsError({("10.0.0.13", 2222): ConnectionRefusedError(errno.ECONNREFUSED, "refused")})
    error = _error(exc)
    assert error.kind == "unreachable"
    assert "node3: connection refused by 10.0.0.13:2222" in str(error)
    assert "is sshd running" in str(error)


def test_no_route_to_host() -> None:
    for code in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        error = _error(OSError(code, os.strerror(code)))
        assert (error.kind, str(error)) == (
            "unreachable",
            "node3: no route to host 10.0.0.13 (host down or network unreachable)",
        )
    wrapped = NoValidConnectionsError({("10.0.0.13", 2222): OSError(errno.EHOSTUNREACH, "no route")})
    assert "no route to host" in str(_error(wrapped))


def test_connect_timeout_names_the_limit() -> None:
    error = _error(socket.timeout("timed out"))
    assert error.kind == "unreachable"
    assert "no answer from 10.0.0.13:2222 within 7s" in str(error)


def test_unresolvable_name() -> None:
    error = _error(socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
    assert error.kind == "unreachable" and "cannot resolve host name '10.0.0.13'" in str(error)


def test_key_rejected_points_at_authorized_keys() -> None:
    error = _error(paramiko.AuthenticationException("Authentication failed."))
    assert error.kind == "auth"
    assert "authentication as ops on 10.0.0.13:2222 failed" in str(error)
    assert "/keys/lab" in str(error) and "~ops/.ssh/authorized_keys" in str(error)


def test_silent_port_mentions_banner_and_maxstartups() -> None:
    error = _error(paramiko.SSHException("Error reading SSH protocol banner"))
    assert error.kind == "unreachable" and "no SSH greeting" in str(error) and "MaxStartups" in str(error)


def test_unexpected_exception_keeps_its_type_name() -> None:
    error = _error(KeyError("weird"))
    assert error.kind == "error" and "KeyError" in str(error)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(address="a b"), "is not a host name or IP address"),
        (dict(address="-oProxyCommand=x"), "is not a host name or IP address"),
        (dict(port=0), "out of range"),
        (dict(port=True), "out of range"),
        (dict(user="-l"), "not a valid user name"),
        (dict(user="a;b"), "not a valid user name"),
        (dict(connect_timeout=0), "connect_timeout must be a positive"),
        (dict(command_timeout=-1), "command_timeout must be a positive"),
        (dict(name=""), "must be non-empty"),
    ],
)
def test_host_access_rejects_values_that_could_reach_a_shell_or_ssh(changes: dict, message: str) -> None:
    fields = dict(name="n", address="10.0.0.1")
    fields.update(changes)
    with pytest.raises(ValueError, match=message):
        HostAccess(**fields)


def test_host_access_normalises_and_names() -> None:
    access = HostAccess(name="n", address="fe80::1", known_hosts=["a", "b"], sudo=True, user="ops")
    assert access.known_hosts == ("a", "b") and hash(access)
    assert access.needs_sudo and not HostAccess(name="n", address="h", sudo=True).needs_sudo
    assert HostAccess(name="n", address="h").known_hosts_name == "h"
    assert HostAccess(name="n", address="h", port=2200).known_hosts_name == "[h]:2200"


def test_known_hosts_files_puts_the_inventory_file_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    assert known_hosts_files(["inv/known_hosts"]) == ("inv/known_hosts", "/home/someone/.ssh/known_hosts")
    assert known_hosts_files(["inv/known_hosts"], include_user_file=False) == ("inv/known_hosts",)


def test_sudo_password_never_shows_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASCENDPREP_SUDO_PASSWORD", "hunter2")
    password = sudo_password_from_env()
    assert password is not None
    assert "hunter2" not in repr(password) and "hunter2" not in str(password) and "hunter2" not in f"{[password]}"
    assert password.stdin_line() == b"hunter2\n"
    monkeypatch.setenv("ASCENDPREP_SUDO_PASSWORD", "")
    assert sudo_password_from_env() is None
    with pytest.raises(ValueError, match="single line"):
        SudoPassword("two\nlines")
