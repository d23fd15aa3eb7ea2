"""Versions and compatibility of the Ascend PyTorch stack: the one module other parts import.

* ``parse_version(kind, text)``: every spelling in use (CANN ``8.0.RC2.alpha003``, driver
  ``24.1.rc2.1``, firmware ``7.1.0.11.220``, torch_npu ``2.1.0.post6``, torch ``2.1.0+cpu``, ...)
  into a hashable, totally ordered ``Version``; ``VersionError`` on anything else.
* ``check_stack(versions)``: the compatibility matrix (data/compat.yaml) applied to one
  host's versions, as ``CompatIssue``s with stable ids, severity, fix and source ids.
* ``check_driver_firmware(driver, firmware, compatible_version_fw=..., compatible_version_drv=...)``:
  the ranges the installed driver and firmware declare for each other (host files, not the matrix).
* ``hccl_port_range(cann)``: the host ports HCCL binds, to reserve.
* ``min_busbw_gbps(product)``: the all-reduce gate's default floor (None: no source gives one).

The pieces live in submodules with one job each: ``versions`` (+ ``ascend_scheme``, ``pep440``),
``data`` (loading and validating the YAML), ``stack`` (entry point) with ``context``,
``torch_checks`` and ``hdk_checks``, ``firmware``, ``hccl``, ``thresholds``.
"""

from ascendprep.compat.context import CompatIssue
from ascendprep.compat.data import CompatData, CompatDataError, load_compat_data, parse_compat_text
from ascendprep.compat.firmware import check_driver_firmware
from ascendprep.compat.hccl import hccl_port_count, hccl_port_range
from ascendprep.compat.stack import STACK_KEYS, check_stack, find_release, has_errors
from ascendprep.compat.thresholds import ThresholdsError, min_busbw_gbps
from ascendprep.compat.versions import KINDS, Version, VersionError, base_release, parse_version

__all__ = [
    "KINDS",
    "STACK_KEYS",
    "CompatData",
    "CompatDataError",
    "CompatIssue",
    "ThresholdsError",
    "Version",
    "VersionError",
    "base_release",
    "check_driver_firmware",
    "check_stack",
    "find_release",
    "has_errors",
    "hccl_port_count",
    "hccl_port_range",
    "load_compat_data",
    "min_busbw_gbps",
    "parse_compat_text",
    "parse_version",
]
