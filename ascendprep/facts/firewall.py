"""Host firewalls that can block HCCL's host ports: ufw, firewalld and nftables.

Migration guides tell users to ``ufw disable`` / ``systemctl stop firewalld``; checks use
these facts to say which one is on. A tool that is not installed cannot be active, so it is
recorded as ``installed=False`` rather than as a failure.
"""

from __future__ import annotations

from typing import Tuple

from ascendprep.facts.text import UnexpectedOutput, content_lines, first_line


def parse_ufw_status(stdout: str) -> bool:
    """``ufw status`` → ``Status: active`` / ``Status: inactive``."""
    for line in content_lines(stdout):
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "status":
            state = value.strip().lower()
            if state in ("active", "inactive"):
                return state == "active"
    raise UnexpectedOutput(f"no 'Status: active|inactive' in {first_line(stdout)!r}")


def parse_firewalld_state(stdout: str) -> bool:
    """``firewall-cmd --state`` → ``running`` (exit 0) or ``not running`` (exit 252)."""
    state = " ".join(stdout.split()).lower()
    if state in ("running", "not running"):
        return state == "running"
    raise UnexpectedOutput(f"firewall-cmd --state said {first_line(stdout)!r}")


def parse_nft_tables(stdout: str) -> Tuple[str, ...]:
    """``nft list tables`` → ``("inet filter", ...)``; empty output means an empty ruleset."""
    tables = []
    for line in content_lines(stdout):
        words = line.split()
        if words[0] != "table" or len(words) < 2:
            raise UnexpectedOutput(f"unexpected nft line {line!r}")
        tables.append(" ".join(words[1:]))
    return tuple(tables)
