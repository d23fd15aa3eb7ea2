"""Files that make a lab node look like it has the Ascend driver, firmware, CANN and torch_npu.

Layouts follow docs/ascend-reference.md §4.6/§5 and docs/compat-notes.md §3: ``version.info`` files with
capitalised ``Version=``/``Innerversion=`` keys for driver and firmware, the toolkit's
``ascend_toolkit_install.info`` (lower-case keys) under ``ascend-toolkit/latest/<arch>-linux``
(``latest`` a symlink to the versioned directory, as the installer makes it), ``set_env.sh``, the
``/etc/Ascend/ascend_cann_install.info`` and ``/etc/ascend_install.info`` install records.
Only the version strings matter to ascendprep's probes; inner codes (``V100R001C..``) are
synthetic and documented as such in the files' values ([I]: real codes are not public per release).

``install_torch_npu_metadata`` writes a ``torch_npu-<v>.dist-info`` that ``importlib.metadata``
resolves, with no importable module: the lab never pretends ``import torch_npu`` works.
All functions write below a root directory (a node's overlay upper layer, or ``/`` inside it).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

DEFAULT_VERSIONS = {"cann": "8.0.RC3", "driver": "24.1.rc2", "firmware": "7.3.0.1.231"}
ARCHES = ("x86_64", "aarch64")

_VERSION_TEXT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$")


def _check_version(name: str, value: object) -> str:
    if not isinstance(value, str) or not _VERSION_TEXT.match(value):
        raise ValueError(
            f"{name} version {value!r} must look like 8.0.RC3 / 24.1.rc2 (letters, digits, '.', '+', '_', '-')"
        )
    return value


def _numbers(version: str) -> list[int]:
    return [int(part) for part in re.findall(r"\d+", version)]


def _inner_code(version: str) -> str:
    """A synthetic ``V100R001C<nn>`` release code derived from a public version ([I])."""
    numbers = _numbers(version) + [0, 0]
    return f"V100R001C{(numbers[0] % 10) * 10 + numbers[1] % 10:02d}"


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    os.chmod(temp, mode)
    os.replace(temp, path)


def driver_version_info(driver: str, firmware: str) -> str:
    """``driver/version.info``: accepts firmware from 7.0.0 up to the installed major.minor."""
    fw = _numbers(firmware) + [0, 0]
    return (
        f"Version={driver}\n"
        "ascendhal_version=7.35.19\n"
        "aicpu_version=1.0\n"
        "tdt_version=1.0\n"
        "log_version=1.0\n"
        "prof_version=2.0\n"
        "dvppkernels_version=1.1\n"
        "tsfw_version=1.0\n"
        f"Innerversion={_inner_code(driver)}SPC001B220\n"
        f"compatible_version=[V100R001C15],[V100R001C17],[V100R001C18],[V100R001C19],[{_inner_code(driver)}]\n"
        f"compatible_version_fw=[7.0.0,{fw[0]}.{fw[1]}.99]\n"
        f"package_version={driver}\n"
    )


def firmware_version_info(driver: str, firmware: str) -> str:
    """``firmware/version.info``: compatible with drivers of the installed driver's YY.N line."""
    line = ".".join(driver.split(".")[:2])
    return (
        f"Version={firmware}\nfirmware_version=1.0\npackage_version={driver}\ncompatible_version_drv=[{line},{line}.]\n"
    )


def toolkit_install_info(cann: str, arch: str) -> str:
    """``ascend_toolkit_install.info`` of the CANN toolkit."""
    return (
        "package_name=Ascend-cann-toolkit\n"
        f"version={cann}\n"
        f"innerversion={_inner_code(cann)}SPC001B231\n"
        "compatible_version=[V100R001C15],[V100R001C17],[V100R001C18],[V100R001C19]\n"
        f"arch={arch}\n"
        "os=linux\n"
        f"path=/usr/local/Ascend/ascend-toolkit/{cann}/{arch}-linux\n"
    )


