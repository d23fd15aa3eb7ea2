"""``ascendprep collect INVENTORY``: fetch a failed job's logs and every node's NPU state now.

The flow is :mod:`ascendprep.run.collect`; this module parses and checks the options.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from ascendprep.base import exitcodes
from ascendprep.base.text import markup_safe
from ascendprep.base.yamlsource import InputError
from ascendprep.commands.common import (
    accept_new_host_keys_option,
    ask_sudo_password_option,
    forks_option,
    hosts_option,
    prompt_sudo_password,
    timeout_option,
)
from ascendprep.run.collect import (
    CollectInputError,
    CollectRequest,
    check_node_paths,
    default_out_dir,
    parse_since,
    run_collect,
)
from ascendprep.run.common import fail_input, stderr_console
from ascendprep.run.node_local import refuse_remote_options


@click.command("collect")
@click.argument("inventory", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--since",
    default=None,
    metavar="TIME",
    help="Only files written since TIME, and kernel messages since then: ISO-8601 (UTC unless it says) or an age (90m, 2h, 1d).",
)
@click.option(
    "--log-dir",
    "log_dirs",
    multiple=True,
    metavar="PATH",
    help="CANN log root on the nodes, repeatable (default: $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log): plogs under */plog/, device logs under */device-N/.",
)
@click.option(
    "--console",
    "console_globs",
    multiple=True,
    metavar="GLOB",
    help="The training console logs on the nodes, an absolute glob, repeatable (e.g. '/data/job/logs/rank-*.txt').",
)
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="The bundle folder to make (it must not exist; default .ascendprep/collect/<UTC time>/).",
)
@click.option(
    "--local",
    "local",
    is_flag=True,
    help="Collect this machine only, without SSH (a Slurm epilog, a Kubernetes job); --node names it.",
)
@click.option(
    "--node",
    "node",
    default=None,
    metavar="NAME",
    help="--local: the inventory node this machine is (default: the node whose name or host is this machine's).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="A summary for people (text), or the manifest with schema_version and the bundle's path (json).",
)
@accept_new_host_keys_option
@forks_option
@timeout_option()
@ask_sudo_password_option
@hosts_option
def collect_command(
    inventory: Path,
    since: Optional[str],
    log_dirs: tuple[str, ...],
    console_globs: tuple[str, ...],
    out: Optional[Path],
    local: bool,
    node: Optional[str],
    output_format: str,
    accept_new_host_keys: bool,
    forks: Optional[int],
    timeout: Optional[float],
    ask_sudo_password: bool,
    hosts_pattern: Optional[str],
) -> None:
    """Fetch a failed job's logs and each node's NPU state into one folder, for 'ascendprep diagnose'.

    From every node (one read-only script each): CANN host logs (plogs) and device logs, the
    console logs named by --console, kernel messages (journalctl -k, else dmesg) and the NPU state
    now (verify's gather: link history, health codes, counters, device IPs). Newest files first;
    each file keeps at most its newest 2 MiB (marked cut), each node at most 10 MiB. A node that
    cannot be read is named in the manifest and the output; the others are still collected.
    Exit 0 when every node was read, 1 when one was not, 2 on bad input.
    """
    if local:
        refuse_remote_options(
            "collect",
            {"--hosts": hosts_pattern, "--forks": forks, "--accept-new-host-keys": accept_new_host_keys},
        )
    elif node is not None:
        raise click.UsageError("--node names this machine's node in a --local run: add --local")
    try:
        request = CollectRequest(
            since=parse_since(since) if since is not None else None,
            log_dirs=tuple(check_node_paths(log_dirs, "--log-dir")),
            console_globs=tuple(check_node_paths(console_globs, "--console")),
            out=out if out is not None else default_out_dir(),
        )
    except CollectInputError as error:
        raise click.BadParameter(str(error)) from None
    try:
        code = run_collect(
            inventory,
            request,
            local=local,
            node=node,
            accept_new_host_keys=accept_new_host_keys,
            forks=forks,
            sudo_password=prompt_sudo_password(ask_sudo_password),
            timeout=timeout,
            hosts_pattern=hosts_pattern,
            output_format=output_format,
        )
    except InputError as error:
        fail_input(error)
    except OSError as error:
        stderr_console().print(
            f"[bold red]error:[/] {markup_safe(error.filename or request.out)}: cannot write the bundle: {markup_safe(error.strerror or error)}",
            soft_wrap=True,
        )
        sys.exit(exitcodes.INVALID)
    sys.exit(code)
