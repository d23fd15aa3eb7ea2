"""Every file ascendprep writes on this machine, written one way: no link followed, the mode
exact from the first byte, never seen half written.

ascendprep often runs as root, and writes into folders other users may share (a CI workspace,
``/tmp``, a shared bundle folder). A plain ``open(path, "w")`` follows a symbolic link someone
placed at ``path`` (root then overwrites the link's target) and creates the file with what the
umask leaves (0644: host evidence readable by all); a ``chmod`` by name after the file is closed
acts on whatever lies at that name by then. So here:

* :func:`write_file` replaces a file whole. A temp file beside it is created exclusively and
  without following a link (``O_CREAT|O_EXCL|O_NOFOLLOW``: a link or file already at that name
  makes another name be tried), with the mode asked (0600 unless said) set by ``fchmod`` on its
  descriptor (the umask could only narrow it), written, synced, then renamed onto the final name
  (a rename replaces a link lying there, never writes through it) and the folder synced so that
  the rename survives a crash. On any error, Ctrl-C included, the temp file is removed and the
  final name keeps what it had.
* :func:`append_file` adds to a file (a known_hosts line): opened ``O_APPEND|O_NOFOLLOW``, only
  a regular file, its mode set on the descriptor when this call created it.
* :class:`NewFiles` makes files that must not exist yet inside a folder this run made (an
  evidence bundle's files, before the folder is renamed into place).
* :func:`make_dir` makes a new private folder and checks, on a descriptor opened without
  following a link, that what lies at the name is a folder this user owns before its mode is
  set; :func:`ensure_dir` makes one where it is missing.
* :func:`new_temp_file` leaves data in a fresh private file of the temp folder (an upload that
  a root script then moves into place).

Nothing else in the package writes a file here (tests/core/test_outputfile.py reads the source
to hold it so): the lab writes into its own node trees, and the all-reduce worker runs on the
nodes with the standard library alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import tempfile
from pathlib import Path
from typing import Union

#: The mode of what ascendprep writes unless a caller says otherwise: it holds host facts.
FILE_MODE = 0o600
DIR_MODE = 0o700
#: A new file, only where nothing (not even a link) has that name yet.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: How many temp names are tried before giving up (each a fresh random one).
_TEMP_TRIES = 100
#: Characters of the final name kept in a temp file's name (the name limit is 255 bytes).
_TEMP_NAME_KEEP = 128

PathLike = Union[str, "os.PathLike[str]"]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _temp_name(name: str) -> str:
    """A hidden name beside ``name`` that nobody can guess: ``.<name>.<12 hex>.tmp``."""
    return f".{name[:_TEMP_NAME_KEEP]}.{secrets.token_hex(6)}.tmp"


def _create_temp(folder: Path, name: str, mode: int) -> tuple[int, Path]:
    """A new temp file in ``folder`` (never through a link), its descriptor and path."""
    for _ in range(_TEMP_TRIES):
        temp = folder / _temp_name(name)
        try:
            return os.open(temp, _CREATE, mode), temp
        except FileExistsError:
            continue  # a file or link already there: never opened, another name is tried
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {name} after {_TEMP_TRIES} tries", str(folder))


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a file system that cannot sync a folder is let be)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def write_file(path: PathLike, data: bytes | str, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``data`` (text as UTF-8), atomically and with exactly ``mode``.

    Raises OSError (the caller says which file); the final name then holds what it held before
    and no temp file is left, whatever stopped the write (KeyboardInterrupt included).
    """
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    folder = target.parent
    fd, temp = _create_temp(folder, target.name, mode)
    try:
        try:
            os.fchmod(fd, mode)
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    _sync_folder(folder)


def _no_link(exc: OSError, path: PathLike) -> OSError:
    """ELOOP from ``O_NOFOLLOW`` said as what it is; other errors as they are."""
    if exc.errno == errno.ELOOP:
        return OSError(
            errno.ELOOP, "a symbolic link lies there (ascendprep writes no file through a link)", os.fspath(path)
        )
    return exc