def set_env_script(arch: str) -> str:
    """``ascend-toolkit/set_env.sh``: the variables CANN's script exports (docs/ascend-reference.md §5.1)."""
    return (
        "# ascendprep lab: simulated CANN toolkit environment\n"
        "export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest\n"
        "export ASCEND_HOME_PATH=${ASCEND_TOOLKIT_HOME}\n"
        "export ASCEND_OPP_PATH=${ASCEND_TOOLKIT_HOME}/opp\n"
        "export ASCEND_AICPU_PATH=${ASCEND_TOOLKIT_HOME}\n"
        "export TOOLCHAIN_HOME=${ASCEND_TOOLKIT_HOME}/toolkit\n"
        "export LD_LIBRARY_PATH=${ASCEND_TOOLKIT_HOME}/lib64:"
        f"${{ASCEND_TOOLKIT_HOME}}/{arch}-linux/devlib:${{LD_LIBRARY_PATH}}\n"
        "export PYTHONPATH=${ASCEND_TOOLKIT_HOME}/python/site-packages:${PYTHONPATH}\n"
        "export PATH=${ASCEND_TOOLKIT_HOME}/bin:${ASCEND_TOOLKIT_HOME}/compiler/ccec_compiler/bin:${PATH}\n"
    )


def install_cann_tree(root: Path, versions: dict, arch: str) -> None:
    """Write driver, firmware and CANN toolkit version files below ``root``.

    ``versions`` needs ``cann``, ``driver`` and ``firmware``. Calling it again with other versions
    replaces the files and repoints ``ascend-toolkit/latest`` (an upgrade in place).
    """
    root = Path(root)
    missing = [key for key in ("cann", "driver", "firmware") if key not in versions]
    if missing:
        raise ValueError(f"versions is missing {', '.join(missing)}")
    cann = _check_version("cann", versions["cann"])
    driver = _check_version("driver", versions["driver"])
    firmware = _check_version("firmware", versions["firmware"])
    if arch not in ARCHES:
        raise ValueError(f"arch {arch!r} must be one of {', '.join(ARCHES)}")
    ascend = root / "usr/local/Ascend"
    _write(ascend / "driver/version.info", driver_version_info(driver, firmware))
    _write(ascend / "firmware/version.info", firmware_version_info(driver, firmware))
    toolkit = ascend / "ascend-toolkit"
    _write(toolkit / cann / f"{arch}-linux/ascend_toolkit_install.info", toolkit_install_info(cann, arch))
    latest = toolkit / "latest"
    if latest.is_symlink() or latest.is_file():
        latest.unlink()
    elif latest.is_dir():
        shutil.rmtree(latest)
    latest.symlink_to(cann)
    _write(toolkit / "set_env.sh", set_env_script(arch), 0o755)
    from ascendprep.lab.sim.jobenv import install_nnal_and_driver_libs

    install_nnal_and_driver_libs(root, cann)  # NNAL follows its CANN release, as installers pair them
    _write(root / "etc/Ascend/ascend_cann_install.info", "Install_Path=/usr/local/Ascend\n")
    _write(
        root / "etc/ascend_install.info",
        "UserName=HwHiAiUser\nUserGroup=HwHiAiUser\nDriver_Install_Type=full\n"
        "Driver_Install_Path_Param=/usr/local/Ascend\nDriver_Install_For_All=no\n"
        "Driver_Install_Mode=normal\nDriver_Install_Status=complete\n"
        "Firmware_Install_Type=full\nFirmware_Install_Path_Param=/usr/local/Ascend\n",
    )


def install_torch_npu_metadata(purelib: Path, version: str, torch_version: str) -> None:
    """Make ``importlib.metadata.version("torch_npu")`` return ``version`` in ``purelib``.

    Any other ``torch_npu-*.dist-info`` there is removed first (one installed version, as pip
    leaves it). ``Requires-Dist`` pins ``torch==<torch_version>`` like the real wheel.
    """
    purelib = Path(purelib)
    _check_version("torch_npu", version)
    _check_version("torch", torch_version)
    purelib.mkdir(parents=True, exist_ok=True)
    for stale in purelib.glob("torch_npu-*.dist-info"):
        shutil.rmtree(stale)
    dist_info = purelib / f"torch_npu-{version}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: torch_npu\n"
        f"Version: {version}\n"
        "Summary: Ascend Extension for PyTorch (ascendprep lab: metadata only, not importable)\n"
        "Home-page: https://gitee.com/ascend/pytorch\n"
        "License: BSD License\n"
        "Requires-Python: >=3.9\n"
        f"Requires-Dist: torch=={torch_version}\n"
    )
    _write(dist_info / "METADATA", metadata)
    _write(dist_info / "INSTALLER", "pip\n")
    record_name = f"torch_npu-{version}.dist-info"
    _write(dist_info / "RECORD", f"{record_name}/METADATA,,\n{record_name}/INSTALLER,,\n{record_name}/RECORD,,\n")
