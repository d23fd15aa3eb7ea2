"""``ascendprep lab``: the virtual Ascend cluster's commands (argument parsing and output only).

Exit codes follow :mod:`ascendprep.base.exitcodes`: 0 success, 1 the lab operation failed (or the lab
is not up), 2 invalid arguments.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Optional, TypeVar

import click

from ascendprep.base import exitcodes
from ascendprep.base.limits import TOOL_LATENCY_MAX_MS
from ascendprep.base.text import visible
from ascendprep.inventory.products import PRODUCTS
from ascendprep.lab.faults import FAULT_KINDS
from ascendprep.lab.job import run_job
from ascendprep.lab.lab import Lab, LabNotUp, not_up_status
from ascendprep.lab.paths import LabPaths
from ascendprep.lab.sim.driver_profiles import DEFAULT_DRIVER_PROFILE, DRIVER_PROFILES
from ascendprep.lab.sim.joblogs import JOB_FAULTS
from ascendprep.lab.spec import (
    DEFAULT_CANN,
    DEFAULT_CANN_950,
    DEFAULT_DRIVER,
    DEFAULT_DRIVER_950,
    DEFAULT_FIRMWARE,
    DEFAULT_SUBNET,
    HOSTNAME_MAPPINGS,
    MAX_NODES,
    LabSpec,
    LabSpecError,
    Versions,
    default_torch_npu,
)
from ascendprep.lab.system import LabError

T = TypeVar("T")

name_option = click.option("--name", default="lab", show_default=True, help="Which lab.")


def _guarded(action: Callable[[], T]) -> T:
    """Turn lab errors into a message and an exit code (never a traceback)."""
    try:
        return action()
    except LabSpecError as exc:
        click.echo(f"error: {visible(exc)}", err=True)
        sys.exit(exitcodes.INVALID)
    except LabError as exc:
        click.echo(f"error: {visible(exc)}", err=True)
        sys.exit(exitcodes.FAILED)
    except PermissionError as exc:
        click.echo(f"error: {visible(exc.filename)}: permission denied (run as root, e.g. with sudo)", err=True)
        sys.exit(exitcodes.FAILED)


@click.group("lab")
def lab_group() -> None:
    """A virtual Ascend cluster on this machine (network namespaces, sshd, simulated tools)."""


@lab_group.command("up")
@name_option
@click.option("--nodes", type=click.IntRange(1, MAX_NODES), default=4, show_default=True, help="Number of nodes.")
@click.option("--product", type=click.Choice(sorted(PRODUCTS)), default="atlas-a2", show_default=True)
@click.option("--npus", type=int, default=None, help="NPUs (device ids) per node  [default: the product's]")
@click.option("--subnet", default=DEFAULT_SUBNET, show_default=True, help="Management subnet; node i gets .(10+i).")
@click.option(
    "--cann",
    default=None,
    help=f"CANN toolkit version installed in every node  [default: {DEFAULT_CANN}; atlas-350: {DEFAULT_CANN_950}]",
)
@click.option(
    "--driver", default=None, help=f"Driver version.  [default: {DEFAULT_DRIVER}; atlas-350: {DEFAULT_DRIVER_950}]"
)
@click.option("--firmware", default=DEFAULT_FIRMWARE, show_default=True, help="Firmware version.")
@click.option(
    "--torch-npu",
    default=None,
    help="torch_npu version (metadata only)  [default: the installed torch's version]",
)
@click.option(
    "--driver-profile",
    type=click.Choice(DRIVER_PROFILES),
    default=DEFAULT_DRIVER_PROFILE,
    show_default=True,
    help="Driver generation the simulated hccn_tool/npu-smi speak on every node: 'legacy' prints an older driver's forms.",
)
@click.option(
    "--node-driver-profile",
    "node_driver_profiles",
    multiple=True,
    metavar="NODE=PROFILE",
    help="Driver profile of one node (repeatable), e.g. node2=legacy for a mixed-generation lab.",
)
@click.option("--chip", default=None, help="Chip name npu-smi shows, e.g. 910B4 or 910B2C  [default: the product's]")
@click.option(
    "--sftp/--no-sftp",
    default=True,
    show_default=True,
    help="Whether the nodes' sshd offers the sftp subsystem (--no-sftp: like a hardened host without it).",
)
@click.option(
    "--hostnames",
    type=click.Choice(HOSTNAME_MAPPINGS),
    default="resolve",
    show_default=True,
    help="How each node's /etc/hosts maps its own name: resolve (to its address), "
    "loopback (Debian's 127.0.1.1 line) or missing (not listed).",
)
@click.option(
    "--tool-latency-ms",
    "tool_latency_ms",
    type=click.IntRange(0, TOOL_LATENCY_MAX_MS),
    default=0,
    show_default=True,
    help="Milliseconds every simulated hccn_tool/npu-smi call sleeps first, like a real driver's round trip "
    "(e.g. 200: timings then show tool calls and their concurrency, not the lab's CPU).",
)
@click.option(
    "--pod-servers",
    type=int,
    default=None,
    help="atlas-a3: servers per super-pod, in node order (0: no super-pod)  [default: 2]",
)
def up_command(
    name: str,
    nodes: int,
    product: str,
    npus: Optional[int],
    subnet: str,
    cann: Optional[str],
    driver: Optional[str],
    firmware: str,
    torch_npu: Optional[str],
    driver_profile: str,
    node_driver_profiles: tuple[str, ...],
    chip: Optional[str],
    sftp: bool,
    hostnames: str,
    tool_latency_ms: int,
    pod_servers: Optional[int],
) -> None:
    """Bring a lab up (needs root). The last line printed is the inventory path."""
    # CANN and driver left unset take the product's defaults in LabSpec.validated()
    versions = Versions(cann=cann, driver=driver, firmware=firmware, torch_npu=torch_npu or default_torch_npu())
    pairs = _guarded(lambda: _node_profiles(node_driver_profiles))
    spec = LabSpec(
        name=name,
        nodes=nodes,
        product=product,
        npus=npus,
        subnet=subnet,
        versions=versions,
        driver_profile=driver_profile,
        node_driver_profiles=pairs,
        chip=chip,
        sftp=sftp,
        hostnames=hostnames,
        tool_latency_ms=tool_latency_ms,
        pod_servers=pod_servers,
    )
    lab = _guarded(lambda: Lab.up(spec, progress=click.echo))
    click.echo(visible(lab.inventory_path))


@lab_group.command("down")
@name_option
def down_command(name: str) -> None:
    """Take a lab down, removing every namespace, process, mount, link and file it made."""

    def down() -> None:
        from ascendprep.lab.lifecycle import tear_down

        if os.geteuid() != 0:
            raise LabError("lab down needs root (run it with sudo)")
        if not tear_down(LabPaths(name), click.echo):
            click.echo(f"lab '{visible(name)}' is not up: nothing to remove")

    _guarded(down)


@lab_group.command("status")
@name_option
@click.option("--format", "output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def status_command(name: str, output: str) -> None:
    """Nodes, whether their sshd answers, and the faults in force."""

    def status() -> dict[str, Any]:
        try:
            return Lab.open(name).status()
        except LabNotUp:
            return not_up_status(name)

    report = _guarded(status)
    if output == "json":
        click.echo(json.dumps(report, indent=2))
    else:
        _print_status(report)
    if not report["up"]:
        sys.exit(exitcodes.FAILED)


@lab_group.command("fault")
@click.argument("node")
@click.argument("kind", type=click.Choice(FAULT_KINDS))
@name_option
@click.option("--npu", type=int, default=None, help="One NPU (device id); default every NPU of the node.")
@click.option("--rate", default=None, help="slow: the link rate, e.g. 8mbit (the default).")
@click.option("--version", "version", default=None, help="cann-drift / torch-npu-drift: the version to drift to.")
@click.option(
    "--size", default=None, help="hccn-flood: what each hccn_tool call prints, e.g. 512K or 30M (the default)."
)
@click.option(
    "--port",
    type=int,
    default=None,
    help="port-listener: the TCP port a process listens on (60000, the default); ub-*: the UB port (default all).",
)
@click.option(
    "--recover-after",
    "recover_s",
    type=click.FloatRange(0, 86400),
    default=None,
    help="ub-partial-link: seconds after which the port is back on all its lanes (default never).",
)
def fault_command(
    node: str,
    kind: str,
    name: str,
    npu: Optional[int],
    rate: Optional[str],
    version: Optional[str],
    size: Optional[str],
    port: Optional[int],
    recover_s: Optional[float],
) -> None:
    """Inject fault KIND on NODE."""
    record = _guarded(
        lambda: Lab.open(name).fault(
            node, kind, npu=npu, rate=rate, version=version, size=size, port=port, recover_s=recover_s
        )
    )
    click.echo(f"fault in force: {_describe(record)}")


@lab_group.command("job")
@name_option
@click.option(
    "--job", "job", default="job", show_default=True, help="The job's name (its console logs: /root/jobs/JOB/)."
)
@click.option(
    "--fault",
    "fault_texts",
    multiple=True,
    metavar="KIND[:NODE[:NPU]]",
    help=f"What makes the job fail, repeatable (two at once: give two); KIND one of {', '.join(JOB_FAULTS)}; default place: the second node, NPU 1.",
)
@click.option("--format", "output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def job_command(name: str, job: str, fault_texts: tuple[str, ...], output: str) -> None:
    """Run a training-like job on every node whose logs (plogs, device logs, console) show how it failed."""
    record = _guarded(lambda: run_job(Lab.open(name), job, fault_texts))
    if output == "json":
        click.echo(json.dumps(record, indent=2))
        return
    click.echo(
        f"job {record['job']}: {record['ranks']} ranks, {record['files']} files; logs under {record['log_root']}, console {record['console_glob']}"
    )
    for fault in record["faults"]:
        click.echo(
            f"fault: {fault['kind']} on {fault['node']} NPU {fault['npu']} (rank {fault['rank']}, device IP {fault['device_ip']})"
        )


@lab_group.command("heal")
@click.argument("node", required=False)
@name_option
@click.option("--kind", type=click.Choice(FAULT_KINDS), default=None, help="Only faults of this kind.")
def heal_command(node: Optional[str], name: str, kind: Optional[str]) -> None:
    """Undo injected faults (of NODE, or of every node)."""
    healed = _guarded(lambda: Lab.open(name).heal(node, kind))
    if not healed:
        click.echo("no faults to heal")
    for record in healed:
        click.echo(f"healed: {_describe(record)}")


@lab_group.command("ssh", context_settings={"ignore_unknown_options": True})
@click.argument("node")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@name_option
def ssh_command(node: str, command: tuple[str, ...], name: str) -> None:
    """Open a shell on NODE (or run COMMAND there) with the lab's key.

    COMMAND's words are joined with spaces for the remote shell, as ``ssh`` itself does.
    """
    argv = _guarded(lambda: Lab.open(name).ssh_argv(node, " ".join(command) if command else None))
    os.execvp(argv[0], argv)


def _node_profiles(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``("node2=legacy",)`` → ``(("node2", "legacy"),)``; the spec checks names and profiles."""
    pairs = []
    for value in values:
        node, sep, profile = value.partition("=")
        if not sep or not node or not profile:
            raise LabSpecError(f"--node-driver-profile {value!r}: write NODE=PROFILE, e.g. node2=legacy")
        pairs.append((node.strip(), profile.strip()))
    return tuple(pairs)


