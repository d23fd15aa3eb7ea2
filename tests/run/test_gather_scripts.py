"""The gather script is rendered once per distinct input, not once per host; each host still gets
its own marker nonce, and the script it gets is exactly the one rendered for that nonce."""

from __future__ import annotations

import re

from ascendprep.base.paths import SYSCTL_KEYS
from ascendprep.desired.state import build_desired
from ascendprep.facts import gather
from ascendprep.facts.blockers import job_probes
from ascendprep.inventory.load import inventory_from_text
from ascendprep.remote.local import LocalTransport
from ascendprep.run.fanout import Session
from ascendprep.run.hosts import fresh_nonce_scripts, gather_facts, host_accesses
from tests.run.test_verify_hosts_selection import _inventory_text, fake_tools  # noqa: F401  (fixture)

NONCE = re.compile(r"@@ascendprep gather v\d+ ([0-9a-f]{16})")


def test_each_call_gets_a_fresh_nonce_in_the_rendered_nonces_place() -> None:
    rendered = []

    def render(nonce: str) -> str:
        rendered.append(nonce)
        return f"header {nonce}\nbody\nAP_M=@@{nonce}\n"

    source = fresh_nonce_scripts(render)
    scripts = [source() for _ in range(5)]
    assert len(rendered) == 2  # the template and its proof, then no more rendering
    nonces = [script.split()[1] for script in scripts]
    assert len(set(nonces) | set(rendered)) == 7
    assert all(script == f"header {nonce}\nbody\nAP_M=@@{nonce}\n" for script, nonce in zip(scripts, nonces))


def test_a_script_whose_nonce_cannot_be_swapped_is_rendered_per_call() -> None:
    calls = []

    def render(nonce: str) -> str:  # the nonce also appears transformed: a swap would miss it
        calls.append(nonce)
        return f"{nonce} {nonce[::-1]}"

    source = fresh_nonce_scripts(render)
    first, second = source(), source()
    assert len(calls) == 4 and first != second
    for script in (first, second):
        nonce, reversed_nonce = script.split()
        assert reversed_nonce == nonce[::-1]


def test_hosts_get_the_same_script_but_for_their_own_nonce(fake_tools, monkeypatch) -> None:  # noqa: F811
    desired = build_desired(inventory_from_text(_inventory_text()))
    inventory = desired.inventory
    sent = {}

    class Recording(LocalTransport):
        def run_script(self, script, *args, **kwargs):
            sent[self.name] = script
            return super().run_script(script, *args, **kwargs)

    renders = []
    real = gather.render_gather_script

    def counting(*args, **kwargs):
        renders.append(kwargs.get("nonce"))
        return real(*args, **kwargs)

    monkeypatch.setattr("ascendprep.run.hosts.render_gather_script", counting)
    with Session(
        host_accesses(inventory), forks=2, transport_factory=lambda access: Recording(access.name, 60)
    ) as session:
        outcomes = gather_facts(session, inventory)
    assert all(outcome.ok and outcome.value.facts.hostname for outcome in outcomes.values())
    assert len(sent) == len(inventory.nodes) >= 2 and len(renders) == 2  # one template (+ its proof) for all
    nonces = {name: NONCE.search(script).group(1) for name, script in sent.items()}
    assert len(set(nonces.values())) == len(sent) and not set(nonces.values()) & set(renders)
    sysctl_keys = tuple(dict.fromkeys([*SYSCTL_KEYS, *inventory.model.sysctl]))
    for node in inventory.nodes:
        expected = real(
            npus=node.npus,
            python_path=inventory.model.software.python_path,
            sysctl_keys=sysctl_keys,
            job_probes=job_probes(inventory),
            nonce=nonces[node.name],
        )
        assert sent[node.name] == expected
