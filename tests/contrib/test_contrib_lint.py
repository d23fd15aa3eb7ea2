"""contrib/ passes its linters: every shell script ``bash -n`` (and shellcheck where installed),
every YAML file loads, the Kubernetes manifests have the shape the API server wants (a schema
check of what they use; kubectl's offline decode where kubectl is installed: kubectl's
``--dry-run=client`` needs an API server for discovery, so it cannot run here), and the Ansible
playbooks pass ``ansible-playbook --syntax-check`` (ansible-core is in the test extra; under
CI=true a missing one fails instead of skipping)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"
SHELL_SCRIPTS = sorted(p for p in CONTRIB.rglob("*") if p.suffix in (".sh", ".sbatch"))
YAML_FILES = sorted(p for p in CONTRIB.rglob("*") if p.suffix in (".yml", ".yaml"))
MANIFESTS = sorted((CONTRIB / "kubernetes").glob("*.yaml"))
PLAYBOOKS = sorted((CONTRIB / "ansible").glob("*.yml"))


def tool(name: str) -> Optional[str]:
    """``name`` beside this interpreter (a virtualenv's bin/), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which(name)


def require(name: str) -> str:
    found = tool(name)
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name} is not installed (CI=true: the contrib linters must run in CI)", pytrace=False)
        pytest.skip(f"{name} is not installed")
    return found