def _describe(record: dict[str, Any]) -> str:
    text = f"{record['node']} {record['kind']}"
    if record.get("npu") is not None:
        text += f" npu {record['npu']}"
    for key in ("rate", "version", "size"):
        if record.get(key):
            text += f" {key} {record[key]}"
    if str(record.get("kind", "")).startswith("ub-") and record.get("port") is not None:
        text += f" port {record['port']}"
    return visible(text)


def _print_status(report: dict[str, Any]) -> None:
    """Plain text; every value made visible (names come from the command line and the lab's files)."""
    report = _visible_values(report)
    if not report["up"]:
        click.echo(f"lab '{report['name']}' is not up")
        return
    click.echo(f"lab '{report['name']}': {len(report['nodes'])} {report['product']} nodes, subnet {report['subnet']}")
    click.echo(f"  inventory:   {report['inventory']}")
    click.echo(f"  key:         {report['key']}")
    click.echo(f"  known_hosts: {report['known_hosts']}")
    for node in report["nodes"]:
        sshd = "sshd up" if node["sshd_running"] else "sshd DOWN"
        click.echo(f"  {node['name']:<8} {node['mgmt_ip']:<15} {sshd}")
    if report["faults"]:
        click.echo("faults in force:")
        for record in report["faults"]:
            click.echo(f"  {_describe(record)}")
    else:
        click.echo("no faults in force")


def _visible_values(value: Any) -> Any:
    """``value`` with every string in it passed through :func:`visible` (for text output only)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {k: _visible_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible_values(v) for v in value]
    return value
