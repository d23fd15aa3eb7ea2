"""``ascendprep verify``: the click command and its flow.

1. Load the inventory and its desired state (rule violations: exit 2).
2. One SSH round trip per host gathers its facts; a second one per host pings NPU pairs (the
   ``--mesh``); with ``--allreduce`` the all-reduce launcher runs on the same connections.
3. The checks (:mod:`ascendprep.verify.checks`) turn the evidence into results; nothing they do touches a
   host, so ``--from-bundle`` re-runs them on a saved run with the same outcome.
4. Output: a summary (text) or a document (json), optionally JUnit; every live run saves its
   evidence bundle under ``.ascendprep/runs/``. Exit 0 when nothing at error severity failed.

The checks, the probes and SSH are imported inside the flow, when the command runs, so that
registering :data:`verify_command` in ``ascendprep/cli.py`` costs the CLI nothing at start-up.
The check groups and meshes are spelled out here for the same reason; a test holds them equal
to the registry's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence, Tuple

import click

from ascendprep.base.limits import KEEP_RUNS_DEFAULT, SAMPLE_INTERVAL_DEFAULT_S, SAMPLE_INTERVAL_MAX_S
from ascendprep.commands.common import (
    accept_new_host_keys_option,
    ask_sudo_password_option,
    forks_option,
    hosts_option,
    prompt_sudo_password,
    timeout_option,
)
from ascendprep.run.execvia import ExecViaError, parse_exec_via
from ascendprep.run.node_local import refuse_remote_options
from ascendprep.run.verify import run_verify
from ascendprep.run.verify_run import VerifyOptions
from ascendprep.verify.allreduce.options import AllreduceOptions

if TYPE_CHECKING:  # pragma: no cover
    pass

#: ``ascendprep.verify.checks.registry.GROUPS`` and ``ascendprep.verify.mesh.MESHES``.
GROUPS = (
    "node",
    "npu",
    "network",
    "optics",
    "ports",
    "sysctl",
    "firewall",
    "files",
    "software",
    "job",
    "cluster",
    "firmware",
    "superpod",
    "ub",
)
MESHES = ("ring", "full")
#: verify's ``--timeout`` also bounds the all-reduce, and the report and bundle are still written.
VERIFY_TIMEOUT_HELP = (
    "Seconds the whole command may take; hosts still at work then are reported as timed out, the report and the bundle "
    "are still written, exit 1 (default: per phase and wave of --forks hosts, ssh.connect_timeout + ssh.command_timeout, "
    "plus 30; with --allreduce plus its 600). --allreduce gets what is left, at most 600 s unless --timeout is given."
)


def _allreduce_options(enabled: bool, given: Dict[str, Any]) -> Optional[Any]:
    """The launcher's own options object; its module is imported only when --allreduce is given."""
    used = [f"--{name.replace('_', '-')}" for name, value in given.items() if value not in (None, False)]
    if not enabled:
        if used:
            raise click.UsageError(f"{', '.join(used)} only apply with --allreduce")
        return None

    return AllreduceOptions(**given)


_SELECT_HELP = "Check ids or groups ({}), comma separated; repeatable.".format(", ".join(GROUPS))


