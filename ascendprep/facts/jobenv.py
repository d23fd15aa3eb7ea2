"""Probes of the environment an HCCL job actually starts in, and their parsers.

The ``job.*`` sections of the gather script read what the files ascendprep manages cannot show:

* ``job.login`` / ``job.launch``: ``HCCL_CONNECT_TIMEOUT`` and ``RANK_TABLE_FILE`` as a *login
  shell* sees them (``bash -l``, else ``sh -l``: ``/etc/profile``, ``/etc/profile.d/*.sh``,
  ``~/.profile``), bare and after sourcing the node's ``set_env.sh`` as the planned torchrun line
  does. A site profile that exports a short timeout or a stale rank table wins over nothing.
* ``job.rank_tables``: rank-table files where ascendprep writes its own (``/etc/ascendprep``).
* ``job.visible`` (and ``job.host_visible``, only through ``--exec-via``): the device nodes,
  ``hccn_tool``, ``/etc/hccn.conf``, the driver libraries and the env files, present or absent.
* ``job.nnal``: the NNAL/ATB ``version.info`` next to CANN.
* ``job.topology`` (Ascend 950 inventories only): the driver's factory topology folder
  ``/usr/local/Ascend/driver/topo/950`` and its ``*.json`` files, readable or not, with the file
  the product needs for the node's card count. HCCL's rank table 2.0 loader reads that file
  (HCCL user guide ``rank_table_config_a5.md``; HCOMM ``topo.c``), so it must be readable where
  the job runs: through ``--exec-via``, inside the container.
* ``job.torch_npu``: a real ``import torch_npu`` under the job's environment, bounded by
  :data:`ascendprep.base.limits.JOB_IMPORT_TIMEOUT_S` and the script's output cap; its error text is
  kept (an undefined-symbol mismatch between torch, torch_npu and CANN shows only there).

Nothing is interpolated: the shell code is constant, paths come from :mod:`ascendprep.base.paths`
and the interpreter path is validated by the gather (``check_command``) and quoted.
Each section is a :class:`~ascendprep.facts.unit.ProbeUnit` of :data:`JOBENV_UNITS` (registered in
:mod:`ascendprep.facts.units`); together they fill ``HostFacts.job``.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple

from ascendprep.base import limits, paths
from ascendprep.facts.jobenv_model import (
    JobEnv,
    NnalVersion,
    ShellEnv,
    TopologyFile,
    TopologyFolder,
    TorchNpuImport,
    Visibility,
)
from ascendprep.facts.sections import Section
from ascendprep.facts.text import first_line
from ascendprep.facts.unit import (
    VERIFY_ONLY,
    Draft,
    Given,
    ProbeUnit,
    RenderContext,
    Where,
    fixed,
    nothing_if_absent,
    text_only,
)
from ascendprep.inventory.products import TOPO_DIR_950

#: Variables read from the login shell: the job checks judge the first two, checks/a3env.py the
#: A3 HCCL settings (docs/a3-superpod.md §3).
JOB_VARIABLES = (
    "HCCL_CONNECT_TIMEOUT",
    "RANK_TABLE_FILE",
    "HCCL_INTER_HCCS_DISABLE",
    "HCCL_LOGIC_SUPERPOD_ID",
    "HCCL_OP_RETRY_ENABLE",
    "HCCL_OP_EXPANSION_MODE",
    "HCCL_INTRA_PCIE_ENABLE",
)
#: Where ascendprep writes its rank table; stray tables are looked for here.
RANK_TABLE_DIR = paths.RANK_TABLE.rsplit("/", 1)[0]
#: File names that are rank tables (MindSpore's hccl_tools writes ``hccl_<n>p_<devs>_<ip>.json``).
RANK_TABLE_PATTERNS = ("*rank_table*.json", "*ranktable*.json", "hccl*.json")
NNAL_VERSION_FILE = "nnal/atb/latest/version.info"
#: The device nodes an NPU job opens (the driver's container guide lists these for docker --device).
DEVICE_FILES = ("/dev/davinci_manager", "/dev/hisi_hdc", "/dev/devmm_svm")
DRIVER_LIB_DIR = "driver/lib64"
#: The interpreter's import probe prints this, then the version.
IMPORT_MARK = "ascendprep-torch-npu"
IMPORT_CODE = f"import torch_npu\nprint({IMPORT_MARK!r}, getattr(torch_npu, '__version__', '?'))\n"
#: Characters of a failed import's output kept as evidence (its end: the error line).
IMPORT_ERROR_TAIL = 1500
_ENV_MARK = "ascendprep-env"
_SECTION_PROBES = {
    "job.login": ("job.login", "login shell (bash -l) environment"),
    "job.launch": ("job.launch", f"login shell environment after . {paths.SET_ENV_SH}"),
    "job.rank_tables": ("job.rank_tables", f"listing rank tables in {RANK_TABLE_DIR}"),
    "job.visible": ("job.visible", "looking for the NPU devices, hccn_tool, driver libraries and env files"),
    "job.host_visible": ("job.host_visible", "the host's view (--exec-via)"),
    "job.nnal": ("job.nnal", f"cat <ascend home>/{NNAL_VERSION_FILE}"),
    "job.torch_npu": ("job.torch_npu", "import torch_npu"),
    "job.topology": ("job.topology", f"ls -l {TOPO_DIR_950}/*.json"),
}
#: Topology files listed at most (the factory folder holds a handful; more is not a driver tree).
MAX_TOPOLOGY_FILES = 64
#: What a topology file name may be when rendered into the probe (``atlas_350_3.json``).
TOPOLOGY_NAME = re.compile(r"[a-z0-9_]{1,64}\.json")
TOPOLOGY_STATES = ("readable", "unreadable", "not_a_file")

# Run in the login shell with $1 = a file to source first ('' for none). Each variable on one
# marked line (the profile may print banners): name, 1/0 for set, the value.
_PRINT_ENV = (
    'if [ -n "$1" ] && [ -f "$1" ]; then . "$1" >/dev/null 2>&1; fi\n'
    f"for v in {' '.join(JOB_VARIABLES)}; do\n"
    '\teval "s=\\${$v+1} x=\\${$v-}"\n'
    f'\tprintf \'{_ENV_MARK}\\t%s\\t%s\\t%s\\n\' "$v" "${{s:-0}}" "$x"\n'
    "done\n"
    'if [ -n "${RANK_TABLE_FILE-}" ] && [ -f "$RANK_TABLE_FILE" ]; then '
    f"printf '{_ENV_MARK}\\trank_table_exists\\t1\\t\\n'; fi\n"
)
# $1 = a file to source first, $2 = the interpreter, $3 = its code.
_IMPORT = 'if [ -n "$1" ] && [ -f "$1" ]; then . "$1" >/dev/null 2>&1; fi\nexec "$2" -c "$3"\n'


def visibility_function() -> str:
    """``ap_job_visible HOME``: one ``kind state path`` line per thing a job needs (POSIX sh).

    Shared by the gather (where the checks run) and the ``--exec-via`` wrapper's host side.
    """
    q = shlex.quote
    devices = " ".join(q(d) for d in DEVICE_FILES)
    files = " ".join(q(f) for f in (paths.HCCN_CONF, paths.ENV_SH, paths.SET_ENV_SH))
    return (
        "# ap_job_visible HOME: what this place sees of what an NPU job needs (kind state path).\n"
        "ap_job_visible() {\n"
        "\tset +f\n"
        "\tfor ap_p in /dev/davinci[0-9]*; do\n"
        '\t\tif [ -e "$ap_p" ]; then printf \'dev present %s\\n\' "$ap_p"; fi\n'
        "\tdone\n"
        "\tset -f\n"
        f"\tfor ap_p in {devices}; do\n"
        '\t\tif [ -e "$ap_p" ]; then printf \'dev present %s\\n\' "$ap_p"; else printf \'dev absent %s\\n\' "$ap_p"; fi\n'
        "\tdone\n"
        f'\tif command -v hccn_tool >/dev/null 2>&1 || [ -x "$1/{paths.HCCN_TOOL_IN_HOME}" ]; then\n'
        "\t\techo 'tool present hccn_tool'\n"
        "\telse\n"
        "\t\techo 'tool absent hccn_tool'\n"
        "\tfi\n"
        f"\tfor ap_p in {files}; do\n"
        '\t\tif [ -f "$ap_p" ]; then printf \'file present %s\\n\' "$ap_p"; else printf \'file absent %s\\n\' "$ap_p"; fi\n'
        "\tdone\n"
        f'\tif [ -d "$1/{DRIVER_LIB_DIR}" ]; then printf \'lib present %s\\n\' "$1/{DRIVER_LIB_DIR}"; '
        f"else printf 'lib absent %s\\n' \"$1/{DRIVER_LIB_DIR}\"; fi\n"
        "}\n"
    )


def topology_function() -> str:
    """``ap_job_topology WANTED``: the 950 factory topology folder as this place sees it (POSIX sh).

    Prints ``want NAME``, then ``folder present|absent PATH`` and, per ``*.json`` there, ``file
    STATE SIZE NAME`` (``SIZE`` is ``-`` unless readable). A file counts as readable when its
    first byte can be read: ``[ -r ]`` alone says yes to root for any mode.
    """
    return (
        "# ap_job_topology WANTED: the 950 driver's factory topology files (HCCL reads one at communicator init).\n"
        "ap_job_topology() {\n"
        f"\tap_t={shlex.quote(TOPO_DIR_950)}\n"
        "\tprintf 'want %s\\n' \"$1\"\n"
        '\tif [ ! -d "$ap_t" ]; then printf \'folder absent %s\\n\' "$ap_t"; return 0; fi\n'
        "\tprintf 'folder present %s\\n' \"$ap_t\"\n"
        "\tset +f\n"
        '\tfor ap_p in "$ap_t"/*.json; do\n'
        '\t\tif [ ! -e "$ap_p" ] && [ ! -L "$ap_p" ]; then continue; fi\n'
        '\t\tif [ ! -f "$ap_p" ]; then printf \'file not_a_file - %s\\n\' "${ap_p##*/}"\n'
        '\t\telif head -c 1 "$ap_p" >/dev/null 2>&1; then\n'
        '\t\t\tprintf \'file readable %s %s\\n\' "$(wc -c <"$ap_p" | tr -d \' \')" "${ap_p##*/}"\n'
        "\t\telse printf 'file unreadable - %s\\n' \"${ap_p##*/}\"; fi\n"
        "\tdone\n"
        "\tset -f\n"
        "}\n"
    )


def shell_functions() -> str:
    """The functions the ``job.*`` lines call (defined once, before the gather's main block)."""
    q = shlex.quote
    patterns = " | ".join(RANK_TABLE_PATTERNS)
    return (
        visibility_function()
        + "\n"
        + topology_function()
        + "\n# ap_job_sh: the login shell jobs get: bash -l (profile, profile.d, ~/.profile), else sh -l.\n"
        "ap_job_sh() {\n"
        "\tif command -v bash >/dev/null 2>&1; then ap_sh=bash; else ap_sh=sh; fi\n"
        "}\n\n"
        "# ap_job_env SOURCE: the job variables in a login shell (after sourcing SOURCE when given).\n"
        "ap_job_env() {\n"
        "\tap_job_sh\n"
        f'\ttimeout -k 2 {int(limits.JOB_LOGIN_TIMEOUT_S)} "$ap_sh" -lc {q(_PRINT_ENV)} ascendprep-job "$1"\n'
        "}\n\n"
        "# ap_job_import SOURCE PYTHON: import torch_npu in PYTHON under the job's environment.\n"
        "ap_job_import() {\n"
        "\tap_job_sh\n"
        f'\ttimeout -k 2 {int(limits.JOB_IMPORT_TIMEOUT_S)} "$ap_sh" -lc {q(_IMPORT)} ascendprep-job "$1" "$2" {q(IMPORT_CODE)}\n'
        "}\n\n"
        f"# ap_job_rank_tables: rank-table files in {RANK_TABLE_DIR} ({', '.join(RANK_TABLE_PATTERNS)}).\n"
        "ap_job_rank_tables() {\n"
        "\tset +f\n"
        f"\tfor ap_p in {q(RANK_TABLE_DIR)}/*; do\n"
        f"\t\tcase ${{ap_p##*/}} in {patterns}) printf '%s\\n' \"$ap_p\" ;; esac\n"
        "\tdone\n"
        "\tset -f\n"
        "}\n"
    )


# --- parsers (pure) ---------------------------------------------------------------------------


def parse_shell_env(text: str, sourced: Optional[str]) -> ShellEnv:
    """The marked lines of :data:`_PRINT_ENV`; anything else (profile banners) is ignored.

    Raises ValueError when no variable line is there: the shell did not get as far as printing.
    """
    values: Dict[str, Optional[str]] = {}
    exists: Optional[bool] = None
    for line in text.splitlines():
        parts = line.split("\t", 3)
        if len(parts) != 4 or parts[0] != _ENV_MARK:
            continue
        _, name, is_set, value = parts
        if name in JOB_VARIABLES:
            values[name] = value if is_set == "1" else None
        elif name == "rank_table_exists":
            exists = True
    if not values:
        raise ValueError("the login shell printed none of the job variables")
    if values.get("RANK_TABLE_FILE") is not None and exists is None:
        exists = False
    return ShellEnv(values=values, sourced=sourced, rank_table_exists=exists)


def parse_visibility(text: str) -> Visibility:
    """``kind state path`` lines (and ``via COMMAND`` on the host's view) → Visibility."""
    present: List[str] = []
    absent: List[str] = []
    via: Optional[str] = None
    for line in text.splitlines():
        if line.startswith("via "):
            via = line[4:]
            continue
        parts = line.split(" ", 2)
        if len(parts) != 3 or parts[0] not in ("dev", "tool", "file", "lib"):
            continue
        item = sys.intern(f"{parts[0]}:{parts[2]}")
        (present if parts[1] == "present" else absent).append(item)
    if not present and not absent:
        raise ValueError("no item lines")
    return Visibility(present=tuple(present), absent=tuple(absent), via=via)


def parse_topology(text: str) -> TopologyFolder:
    """The lines of :func:`topology_function` → TopologyFolder.

    Raises ValueError when the folder line is missing (the function did not run to its test).
    """
    wanted: Optional[str] = None
    folder: Optional[Tuple[str, bool]] = None
    files: List[TopologyFile] = []
    for line in text.splitlines():
        if line.startswith("want "):
            name = line[5:].strip()
            wanted = name if TOPOLOGY_NAME.fullmatch(name) else None
            continue
        parts = line.split(" ", 3)
        if len(parts) == 3 and parts[0] == "folder" and parts[1] in ("present", "absent"):
            folder = (parts[2][:256], parts[1] == "present")
        elif len(parts) == 4 and parts[0] == "file" and parts[1] in TOPOLOGY_STATES:
            if len(files) >= MAX_TOPOLOGY_FILES:
                raise ValueError(f"more than {MAX_TOPOLOGY_FILES} topology files: not a driver's topology folder")
            size = int(parts[2]) if parts[1] == "readable" and re.fullmatch(r"[0-9]{1,15}", parts[2]) else None
            files.append(TopologyFile(name=parts[3][:256], state=parts[1], size=size))
    if folder is None:
        raise ValueError("no 'folder present|absent' line")
    return TopologyFolder(folder=folder[0], present=folder[1], wanted=wanted, files=tuple(files))


def _render_topology(ctx: RenderContext) -> List[str]:
    """Only a 950 inventory's script reads the topology folder (earlier generations have none)."""
    if not ctx.is_950:
        return []
    wanted = ctx.topology_file or ""
    if wanted and not TOPOLOGY_NAME.fullmatch(wanted):
        raise ValueError(f"topology file name {wanted!r} is not of the form atlas_350_3.json")
    return [f"ap_run job.topology '' ap_job_topology {shlex.quote(wanted)}"]


_ATB_RE = re.compile(r"^\s*Ascend-cann-atb\s*:\s*(\S+)\s*$", re.MULTILINE)
_ATB_BUILD_RE = re.compile(r"^\s*Ascend-cann-atb Version\s*:\s*(\S+)\s*$", re.MULTILINE)


def parse_nnal_version(path: str, text: str) -> NnalVersion:
    """``Ascend-cann-atb : 8.2.RC2`` / ``Ascend-cann-atb Version : 8.2.RC2.B030`` (public captures)."""
    version = _ATB_RE.search(text)
    build = _ATB_BUILD_RE.search(text)
    if version is None:
        raise ValueError(f"{path}: no 'Ascend-cann-atb : <version>' line")
    return NnalVersion(path=path, version=version.group(1)[:64], build=build.group(1)[:64] if build else None)


def parse_import(rc: int, stdout: str, stderr: str) -> TorchNpuImport:
    """The import probe's outcome: the version on success, the end of its output on failure."""
    for line in stdout.splitlines():
        if line.startswith(IMPORT_MARK + " ") and rc == 0:
            return TorchNpuImport(ok=True, version=line.split(" ", 1)[1].strip()[:64] or None, rc=rc)
    text = "\n".join(part for part in (stderr.strip(), stdout.strip()) if part)
    return TorchNpuImport(ok=False, error=text[-IMPORT_ERROR_TAIL:] or f"exit status {rc} and no output", rc=rc)


def import_error_line(error: Optional[str]) -> str:
    """The line that names the cause (``ImportError: ...: undefined symbol: ...``), else the last one."""
    lines = [line.strip() for line in (error or "").splitlines() if line.strip()]
    for line in reversed(lines):
        if "undefined symbol" in line or re.match(r"^[A-Za-z_.]*(Error|Exception)\b", line):
            return first_line(line)
    return first_line(lines[-1]) if lines else "no output"


def _fill_part(part: str):
    """``fill`` that sets one part of ``HostFacts.job`` (the JobEnv is built up section by section)."""

    def fill(draft: Draft, where: Where, value: Any) -> None:
        draft.fields["job"] = replace(draft.fields.get("job") or JobEnv(), **{part: value})

    return fill


def _import_settle(section: Section) -> Optional[Given]:
    """An import that ran and ended (well or not) is an answer; a hung one or a missing
    interpreter (124/137/127, or a cut-off section) is a failure classified as such."""
    if section.rc is None or section.rc in (124, 137, 127):
        return None
    return Given(parse_import(section.rc, section.stdout, section.stderr))


def _never_parsed(stdout: str, where: Where) -> Any:
    raise ValueError("the import probe is read by its settle step")


_SET_ENV = shlex.quote(paths.SET_ENV_SH)

JOBENV_UNITS: Tuple[ProbeUnit, ...] = (
    ProbeUnit(
        section="job.login",
        comment="The job's environment: login shell, rank tables, what a container sees, NNAL, torch_npu.",
        command=lambda ctx: "ap_job_env ''",
        describe=fixed(_SECTION_PROBES["job.login"][1]),
        parse=lambda stdout, where: parse_shell_env(stdout, None),
        fill=_fill_part("login"),
        fact="job.login",
        phases=VERIFY_ONLY,
        timeout_s=limits.JOB_LOGIN_TIMEOUT_S,
    ),
    ProbeUnit(
        section="job.launch",
        command=lambda ctx: f"ap_job_env {_SET_ENV}",
        guard=f"[ -f {_SET_ENV} ]",
        describe=fixed(_SECTION_PROBES["job.launch"][1]),
        parse=lambda stdout, where: parse_shell_env(stdout, paths.SET_ENV_SH),
        fill=_fill_part("launch"),
        fact="job.launch",
        phases=VERIFY_ONLY,
        timeout_s=limits.JOB_LOGIN_TIMEOUT_S,
    ),
    ProbeUnit(
        section="job.rank_tables",
        command=lambda ctx: "ap_job_rank_tables",
        describe=fixed(_SECTION_PROBES["job.rank_tables"][1]),
        parse=lambda stdout, where: tuple(line for line in stdout.splitlines() if line)[:100],
        fill=_fill_part("rank_tables"),
        fact="job.rank_tables",
        phases=VERIFY_ONLY,
    ),
    ProbeUnit(
        section="job.visible",
        command=lambda ctx: 'ap_job_visible "$AP_HOME"',
        describe=fixed(_SECTION_PROBES["job.visible"][1]),
        parse=text_only(parse_visibility),
        fill=_fill_part("visible"),
        fact="job.visible",
        phases=VERIFY_ONLY,
    ),
    ProbeUnit(
        section="job.host_visible",
        command=lambda ctx: "printf '%s\\n' \"$AP_VIA_HOST\"",
        guard='[ -n "${AP_VIA_HOST+x}" ]',
        describe=fixed(_SECTION_PROBES["job.host_visible"][1]),
        parse=text_only(parse_visibility),
        fill=_fill_part("host_visible"),
        fact="job.host_visible (only through --exec-via)",
        phases=VERIFY_ONLY,
    ),
    ProbeUnit(
        section="job.nnal",
        attrs=f"' file={NNAL_VERSION_FILE}'",
        command=lambda ctx: f'cat "$AP_HOME/{NNAL_VERSION_FILE}"',
        describe=lambda where: f"cat {where.home_path(NNAL_VERSION_FILE)}",
        parse=lambda stdout, where: parse_nnal_version(where.home_path(NNAL_VERSION_FILE), stdout),
        settle=nothing_if_absent,
        fill=_fill_part("nnal"),
        fact="job.nnal",
        phases=VERIFY_ONLY,
    ),
    ProbeUnit(
        section="job.topology",
        command=lambda ctx: "ap_job_topology",
        render=_render_topology,
        describe=fixed(_SECTION_PROBES["job.topology"][1]),
        parse=text_only(parse_topology),
        fill=_fill_part("topology"),
        fact="job.topology (Ascend 950 only)",
        phases=VERIFY_ONLY,
    ),
    ProbeUnit(
        section="job.torch_npu",
        command=lambda ctx: f"ap_job_import {_SET_ENV} {shlex.quote(ctx.python_path)}",
        describe=fixed(_SECTION_PROBES["job.torch_npu"][1]),
        parse=_never_parsed,
        settle=_import_settle,
        fill=_fill_part("torch_npu"),
        fact="job.torch_npu",
        phases=VERIFY_ONLY,
        timeout_s=limits.JOB_IMPORT_TIMEOUT_S,
    ),
)
