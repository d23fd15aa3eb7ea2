"""The saved plan is data: edited changes are refused, plan files are checked field by field and
written 0600, and an inventory may set only the sysctl keys HCCL needs (issue 9)."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import Optional

import pytest
import yaml

from ascendprep.base.yamlsource import InputError
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.changes import WriteFile
from ascendprep.plan.diff import diff_host, managed_keys, reconcile
from ascendprep.plan.planfile import PlanFile, SavedHost, read_plan, write_plan
from tests.plan.test_plan_diff import INVENTORY, converged_facts, desired


def _somaxconn_change(state, node="n1"):
    facts = converged_facts(
        state,
        node,
        sysctl={
            "net.core.somaxconn": "4096",
            "net.ipv4.tcp_max_syn_backlog": "65535",
            "net.ipv4.ip_local_reserved_ports": "60000-60031",
        },
    )
    fresh = diff_host(state, node, facts).changes
    return next(c for c in fresh if c.key == "sysctl:net.core.somaxconn"), fresh


# ------------------------------------------------------------------ reconcile: what runs is fresh


def test_a_saved_change_filed_under_another_node_is_refused_as_tampered():
    state = desired()
    change, fresh = _somaxconn_change(state)
    moved = replace(change, node="n2")
    result = reconcile([moved if c is change else c for c in fresh], fresh, managed_keys(state, "n1"))
    assert result.to_apply == [c for c in fresh if c is not change]
    assert result.tampered == ["sysctl:net.core.somaxconn: the saved change is for node n2, not n1"]


def test_another_sysctl_in_place_of_a_known_one_is_refused():
    state = desired()
    change, fresh = _somaxconn_change(state)
    evil = replace(change, name="kernel.modprobe", value="/tmp/evil")
    result = reconcile([evil if c is change else c for c in fresh], fresh, managed_keys(state, "n1"))
    assert result.tampered == ["sysctl:kernel.modprobe: not something ascendprep manages on this host"]


def test_a_key_outside_the_managed_set_is_refused_even_when_nothing_needs_it():
    state = desired()
    extra = WriteFile("n1", None, "/etc/cron.d/x", "a" * 64)
    result = reconcile([extra], [], managed_keys(state, "n1"))
    assert result.tampered == ["file:/etc/cron.d/x: not something ascendprep manages on this host"]


def test_the_fresh_change_is_applied_not_the_saved_one():
    state = desired()
    change, fresh = _somaxconn_change(state)
    result = reconcile(list(fresh), fresh, managed_keys(state, "n1"))
    assert result.tampered == [] and result.stale == []
    assert all(a is f for a, f in zip(result.to_apply, fresh))


def test_managed_keys_are_the_inventory_npus_sysctls_files_and_firewall():
    keys = managed_keys(desired(), "n1")
    assert {
        "hccn.ip:0",
        "hccn.tls:1",
        "sysctl:net.core.somaxconn",
        "sysctl:net.ipv4.ip_local_reserved_ports",
        "file:/etc/ascendprep/env.sh",
        "file:/etc/sysctl.d/90-ascendprep.conf",
        "firewall:ufw",
    } <= keys
    assert "hccn.ip:2" not in keys and "sysctl:kernel.modprobe" not in keys


# ------------------------------------------------------------------ plan files


def _plan(tmp_path: Path) -> PlanFile:
    state = desired()
    change, _ = _somaxconn_change(state)
    return PlanFile(
        str(tmp_path / "inventory.yaml"),
        "0" * 64,
        "t",
        "2026-01-01T00:00:00+00:00",
        [SavedHost("n1", "10.0.0.11", True, [change])],
    )


def test_plan_file_is_0600_whatever_the_umask(tmp_path: Path):
    old = os.umask(0)
    try:
        path = tmp_path / "state" / "plan.json"
        write_plan(_plan(tmp_path), path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["plan.json"]
    assert read_plan(path).hosts[0].changes == _plan(tmp_path).hosts[0].changes


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["hosts"][0]["changes"][0].update(action={"op": "sysctl"}),
            "hosts[0].changes[0] has unknown fields ['action']",
        ),
        (
            lambda d: d["hosts"][0]["changes"][0].update(kind="shell"),
            "hosts[0].changes[0]: kind 'shell' is not one of hccn.ip, hccn.gateway",
        ),
        (
            lambda d: d["hosts"][0]["changes"][0].update(target=["x"]),
            "hosts[0].changes[0]: target and after must be text",
        ),
        (
            lambda d: d["hosts"][0]["changes"][0].update(before=[1]),
            "hosts[0].changes[0]: before must be text, a number or an object of those",
        ),
        (
            lambda d: d["hosts"][0]["changes"][0].update(kind="hccn.tls", target="npu x", after=1),
            "hosts[0].changes[0]: target must be 'npu N'",
        ),
        (
            lambda d: d["hosts"][0]["changes"][0].update(kind="file", target="/etc/x;y", after="0" * 64),
            "hosts[0].changes[0]: target must be an absolute path of plain characters",
        ),
        (lambda d: d["hosts"][0]["changes"][0].pop("text"), "hosts[0].changes[0] is missing text"),
        (
            lambda d: d["hosts"][0]["changes"][0].update(text="nothing to see here"),
            "hosts[0].changes[0].text 'nothing to see here' is not what this change does (sysctl net.core.somaxconn 4096 → 65535)",
        ),
        (lambda d: d["hosts"][0]["changes"][0].update(shell="id"), "hosts[0].changes[0] has unknown fields ['shell']"),
        (lambda d: d["hosts"].__setitem__(0, "node1"), "hosts[0] must be an object"),
        (lambda d: d.update(hosts={"n1": {}}), "inventory must be an object and hosts a list"),
        (lambda d: d["inventory"].update(path=None), "inventory.path must be text, not NoneType"),
    ],
)
def test_a_plan_file_with_a_field_of_the_wrong_type_is_a_located_error(tmp_path: Path, edit, message):
    path = tmp_path / "plan.json"
    write_plan(_plan(tmp_path), path)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as caught:
        read_plan(path)
    assert str(caught.value.problems[0]).startswith(str(path))
    assert message in str(caught.value.problems[0])


def test_a_plan_file_records_typed_changes_with_their_words(tmp_path: Path):
    path = tmp_path / "plan.json"
    write_plan(_plan(tmp_path), path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == 2
    assert data["hosts"][0]["changes"] == [
        {
            "kind": "sysctl",
            "node": "n1",
            "target": "net.core.somaxconn",
            "before": "4096",
            "after": "65535",
            "text": "sysctl net.core.somaxconn 4096 → 65535",
        }
    ]


def test_a_version_1_plan_file_is_refused_with_the_advice_to_plan_again(tmp_path: Path):
    path = tmp_path / "plan.json"
    write_plan(_plan(tmp_path), path)
    data = json.loads(path.read_text())
    data["schema_version"] = 1
    data["hosts"][0]["changes"] = [
        {
            "node": "n1",
            "key": "sysctl:net.core.somaxconn",
            "summary": "s",
            "before": "4096",
            "after": "65535",
            "action": {"op": "sysctl"},
            "npu": None,
        }
    ]
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as caught:
        read_plan(path)
    assert [str(p) for p in caught.value.problems] == [
        f"{path}: schema_version 1: plan file was written by an older ascendprep; run `ascendprep plan` again"
    ]


def test_a_plan_path_that_is_not_a_regular_file_is_refused(tmp_path: Path):
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as caught:
        read_plan(fifo)
    assert "not a regular file" in str(caught.value.problems[0])


# ------------------------------------------------------------------ sysctl keys in the inventory


def _inventory(**changes) -> str:
    return yaml.safe_dump({**INVENTORY, **changes}, sort_keys=False)


def _problems(text: str) -> list[str]:
    with pytest.raises(InputError) as caught:
        inventory_from_text(text)
    return [str(p) for p in caught.value.problems]


def test_kernel_modprobe_is_refused_with_its_line():
    text = _inventory(sysctl={"net.core.somaxconn": 4096, "kernel.modprobe": "/tmp/evil"})
    line = text.splitlines().index("  kernel.modprobe: /tmp/evil") + 1
    assert _problems(text) == [
        f"inventory.yaml:{line}: sysctl.kernel.modprobe: kernel.modprobe makes the kernel run a program as root; ascendprep never sets it"
    ]
    # not even with an opt-in
    problems = _problems(_inventory(sysctl={"kernel.modprobe": "/tmp/evil"}, sysctl_opt_in=["kernel.modprobe"]))
    assert any("never sets it" in p for p in problems)


def test_keys_outside_the_allow_list_need_an_opt_in_and_are_marked_in_the_plan():
    problems = _problems(_inventory(sysctl={"vm.swappiness": 10}))
    assert (
        len(problems) == 1
        and "sysctl.vm.swappiness: vm.swappiness is outside what HCCL needs" in problems[0]
        and "sysctl_opt_in" in problems[0]
    )
    inventory = inventory_from_text(_inventory(sysctl={"vm.swappiness": 10}, sysctl_opt_in=["vm.swappiness"]))
    from ascendprep.desired.state import build_desired

    state = build_desired(inventory)
    facts = converged_facts(
        state,
        sysctl={
            "net.core.somaxconn": "65535",
            "net.ipv4.tcp_max_syn_backlog": "65535",
            "net.ipv4.ip_local_reserved_ports": "60000-60031",
            "vm.swappiness": "1",
        },
    )
    summaries = [c.describe() for c in diff_host(state, "n1", facts).changes]
    assert "sysctl vm.swappiness 1 → 10 (opt-in: outside the HCCL allow-list)" in summaries
    assert "sysctl:vm.swappiness" in managed_keys(state, "n1")


def test_net_keys_need_no_opt_in_and_a_needless_opt_in_is_an_error():
    inventory_from_text(_inventory(sysctl={"net.ipv6.conf.all.disable_ipv6": 0, "net.core.rmem_max": 4194304}))
    problems = _problems(
        _inventory(sysctl={"net.core.rmem_max": 1}, sysctl_opt_in=["net.core.rmem_max", "kernel.pid_max"])
    )
    assert any("sysctl_opt_in[0]: net.core.rmem_max is allowed without opt-in" in p for p in problems)
    assert any("sysctl_opt_in[1]: kernel.pid_max is opted in but not set under sysctl" in p for p in problems)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1\nkernel.modprobe = /tmp/x", "has characters a sysctl value cannot have"),
        ("$(reboot)", "has characters a sysctl value cannot have"),
        ("1;reboot", "has characters a sysctl value cannot have"),
        ("1" * 300, "the value is 300 characters long (at most 256)"),
        (10**20, "the number is out of the 64-bit range"),
    ],
)
def test_sysctl_values_fit_for_a_root_shell(value, message):
    problems = _problems(_inventory(sysctl={"net.core.somaxconn": value}))
    assert (
        len(problems) == 1 and "sysctl.net.core.somaxconn: net.core.somaxconn" in problems[0] and message in problems[0]
    )


def test_a_bad_reserved_ports_value_is_a_located_error_not_a_traceback():
    problems = _problems(_inventory(sysctl={"net.ipv4.ip_local_reserved_ports": "0-99999"}))
    assert (
        len(problems) == 1
        and "sysctl.net.ipv4.ip_local_reserved_ports: net.ipv4.ip_local_reserved_ports: '0-99999' is not within 1-65535"
        in problems[0]
    )


def test_a_malformed_key_is_refused():
    problems = _problems(_inventory(sysctl={"net..core": 1}))
    assert len(problems) == 1 and "'net..core' is not a sysctl key" in problems[0]


def test_a_plan_file_other_users_may_write_is_refused(tmp_path: Path):
    path = tmp_path / "plan.json"
    write_plan(_plan(tmp_path), path)
    path.chmod(0o666)
    with pytest.raises(InputError) as caught:
        read_plan(path)
    assert "is writable by other users (mode 0666)" in str(caught.value.problems[0])
    path.chmod(0o644)
    assert read_plan(path).cluster == "t"


# ------------------------------------------------------------------ who may have written the plan

OTHER_UID = 65534  # nobody


def _give_away(path: Path, mode: Optional[int] = None) -> None:
    """``path`` owned by another user (and given ``mode``): only root can do that."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(path, OTHER_UID, OTHER_UID)
    if mode is not None:
        path.chmod(mode)


