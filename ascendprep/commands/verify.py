"""``ascendprep verify``: the click command (options and usage errors only).

1. Load the inventory and its desired state (rule violations: exit 2).
2. One SSH round trip per host gathers its facts; a second one per host pings NPU pairs (the
   ``--mesh``); with ``--allreduce`` the all-reduce launcher runs on the same connections.
3. The checks (:mod:`ascendprep.checks`) turn the evidence into results; nothing they do touches a
   host, so ``--from-bundle`` re-runs them on a saved run with the same outcome.
4. Output: a summary (text) or a document (json), optionally JUnit; every live run saves its
   evidence bundle under ``.ascendprep/runs/``. Exit 0 when nothing at error severity failed.

The flow lives in :mod:`ascendprep.commands.verify_run`, imported when the command runs, so that
registering :data:`verify_command` in ``ascendprep/cli.py`` costs the CLI nothing at start-up.
The check groups and meshes are spelled out here for the same reason; a test holds them equal
to the registry's.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

import click

from ascendprep.commands.sudo_prompt import ask_sudo_password_option, prompt_sudo_password
from ascendprep.limits import KEEP_RUNS_DEFAULT
from ascendprep.limits import COMMAND_DEADLINE_MIN_S

ALLREDUCE_MODULE = "ascendprep.allreduce.launch"
#: ``ascendprep.checks.registry.GROUPS`` and ``ascendprep.checks.mesh.MESHES``.
GROUPS = ("node", "npu", "network", "sysctl", "firewall", "files", "software", "job", "cluster")
MESHES = ("ring", "full")


def _allreduce_options(enabled: bool, given: Dict[str, Any]) -> Optional[Any]:
    """The launcher's own options object; its module is imported only when --allreduce is given."""
    used = [f"--{name.replace('_', '-')}" for name, value in given.items() if value not in (None, False)]
    if not enabled:
        if used:
            raise click.UsageError(f"{', '.join(used)} only apply with --allreduce")
        return None
    if importlib.util.find_spec(ALLREDUCE_MODULE) is None:
        raise click.UsageError(f"--allreduce: this installation has no all-reduce launcher ({ALLREDUCE_MODULE})")
    from ascendprep.allreduce.options import AllreduceOptions

    return AllreduceOptions(**given)


_SELECT_HELP = "Check ids or groups ({}), comma separated; repeatable.".format(", ".join(GROUPS))


