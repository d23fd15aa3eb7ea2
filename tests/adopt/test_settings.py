"""``--adopt sysctl,env,firewall``: the host settings imported as the hosts have them, proven by
the plan's own diff of the imported inventory against the same facts (no change to them)."""

from __future__ import annotations

from typing import Optional

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendprep.adopt.compact import compact
from ascendprep.adopt.hostfacts import seen_from_facts
from ascendprep.base.paths import ENV_SH
from ascendprep.desired.envfiles import render_env_sh
from ascendprep.desired.state import build_desired
from ascendprep.facts.model import Firewall, FirewallTool, HostFacts, ManagedFile, NpuFacts, ProbeError
from ascendprep.facts.system import parse_env_sh
from ascendprep.inventory.load import inventory_from_text
from ascendprep.plan.diff import diff_host
from ascendprep.plan.drift import sha256_text

OFF = Firewall(ufw=FirewallTool(installed=True, active=False), nftables=FirewallTool(installed=True, active=False))
#: env.sh as a previous ascendprep apply of a 3-node inventory with this env: wrote it.
ENV_SH_TEXT = render_env_sh({"HCCL_EXEC_TIMEOUT": "1800", "HCCL_CONNECT_TIMEOUT": "2400"}, nodes=3)


def host(
    n: int,
    somaxconn: str = "4096",
    reserved: str = "8080,60000-60050",
    firewall: Firewall = OFF,
    env_text: Optional[str] = ENV_SH_TEXT,
    errors: tuple = (),
) -> HostFacts:
    npus = {
        d: NpuFacts(devid=d, ip=f"10.20.0.{n * 2 + d + 1}", netmask="255.255.255.0", gateway="10.20.0.254")
        for d in range(2)
    }
    managed = {ENV_SH: ManagedFile(ENV_SH, env_text is not None, sha256_text(env_text) if env_text else None)}
    return HostFacts(
        npus=npus,
        sysctl={
            "net.core.somaxconn": somaxconn,
            "net.ipv4.tcp_max_syn_backlog": "1024",
            "net.ipv4.ip_local_reserved_ports": reserved,
        },
        firewall=firewall,
        managed_files=managed,
        env_sh=parse_env_sh(env_text) if env_text is not None else None,
        errors=errors,
    )


NAMES = {f"10.0.0.{n + 1}": f"10.0.0.{n + 1}" for n in range(3)}


def changes_of(text: str, facts: dict[str, HostFacts]) -> list:  # type: ignore[type-arg]
    desired = build_desired(inventory_from_text(text))
    return [change for name in facts for change in diff_host(desired, name, facts[name]).changes]


def test_adopted_settings_are_what_the_hosts_have_and_plan_changes_none_of_them() -> None:
    facts = {
        "10.0.0.1": host(0),
        "10.0.0.2": host(1, somaxconn="8192", reserved="8080,60000-60100"),
        "10.0.0.3": host(2),
    }
    seen = seen_from_facts(NAMES, facts, {})
    result = compact(seen, "atlas-a2", adopt=frozenset({"sysctl", "env", "firewall"}))
    assert result.complete, result.conflicts
    model = inventory_from_text(result.text).model
    # the lowest "at least" value every host already has; the ports every host reserves
    assert model.sysctl == {
        "net.core.somaxconn": 4096,
        "net.ipv4.tcp_max_syn_backlog": 1024,
        "net.ipv4.ip_local_reserved_ports": "8080,60000-60050",
    }
    assert "# sysctl net.core.somaxconn: 10.0.0.2 have 8192, more than this minimum" in result.text
    assert "reserve more ports than every host does" in result.text
    # only what ascendprep's own env.sh would not give the same (its defaults are left out)
    assert model.env == {"HCCL_CONNECT_TIMEOUT": "2400", "HCCL_EXEC_TIMEOUT": "1800"}
    assert model.firewall == "disable"

    changes = changes_of(result.text, facts)
    # (every host's reserved ports cover HCCL's range, 60000-60031 at most)
    assert [c for c in changes if c.kind == "sysctl"] == []
    assert [c for c in changes if c.kind == "file" and c.target == ENV_SH] == []
    assert [c for c in changes if c.kind == "firewall"] == []


def test_without_adopt_plan_proposes_ascendprep_s_defaults() -> None:
    facts = {name: host(n) for n, name in enumerate(NAMES)}
    result = compact(seen_from_facts(NAMES, facts, {}), "atlas-a2")
    model = inventory_from_text(result.text).model
    assert (model.sysctl, model.env, model.firewall) == ({}, {}, "check")
    assert "# env: nothing adopted (--adopt env imports it)" in result.text
    changes = changes_of(result.text, facts)
    assert {c.target for c in changes if c.kind == "sysctl"} >= {"net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog"}
    assert [c for c in changes if c.kind == "file" and c.target == ENV_SH]