def test_there_is_something_to_lint():
    assert {p.name for p in SHELL_SCRIPTS} >= {"ascendprep-nodecheck.sh", "allreduce.sbatch"}
    assert {p.name for p in MANIFESTS} >= {"daemonset.yaml", "node-problem-detector.yaml"}
    assert {p.name for p in PLAYBOOKS} >= {"apply-local.yml", "verify-local.yml"}


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: p.name)
def test_shell_scripts_parse_and_are_executable(script):
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert os.access(script, os.X_OK), f"{script.name} is not executable"
    assert script.read_text().startswith("#!/bin/bash\n")


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda p: p.name)
def test_shell_scripts_pass_shellcheck(script):
    shellcheck = require("shellcheck")
    checked = subprocess.run([shellcheck, "-S", "warning", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout


def test_the_npd_plugin_script_parses_as_posix_sh(tmp_path):
    script = tmp_path / "ascendprep-check.sh"
    script.write_text(_npd_data()["ascendprep-check.sh"])
    checked = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: p.name)
def test_yaml_files_load(path):
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert documents


# --- Kubernetes: a schema check of what the manifests use -------------------------------------

QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
HOST_PATH_TYPES = {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}
KINDS = {("v1", "Namespace"), ("v1", "ConfigMap"), ("apps/v1", "DaemonSet")}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _documents() -> List[Dict[str, Any]]:
    return [d for path in MANIFESTS for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _npd_data() -> Dict[str, str]:
    (config,) = [d for d in _documents() if d["metadata"]["name"] == "ascendprep-npd-plugin"]
    return config["data"]


def test_every_object_has_a_known_kind_and_valid_metadata():
    for document in _documents():
        assert (document["apiVersion"], document["kind"]) in KINDS
        metadata = document["metadata"]
        assert isinstance(metadata["name"], str) and DNS_LABEL.match(metadata["name"]), metadata
        assert isinstance(metadata.get("namespace", ""), str)
        if document["kind"] == "ConfigMap":
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in document["data"].items())


def _daemonset() -> Dict[str, Any]:
    (daemonset,) = [d for d in _documents() if d["kind"] == "DaemonSet"]
    return daemonset


def test_daemonset_pod_spec_is_well_formed():
    spec = _daemonset()["spec"]
    template = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    pod = template["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert len(volumes) == len(pod["volumes"])
    for volume in volumes.values():
        if "hostPath" in volume:
            assert volume["hostPath"]["path"].startswith("/") and volume["hostPath"].get("type", "") in HOST_PATH_TYPES
    for container in pod["containers"]:
        assert DNS_LABEL.match(container["name"]) and isinstance(container["image"], str)
        assert all(isinstance(word, str) for word in container.get("command", []) + container.get("args", []))
        for env in container.get("env", []):
            assert isinstance(env["name"], str) and (("value" in env) != ("valueFrom" in env))
            assert "value" not in env or isinstance(env["value"], str), env
        assert isinstance(container["securityContext"]["privileged"], bool)
        for group in container.get("resources", {}).values():
            assert all(QUANTITY.match(str(q)) for q in group.values()), group
        mounts = container["volumeMounts"]
        assert {m["name"] for m in mounts} <= set(volumes), "a mount names no volume"
        assert len({m["mountPath"] for m in mounts}) == len(mounts)


def test_only_the_textfile_directory_and_scratch_are_writable():
    """The host's Ascend paths are mounted read-only; nothing else of the host is written."""
    pod = _daemonset()["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    (container,) = pod["containers"]
    writable = {m["name"] for m in container["volumeMounts"] if not m.get("readOnly")}
    writable_host = {name for name in writable if "hostPath" in volumes[name]}
    assert writable_host == {"textfile"}
    read_only = {
        volumes[m["name"]]["hostPath"]["path"]
        for m in container["volumeMounts"]
        if m.get("readOnly") and "hostPath" in volumes[m["name"]]
    }
    assert {"/usr/local/Ascend", "/usr/local/dcmi", "/usr/local/bin/npu-smi", "/etc/hccn.conf"} <= read_only
    # Nothing is created on a host that lacks a path (no *OrCreate).
    assert not any(v["hostPath"].get("type", "").endswith("OrCreate") for v in volumes.values() if "hostPath" in v)


def test_the_daemonset_is_not_privileged_and_is_given_only_the_npu_devices():
    """Reading the NPUs needs their device files, not a privileged container: the pod gets
    /dev/davinci<N> and the three management devices from the Ascend Docker Runtime (which also
    lets the device cgroup open them), no host device folder, socket or /proc, no escalation, a
    read-only root file system and no capability but DAC_OVERRIDE (the devices are HwHiAiUser's)."""
    pod = _daemonset()["spec"]["template"]["spec"]
    assert not pod.get("hostPID") and not pod.get("hostIPC")
    assert pod.get("automountServiceAccountToken") is False  # it never talks to the API server
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["privileged"] is False and context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"]["drop"] == ["ALL"] and set(context["capabilities"].get("add", [])) <= {
        "DAC_OVERRIDE"
    }
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", env["ASCEND_VISIBLE_DEVICES"]), env
    assert env["ASCEND_RUNTIME_OPTIONS"] == "NODRV"  # the driver comes from the read-only mounts below
    volumes = {v["name"]: v for v in pod["volumes"]}
    host_paths = [v["hostPath"]["path"] for v in volumes.values() if "hostPath" in v]
    for path in host_paths:
        assert path != "/" and not any(
            path == top or path.startswith(top + "/") for top in ("/dev", "/proc", "/sys", "/run", "/var/run")
        ), path
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for writable in ("/tmp", "/var/lib/ascendprep"):  # scratch beside the read-only root file system
        assert "emptyDir" in volumes[mounts[writable]["name"]] and not mounts[writable].get("readOnly")
    # The checks the pod cannot make without a capability it is not given are left out, said in the manifest.
    assert "--skip job,firewall" in container["args"][0]


def test_without_the_npu_devices_the_daemonset_checks_nothing_rather_than_fail_every_check(tmp_path):
    """A node whose runtime did not add the devices is said in the pod's log and left without a
    result (NPD: unknown), not marked unhealthy by every NPU check failing."""
    if os.path.exists("/dev/davinci_manager"):
        pytest.skip("this machine has Ascend NPUs")
    (container,) = _daemonset()["spec"]["template"]["spec"]["containers"]
    (tmp_path / "ascendprep").write_text(f"#!/bin/sh\ntouch {tmp_path}/ran\n")
    (tmp_path / "ascendprep").chmod(0o755)
    env = {
        "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}",
        "NODE_NAME": "a2n01",
        "ASCENDPREP_TIMEOUT": "1",
        "ASCENDPREP_INTERVAL": "60",
    }
    loop = subprocess.Popen(
        ["sh", "-c", container["args"][0]], stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    try:
        loop.wait(timeout=2)
        pytest.fail("the loop ended")
    except subprocess.TimeoutExpired:
        os.killpg(loop.pid, signal.SIGKILL)  # the loop and its sleep
    said = loop.communicate()[0]
    assert "no /dev/davinci_manager in this container" in said and "nothing checked" in said
    assert not (tmp_path / "ran").exists()


def test_the_daemonset_runs_the_node_local_verify_writing_metrics_to_the_textfile_mount():
    (container,) = _daemonset()["spec"]["template"]["spec"]["containers"]
    script = container["args"][0]
    assert 'verify /etc/ascendprep-inventory/inventory.yaml --local --node "$NODE_NAME"' in script
    textfile = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "textfile")
    assert f"--prometheus-file {textfile}/ascendprep.prom" in script
    checked = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_the_npd_config_is_valid_json_naming_its_script():
    data = _npd_data()
    monitor = json.loads(data["ascendprep-monitor.json"])
    assert monitor["plugin"] == "custom" and monitor["pluginConfig"]["max_output_length"] <= 80
    (rule,) = monitor["rules"]
    assert rule["condition"] in {c["type"] for c in monitor["conditions"]}
    assert rule["path"].endswith("/ascendprep-check.sh")


def test_kubectl_decodes_the_manifests_offline():
    kubectl = tool("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (the schema check above still ran)")
    for path in MANIFESTS:
        decoded = subprocess.run(
            [kubectl, "label", "--local", "-f", str(path), "-o", "name", "ascendprep-lint=1"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert decoded.returncode == 0, decoded.stderr
        assert decoded.stdout.strip()


# --- Ansible -------------------------------------------------------------------------------------


@pytest.mark.parametrize("playbook", PLAYBOOKS, ids=lambda p: p.name)
def test_playbooks_pass_ansible_syntax_check(playbook, tmp_path):
    ansible_playbook = require("ansible-playbook")
    env = {**os.environ, "ANSIBLE_LOCAL_TEMP": str(tmp_path), "ANSIBLE_HOME": str(tmp_path), "ANSIBLE_NOCOLOR": "1"}
    checked = subprocess.run(
        [ansible_playbook, "--syntax-check", "-i", str(CONTRIB / "ansible" / "hosts.example.ini"), str(playbook)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_playbooks_run_the_documented_node_local_commands():
    apply = yaml.safe_load((CONTRIB / "ansible" / "apply-local.yml").read_text())
    verify = yaml.safe_load((CONTRIB / "ansible" / "verify-local.yml").read_text())
    commands = [
        task["ansible.builtin.command"]["argv"]
        for play in apply + verify
        for task in play["tasks"]
        if "ansible.builtin.command" in task
    ]
    words = [argv if isinstance(argv, list) else [argv] for argv in commands]
    assert ["apply", "--local"] == [w for w in words[0] if w in ("apply", "--local")]
    assert any("--local" in argv and "verify" in argv and "--bundle-dir" in argv for argv in words)
    assert apply[0]["serial"] and apply[0]["max_fail_percentage"] == 0  # a failed node stops the rollout