@click.command("verify")
@click.argument("inventory", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--only", multiple=True, metavar="IDS", help="Run only these checks. " + _SELECT_HELP)
@click.option("--skip", multiple=True, metavar="IDS", help="Leave these checks out. " + _SELECT_HELP)
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output for people (text) or machines (json, with schema_version).")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also write JUnit XML here (a testsuite per node and one for the cluster).")
@click.option("--mesh", type=click.Choice(list(MESHES)), default=None, help="NPU pairs to ping: ring (same NPU on the next node and on the master; default) or full (every pair of a plane).")
@click.option("--from-bundle", "from_bundle", type=click.Path(file_okay=False, path_type=Path), default=None, help="Re-check a saved run (.ascendprep/runs/<id>) without contacting any host.")
@click.option("--keep-runs", "keep_runs", type=click.IntRange(1, 100_000), default=KEEP_RUNS_DEFAULT, show_default=True, help="Evidence bundles kept under .ascendprep/runs/; older ones are removed after each run.")
@click.option("--accept-new-host-keys", is_flag=True, help="Trust and record host keys not yet in known_hosts (a changed key is always refused).")
@click.option("--forks", type=click.IntRange(1, 1024), default=None, help="Hosts worked on at once (default: the inventory's ssh.forks).")
@ask_sudo_password_option
@click.option("--exec-via", "exec_via", default=None, metavar="PREFIX", help="Run the node checks through this command prefix, e.g. 'docker exec trainer' or 'kubectl exec -n ml pod-0 --' (words only: no shell syntax); job.container names what it does not see of the host's devices, tools and files.")
@click.option("--allreduce", is_flag=True, help="Also run an all-reduce across every node with torchrun.")
@click.option("--sizes", default=None, help="--allreduce: message sizes, e.g. 1K:256M (x4 steps).")
@click.option("--min-busbw", type=click.FloatRange(min=0, min_open=True), default=None, help="--allreduce: fail below this bus bandwidth (GB/s) for large messages.")
@click.option("--backend", type=click.Choice(["auto", "hccl", "nccl", "gloo"]), default=None, help="--allreduce: torch.distributed backend (default auto: hccl on NPUs, else nccl/gloo).")
@click.option("--nproc-per-node", type=click.IntRange(1, 64), default=None, help="--allreduce: ranks per node (default: the node's NPUs).")
@click.option("--train", is_flag=True, help="--allreduce: also run a short DDP/FSDP/HSDP training check.")
@click.option("--bisect", is_flag=True, help="--allreduce: on failure, narrow it down to the nodes at fault.")
@click.option("--timeout", type=click.FloatRange(min=COMMAND_DEADLINE_MIN_S), default=None, metavar="SECONDS", help="Seconds the whole command may take; hosts still at work then are reported as timed out, the report and the bundle are still written, exit 1 (default: per phase and wave of --forks hosts, ssh.connect_timeout + ssh.command_timeout, plus 30; with --allreduce plus its 600). --allreduce gets what is left, at most 600 s unless --timeout is given.")
def verify_command(
    inventory: Optional[Path],
    only: Sequence[str],
    skip: Sequence[str],
    output_format: str,
    junit: Optional[Path],
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
    timeout: Optional[float],
    exec_via: Optional[str],
) -> None:
    """Check every node and the cluster against INVENTORY, and exit 0 only when nothing breaks HCCL.

    Per node: reachable, NPUs present and healthy, per NPU the device IP, /etc/hccn.conf, gateway,
    detect IP, link, net_health, LLDP neighbour, TLS, link flaps and optics; kernel settings,
    firewall, managed files and software versions; the job's environment (HCCL_CONNECT_TIMEOUT
    and RANK_TABLE_FILE as a login shell sees them, an actual import torch_npu, NNAL/ATB, and with
    --exec-via what the container lacks of the host's devices and files). Cluster-wide: versions identical and
    compatible, TLS consistent, no duplicate device IP, and NPU pairs that ping each other.

    Every run saves its evidence under .ascendprep/runs/<UTC time>/ (0600 files, raw outputs
    gzip'd, the newest --keep-runs kept); --from-bundle re-checks one and reads only its files.
    """
    if from_bundle is not None and inventory is not None:
        raise click.UsageError("give either INVENTORY or --from-bundle, not both")
    if from_bundle is None and inventory is None:
        raise click.UsageError("missing INVENTORY (or --from-bundle DIR)")
    if from_bundle is not None and (allreduce or mesh or accept_new_host_keys or forks or timeout):
        raise click.UsageError("--from-bundle contacts no host: --allreduce, --mesh, --accept-new-host-keys, --forks and --timeout do not apply")
    if from_bundle is not None and exec_via is not None:
        raise click.UsageError("--from-bundle contacts no host: --exec-via does not apply")
    via = None
    if exec_via is not None:
        from ascendprep.execvia import ExecViaError, parse_exec_via

        try:
            via = parse_exec_via(exec_via)
        except ExecViaError as exc:
            raise click.UsageError(str(exc)) from None
    allreduce_options = _allreduce_options(
        allreduce,
        {"sizes": sizes, "min_busbw": min_busbw, "backend": backend, "nproc_per_node": nproc_per_node, "train": train, "bisect": bisect},
    )
    if allreduce_options is not None and timeout is not None:
        allreduce_options = type(allreduce_options)(**{**vars(allreduce_options), "timeout": timeout})
    from ascendprep.commands.verify_run import VerifyOptions, run_verify

    options = VerifyOptions(
        inventory=inventory,
        only=tuple(only),
        skip=tuple(skip),
        output_format=output_format,
        junit=junit,
        mesh=mesh,
        from_bundle=from_bundle,
        keep_runs=keep_runs,
        accept_new_host_keys=accept_new_host_keys,
        forks=forks,
        sudo_password=prompt_sudo_password(ask_sudo_password) if from_bundle is None else None,
        allreduce=allreduce_options,
        timeout=timeout,
        exec_via=via,
    )
    try:
        code = run_verify(options)
    except KeyboardInterrupt:
        click.echo("verify: interrupted; the all-reduce's remote processes were stopped.", err=True)
        code = 130
    sys.exit(code)
