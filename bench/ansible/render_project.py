"""Build an Ansible project that makes ascendprep's changes, from ascendprep's own offline plan.

    python3 bench/ansible/render_project.py INVENTORY OUTDIR [--forks N]
    cd OUTDIR && ANSIBLE_CONFIG=OUTDIR/ansible.cfg ansible-playbook bench/ansible/playbook.yml

The values (device IPs, detect IPs, file contents, sysctl values) are taken from
``ascendprep plan --offline --format json``, so both tools aim at exactly the same state: after
the playbook, ``ascendprep plan --detailed-exitcode`` must report no changes. SSH goes the way
ascendprep's does: the inventory's key and known_hosts, strict host-key checking.

The sysctl drop-in is rendered with ascendprep's own ``render_sysctl_conf`` for a host that has no
reserved ports yet (a fresh lab node), so that the file is byte-for-byte what apply writes there.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

from ascendprep.desired.envfiles import render_sysctl_conf
from ascendprep.inventory.load import Inventory, load_inventory
from ascendprep.inventory.sysctl import RESERVED_PORTS

PLAYBOOK = Path(__file__).resolve().parent / "playbook.yml"
#: Ansible's own default ssh_args, kept so that connection reuse (ControlPersist) is as shipped.
DEFAULT_SSH_ARGS = "-C -o ControlMaster=auto -o ControlPersist=60s"


def offline_plan(inventory_path: Path) -> dict[str, Any]:
    """``ascendprep plan --offline --format json`` of the inventory, parsed."""
    done = subprocess.run(
        [sys.executable, "-m", "ascendprep", "plan", "--offline", "--format", "json", str(inventory_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ascendprep plan --offline failed (exit {done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


def sysctl_values(plan: dict[str, Any]) -> dict[str, str]:
    """The live values apply sets on a fresh node: the minimums, then the reserved HCCL ports."""
    values = {key: str(value) for key, value in plan["sysctl"]["minimums"].items()}
    values[RESERVED_PORTS] = plan["sysctl"]["reserved_ports"]
    return values


def group_vars(plan: dict[str, Any]) -> dict[str, Any]:
    """Values shared by every node: the cluster-wide files and the sysctl drop-in."""
    return {
        "cluster_files": [{"path": f["path"], "content": f["content"]} for f in plan["cluster_files"]],
        "sysctl_conf": render_sysctl_conf(sysctl_values(plan)),
    }


def host_vars(node: dict[str, Any]) -> dict[str, Any]:
    """One node's NPU addresses and its own files (those with content; the rest are cluster files)."""
    return {
        "npus": [{"npu": n["npu"], "ip": n["ip"], "netmask": n["netmask"], "detect": n["detect"]} for n in node["npu"]],
        "node_files": [{"path": f["path"], "content": f["content"]} for f in node["files"] if "content" in f],
    }


def hosts_file(inventory: Inventory) -> dict[str, Any]:
    """Ansible inventory: one group ``lab`` with the nodes at their SSH addresses."""
    hosts = {
        node.name: {"ansible_host": node.host, "ansible_port": node.port, "ansible_user": node.user}
        for node in inventory.nodes
    }
    return {"lab": {"hosts": hosts, "vars": {"ansible_python_interpreter": inventory.model.software.python_path}}}


def ansible_cfg(
    inventory: Inventory, forks: int, wrappers: Optional[Path] = None, control_dir: Optional[Path] = None
) -> str:
    """``ansible.cfg``: forks, pipelining, the inventory's key and known_hosts, strict host keys.

    ``wrappers``: a folder with ``ssh``/``sftp``/``scp`` wrappers to use instead of the real
    programs (the bench counts SSH invocations per host with them).
    """
    if inventory.key_file is None or not inventory.known_hosts:
        raise SystemExit("the inventory must name ssh.key and ssh.known_hosts")
    ssh_args = f"{DEFAULT_SSH_ARGS} -o UserKnownHostsFile={shlex.quote(str(inventory.known_hosts[0]))} -o StrictHostKeyChecking=yes"
    lines = [
        "[defaults]",
        "inventory = hosts.json",
        f"forks = {forks}",
        "gathering = explicit",
        "host_key_checking = True",
        f"private_key_file = {inventory.key_file}",
        f"timeout = {max(1, round(inventory.model.ssh.connect_timeout))}",
        "retry_files_enabled = False",
        "",
        "[ssh_connection]",
        "pipelining = True",
        f"ssh_args = {ssh_args}",
    ]
    if control_dir is not None:
        lines.append(f"control_path_dir = {control_dir}")
    if wrappers is not None:
        lines += [f"{tool}_executable = {wrappers / tool}" for tool in ("ssh", "sftp", "scp")]
    return "\n".join(lines) + "\n"


def write_project(
    out: Path,
    inventory_path: Path,
    forks: Optional[int] = None,
    wrappers: Optional[Path] = None,
    control_dir: Optional[Path] = None,
) -> Path:
    """Write ansible.cfg, hosts.json, group_vars/ and host_vars/ into ``out``; return ansible.cfg."""
    inventory = load_inventory(inventory_path)
    plan = offline_plan(inventory_path)
    (out / "group_vars").mkdir(parents=True, exist_ok=True)
    (out / "host_vars").mkdir(exist_ok=True)
    (out / "hosts.json").write_text(json.dumps(hosts_file(inventory), indent=1) + "\n")
    (out / "group_vars" / "all.json").write_text(json.dumps(group_vars(plan), indent=1) + "\n")
    for node in plan["nodes"]:
        (out / "host_vars" / f"{node['name']}.json").write_text(json.dumps(host_vars(node), indent=1) + "\n")
    config = out / "ansible.cfg"
    config.write_text(ansible_cfg(inventory, forks or len(inventory.nodes), wrappers, control_dir))
    return config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inventory", type=Path)
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--forks", type=int, default=None, help="default: one per node")
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    config = write_project(args.outdir.resolve(), args.inventory.resolve(), args.forks)
    print(f"cd {args.outdir} && ANSIBLE_CONFIG={config} ansible-playbook {PLAYBOOK}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
