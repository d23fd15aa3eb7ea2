"""Host key trust, as OpenSSH's ``StrictHostKeyChecking=accept-new`` would have it.

* Keys are looked up in every known_hosts file of the HostAccess, in order (plain, hashed
  ``|1|`` and wildcard entries; ``[host]:port`` names for ports other than 22).
* A host with no key on file is refused with its fingerprint, unless the user opted in with
  ``--accept-new-host-keys``; then the key is appended to the *first* file of the list.
* A host whose key differs from the one on file is always refused: that is what an attack
  looks like, and accepting it silently is what ``AutoAddPolicy`` would do.
* A key marked ``@revoked`` (for any host pattern, as OpenSSH reads it) is refused whatever
  else the files say, ``--accept-new-host-keys`` included: a revoked key is one that leaked.

Only this host's known keys are handed to paramiko's client, which then prefers those key
types in the handshake and raises ``BadHostKeyException`` on a mismatch; our policy object is
called for hosts with no key on file.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import paramiko
from paramiko.hostkeys import HostKeyEntry, HostKeys, InvalidHostKey

from ascendprep.base.outputfile import append_file
from ascendprep.remote.access import HostAccess
from ascendprep.remote.errors import HostKeyError

log = logging.getLogger(__name__)

_append_lock = threading.Lock()

ACCEPT_FLAG = "--accept-new-host-keys"


@dataclass(frozen=True)
class KnownKey:
    """A key on file for a host, and where it was found (``file:line``) for error messages."""

    key: paramiko.PKey
    source: str
    revoked: bool = False


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's SHA256 fingerprint, as ``ssh-keygen -lf`` and ``ssh`` print it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _name_matches(pattern_list: Sequence[str], name: str) -> bool:
    """Does a known_hosts host field (comma-separated patterns) cover ``name``?"""
    matched = False
    for pattern in pattern_list:
        negated = pattern.startswith("!")
        pattern = pattern[1:] if negated else pattern
        if pattern.startswith("|1|"):
            hit = HostKeys.hash_host(name, pattern) == pattern
        elif "*" in pattern or "?" in pattern:
            hit = fnmatch.fnmatchcase(name, pattern)
        else:
            hit = pattern == name
        if hit and negated:
            return False
        matched = matched or hit
    return matched


def known_keys(name: str, files: Sequence[str]) -> List[KnownKey]:
    """Every key on file for ``name`` across ``files``, first file first.

    Missing files are skipped (the user may have no ~/.ssh/known_hosts); unreadable ones are an
    error, since silently ignoring them would turn a known host into an unknown one. Lines with
    markers (``@cert-authority``, ``@revoked``) and lines paramiko cannot parse are skipped here;
    :func:`revoked_keys` reads the ``@revoked`` ones.
    """
    return _keys_on_file(name, files)[0]


def revoked_keys(name: str, files: Sequence[str]) -> List[KnownKey]:
    """The keys marked ``@revoked`` for ``name`` in ``files`` (never trusted, never recorded)."""
    return _keys_on_file(name, files)[1]


def _keys_on_file(name: str, files: Sequence[str]) -> Tuple[List[KnownKey], List[KnownKey]]:
    """(trusted keys, revoked keys) on file for ``name``, each first file first."""
    found: List[KnownKey] = []
    revoked: List[KnownKey] = []
    for path in files:
        known_file = _read_known_hosts(name, path)
        if known_file is None:
            continue
        for line in known_file.candidates(name):
            if not _name_matches(line.patterns, name):
                continue
            key = known_file.key_of(line)
            if isinstance(key, str):
                log.warning("%s:%d: unreadable known_hosts entry skipped (%s)", path, line.number, key)
                continue
            if key is not None:
                target = revoked if line.revoked else found
                target.append(KnownKey(key, f"{path}:{line.number}", revoked=line.revoked))
    return found, revoked


@dataclass(frozen=True)
class _Line:
    """A known_hosts line that names hosts: its number, ``@revoked`` or not, its host patterns,
    and ``patterns keytype base64`` for paramiko."""

    number: int
    revoked: bool
    patterns: Tuple[str, ...]
    entry: str


class _KnownHostsFile:
    """One known_hosts file, read once: its lines indexed by plain host name.

    Looking a host up costs the lines that name it plainly plus the hashed, wildcard and negated
    ones (which only :func:`_name_matches` can decide), not the whole file: with one line per
    node, a run over 4,096 nodes would otherwise read 4,096 lines per node. A line's key is
    parsed once, when the first host needs it.
    """

    def __init__(self, text: str) -> None:
        self.lines: List[_Line] = []
        self.by_name: Dict[str, List[int]] = {}
        self.general: List[int] = []
        self._keys: Dict[int, Union[paramiko.PKey, str, None]] = {}
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split()
            marked_revoked = False
            if fields[0].startswith("@"):
                if fields[0] != "@revoked":
                    continue  # @cert-authority: certificates are not supported, nothing is trusted
                marked_revoked = True
                fields = fields[1:]
            if len(fields) < 3:
                continue
            patterns = tuple(fields[0].split(","))
            index = len(self.lines)
            self.lines.append(_Line(number, marked_revoked, patterns, " ".join(fields[:3])))
            if any(p.startswith(("!", "|1|")) or "*" in p or "?" in p for p in patterns):
                self.general.append(index)
            else:
                for pattern in set(patterns):
                    self.by_name.setdefault(pattern, []).append(index)

    def candidates(self, name: str) -> List[_Line]:
        """The lines that may name ``name``, in file order."""
        indices = sorted(set(self.by_name.get(name, ())).union(self.general))
        return [self.lines[i] for i in indices]

    def key_of(self, line: _Line) -> Union[paramiko.PKey, str, None]:
        """The line's key, None where paramiko skips the line, or why it cannot be read."""
        with _cache_lock:
            if line.number in self._keys:
                return self._keys[line.number]
        try:
            entry = HostKeyEntry.from_line(line.entry, line.number)
            key: Union[paramiko.PKey, str, None] = None if entry is None else entry.key
        except (paramiko.SSHException, InvalidHostKey, ValueError) as exc:
            key = str(exc)
        with _cache_lock:
            self._keys[line.number] = key
        return key


