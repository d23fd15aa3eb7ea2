"""Every file ascendprep writes goes through ``ascendprep.base.outputfile``: never through a link placed
at its name or at a temp name, with its mode exact whatever the umask, and never left half
written (no temp file stays behind, whatever stopped the write). A scan of the package's source
holds every other module to it."""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ascendprep.base import outputfile
from ascendprep.base.outputfile import (
    append_file,
    ensure_dir,
    make_dir,
    new_temp_file,
    write_file,
)

PACKAGE = Path(__file__).resolve().parents[2] / "ascendprep"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def guessable(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Temp names made guessable: the random part is taken from this list, in order."""
    names = ["guessed", "second", "third"]
    monkeypatch.setattr(outputfile.secrets, "token_hex", lambda size: names.pop(0))
    return names


# ------------------------------------------------------------------ write_file


def test_a_link_at_the_final_name_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    target = tmp_path / "out.xml"
    target.symlink_to(victim)
    write_file(target, "new\n")
    assert victim.read_text() == "keep\n"
    assert not target.is_symlink() and target.read_text() == "new\n" and _mode(target) == 0o600


def test_a_link_at_the_temp_name_is_never_opened(tmp_path: Path, guessable: list[str]) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    planted = tmp_path / ".out.xml.guessed.tmp"
    planted.symlink_to(victim)
    write_file(tmp_path / "out.xml", "new\n")
    assert victim.read_text() == "keep\n" and planted.is_symlink()
    assert (tmp_path / "out.xml").read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.xml.guessed.tmp", "out.xml", "victim"]


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_the_mode_is_exact_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        write_file(tmp_path / "private", b"x")
        write_file(tmp_path / "shared", b"x", 0o644)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "private") == 0o600 and _mode(tmp_path / "shared") == 0o644


@pytest.mark.parametrize("stopped_by", [KeyboardInterrupt, OSError])
def test_an_interrupted_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stopped_by: type
) -> None:
    target = tmp_path / "results.xml"
    target.write_text("old\n")

    def stop(fd: int) -> None:
        raise stopped_by()

    monkeypatch.setattr(outputfile.os, "fsync", stop)
    with pytest.raises(stopped_by):
        write_file(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.xml"]


def test_a_folder_at_the_final_name_is_an_error_and_no_temp_stays(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(IsADirectoryError):
        write_file(tmp_path / "out", "x")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# ------------------------------------------------------------------ append, new files, folders


def test_append_refuses_a_link_and_makes_a_new_file_0600(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    link = tmp_path / "known_hosts"
    link.symlink_to(victim)
    with pytest.raises(OSError, match="symbolic link"):
        append_file(link, "line\n")
    assert victim.read_text() == "keep\n"
    old = os.umask(0)
    try:
        append_file(tmp_path / "new", "a\n")
        append_file(tmp_path / "new", "b\n")
    finally:
        os.umask(old)
    assert (tmp_path / "new").read_text() == "a\nb\n" and _mode(tmp_path / "new") == 0o600


def test_append_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "known_hosts"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        append_file(fifo, "line\n")


def test_make_dir_refuses_a_link_and_a_folder_of_another_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (tmp_path / "partial").symlink_to(elsewhere)
    with pytest.raises(FileExistsError):
        make_dir(tmp_path / "partial")
    assert _mode(elsewhere) == 0o755
    # a folder swapped in by another user between mkdir and the check is not used
    real_uid = os.geteuid()
    monkeypatch.setattr(outputfile.os, "geteuid", lambda: real_uid + 1)
    with pytest.raises(PermissionError, match="not by this user"):
        make_dir(tmp_path / "mine")


def test_ensure_dir_makes_a_private_folder_and_leaves_an_existing_one(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        ensure_dir(tmp_path / "a" / "b")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a" / "b") == 0o700
    (tmp_path / "open").mkdir(mode=0o755)
    ensure_dir(tmp_path / "open")
    assert _mode(tmp_path / "open") == 0o755
    ensure_dir(tmp_path / "open", tighten=True)
    assert _mode(tmp_path / "open") == 0o700
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        ensure_dir(tmp_path / "file")


def test_a_temp_upload_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outputfile.tempfile, "gettempdir", lambda: str(tmp_path))
    old = os.umask(0)
    try:
        path = Path(new_temp_file(b"data", "ascendprep-upload"))
    finally:
        os.umask(old)
    assert path.parent == tmp_path and path.read_bytes() == b"data" and _mode(path) == 0o600


# ------------------------------------------------------------------ nothing else writes a file

#: Places allowed to write without outputfile, and why: (file under ascendprep/, function).
ALLOWED = {
    ("remote/ssh.py", "_write_file"): "SFTP: a file on the remote host, not here",
    ("remote/ssh.py", "_sftp_put"): "SFTP: a file on the remote host, not here",
    (
        "verify/allreduce/worker.py",
        "_write_result_file",
    ): "runs on the nodes, with the standard library and torch alone",
}
#: Folders whose modules are not scanned: the lab writes into its own node trees.
SKIPPED = ("lab",)
#: Calls (by their name, whatever they are called on) that write, make or change a file or folder.
_WRITING_NAMES = {
    "write_text",
    "write_bytes",
    "touch",
    "chmod",
    "lchmod",
    "fchmod",
    "mkdir",
    "makedirs",
    "mkfifo",
    "symlink_to",
    "hardlink_to",
    "mkstemp",
    "mkdtemp",
    "NamedTemporaryFile",
    "TemporaryFile",
    "SpooledTemporaryFile",
    "TemporaryDirectory",
    "FileHandler",
    "RotatingFileHandler",
}
#: Calls that write when made on these modules (``shutil.copy``; a dict's ``copy`` does not).
_WRITING_CALLS = {
    "os": {"mknod", "symlink", "link", "truncate", "ftruncate"},
    "shutil": {"copy", "copy2", "copyfile", "copytree", "move"},
}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _writes_by_mode(call: ast.Call, position: int | None) -> bool:
    """``open``/``os.fdopen`` (mode at ``position``), ``Path.open``/``gzip.open`` (position None:
    any text argument may be the mode): a write mode, or a mode that cannot be read here."""
    modes = [k.value for k in call.keywords if k.arg == "mode"]
    if position is None:
        modes += [a for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    elif len(call.args) > position:
        modes.append(call.args[position])
    literal = [m.value for m in modes if isinstance(m, ast.Constant) and isinstance(m.value, str)]
    if len(literal) != len(modes):
        return True
    return any(set(m) & set("wax+") for m in literal)


def _os_open_writes(call: ast.Call) -> bool:
    """``os.open(path, flags)``: flags that write, or flags not spelled out as ``os.O_*``."""
    if call.args and ast.unparse(call.args[0]) == "os.devnull":
        return False  # a descriptor on /dev/null, not a file
    if len(call.args) < 2:
        return True
    flags = set()
    for node in ast.walk(call.args[1]):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "os" and node.attr.startswith("O_"):
            flags.add(node.attr)
        elif isinstance(node, ast.Name) and node.id == "os" or isinstance(node, (ast.BinOp, ast.BitOr, ast.Load)):
            continue
        else:
            return True  # a variable, a call...: what it opens for cannot be told here
    return bool(flags & _WRITE_FLAGS)


def _writes(call: ast.Call) -> bool:
    name = _call_name(call)
    if name in _WRITING_NAMES:
        return True
    if isinstance(call.func, ast.Attribute) and name in _WRITING_CALLS.get(ast.unparse(call.func.value), ()):
        return True
    if name == "open" and isinstance(call.func, ast.Attribute) and ast.unparse(call.func.value) == "os":
        return _os_open_writes(call)
    if name == "fdopen" or name == "open" and isinstance(call.func, ast.Name):
        return _writes_by_mode(call, 1)
    if name == "open":
        return _writes_by_mode(call, None)
    return False


def _functions(tree: ast.AST) -> Iterator[tuple[ast.AST, str | None]]:
    """Every node with the name of the innermost function holding it (None at module level)."""

    def walk(node: ast.AST, function: str | None) -> Iterator[tuple[ast.AST, str | None]]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            yield child, inner
            yield from walk(child, inner)

    yield from walk(tree, None)


def writing_places(root: Path = PACKAGE) -> list[tuple[str, int, str | None, str]]:
    """(file, line, function, call) of every call in the package that writes a file itself."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative == "base/outputfile.py" or relative.split("/")[0] in SKIPPED:
            continue
        for node, function in _functions(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and _writes(node):
                found.append((relative, node.lineno, function, ast.unparse(node.func)))
    return found


def test_no_module_writes_a_file_but_through_outputfile() -> None:
    places = writing_places()
    others = [
        f"ascendprep/{file}:{line}: {call}(...) in {function or 'the module'}"
        for file, line, function, call in places
        if (file, function) not in ALLOWED
    ]
    assert others == [], "write these through ascendprep.base.outputfile:\n" + "\n".join(others)
    used = {(file, function) for file, _, function, _ in places}
    assert set(ALLOWED) <= used, f"allowed but no longer writing: {sorted(set(ALLOWED) - used)}"


def test_the_scan_finds_each_way_of_writing(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import os, tempfile\nfrom pathlib import Path\n"
        "def a(p):\n    open(p, 'w')\n"
        "def b(p):\n    Path(p).write_text('x')\n"
        "def c(p):\n    os.open(p, os.O_WRONLY | os.O_CREAT)\n"
        "def d(p, flags):\n    os.open(p, flags)\n"
        "def e(p):\n    os.chmod(p, 0o600)\n"
        "def f():\n    tempfile.mkstemp()\n"
        "def g(fd, mode):\n    os.fdopen(fd, mode)\n"
        "def h(p):\n    os.open(p, self._FLAGS)\n"
        "def i(p):\n    shutil.copyfile(p, p + '.bak')\n"
        "def j(p):\n    open(p, 'rb'); os.open(p, os.O_RDONLY | os.O_NOFOLLOW); os.open(os.devnull, os.O_WRONLY); p.open()\n"
    )
    assert [(line, function) for _, line, function, _ in writing_places(tmp_path)] == [
        (4, "a"),
        (6, "b"),
        (8, "c"),
        (10, "d"),
        (12, "e"),
        (14, "f"),
        (16, "g"),
        (18, "h"),
        (20, "i"),
    ]
