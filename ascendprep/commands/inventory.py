"""``ascendprep inventory import``: write an inventory from what a running cluster already is.

The sources (any of them, together too): the hosts (``--hosts``, read-only, over SSH), the
vendor deployer's ``inventory_file`` (``--deployer``) and a rank table (``--rank-table``). The
flow is :func:`ascendprep.run.inventory_import.run_import`; ``cli.py`` imports this module only
when ``inventory`` is named, so registering the group costs ``ascendprep --help`` nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click

from ascendprep.adopt.compact import SshSettings
from ascendprep.adopt.settings import ADOPTABLE
from ascendprep.base.yamlsource import InputError
from ascendprep.commands.common import accept_new_host_keys_option, forks_option
from ascendprep.inventory.model import USER_RE
from ascendprep.run.common import fail_input
from ascendprep.run.inventory_import import run_import


def _adopt_list(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> frozenset[str]:
    """``--adopt sysctl,env``: the named settings, each one of :data:`ADOPTABLE`."""
    if value is None:
        return frozenset()
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in ADOPTABLE]
    if unknown or not names:
        raise click.BadParameter(
            f"{', '.join(repr(n[:32]) for n in unknown) or 'nothing'}: choose from {', '.join(ADOPTABLE)}"
        )
    return frozenset(names)


@click.group("inventory")
def inventory_group() -> None:
    """Write inventories: import one from a running cluster."""


@inventory_group.command("import")
@click.option(
    "--hosts",
    "hosts_spec",
    default=None,
    metavar="RANGE|FILE",
    help="Read these hosts over SSH (read-only): a host range such as node[01-64], or a file of hosts, one per line.",
)
@click.option("--user", default=None, help="SSH user for --hosts (default root); written into the inventory's ssh.")
@click.option(
    "--key", default=None, metavar="FILE", help="SSH private key for --hosts; written into the inventory's ssh."
)
@click.option(
    "--known-hosts",
    "known_hosts",
    default=None,
    metavar="FILE",
    help="known_hosts file for --hosts; written into the inventory's ssh.",
)
@click.option(
    "--deployer",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="INI",
    help="The vendor deployer's inventory_file ([worker], [hccn] deviceip=/detectip=, [hccn:vars]).",
)
@click.option(
    "--rank-table",
    "rank_table",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="JSON",
    help="A rank table (version 1.0 or 1.2) in use: servers, device IPs, ranks, super-pods.",
)
@click.option(
    "--product",
    type=click.Choice(["atlas-800", "atlas-a2", "atlas-a3"]),
    default=None,
    help="The servers' product, when the sources do not say (hosts tell A3 apart, not Atlas 800 from A2).",
)
@click.option(
    "-o",
    "--out",
    "output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the inventory here (default: stdout).",
)
@click.option(
    "--adopt",
    "adopt",
    default=None,
    metavar="WHAT",
    callback=_adopt_list,
    help="Also import these host settings as the hosts have them (with --hosts): a comma list of "
    + ", ".join(ADOPTABLE)
    + ". Without it sysctl and env are left to ascendprep's defaults and the firewall to check.",
)
@accept_new_host_keys_option
@forks_option
def import_command(
    hosts_spec: Optional[str],
    user: Optional[str],
    key: Optional[str],
    known_hosts: Optional[str],
    deployer: Optional[Path],
    rank_table: Optional[Path],
    product: Optional[str],
    output: Optional[Path],
    adopt: frozenset[str],
    accept_new_host_keys: bool,
    forks: Optional[int],
) -> None:
    """Write the most compact inventory that reproduces what a running cluster already is.

    Reads the hosts (--hosts), the vendor deployer's inventory_file (--deployer) and a rank table
    (--rank-table), any of them or together (a rank table for addresses and ranks, the hosts
    for netmasks, gateways, detect IPs and versions), and writes an inventory in the usual schema,
    with comments: subnets, gateways and groups (or a rule) where they fit every node, explicit
    device_ips only for the nodes off the pattern, the software most nodes run. It is proven
    before it is written: planned, it gives back every address that was read.

    Conflicts (a duplicate device IP, a live address that differs from /etc/hccn.conf, hosts of
    two products) and hosts that could not be read are named in the output and on stderr, and
    the command exits 1; the rest is still imported. Nothing is changed on any host.
    """
    if hosts_spec is None and deployer is None and rank_table is None:
        raise click.UsageError("say what to import from: --hosts, --deployer and/or --rank-table")
    if hosts_spec is None and any(v is not None for v in (user, key, known_hosts)):
        raise click.UsageError("--user, --key and --known-hosts are for --hosts")
    if adopt and hosts_spec is None:
        raise click.UsageError("--adopt reads the hosts: give --hosts too")
    if user is not None and not USER_RE.match(user):
        raise click.BadParameter(f"{user!r} is not a valid user name", param_hint="--user")
    try:
        code = run_import(
            hosts_spec,
            SshSettings(user=user, key=key, known_hosts=known_hosts),
            deployer,
            rank_table,
            product,
            output,
            accept_new_host_keys,
            forks,
            adopt=adopt,
        )
    except InputError as error:
        fail_input(error)
    sys.exit(code)
