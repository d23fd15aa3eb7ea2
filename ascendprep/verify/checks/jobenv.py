"""Job-environment checks: what an HCCL job meets when it starts on the node.

* ``job.rank_table``: no rank-table mode by accident. ``RANK_TABLE_FILE`` in the login
  environment or in ``set_env.sh`` must be what the plan says (the inventory's
  ``training.rank_table``: the planned table, else unset); stray rank tables next to ours are
  reported (EI0014 and "real path error" come from tables nobody meant to use).
* ``job.connect_timeout``: ``HCCL_CONNECT_TIMEOUT`` as a login shell sees it (the site profile
  can export a short value that jobs started without ``set_env.sh`` inherit) and after
  ``set_env.sh``, at least :func:`ascendprep.desired.envfiles.required_connect_timeout` of the cluster.
* ``job.container``: with ``--exec-via``, what the wrapper's container lacks of what the host has.
* ``job.topology_file``: on Ascend 950, the driver's factory topology file of the product
  (``/usr/local/Ascend/driver/topo/950/atlas_350_3.json`` for a 4-card Atlas 350) is present,
  non-empty and readable where the job runs. HCCL's rank table 2.0 loader reads it at
  communicator init and fails with EI0014 without it (HCCL user guide ``rank_table_config_a5.md``;
  HCOMM ``topo.c``); a container that mounts only ``driver/lib64`` is the known way to lose it
  (vllm-project/recipes PR #907). With ``--exec-via`` the gather runs in the container, so the
  facts are the container's.
* ``job.nnal``: NNAL/ATB next to CANN is CANN's own release.
* ``job.torch_npu_import``: ``import torch_npu`` works under the job's environment.

A probe that could not read gives "could not check" with its reason (the runner, via ``probes``).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ascendprep.base.findings import Severity
from ascendprep.base.paths import RANK_TABLE, SET_ENV_SH
from ascendprep.desired import envfiles
from ascendprep.facts.jobenv import import_error_line
from ascendprep.facts.jobenv_model import JobEnv, ShellEnv, TopologyFolder, Visibility
from ascendprep.inventory.products import TOPO_DIR_950
from ascendprep.verify.checks.context import NodeContext
from ascendprep.verify.checks.model import Check, Verdict, could_not_check, failed, passed, skipped
from ascendprep.verify.checks.software import installed_version

_NOT_READ = "the job environment was not read (a gather from an older ascendprep)"
_PROFILE_GREP = "grep -rn {var} /etc/profile /etc/profile.d /etc/environment ~/.profile ~/.bash_profile ~/.bashrc"


def _job(ctx: NodeContext) -> Optional[JobEnv]:
    return ctx.facts.job


def _value(env: Optional[ShellEnv], name: str) -> Optional[str]:
    return None if env is None else env.values.get(name)


# --- job.rank_table ---------------------------------------------------------------------------


def planned_rank_table(ctx: NodeContext) -> Optional[str]:
    """The rank table jobs should use: ours when the inventory asks for rank-table launch."""
    return RANK_TABLE if ctx.desired.inventory.model.training.rank_table else None


def rank_table(ctx: NodeContext) -> Verdict:
    job = _job(ctx)
    if job is None or job.login is None:
        return skipped(_NOT_READ)
    planned = planned_rank_table(ctx)
    login = _value(job.login, "RANK_TABLE_FILE")
    launch = _value(job.launch, "RANK_TABLE_FILE") if job.launch is not None else None
    # Ours is always written (apply keeps it for rank-table launchers); only others are stray.
    strays = tuple(path for path in (job.rank_tables or ()) if path != RANK_TABLE)
    evidence = {
        "planned": planned,
        "login_RANK_TABLE_FILE": login,
        "set_env_RANK_TABLE_FILE": launch if job.launch is not None else "(set_env.sh not present)",
        "rank_tables_found": list(job.rank_tables or ()),
    }
    problems: List[str] = []
    if login is not None and login != planned:
        why = (
            "the inventory does not ask for rank-table launch" if planned is None else f"the plan's table is {planned}"
        )
        problems.append(f"the login environment sets RANK_TABLE_FILE={login!r} (a site profile), but {why}")
    if job.launch is not None and launch != planned:
        if planned is None:
            problems.append(f"after . {SET_ENV_SH}, RANK_TABLE_FILE={launch!r}: jobs start in rank-table mode")
        else:
            problems.append(f"after . {SET_ENV_SH}, RANK_TABLE_FILE is {launch!r}, not the planned {planned}")
    if planned is not None and job.launch is not None and launch == planned and job.launch.rank_table_exists is False:
        problems.append(f"RANK_TABLE_FILE names {planned}, which does not exist")
    if problems:
        return failed(
            "; ".join(problems) + " (HCCL then initialises from a table that does not match the job: EI0014)",
            evidence,
            fix=(
                "remove the export (" + _PROFILE_GREP.format(var="RANK_TABLE_FILE") + ") and run 'ascendprep apply'"
                if planned is None
                else "run 'ascendprep apply' and remove other RANK_TABLE_FILE exports from the profiles"
            ),
        )
    if strays:
        return failed(
            f"rank tables the plan does not use: {', '.join(repr(p) for p in strays)} (a job pointed at one fails with EI0014 or starts a stale cluster)",
            evidence,
            fix=f"remove the stale tables ({' '.join(strays)})"
            + ("" if planned else "; set training.rank_table: true in the inventory if you launch from a rank table"),
            severity=Severity.WARNING,
        )
    if planned is None:
        return passed("no RANK_TABLE_FILE in the login environment or set_env.sh, and no stray rank table", evidence)
    return passed(f"RANK_TABLE_FILE is the planned {planned}", evidence)


# --- job.connect_timeout ----------------------------------------------------------------------


def _seconds(text: Optional[str]) -> Optional[int]:
    if text is None or not re.fullmatch(r"\s*[0-9]{1,9}\s*", text):
        return None
    return int(text)


def connect_timeout(ctx: NodeContext) -> Verdict:
    job = _job(ctx)
    if job is None or job.login is None:
        return skipped(_NOT_READ)
    nodes = len(ctx.desired.inventory.nodes)
    required = envfiles.required_connect_timeout(nodes)
    login = _value(job.login, "HCCL_CONNECT_TIMEOUT")
    launch = _value(job.launch, "HCCL_CONNECT_TIMEOUT") if job.launch is not None else None
    evidence: Dict[str, object] = {
        "login": login,
        "after_set_env": launch if job.launch is not None else "(set_env.sh not present)",
        "required_s": required,
        "nodes": nodes,
        "formula": "JOB_START_BASE_S + JOB_START_PER_NODE_S x nodes, within HCCL's [120, 7200] s",
    }
    problems: List[str] = []
    for where, text, applies in (
        ("the login environment (a site profile; jobs started without set_env.sh get it)", login, login is not None),
        (f"the job's environment after . {SET_ENV_SH}", launch if launch is not None else None, job.launch is not None),
    ):
        if not applies:
            continue
        if text is None:
            seconds: Optional[int] = envfiles.HCCL_CONNECT_TIMEOUT_DEFAULT_S
            shown = f"unset (HCCL's default {seconds} s)"
        else:
            seconds = _seconds(text)
            shown = f"{text!r}"
        if seconds is None:
            problems.append(f"HCCL_CONNECT_TIMEOUT is {shown} in {where}: not a number of seconds")
        elif seconds < required:
            problems.append(f"HCCL_CONNECT_TIMEOUT is {shown} in {where}")
    if job.launch is None and login is None:
        problems.append(
            f"HCCL_CONNECT_TIMEOUT is unset in the login environment (HCCL's default {envfiles.HCCL_CONNECT_TIMEOUT_DEFAULT_S} s) and {SET_ENV_SH} is not there"
        )
    if problems:
        return failed(
            "; ".join(problems)
            + f"; {nodes} node(s) need at least {required} s to start (else 'wait socket establish timeout', EI0006)",
            evidence,
            fix=f"remove or raise the export ({_PROFILE_GREP.format(var='HCCL_CONNECT_TIMEOUT')}); 'ascendprep apply' writes {envfiles.connect_timeout_for(nodes)} s to env.sh",
        )
    effective = launch if job.launch is not None else login
    return passed(
        f"HCCL_CONNECT_TIMEOUT is {effective} s where jobs start (at least the {required} s {nodes} node(s) need)",
        evidence,
    )


# --- job.container ----------------------------------------------------------------------------


def _davinci(items: Tuple[str, ...]) -> List[str]:
    return sorted(
        (i for i in items if re.fullmatch(r"dev:/dev/davinci[0-9]+", i)), key=lambda i: int(i.rsplit("davinci", 1)[1])
    )


def _label(item: str) -> str:
    kind, _, path = item.partition(":")
    return {"tool": f"{path} (tool)", "lib": f"{path} (driver libraries)", "dev": path, "file": path}.get(kind, path)


def container(ctx: NodeContext) -> Verdict:
    job = _job(ctx)
    if job is None:
        return skipped(_NOT_READ)
    if job.host_visible is None:
        return skipped("no --exec-via: the checks ran on the host itself")
    inside: Visibility = job.visible if job.visible is not None else Visibility()
    host = job.host_visible
    via = host.via or "the --exec-via wrapper"
    seen = set(inside.present)
    host_npus, inside_npus = _davinci(host.present), _davinci(inside.present)
    # The container may be given fewer NPUs than the host has, but not fewer than the job uses.
    missing = [item for item in host.present if item not in seen and item not in host_npus]
    if len(inside_npus) < min(ctx.node.nproc, len(host_npus)):
        missing = [item for item in host_npus if item not in seen] + missing
    evidence = {
        "via": via,
        "missing": missing,
        "host_sees": list(host.present),
        "wrapper_sees": list(inside.present),
        "npu_devices_inside": len(inside_npus),
        "planned_npus": ctx.node.nproc,
    }
    if missing:
        return failed(
            f"{via} does not see what the host has: {', '.join(_label(i) for i in missing)}",
            evidence,
            fix="start the container with them: --device for each /dev/davinci<N>, /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc; "
            "-v (read-only) /usr/local/Ascend/driver, hccn_tool, /etc/hccn.conf and /etc/ascendprep",
        )
    return passed(
        f"{via} sees what the host has ({len(inside.present)} items, {len(inside_npus)} NPU devices)", evidence
    )


# --- job.topology_file ------------------------------------------------------------------------


def only_950(desired: object) -> Optional[str]:
    """Only Ascend 950 reads a factory topology file (rank table 2.0); A2/A3 use rank table 1.0/1.2."""
    product = desired.inventory.product  # type: ignore[attr-defined]
    if product.is_950:
        return None
    return f"{product.id} uses rank table 1.0/1.2, which reads no factory topology file (Ascend 950 only)"


def _topology_fix(ctx: NodeContext, wanted: str) -> str:
    job = _job(ctx)
    if job is not None and job.host_visible is not None:
        return (
            f"mount the whole driver into the container, read-only: -v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro"
            f" (mounting only driver/lib64 leaves out {TOPO_DIR_950}); at least -v {TOPO_DIR_950}/{wanted}:{TOPO_DIR_950}/{wanted}:ro"
        )
    return (
        f"{TOPO_DIR_950}/{wanted} comes with the Ascend 950 driver package: reinstall the driver (run its .run package"
        " with --full), or, inside a container, mount /usr/local/Ascend/driver whole"
    )


def _topology_problem(topo: TopologyFolder, wanted: str) -> Optional[str]:
    if not topo.present:
        return f"{topo.folder} is not there"
    found = {f.name: f for f in topo.files}
    mine = found.get(wanted)
    if mine is None:
        others = sorted(found)
        if others:
            return f"{wanted} is not in {topo.folder}, which holds only {', '.join(others)} (another product's or card count's)"
        return f"{topo.folder} holds no topology file ({wanted} is missing)"
    if mine.state == "unreadable":
        return f"{topo.folder}/{wanted} is there but cannot be read"
    if mine.state != "readable":
        return f"{topo.folder}/{wanted} is not a regular file"
    if not mine.size:
        return f"{topo.folder}/{wanted} is empty"
    return None


def topology_file(ctx: NodeContext) -> Verdict:
    job = _job(ctx)
    topo = job.topology if job is not None else None
    if topo is None:
        if ctx.desired.inventory.product.is_950:
            return could_not_check(f"{TOPO_DIR_950} was not read (a gather from an older ascendprep)")
        return skipped("not an Ascend 950 host: its gather reads no topology folder")
    evidence = {
        "folder": topo.folder,
        "folder_present": topo.present,
        "wanted": topo.wanted,
        "files": [{"name": f.name, "state": f.state, "size": f.size} for f in topo.files],
        "where": (job.host_visible.via or "the --exec-via wrapper")  # type: ignore[union-attr]
        if job is not None and job.host_visible is not None
        else "the host",
    }
    if topo.wanted is None:
        return could_not_check(
            f"the inventory's product names no topology file for this node's card count ({ctx.desired.inventory.product.id}: "
            "set npus on the node to 1, 2 or 4)",
            evidence,
        )
    problem = _topology_problem(topo, topo.wanted)
    if problem is not None:
        return failed(
            f"{problem} where the job runs ({evidence['where']}): HCCL's rank table 2.0 loader reads it at"
            " communicator init and fails with EI0014",
            evidence,
            fix=_topology_fix(ctx, topo.wanted),
        )
    size = next(f.size for f in topo.files if f.name == topo.wanted)
    return passed(f"{topo.folder}/{topo.wanted} is readable where the job runs ({size} bytes)", evidence)


# --- job.nnal ---------------------------------------------------------------------------------


def _release(version: str) -> str:
    """``8.2.RC2.B030`` → ``8.2.rc2``: the release, without the build."""
    return re.sub(r"\.b[0-9]+$", "", version.strip().lower())


def nnal(ctx: NodeContext) -> Verdict:
    job = _job(ctx)
    if job is None:
        return skipped(_NOT_READ)
    if job.nnal is None:
        return skipped("NNAL/ATB is not installed (only LLM stacks such as MindIE and vllm-ascend need it)")
    cann = installed_version(ctx.facts, "cann")
    evidence = {"atb": job.nnal.version, "atb_build": job.nnal.build, "file": job.nnal.path, "cann": cann}
    if cann is None:
        return could_not_check("NNAL/ATB is installed but the CANN version is not known", evidence)
    if _release(job.nnal.version or "") != _release(cann):
        return failed(
            f"NNAL/ATB is {job.nnal.version} next to CANN {cann}: ATB is built for its own CANN release (mismatches fail at load with undefined symbols)",
            evidence,
            fix=f"install the Ascend-cann-nnal package of CANN {cann} (and source {job.nnal.path.rsplit('/latest/', 1)[0]}/set_env.sh after CANN's)",
            severity=Severity.WARNING,
        )
    return passed(f"NNAL/ATB {job.nnal.version} matches CANN {cann}", evidence)


# --- job.torch_npu_import ---------------------------------------------------------------------


def torch_npu_import(ctx: NodeContext) -> Verdict:
    job = _job(ctx)
    if job is None or job.torch_npu is None:
        return skipped(_NOT_READ)
    python = ctx.facts.python
    metadata = python.packages.get("torch_npu") if python is not None else None
    result = job.torch_npu
    evidence = {
        "interpreter": ctx.desired.inventory.model.software.python_path,
        "torch_npu_metadata": metadata,
        "rc": result.rc,
        "output": result.error,
    }
    if result.ok:
        return passed(f"import torch_npu works (torch_npu {result.version})", {**evidence, "version": result.version})
    cause = import_error_line(result.error)
    if "undefined symbol" in (result.error or ""):
        fix = "torch_npu was built for another torch or CANN: install the torch_npu build made for this torch and CANN (pip show torch torch_npu; the CANN version in ascend_toolkit_install.info)"
    elif metadata is None:
        fix = "pip install torch_npu into software.python_path"
    else:
        fix = f"read the error; run '{ctx.desired.inventory.model.software.python_path} -c \"import torch_npu\"' after '. {SET_ENV_SH}' on the node"
    return failed(f"import torch_npu fails: {cause}", evidence, fix=fix)


CHECKS: List[Check] = [
    Check(
        "job.rank_table",
        ("job", "files"),
        "node",
        Severity.ERROR,
        "RANK_TABLE_FILE only as planned, no stray rank tables",
        "remove stray RANK_TABLE_FILE exports and rank tables",
        rank_table,
        probes=("job.login", "job.launch", "job.rank_tables"),
        requires=("node.reachable",),
    ),
    Check(
        "job.connect_timeout",
        ("job",),
        "node",
        Severity.ERROR,
        "HCCL_CONNECT_TIMEOUT in effect covers the cluster's start",
        "raise HCCL_CONNECT_TIMEOUT where the site profile sets it",
        connect_timeout,
        probes=("job.login", "job.launch"),
        requires=("node.reachable",),
    ),
    Check(
        "job.container",
        ("job",),
        "node",
        Severity.ERROR,
        "the --exec-via container sees the devices, tools, driver and env files",
        "pass the devices and mounts into the container",
        container,
        probes=("job.visible", "job.host_visible"),
        requires=("node.reachable",),
    ),
    Check(
        "job.topology_file",
        ("job", "files"),
        "node",
        Severity.ERROR,
        "Ascend 950: the product's factory topology file is readable where the job runs",
        "mount /usr/local/Ascend/driver whole into the job's container (or reinstall the driver)",
        topology_file,
        probes=("job.topology",),
        requires=("node.reachable",),
        applies=only_950,
    ),
    Check(
        "job.nnal",
        ("job", "software"),
        "node",
        Severity.WARNING,
        "NNAL/ATB matches CANN (when installed)",
        "install the NNAL package of the installed CANN",
        nnal,
        probes=("job.nnal",),
        requires=("node.reachable",),
    ),
    Check(
        "job.torch_npu_import",
        ("job", "software"),
        "node",
        Severity.ERROR,
        "import torch_npu works in the training interpreter",
        "install a torch_npu that matches torch and CANN",
        torch_npu_import,
        probes=("job.torch_npu",),
        requires=("node.reachable",),
    ),
]