#: The known_hosts files parsed this run, by path, with the bytes they were parsed from. Each
#: lookup reads the file again and reuses the parse only while the bytes are the same (reading
#: is cheap next to parsing; a file's mtime can miss a same-size rewrite within its tick), so a
#: key recorded or edited meanwhile is always seen.
_known_files: Dict[str, Tuple[bytes, _KnownHostsFile]] = {}
_cache_lock = threading.Lock()


def _read_known_hosts(name: str, path: str) -> Optional[_KnownHostsFile]:
    """The file at ``path`` (``~`` expanded), None when it does not exist.

    Missing files are skipped (the user may have no ~/.ssh/known_hosts); unreadable ones are an
    error, since silently ignoring them would turn a known host into an unknown one.
    """
    expanded = os.path.expanduser(path)
    try:
        with open(expanded, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HostKeyError(name, f"cannot read known_hosts file {path}: {exc.strerror}") from None
    with _cache_lock:
        cached = _known_files.get(expanded)
    if cached is not None and cached[0] == data:
        return cached[1]
    parsed = _KnownHostsFile(data.decode("utf-8", errors="replace"))
    with _cache_lock:
        _known_files[expanded] = (data, parsed)
    return parsed


def check_not_revoked(access: HostAccess, offered: paramiko.PKey, revoked: Sequence[KnownKey]) -> None:
    """Refuse ``offered`` when it is one of the ``revoked`` keys (raises HostKeyError)."""
    for entry in revoked:
        if _is_revoked(offered, [entry]):
            raise HostKeyError(access.name, revoked_key_message(access, offered, entry))


def revoked_key_message(access: HostAccess, offered: paramiko.PKey, entry: KnownKey) -> str:
    return (
        f"host key of {access.name} ({access.known_hosts_name}) is REVOKED: it offers {offered.get_name()} "
        f"{fingerprint(offered)}, marked @revoked at {entry.source}. Refused (a revoked key is never accepted, "
        f"not even with {ACCEPT_FLAG}); give the host a new key"
    )


def prepare_client(client: paramiko.SSHClient, access: HostAccess) -> List[KnownKey]:
    """Give ``client`` this host's known keys and our policy for unknown ones.

    Returns the keys on file (revoked ones flagged) so that a later ``BadHostKeyException`` can
    name the line that holds the old key, or the line that revoked the offered one. Revoked keys are left out of the client's store even where a plain line also
    lists them, so that a server offering one reaches our policy (or a mismatch) and is refused
    before we authenticate to it.
    """
    name = access.known_hosts_name
    keys, revoked = _keys_on_file(name, [os.fspath(p) for p in access.known_hosts])
    keys = [k for k in keys if not _is_revoked(k.key, revoked)]
    store = client.get_host_keys()
    store.clear()
    seen_types = set()
    for known in keys:
        key_type = known.key.get_name()
        if key_type not in seen_types:  # the first file wins, as with ssh
            store.add(name, key_type, known.key)
            seen_types.add(key_type)
    client.set_missing_host_key_policy(RefuseOrRecordNew(access, revoked))
    return keys + revoked


def _is_revoked(key: paramiko.PKey, revoked: Sequence[KnownKey]) -> bool:
    return any(r.key.get_name() == key.get_name() and r.key.asbytes() == key.asbytes() for r in revoked)


class RefuseOrRecordNew(paramiko.MissingHostKeyPolicy):
    """Called by paramiko for a host with no key on file: refuse, or record when allowed.

    A revoked key is refused first, whatever ``accept_new_host_keys`` says.
    """

    def __init__(self, access: HostAccess, revoked: Sequence[KnownKey] = ()) -> None:
        self.access = access
        self.revoked = list(revoked)

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        check_not_revoked(self.access, key, self.revoked)
        if self.access.accept_new_host_keys:
            record_host_key(self.access, hostname, key)
            return
        raise HostKeyError(self.access.name, unknown_key_message(self.access, hostname, key))


def unknown_key_message(access: HostAccess, hostname: str, key: paramiko.PKey) -> str:
    files = [os.fspath(p) for p in access.known_hosts]
    where = files[0] if files else "a known_hosts file"
    missing = [f for f in files if not os.path.exists(os.path.expanduser(f))]
    note = f" (missing known_hosts file: {', '.join(missing)})" if missing else ""
    return (
        f"host key of {access.name} ({hostname}) is not known: {key.get_name()} {fingerprint(key)}{note}. "
        f"If this is the host's key, run again with {ACCEPT_FLAG} to record it in {where}"
    )


def changed_key_message(access: HostAccess, offered: paramiko.PKey, on_file: Sequence[KnownKey]) -> str:
    revoked = [k for k in on_file if k.revoked]
    if _is_revoked(offered, revoked):
        return revoked_key_message(access, offered, next(k for k in revoked if _is_revoked(offered, [k])))
    recorded = (
        ", ".join(f"{k.key.get_name()} {fingerprint(k.key)} at {k.source}" for k in on_file if not k.revoked)
        or "a different key"
    )
    return (
        f"HOST KEY CHANGED for {access.name} ({access.known_hosts_name}): it offers {offered.get_name()} "
        f"{fingerprint(offered)} but known_hosts has {recorded}. Someone may be intercepting the "
        f"connection, or the host was reinstalled; in that case remove the old line and connect with "
        f"{ACCEPT_FLAG}. Refused (a changed key is never accepted automatically)"
    )


def record_host_key(access: HostAccess, hostname: str, key: paramiko.PKey) -> None:
    """Append ``hostname key`` to the first known_hosts file (created 0600 if missing; a link
    there is refused rather than written through)."""
    if not access.known_hosts:
        raise HostKeyError(
            access.name, f"cannot record the host key of {access.name}: no known_hosts file is configured"
        )
    path = os.path.expanduser(os.fspath(access.known_hosts[0]))
    line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
    with _append_lock:
        try:
            needs_newline = False
            if os.path.exists(path) and os.path.getsize(path) > 0:
                with open(path, "rb") as handle:
                    handle.seek(-1, os.SEEK_END)
                    needs_newline = handle.read(1) != b"\n"
            append_file(path, ("\n" if needs_newline else "") + line)  # no link followed; a new file is 0600
        except OSError as exc:
            raise HostKeyError(
                access.name, f"cannot record the host key of {access.name} in {access.known_hosts[0]}: {exc.strerror}"
            ) from None
    log.info("recorded host key of %s (%s %s) in %s", hostname, key.get_name(), fingerprint(key), path)
