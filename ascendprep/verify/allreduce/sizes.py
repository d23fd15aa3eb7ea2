"""Size specs for the all-reduce sweep: ``64M``, ``1K:256M`` (x4), ``1K:1G:x2``, ``1M:8M:+1M``.

The parser lives in ``worker.py`` because the worker is uploaded to nodes alone and must read
the same ``--sizes`` the user typed; this module is its control-side name, so that the CLI can
reject a bad spec with a clear message before anything is uploaded. Importing it does not
import torch.
"""

from __future__ import annotations

from .worker import (
    DEFAULT_SIZES_ACCELERATOR,
    DEFAULT_SIZES_CPU,
    MAX_SWEEP_SIZES,
    SizeSpecError,
    format_size,
    parse_size,
    parse_size_spec,
)

__all__ = [
    "DEFAULT_SIZES_ACCELERATOR",
    "DEFAULT_SIZES_CPU",
    "MAX_SWEEP_SIZES",
    "SizeSpecError",
    "format_size",
    "parse_size",
    "parse_size_spec",
]
