"""contrib/ansible/verify-local.yml trusts a node with nothing on the controller: the files it
fetches are the named files of a node bundle, each to a path the controller makes, so a node (or
whatever answers for it) cannot choose where a file lands or add files to what the cluster report
reads. Checked in the playbook's text and by running it (ansible-core, local connection) against a
stand-in ``ascendprep`` whose bundle holds more than a bundle has."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any, Dict, Iterator, List

import jinja2
import jinja2.meta
import yaml
from test_contrib_lint import CONTRIB, require

PLAYBOOK = CONTRIB / "ansible" / "verify-local.yml"


def _tasks(tasks: List[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key, []))


class _AnyFilter(dict):
    """Jinja's filters, and any other name (Ansible's ``relpath``, ``to_json``...) as a no-op:
    only the variables a template reads matter here."""

    def get(self, name, default=None):  # type: ignore[no-untyped-def]
        return super().get(name) or (lambda value, *args, **kwargs: value)


_JINJA = jinja2.Environment()
_JINJA.filters = _AnyFilter(_JINJA.filters)


def _variables(text: str) -> set:
    """The variables a template reads."""
    return set(jinja2.meta.find_undeclared_variables(_JINJA.parse(text)))


def test_fetched_paths_are_made_from_the_controllers_values_and_fixed_names():
    play = yaml.safe_load(PLAYBOOK.read_text())[0]
    fetches = [
        t["ansible.builtin.fetch"] | {"loop": t.get("loop")}
        for t in _tasks(play["tasks"])
        if "ansible.builtin.fetch" in t
    ]
    assert fetches, "the playbook fetches nothing"
    registered = {t["register"] for t in _tasks(play["tasks"]) if "register" in t}
    for fetch in fetches:
        for key in ("src", "dest"):
            assert _variables(fetch[key]) <= {"ap_dir", "ap_bundles", "ap_node", "item"}, (key, fetch[key])
        assert not _variables(fetch["loop"]) & registered, "a node's answer chooses what is fetched"
        assert fetch["flat"] is True and _variables(fetch["loop"]) == {"ap_bundle_files"}
    names = play["vars"]["ap_bundle_files"]
    assert all(
        isinstance(n, str) and _variables(n) <= {"ap_node"} and ".." not in n and not n.startswith("/") for n in names
    )
    assert not registered & set().union(*(_variables(v) for v in play["vars"].values() if isinstance(v, str)))
    # ap_node names a folder on the controller: it is checked to be one plain name first.
    (check,) = [t["ansible.builtin.assert"]["that"] for t in play["tasks"] if "ansible.builtin.assert" in t]
    pattern = re.fullmatch(r"ap_node is match\('(.+)'\)", check).group(1)
    assert [
        bool(re.match(pattern, name)) for name in ("a2n01", "node-1.rack_2", "../etc", "a/../../b", ".hidden", "")
    ] == [True, True, False, False, False, False]
    first_fetch = next(i for i, t in enumerate(play["tasks"]) if "block" in t or "ansible.builtin.fetch" in t)
    assert "ansible.builtin.assert" in play["tasks"][0] and first_fetch > 0


FAKE_NODE_ASCENDPREP = """#!/bin/sh
# verify INVENTORY --local --node NODE --bundle-dir DIR: n1 writes a node bundle and files a
# node adds to it; n2 a bundle without its run.json (a bundle that did not fit on the disk)
while [ $# -gt 0 ]; do case $1 in --bundle-dir) dir=$2 ;; --node) node=$2 ;; esac; shift; done
mkdir -p "$dir/hosts/extra"
for f in run.json inventory.yaml results.json.gz hosts/gather.out.gz "hosts/$node.facts.json.gz"; do echo "$f" > "$dir/$f"; done
echo planted > "$dir/planted.sh"
echo planted > "$dir/hosts/extra/other.gz"
if [ "$node" = n2 ]; then rm "$dir/run.json"; fi
exit 1
"""

FAKE_CONTROLLER_ASCENDPREP = """#!/bin/sh
printf '%s\\n' "$@" > "$FAKE_DIR/controller.argv"
"""


def test_only_the_bundles_own_files_reach_the_controller_and_stale_ones_go(tmp_path):
    """n1's bundle arrives with only its own files (an earlier run's gone); n2's, incomplete, is
    not left half on the controller, and the cluster report is still made from n1's."""
    ansible_playbook = require("ansible-playbook")
    for name, text in (
        ("node-ascendprep", FAKE_NODE_ASCENDPREP),
        ("controller-ascendprep", FAKE_CONTROLLER_ASCENDPREP),
    ):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    (tmp_path / "inventory.yaml").write_text("name: x\n")
    (tmp_path / "hosts.ini").write_text(
        "[ascend]\n"
        + "".join(
            f"{n} ansible_connection=local ansible_python_interpreter={sys.executable} ascendprep_dir={tmp_path / n}\n"
            for n in ("n1", "n2")
        )
    )
    bundles = tmp_path / "bundles"
    stale = bundles / "n1" / "hosts" / "gather.err.gz"  # an earlier run's, not in this bundle
    stale.parent.mkdir(parents=True)
    stale.write_text("old\n")
    extra = {
        "ascendprep_inventory": tmp_path / "inventory.yaml",
        "ascendprep_bin": tmp_path / "node-ascendprep",
        "ascendprep_controller_bin": tmp_path / "controller-ascendprep",
        "ascendprep_bundles": bundles,
        "ansible_become": "false",
    }
    env = {
        **os.environ,
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible"),
        "ANSIBLE_HOME": str(tmp_path / "ansible"),
        "ANSIBLE_NOCOLOR": "1",
        "FAKE_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [
            ansible_playbook,
            "-i",
            str(tmp_path / "hosts.ini"),
            str(PLAYBOOK),
            *[w for k, v in extra.items() for w in ("-e", f"{k}={v}")],
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-2000:]  # n2 failed
    assert "n2: its node bundle could not be fetched whole" in done.stdout
    assert not (bundles / "n2").exists()
    fetched = sorted(str(p.relative_to(bundles / "n1")) for p in (bundles / "n1").rglob("*") if p.is_file())
    assert fetched == ["hosts/gather.out.gz", "hosts/n1.facts.json.gz", "inventory.yaml", "results.json.gz", "run.json"]
    assert (bundles / "n1" / "run.json").read_text() == "run.json\n"
    assert (tmp_path / "controller.argv").read_text().split() == ["verify", "--from-bundle", str(bundles / "n1")]