def _refusal(path: Path, **kwargs) -> str:
    with pytest.raises(InputError) as caught:
        read_plan(path, **kwargs)
    [problem] = caught.value.problems
    return str(problem)


def test_a_plan_owned_by_another_user_is_refused_naming_owner_mode_and_rule(tmp_path: Path):
    path = tmp_path / "plan.json"
    write_plan(_plan(tmp_path), path)
    _give_away(path)
    message = _refusal(path)
    assert message.startswith(f"{path}: owned by ") and f"(uid {OTHER_UID}), mode 0600: " in message
    assert "owned by you or root" in message and "--inventory" in message
    # apply --inventory: the plan only selects and confirms; its owner is not the question then
    assert read_plan(path, owned=False).cluster == "t"


@pytest.mark.parametrize(
    ("mode", "writers"), [(0o777, "its group and all users"), (0o775, "its group"), (0o757, "all users")]
)
def test_a_plan_in_a_folder_others_can_write_is_refused(tmp_path: Path, mode: int, writers: str):
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "plan.json"
    write_plan(_plan(tmp_path), path)
    folder.chmod(mode)
    assert f"its folder {folder} is writable by {writers} without the sticky bit" in _refusal(path)
    assert f"mode {mode:04o}" in _refusal(path)
    folder.chmod(mode | stat.S_ISVTX)  # as /tmp: others cannot replace what they do not own
    assert read_plan(path).cluster == "t"


def test_a_folder_above_the_plan_that_others_can_change_is_found(tmp_path: Path):
    top = tmp_path / "top"
    (top / "a" / "b").mkdir(parents=True)
    path = top / "a" / "b" / "plan.json"
    write_plan(_plan(tmp_path), path)
    top.chmod(0o777)
    assert f"its folder {top} is writable by" in _refusal(path)
    top.chmod(0o755)
    _give_away(top)
    message = _refusal(path)
    assert f"its folder {top} is owned by " in message and f"(uid {OTHER_UID}), mode 0755" in message


def test_a_link_to_a_plan_in_a_folder_others_can_write_is_refused(tmp_path: Path):
    shared = tmp_path / "shared"
    shared.mkdir()
    write_plan(_plan(tmp_path), shared / "plan.json")
    shared.chmod(0o777)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (mine / "plan.json").symlink_to(shared / "plan.json")
    assert f"its folder {shared} is writable by" in _refusal(mine / "plan.json")
