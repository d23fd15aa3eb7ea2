"""The node side of ``ascendprep collect``: read a failed job's logs and print them, framed.

This file is sent to each node as the text of ``python -c`` (the inventory's
``software.python_path``; CANN needs Python 3 on every node) and runs there with the standard
library only. It reads and never writes. Its one argument is a JSON object: ``nonce``,
``since`` (epoch seconds or null), ``log_dirs`` (empty: ``$ASCEND_PROCESS_LOG_PATH``, else CANN's
default ``~/ascend/log``), ``console_globs``, and the caps ``file_cap``, ``node_cap``,
``max_entries``, ``max_files``, ``kernel_timeout``.

Where CANN writes (CANN "Log Reference", *Log Files*; the layout MindCluster's fault-diagnosis
tool reads, ``Ascend/mind-cluster`` ``docs/en/faultdiag/user_guide/03_collecting_logs.md``):
host application logs in ``<root>/{debug,run}/plog/plog-<pid>_<time>.log`` and device
application logs in ``<root>/{debug,run}/device-<id>/device-<pid>_<time>.log`` (older CANN:
``<root>/plog/`` and ``<root>/device-<id>/``). Every file under a ``plog`` folder is a plog, every
file under a ``device-<id>`` folder a device log; other files under the root are left alone.

Only regular files are read (a link is never followed: ``os.walk`` without ``followlinks``,
``lstat``, and ``O_NOFOLLOW`` on open). The newest files come first; each gives at most
``file_cap`` bytes, its newest (the tail: a job's last lines are where it failed), and all of them
together at most ``node_cap``. Kernel messages (``journalctl -k``, else ``dmesg``) come before
the files and count against the same caps.

Output, one record per line: ``@@collect-<nonce> file KIND SIZE SENT CUT MTIME NAME64`` followed
by one line of the content in base64; ``... skipped COUNT WHY64``; ``... problem WHY64``; and
``... end`` last. Names are base64 of the path bytes: a file name may hold any byte but ``/``
and NUL, the controller decides what it is stored as.
"""

import base64
import glob
import json
import os
import re
import stat
import subprocess
import sys
import time

DEVICE_DIR = re.compile(r"^device-[0-9]{1,4}$")


def emit(mark, *words):
    sys.stdout.write(" ".join([mark] + [str(w) for w in words]) + "\n")


def b64(data):
    if isinstance(data, str):
        data = os.fsencode(data)
    return base64.b64encode(data).decode("ascii")


def log_roots(config):
    if config["log_dirs"]:
        return list(config["log_dirs"])
    env = os.environ.get("ASCEND_PROCESS_LOG_PATH")
    return [env] if env else [os.path.join(os.path.expanduser("~"), "ascend", "log")]


def classify(parts):
    """The kind of a file by the folders above it: plog, device, or None."""
    for part in parts[:-1]:
        if part == "plog":
            return "plog"
        if DEVICE_DIR.match(part):
            return "device"
    return None


def walk_root(root, config, found, mark, budget):
    """Add ``(mtime, kind, name, path, size)`` of each plog and device log under ``root``."""
    if not os.path.isdir(root):
        emit(mark, "problem", b64("no log folder %s on this node" % root))
        return
    for folder, dirs, files in os.walk(root, onerror=lambda exc: emit(mark, "problem", b64(str(exc)))):
        dirs.sort()
        for name in files:
            budget[0] -= 1
            if budget[0] < 0:
                emit(
                    mark,
                    "problem",
                    b64("more than %d entries under %s: the rest not read" % (config["max_entries"], root)),
                )
                return
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            kind = classify(rel.split(os.sep))
            if kind is None:
                continue
            add_file(found, kind, rel, path, config)


def add_file(found, kind, name, path, config):
    try:
        info = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode):
        return
    if config["since"] is not None and info.st_mtime < config["since"]:
        return
    found.append((info.st_mtime, kind, name, path, info.st_size))


def read_tail(path, take):
    """The last ``take`` bytes of ``path`` (a regular file, opened without following a link)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # not inherited: PEP 446
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError("not a regular file")
        size = info.st_size
        start = max(0, size - take)
        os.lseek(fd, start, os.SEEK_SET)
        chunks = []
        left = size - start
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return size, b"".join(chunks)
    finally:
        os.close(fd)


def kernel_messages(config):
    """Kernel messages in the window: ``journalctl -k`` (since the time, else this boot), else ``dmesg``."""
    since = config["since"]
    commands = [
        ["journalctl", "-k", "--no-pager", "-o", "short-iso"]
        + (["--since", "@%d" % int(since)] if since is not None else ["-b"]),
        ["dmesg", "-T"],
        ["dmesg"],
    ]
    for argv in commands:
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                timeout=config["kernel_timeout"],
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return done.stdout
    return None


def send(mark, kind, name, size, data, mtime):
    cut = 1 if len(data) < size else 0
    emit(mark, "file", kind, size, len(data), cut, "%.3f" % mtime, b64(name))
    sys.stdout.write(base64.b64encode(data).decode("ascii") + "\n")


def main():
    config = json.loads(sys.argv[1])
    mark = "@@collect-" + config["nonce"]
    left = config["node_cap"]
    cap = config["file_cap"]
    kernel = kernel_messages(config)
    if kernel is None:
        emit(mark, "problem", b64("no kernel messages: neither journalctl -k nor dmesg could be read"))
    else:
        data = kernel[-min(cap, left) :] if left > 0 else b""
        send(mark, "kernel", "kernel.log", len(kernel), data, time.time())
        left -= len(data)
    found = []
    budget = [config["max_entries"]]
    for root in log_roots(config):
        walk_root(root, config, found, mark, budget)
    for pattern in config["console_globs"]:
        matched = 0
        for path in glob.iglob(pattern):
            budget[0] -= 1
            if budget[0] < 0:
                emit(
                    mark,
                    "problem",
                    b64("more than %d entries: --console %s not read further" % (config["max_entries"], pattern)),
                )
                break
            matched += 1
            add_file(found, "console", path, path, config)
        if not matched:
            emit(mark, "problem", b64("no file matches --console %s on this node" % pattern))
    found.sort(key=lambda item: item[0], reverse=True)
    sent = 0
    skipped = 0
    for mtime, kind, name, path, size in found:
        if left <= 0 or sent >= config["max_files"]:
            skipped += 1
            continue
        try:
            size, data = read_tail(path, min(cap, left))
        except OSError as exc:
            emit(mark, "problem", b64("%s: %s" % (path, exc.strerror or exc)))
            continue
        send(mark, kind, name, size, data, mtime)
        left -= len(data)
        sent += 1
    if skipped:
        emit(
            mark,
            "skipped",
            skipped,
            b64(
                "over the node cap of %d bytes or %d files (the newest were fetched)"
                % (config["node_cap"], config["max_files"])
            ),
        )
    emit(mark, "end")


if __name__ == "__main__":
    main()
