"""How to reach one host: address, credentials, trust, limits.

A :class:`HostAccess` is plain data, validated when it is built, so that nothing odd reaches
paramiko or a remote shell later (a user name starting with ``-``, an address with a space).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Tuple, Union

_USER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
# Host names, IPv4 and IPv6 literals: no spaces, no shell or ssh-option characters.
_ADDRESS_RE = re.compile(r"^[A-Za-z0-9_.:%-]{1,253}$")

#: The user's own known_hosts file, consulted after the inventory's (as ``ssh`` would).
USER_KNOWN_HOSTS = "~/.ssh/known_hosts"


@dataclass(frozen=True)
class HostAccess:
    """Everything needed to open an SSH session to one host and run scripts there.

    ``known_hosts`` lists the files whose entries are trusted, in order; a newly accepted key is
    appended to the first one (the inventory's), never to the user's own file by surprise.
    ``jump`` is the bastion to tunnel through (``ProxyJump``), itself a HostAccess.
    """

    name: str
    address: str
    port: int = 22
    user: str = "root"
    key_file: Optional[str] = None
    known_hosts: Sequence[Union[str, "os.PathLike[str]"]] = ()  # stored as a tuple of str
    jump: Optional["HostAccess"] = None
    connect_timeout: float = 10.0
    command_timeout: float = 120.0
    sudo: bool = False
    accept_new_host_keys: bool = False

    def __post_init__(self) -> None:
        # Accept any iterable of paths for known_hosts but store a tuple (hashable, immutable).
        object.__setattr__(self, "known_hosts", tuple(os.fspath(p) for p in self.known_hosts))
        if self.key_file is not None:
            object.__setattr__(self, "key_file", os.fspath(self.key_file))
        if not self.name or any(ch.isspace() for ch in self.name):
            raise ValueError(f"host name {self.name!r} must be non-empty and without spaces")
        if not _ADDRESS_RE.match(self.address) or self.address.startswith("-"):
            raise ValueError(f"{self.name}: {self.address!r} is not a host name or IP address")
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 1 <= self.port <= 65535:
            raise ValueError(f"{self.name}: port {self.port!r} is out of range 1-65535")
        if not _USER_RE.match(self.user):
            raise ValueError(f"{self.name}: {self.user!r} is not a valid user name")
        for label, value in (("connect_timeout", self.connect_timeout), ("command_timeout", self.command_timeout)):
            if not value > 0:
                raise ValueError(f"{self.name}: {label} must be a positive number of seconds, not {value!r}")

    @property
    def needs_sudo(self) -> bool:
        """Scripts go through sudo only when asked to and when we are not already root."""
        return self.sudo and self.user != "root"

    @property
    def target(self) -> str:
        """``user@address:port``, as error messages show it."""
        return f"{self.user}@{self.address}:{self.port}"

    @property
    def known_hosts_name(self) -> str:
        """The name this host's key is filed under in known_hosts (OpenSSH's rule)."""
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"


def known_hosts_files(
    inventory_files: Iterable[os.PathLike[str] | str] = (), include_user_file: bool = True
) -> Tuple[str, ...]:
    """The known_hosts list for HostAccess: the inventory's files first, then ``~/.ssh/known_hosts``.

    The order matters: accepted keys are recorded in the first file, so the inventory's own file
    (checked in with the inventory) collects them.
    """
    files = [os.fspath(p) for p in inventory_files]
    if include_user_file:
        user_file = os.path.expanduser(USER_KNOWN_HOSTS)
        if user_file not in files:
            files.append(user_file)
    return tuple(files)
