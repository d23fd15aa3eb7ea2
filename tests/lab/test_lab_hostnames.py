"""How lab nodes map their own hostname: resolve (the default), Debian's 127.0.1.1, or missing."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ascendprep.lab.cli import lab_group
from ascendprep.lab.hostsfile import render_node_hosts
from ascendprep.lab.spec import LabSpec, LabSpecError


def _names(text: str) -> dict:
    """hostname -> address, as /etc/hosts maps them (first mapping wins, as glibc reads it)."""
    mapped: dict = {}
    for line in text.splitlines():
        words = line.split("#")[0].split()
        for name in words[1:]:
            mapped.setdefault(name, words[0])
    return mapped


@pytest.mark.parametrize(
    "mapping, node1, node2",
    [
        ("resolve", "10.231.7.11", "10.231.7.12"),
        ("loopback", "127.0.1.1", None),
        ("missing", None, None),
    ],
)
def test_each_mapping_gives_the_node_its_shape_of_etc_hosts(mapping, node1, node2):
    nodes = LabSpec(nodes=2, subnet="10.231.7.0/24", hostnames=mapping).validated().node_list()
    mapped = _names(render_node_hosts(nodes, "node1", mapping))
    assert mapped.get("node1") == node1 and mapped.get("node2") == node2
    assert mapped["localhost"] == "127.0.0.1"


def test_an_unknown_mapping_names_the_option():
    with pytest.raises(LabSpecError, match="--hostnames"):
        LabSpec(hostnames="dns").validated()
    refused = CliRunner().invoke(lab_group, ["up", "--hostnames", "dns"])
    assert refused.exit_code == 2 and "--hostnames" in refused.output