@click.command("verify")
@click.argument("inventory", nargs=-1, metavar="[INVENTORY | BUNDLE_DIR...]", type=click.Path(path_type=Path))
@click.option("--only", multiple=True, metavar="IDS", help="Run only these checks. " + _SELECT_HELP)
@click.option("--skip", multiple=True, metavar="IDS", help="Leave these checks out. " + _SELECT_HELP)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "prometheus"]),
    default="text",
    show_default=True,
    help="Output for people (text) or machines (json, with schema_version; prometheus: node_exporter textfile metrics).",
)
@click.option(
    "--prometheus-file",
    "prometheus_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the results as Prometheus metrics to this file, atomically (for node_exporter's textfile collector: name it *.prom).",
)
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write JUnit XML here, atomically and 0600 (a testsuite per node and one for the cluster).",
)
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write the report as one self-contained HTML page here (0600: it holds host evidence): verdict, NPU grid, reachability heat map, all-reduce and optics charts.",
)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="With --html: add this saved plan's changes per host to the page (what apply would do, or did); read as apply reads it, never implied. Also with --from-bundle.",
)
@click.option(
    "--mesh",
    type=click.Choice(list(MESHES)),
    default=None,
    help="NPU pairs to ping: ring (same NPU on the next node and on the master; default) or full (every pair of a plane).",
)
@click.option(
    "--from-bundle",
    "from_bundle",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Re-check a saved run (.ascendprep/runs/<id>) without contacting any host; with more folders after it (--from-bundle DIR DIR...), merge the node bundles of verify --local runs into one cluster report.",
)
@click.option(
    "--local",
    "local",
    is_flag=True,
    help="Check only this machine, without SSH (run by Slurm, Kubernetes or Ansible on each node); --node names it, --bundle-dir keeps its node bundle for --from-bundle.",
)
@click.option(
    "--node",
    "node",
    default=None,
    metavar="NAME",
    help="--local: the inventory node this machine is (default: the node whose name or host is this machine's host name or address).",
)
@click.option(
    "--bundle-dir",
    "bundle_dir",
    type=click.Path(path_type=Path),
    default=None,
    metavar="DIR",
    help="--local: write the node bundle to DIR (a new or empty folder, or this node's earlier bundle, replaced) instead of under .ascendprep/runs/.",
)
@click.option(
    "--keep-runs",
    "keep_runs",
    type=click.IntRange(1, 100_000),
    default=KEEP_RUNS_DEFAULT,
    show_default=True,
    help="Evidence bundles kept under .ascendprep/runs/; older ones are removed after each run.",
)
@accept_new_host_keys_option
@forks_option
@ask_sudo_password_option
@click.option(
    "--exec-via",
    "exec_via",
    default=None,
    metavar="PREFIX",
    help="Run the node checks, the pings and the --allreduce steps through this command prefix, e.g. 'docker exec trainer' or 'kubectl exec -n ml pod-0 --' (words only: no shell syntax); job.container names what it does not see of the host's devices, tools and files.",
)
@click.option("--allreduce", is_flag=True, help="Also run an all-reduce across every node with torchrun.")
@click.option("--sizes", default=None, help="--allreduce: message sizes, e.g. 1K:256M (x4 steps).")
@click.option(
    "--min-busbw",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="--allreduce: fail below this bus bandwidth (GB/s) for large messages.",
)
@click.option(
    "--backend",
    type=click.Choice(["auto", "hccl", "nccl", "gloo"]),
    default=None,
    help="--allreduce: torch.distributed backend (default auto: hccl on NPUs, else nccl/gloo).",
)
@click.option(
    "--nproc-per-node",
    type=click.IntRange(1, 64),
    default=None,
    help="--allreduce: ranks per node (default: the node's NPUs).",
)
@click.option("--train", is_flag=True, help="--allreduce: also run a short DDP/FSDP/HSDP training check.")
@click.option("--bisect", is_flag=True, help="--allreduce: on failure, narrow it down to the nodes at fault.")
@click.option(
    "--launcher",
    type=click.Choice(["ssh", "slurm"]),
    default=None,
    help="--allreduce: start the worker over SSH (default) or with srun inside the current Slurm allocation (sbatch/salloc holding every inventory node).",
)
@click.option(
    "--allow-busy-npus",
    is_flag=True,
    help="--allreduce: run even where npu-smi shows processes on the NPUs (refused by default: npu.busy).",
)
@click.option(
    "--sample-interval",
    "sample_interval",
    type=click.IntRange(0, SAMPLE_INTERVAL_MAX_S),
    default=None,
    metavar="SECONDS",
    help=f"Seconds between the two reads of every NPU port's error and pause counters (hccn_tool -stat -g), whose growth per second is judged; sampled while the other probes run, so verify takes at most this much longer. 0: read once, no rates.  [default: {SAMPLE_INTERVAL_DEFAULT_S}]",
)
@timeout_option(VERIFY_TIMEOUT_HELP)
@hosts_option
def verify_command(
    inventory: Tuple[Path, ...],
    only: Sequence[str],
    skip: Sequence[str],
    output_format: str,
    prometheus_file: Optional[Path],
    junit: Optional[Path],
    html: Optional[Path],
    plan_file: Optional[Path],
    mesh: Optional[str],
    from_bundle: Optional[Path],
    keep_runs: int,
    accept_new_host_keys: bool,
    forks: Optional[int],
    ask_sudo_password: bool,
    allreduce: bool,
    sizes: Optional[str],
    min_busbw: Optional[float],
    backend: Optional[str],
    nproc_per_node: Optional[int],
    train: bool,
    bisect: bool,
    allow_busy_npus: bool,
    launcher: Optional[str],
    timeout: Optional[float],
    sample_interval: Optional[int],
    exec_via: Optional[str],
    hosts_pattern: Optional[str],
    local: bool,
    node: Optional[str],
    bundle_dir: Optional[Path],
) -> None:
    """Check every node and the cluster against INVENTORY, and exit 0 only when nothing breaks HCCL.

    Per node: reachable, NPUs present, healthy and not held by a process, per NPU the device IP,
    /etc/hccn.conf, gateway, detect IP, link, net_health, LLDP neighbour, TLS, link flaps,
    optics and the growth of the port's error and pause counters (--sample-interval); HCCL's host
    ports free, the host NIC for HCCL/gloo up with its address; kernel
    settings, firewall, managed files and software versions; the job's environment
    (HCCL_CONNECT_TIMEOUT and RANK_TABLE_FILE as a login shell sees them, an actual import
    torch_npu, NNAL/ATB, and with --exec-via what the container lacks). Cluster-wide: versions identical and
    compatible, TLS consistent, no duplicate device IP, and NPU pairs that ping each other.

    Every run saves its evidence under .ascendprep/runs/<UTC time>/ (0600 files, raw outputs
    gzip'd, the newest --keep-runs kept); --from-bundle re-checks one and reads only its files.

    With --local only this machine is checked, without SSH, and its NPUs ping every peer NPU
    of the mesh; --from-bundle DIR DIR... merges such node bundles into the cluster checks and
    one report, naming the nodes without a bundle.
    """
    more_bundles: Tuple[Path, ...] = ()
    if from_bundle is not None:
        not_folders = [str(path) for path in inventory if not path.is_dir()]
        if not_folders:
            raise click.UsageError(
                f"give either INVENTORY or --from-bundle DIR..., not both ({', '.join(not_folders)} is not a bundle folder)"
            )
        more_bundles, inventory_path = tuple(inventory), None
    elif not inventory:
        raise click.UsageError("missing INVENTORY (or --from-bundle DIR)")
    elif len(inventory) > 1:
        raise click.UsageError("give one INVENTORY (more folders only follow --from-bundle DIR)")
    elif inventory[0].is_dir():
        raise click.UsageError(
            f"INVENTORY {inventory[0]} is a directory; to re-check bundles give --from-bundle {inventory[0]}"
        )
    else:
        inventory_path = inventory[0]
    if not local and (node is not None or bundle_dir is not None):
        raise click.UsageError("--node and --bundle-dir only apply with --local")
    if local:
        refuse_remote_options(
            "verify",
            {
                "--from-bundle": from_bundle,
                "--allreduce": allreduce,
                "--accept-new-host-keys": accept_new_host_keys,
                "--forks": forks,
                "--ask-sudo-password": ask_sudo_password,
                "--hosts": hosts_pattern,
            },
        )
    if from_bundle is not None and (allreduce or mesh or accept_new_host_keys or forks or timeout):
        raise click.UsageError(
            "--from-bundle contacts no host: --allreduce, --mesh, --accept-new-host-keys, --forks and --timeout do not apply"
        )
    if from_bundle is not None and sample_interval is not None:
        raise click.UsageError("--from-bundle contacts no host: --sample-interval does not apply")
    if from_bundle is not None and exec_via is not None:
        raise click.UsageError("--from-bundle contacts no host: --exec-via does not apply")
    if plan_file is not None and html is None:
        raise click.UsageError("--plan only applies with --html (it adds the plan's changes to the page)")
    if launcher is not None and not allreduce:
        raise click.UsageError("--launcher only applies with --allreduce")
    via = None
    if exec_via is not None:
        try:
            via = parse_exec_via(exec_via)
        except ExecViaError as exc:
            raise click.UsageError(str(exc)) from None
    allreduce_options = _allreduce_options(
        allreduce,
        {
            "sizes": sizes,
            "min_busbw": min_busbw,
            "backend": backend,
            "nproc_per_node": nproc_per_node,
            "train": train,
            "bisect": bisect,
            "allow_busy_npus": allow_busy_npus,
        },
    )
    if allreduce_options is not None and timeout is not None:
        allreduce_options = type(allreduce_options)(**{**vars(allreduce_options), "timeout": timeout})
    options = VerifyOptions(
        inventory=inventory_path,
        only=tuple(only),
        skip=tuple(skip),
        output_format=output_format,
        prometheus_file=prometheus_file,
        junit=junit,
        html=html,
        plan=plan_file,
        mesh=mesh,
        from_bundle=from_bundle,
        keep_runs=keep_runs,
        accept_new_host_keys=accept_new_host_keys,
        forks=forks,
        sudo_password=prompt_sudo_password(ask_sudo_password) if from_bundle is None else None,
        allreduce=allreduce_options,
        timeout=timeout,
        sample_interval=SAMPLE_INTERVAL_DEFAULT_S if sample_interval is None else sample_interval,
        exec_via=via,
        hosts_pattern=hosts_pattern,
        more_bundles=more_bundles,
        local=local,
        node=node,
        bundle_dir=bundle_dir,
        launcher=launcher or "ssh",
    )
    try:
        code = run_verify(options)
    except KeyboardInterrupt:
        click.echo("verify: interrupted; the all-reduce's remote processes were stopped.", err=True)
        code = 130
    sys.exit(code)