def test_an_active_firewall_is_adopted_as_check_and_named() -> None:
    active = Firewall(ufw=FirewallTool(installed=True, active=True))
    facts = {"10.0.0.1": host(0), "10.0.0.2": host(1, firewall=active), "10.0.0.3": host(2)}
    result = compact(seen_from_facts(NAMES, facts, {}), "atlas-a2", adopt=frozenset({"firewall"}))
    assert inventory_from_text(result.text).model.firewall == "check"
    assert "# firewall: ufw is active on 10.0.0.2" in result.text
    assert [c for c in changes_of(result.text, facts) if c.kind == "firewall"] == []


def test_what_cannot_be_adopted_is_named_not_guessed() -> None:
    odd_env = ENV_SH_TEXT + "export LD_PRELOAD=/tmp/x.so\nexport HCCL_BUFFSIZE=400\n"
    unread = (ProbeError("firewall.ufw", "error", "ufw: permission denied"),)
    facts = {
        "10.0.0.1": host(0, somaxconn="lots", env_text=odd_env),
        "10.0.0.2": host(1, env_text=None, firewall=Firewall(ufw=FirewallTool(installed=True)), errors=unread),
        "10.0.0.3": host(2, reserved="60000-", env_text=odd_env),
    }
    result = compact(seen_from_facts(NAMES, facts, {}), "atlas-a2", adopt=frozenset({"sysctl", "env", "firewall"}))
    model = inventory_from_text(result.text).model
    notes = [c.message for c in result.conflicts if c.kind == "adopt"]
    assert all(not c.error for c in result.conflicts if c.kind == "adopt")
    assert "net.core.somaxconn" not in model.sysctl and model.sysctl["net.ipv4.tcp_max_syn_backlog"] == 1024
    assert any("net.core.somaxconn could not be read as a number on 10.0.0.1" in m for m in notes)
    assert any("ip_local_reserved_ports is not a list of ports on 10.0.0.3" in m for m in notes)
    # LD_PRELOAD is never exported; HCCL_BUFFSIZE is, by the majority of the hosts that have env.sh
    assert "LD_PRELOAD" not in model.env and model.env["HCCL_BUFFSIZE"] == "400"
    assert any("env LD_PRELOAD is exported on the hosts but not adopted" in m for m in notes)
    assert any("no /etc/ascendprep/env.sh was read on 10.0.0.2" in m for m in notes)
    assert model.firewall == "check" and any("could not be read on 10.0.0.2" in m for m in notes)


SETTING_TEXT = st.sampled_from(
    ["4096", "99999999999999999999", "-1", "", " 8192\n", "60000-60031", "8080,61000", "60000-", "1e3", "\x1b[31m",
     "é", "'", '"', "$(reboot)", "\x00"]
)  # fmt: skip
ENV_LINES = st.lists(
    st.sampled_from(
        ["export HCCL_EXEC_TIMEOUT=1800", "export HCCL_BUFFSIZE='4 00'", "export LD_PRELOAD=/x.so", "export PATH=/x",
         "export MY_VAR=1", "export HCCL_CONNECT_TIMEOUT=''", "export ASCEND_OPP_PATH=/tmp", "# c", "export X='a"]
    ),
    max_size=6,
).map("\n".join)  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(SETTING_TEXT, SETTING_TEXT, ENV_LINES), min_size=1, max_size=3))
def test_whatever_the_hosts_hold_the_adopted_inventory_loads(hosts: list[tuple[str, str, str]]) -> None:
    """Hostile values are adopted only where the inventory takes them: the text always loads."""
    facts = {}
    for n, (somaxconn, reserved, env_text) in enumerate(hosts):
        facts[f"10.0.0.{n + 1}"] = host(n, somaxconn=somaxconn, reserved=reserved, env_text=env_text)
    names = {name: name for name in facts}
    result = compact(seen_from_facts(names, facts, {}), "atlas-a2", adopt=frozenset({"sysctl", "env", "firewall"}))
    assert result.inventory is not None, result.conflicts
    model = inventory_from_text(result.text).model
    assert "LD_PRELOAD" not in model.env and "PATH" not in model.env and "MY_VAR" not in model.env
    assert all("\x1b" not in line for line in result.text.splitlines())


def test_a_setting_asked_for_that_no_host_has_is_said_so() -> None:
    facts = {name: host(n, env_text=None) for n, name in enumerate(NAMES)}
    result = compact(seen_from_facts(NAMES, facts, {}), "atlas-a2", adopt=frozenset({"env"}))
    assert "# env: nothing adopted (no host has one to adopt: see the notes)" in result.text
    assert "# sysctl: nothing adopted (--adopt sysctl imports it)" in result.text
    assert "no /etc/ascendprep/env.sh was read on 10.0.0.[1-3]" in result.text
