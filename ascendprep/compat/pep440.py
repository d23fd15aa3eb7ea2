"""PEP 440 parsing for the Python-packaging versions of the stack (torch, torch_npu, torchvision, Python).

Why not ``packaging``: it is not a declared dependency of ascendprep, and the subset needed here
(parse + order, public part only) is small. The grammar is the one PEP 440 publishes in its
appendix, so every spelling torch_npu uses parses the same way ``packaging`` parses it:
``2.1.0.post17``, ``2.10.0rc2``, ``2.1.0.rc1`` (= ``2.1.0rc1``), ``1.8.1-rc1`` (= ``1.8.1rc1``),
``2.1.0.post8.dev20241009``, ``2.1.0+cpu``, ``2.1.0+cxx11-abi.git1234567``.

The order key follows PEP 440 (dev < pre < final < post, trailing zeros ignored) but leaves the
local tag out: the compatibility notes say to compare the public part only (``2.1.0+cpu`` is the
x86 wheel of torch 2.1.0, the same release as ``2.1.0`` on aarch64).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Tuple

_PATTERN = re.compile(
    r"""
    ^\s*v?
    (?:(?P<epoch>[0-9]+)!)?
    (?P<release>[0-9]+(?:\.[0-9]+)*)
    (?P<pre>[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?P<post>(?:-(?P<post_n1>[0-9]+))|(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?))?
    (?P<dev>[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$
    """,
    re.VERBOSE | re.IGNORECASE,
)

# Pre-release letters in order; PEP 440 spells c/pre/preview as rc.
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "rc": 2, "c": 2, "pre": 2, "preview": 2}
_PRE_CANON = {0: "a", 1: "b", 2: "rc"}


@dataclass(frozen=True)
class Pep440Parts:
    """One parsed PEP 440 version: the canonical public spelling, its order key and local tag."""

    public: str
    release: Tuple[int, ...]
    is_prerelease: bool
    local: Optional[str]
    key: tuple


def parse_pep440(text: str) -> Optional[Pep440Parts]:
    """Parse ``text`` as PEP 440; None when it is not a valid PEP 440 version."""
    match = _PATTERN.match(text)
    if match is None:
        return None
    epoch = int(match.group("epoch") or 0)
    release = tuple(int(part) for part in match.group("release").split("."))

    pre: Optional[Tuple[int, int]] = None
    if match.group("pre_l"):
        pre = (_PRE_RANK[match.group("pre_l").lower()], int(match.group("pre_n") or 0))
    post: Optional[int] = None
    if match.group("post_n1") is not None:
        post = int(match.group("post_n1"))
    elif match.group("post_l"):
        post = int(match.group("post_n2") or 0)
    dev: Optional[int] = None
    if match.group("dev_l"):
        dev = int(match.group("dev_n") or 0)
    local = match.group("local")
    if local is not None:
        local = re.sub(r"[-_]", ".", local.lower())

    public = ".".join(str(part) for part in release)
    if epoch:
        public = f"{epoch}!{public}"
    if pre is not None:
        public += f"{_PRE_CANON[pre[0]]}{pre[1]}"
    if post is not None:
        public += f".post{post}"
    if dev is not None:
        public += f".dev{dev}"

    return Pep440Parts(
        public=public,
        release=release,
        is_prerelease=pre is not None or dev is not None,
        local=local,
        key=_order_key(epoch, release, pre, post, dev),
    )


def _order_key(
    epoch: int,
    release: Tuple[int, ...],
    pre: Optional[Tuple[int, int]],
    post: Optional[int],
    dev: Optional[int],
) -> tuple:
    """PEP 440 order as plain tuples: every component is a tuple starting with an int tag."""
    trimmed = list(release)
    while len(trimmed) > 1 and trimmed[-1] == 0:
        trimmed.pop()
    if pre is None and post is None and dev is not None:
        pre_key: tuple = (0,)  # 1.0.dev1 sorts before 1.0a1
    elif pre is None:
        pre_key = (2,)  # a final release sorts after its pre-releases
    else:
        pre_key = (1, pre[0], pre[1])
    post_key = (0,) if post is None else (1, post)
    dev_key = (1,) if dev is None else (0, dev)
    return (epoch, tuple(trimmed), pre_key, post_key, dev_key)