def append_file(path: PathLike, data: bytes | str, mode: int = FILE_MODE) -> None:
    """Add ``data`` at the end of ``path``; made with exactly ``mode`` when missing.

    A link at ``path`` is refused, as is anything but a regular file (a FIFO would block). An
    existing file keeps its mode: it is the user's file, only added to.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        try:
            fd, created = os.open(path, flags | os.O_CREAT | os.O_EXCL, mode), True
        except FileExistsError:
            fd, created = os.open(path, flags | os.O_NONBLOCK), False
    except OSError as exc:
        raise _no_link(exc, path) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        if created:
            os.fchmod(fd, mode)
        _write_all(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)


class NewFiles:
    """Makes files that must be new (an existing file or link is an error), ``mode`` exact,
    written whole: the files of a folder this run made and renames into place when complete.

    ``open`` asks for ``mode``, which the umask can only narrow, never widen. The first file's
    mode is read back: while files come out as asked (the usual umask), none is ``fchmod``'ed,
    else each is. With ``os.write`` on the descriptor (no file object, no fstat/isatty of its
    own) a file is 3 syscalls, not 6 (an evidence bundle writes one per failing host).
    """

    def __init__(self, mode: int = FILE_MODE) -> None:
        self.mode = mode
        #: Files come out with ``mode`` by themselves (learned from the first one; no lock: a
        #: race only means one more fstat).
        self.exact_mode = False

    def create(self, path: PathLike) -> int:
        """A new file, open for writing; its descriptor (the caller closes it)."""
        try:
            fd = os.open(path, _CREATE, self.mode)
        except OSError as exc:
            raise _no_link(exc, path) from None
        try:
            if not self.exact_mode:
                if stat.S_IMODE(os.fstat(fd).st_mode) == self.mode:
                    self.exact_mode = True
                else:
                    os.fchmod(fd, self.mode)  # a umask that narrowed it: the mode is exact anyway
        except BaseException:
            os.close(fd)
            raise
        return fd

    def write(self, path: PathLike, data: bytes) -> None:
        fd = self.create(path)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)


def _own_dir(path: PathLike, mode: int) -> None:
    """Set ``mode`` on the folder at ``path`` after checking, on a descriptor opened without
    following a link, that it is a folder this user owns (not one swapped in by someone else)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise _no_link(exc, path) from None
    try:
        owner = os.fstat(fd).st_uid
        if owner != os.geteuid():
            raise PermissionError(
                errno.EPERM, f"the folder there is owned by uid {owner}, not by this user; not used", os.fspath(path)
            )
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def make_dir(path: PathLike, mode: int = DIR_MODE) -> None:
    """A new folder of this user's with exactly ``mode``; anything already at ``path`` (a link
    included) is an error (FileExistsError)."""
    os.mkdir(path, mode)
    _own_dir(path, mode)


def ensure_dir(path: PathLike, mode: int = DIR_MODE, tighten: bool = False) -> None:
    """``path`` as a folder: made with exactly ``mode`` when missing (its missing parents as the
    umask makes them). An existing folder is used as it is, and so is a link to one (runs kept on
    a bigger disk are the user's choice); ``tighten`` sets ``mode`` on an existing plain folder."""
    folder = Path(path)
    try:
        make_dir(folder, mode)
        return
    except FileNotFoundError:
        os.makedirs(folder.parent, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # made meanwhile by another run: used below
            make_dir(folder, mode)
            return
    except FileExistsError:
        pass  # there already: checked below
    if folder.is_symlink() and folder.is_dir():
        return
    if not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder))
    if tighten:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)


def new_temp_file(data: bytes, name: str) -> str:
    """``data`` in a new private (0600) file of the temp folder; its path. The caller removes it."""
    fd, temp = _create_temp(Path(tempfile.gettempdir()), name, FILE_MODE)
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            _write_all(fd, data)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return str(temp)
