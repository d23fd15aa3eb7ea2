"""One read-only script per host that gathers every fact in a single SSH round trip, and its parser.

``render_gather_script`` → run it with ``sh -s`` on the host → ``parse_gather_output`` →
:class:`HostFacts`. The script runs each probe once, in sequence (hccn_tool refuses concurrent
calls), under ``timeout`` so a hung tool costs ``per_command_timeout`` seconds and is recorded
as a timeout instead of stalling the host. Per NPU it calls hccn_tool once per entry of
:data:`ascendprep.probes.hccn.QUERIES`, and npu-smi once per chip for health.

Sections the script prints (see :mod:`ascendprep.probes.sections` for the framing):
``settings``, ``hostname``, ``arch``, ``os_release``, ``tool.npu_smi``, ``npu_smi.list``,
``npu_smi.health`` (npu, chip), ``npus``, ``tool.hccn_tool``, ``hccn.*`` (npu), ``file.hccn_conf``,
``sysctl`` (key), ``file.sysctl``, ``managed`` (path), ``firewall.{ufw,firewalld,nftables}``,
``version.*`` (file), ``python``, ``net.addrs``, ``hostname.resolve``.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ascendprep.facts import (
    Firewall,
    FirewallTool,
    HostFacts,
    ManagedFile,
    NpuFacts,
    NpuHealth,
    ProbeError,
    VersionFile,
    Versions,
)
from ascendprep.probes import firewall, hccn, hccn_conf, jobenv, netaddr, npu_smi, paths, python_pkgs, sysctl, system, versions
from ascendprep.probes.failures import classify_failure, dcmi_failure, over_cap_error
from ascendprep.probes.sections import Section, new_nonce, parse_transcript, render_attrs
from ascendprep.probes.shell import MAX_DEVID, UnsafeValue, check_command, check_int, main_block, preamble

KIND = "gather"

#: Version-file sections; a missing file is the fact "not installed", not a failure.
_SYSCTL_KEY = re.compile(r"^[a-z0-9_]+(\.[a-z0-9_-]+)+$")

_VERSION_SECTIONS = ("version.driver", "version.firmware", "version.toolkit", "version.nnae", "version.cann")

#: Firewall sections: front end → (parser of its answer, the command as messages name it).
_FIREWALLS: Dict[str, Tuple[Callable[[str], Any], str]] = {
    "ufw": (firewall.parse_ufw_status, "ufw status"),
    "firewalld": (firewall.parse_firewalld_state, "firewall-cmd --state"),
    "nftables": (firewall.parse_nft_tables, "nft list tables"),
}


def render_gather_script(
    npus: Optional[int],
    python_path: str,
    per_command_timeout: int = 10,
    ascend_home: str = paths.DEFAULT_ASCEND_HOME,
    busy_retries: int = 3,
    sysctl_keys: Sequence[str] = paths.SYSCTL_KEYS,
) -> str:
    """The POSIX sh script that gathers a host's facts.

    ``npus``: how many hccn device ids to probe (0..npus-1); None discovers them from
    ``npu-smi info -l`` (NPU id × chip count + chip, so an A3's 8 NPUs give devids 0-15).
    ``python_path``: the interpreter whose torch / torch_npu / torchvision versions count.
    ``ascend_home``: where the driver and CANN live (``~/Ascend`` for a non-root install).
    ``busy_retries``: extra tries, with back-off, when hccn_tool answers that it is busy
    (another hccn_tool, e.g. a monitoring exporter, was running).
    ``sysctl_keys``: kernel settings to read (the defaults plus any the inventory sets).
    """
    for key in sysctl_keys:
        if not _SYSCTL_KEY.match(key):
            raise UnsafeValue(f"sysctl key {key!r} is not of the form net.core.somaxconn")
    if npus is not None:
        check_int("npus", npus, 0, MAX_DEVID + 1)
    python_path = check_command("python_path", python_path)
    nonce = new_nonce()
    return "\n".join(
        [
            preamble(KIND, nonce, per_command_timeout, busy_retries, ascend_home),
            _GATHER_FUNCTIONS,
            _NETWORK_FUNCTIONS,
            jobenv.shell_functions(),
            main_block(_body(npus, python_path, tuple(sysctl_keys)) + _network_lines() + jobenv.body_lines(python_path)),
        ]
    )


_GATHER_FUNCTIONS = r"""# ap_os_release: /etc/os-release, or the spec's fallback /usr/lib/os-release.
ap_os_release() {
	if [ -e /etc/os-release ]; then cat /etc/os-release; else cat /usr/lib/os-release; fi
}

# ap_npu_chips: read `npu-smi info -l` on stdin, print "NPU_ID:CHIP_COUNT" for each NPU.
ap_npu_chips() {
	ap_id= ap_n=1
	while IFS= read -r ap_line || [ -n "$ap_line" ]; do
		ap_val=${ap_line#*:}
		set -- $ap_val
		ap_val=${1-}
		case $ap_val in '' | *[!0-9]* | ???*) continue ;; esac
		case $ap_line in
		*'NPU ID'*)
			if [ -n "$ap_id" ]; then echo "$ap_id:$ap_n"; fi
			ap_id=$ap_val ap_n=1
			;;
		*'Chip Count'*) ap_n=$ap_val ;;
		esac
	done
	if [ -n "$ap_id" ]; then echo "$ap_id:$ap_n"; fi
}
"""


_NETWORK_FUNCTIONS = r"""# ap_resolve_self: what this host's own name resolves to, looked up as gloo and NCCL do
# (getaddrinfo). getent exits 2 when the name is not found.
ap_resolve_self() {
	ap_self=$(uname -n) || return 1
	ap_tool getent ahosts "$ap_self"
}
"""


def _network_lines() -> str:
    """Host NICs and the hostname's resolution (:mod:`ascendprep.probes.netaddr` parses them)."""
    return "\n".join([
        "",
        "# Host NICs, and where the hostname points (loopback makes gloo/NCCL/HCCL miss each other).",
        "ap_run net.addrs '' ap_tool ip -o addr show",
        "ap_run hostname.resolve '' ap_resolve_self",
    ]) + "\n"


def _body(npus: Optional[int], python_path: str, sysctl_keys: Tuple[str, ...]) -> str:
    q = shlex.quote
    lines = [
        "ap_run settings '' printf 'timeout=%s\\nbusy_retries=%s\\nascend_home=%s\\npython=%s\\n' "
        f'"$AP_T" "$AP_RETRIES" "$AP_HOME" {q(python_path)}',
        "ap_run hostname '' uname -n",
        "ap_run arch '' uname -m",
        "AP_ARCH=",
        'if [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then AP_ARCH=$(cat "$AP_TMP/out"); fi',
        "case $AP_ARCH in '' | *[!A-Za-z0-9_]*) AP_ARCH=unknown ;; esac",
        "ap_run os_release '' ap_os_release",
        "",
        "# NPUs: npu-smi's list gives NPU ids and chips; health is asked per chip.",
        f'ap_run tool.npu_smi \'\' ap_locate npu-smi "$AP_HOME/{paths.NPU_SMI_IN_HOME}"',
        "AP_NPUSMI= AP_CHIPS=",
        'if [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then AP_NPUSMI=$(cat "$AP_TMP/out"); fi',
        'if [ -n "$AP_NPUSMI" ]; then',
        "\tap_run npu_smi.list '' ap_tool \"$AP_NPUSMI\" info -l",
        '\tif [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then AP_CHIPS=$(ap_npu_chips <"$AP_TMP/out"); fi',
        "fi",
    ]
    if npus is None:
        lines += ["AP_DEVS=", "AP_DEVS_FROM=npu-smi"]
    else:
        lines += [f"AP_DEVS={q(' '.join(str(devid) for devid in range(npus)))}", "AP_DEVS_FROM=inventory"]
    lines += [
        "for ap_pair in $AP_CHIPS; do",
        "\tap_id=${ap_pair%:*} ap_n=${ap_pair#*:} ap_c=0",
        '\twhile [ "$ap_c" -lt "$ap_n" ]; do',
        '\t\tap_run npu_smi.health " npu=$ap_id chip=$ap_c" ap_tool "$AP_NPUSMI" info -i "$ap_id" -c "$ap_c" -t health',
    ]
    if npus is None:
        lines.append('\t\tAP_DEVS="$AP_DEVS $((ap_id * ap_n + ap_c))"')
    lines += [
        "\t\tap_c=$((ap_c + 1))",
        "\tdone",
        "done",
        "ap_run npus \" from=$AP_DEVS_FROM\" printf '%s\\n' $AP_DEVS",
        "",
        "# hccn_tool: the live state of every NPU port.",
        "ap_hccn_tool",
        'if [ -n "$AP_HCCN" ]; then',
        "\tfor ap_dev in $AP_DEVS; do",
    ]
    for probe, args in hccn.QUERIES.items():
        lines.append(f'\t\tap_run {probe} " npu=$ap_dev" ap_hccn -i "$ap_dev" {" ".join(args)}')
    lines += ["\tdone", "fi", "", "# Files and kernel settings."]
    lines.append(f"ap_run file.hccn_conf '' cat {q(paths.HCCN_CONF)}")
    for key in sysctl_keys:
        lines.append(f"ap_run sysctl {q(render_attrs(key=key))} cat {q(paths.proc_sys_path(key))}")
    lines.append(f"ap_run file.sysctl '' cat {q(paths.SYSCTL_FILE)}")
    for path in paths.MANAGED_FILES:
        lines.append(f"ap_run managed {q(render_attrs(path=path))} sha256sum {q(path)}")
    lines += [
        "",
        "# Firewalls that could block HCCL's host ports (only those installed are asked).",
    ]
    for name, (_, command) in _FIREWALLS.items():
        lines.append(f"ap_run firewall.{name} '' ap_installed {command.split()[0]} ap_tool {command}")
    lines += [
        "",
        "# Driver, firmware and CANN versions.",
    ]
    for name, relative in (
        ("version.driver", paths.DRIVER_VERSION_FILE),
        ("version.firmware", paths.FIRMWARE_VERSION_FILE),
        ("version.toolkit", paths.TOOLKIT_INFO_FILE.format(arch="$AP_ARCH")),
        ("version.nnae", paths.NNAE_INFO_FILE),
    ):
        lines.append(f'ap_run {name} " file={relative}" cat "$AP_HOME/{relative}"')
    cann_file = paths.CANN_RUNTIME_VERSION_FILE
    lines += [
        "set +f",
        'set -- "$AP_HOME"/cann "$AP_HOME"/cann-*',
        "set -f",
        'for ap_dir in "$@"; do',
        "\tap_dir=${ap_dir##*/}",
        "\tcase $ap_dir in *[!A-Za-z0-9._+-]*) continue ;; esac",
        '\tif [ -d "$AP_HOME/$ap_dir" ]; then',
        f'\t\tap_run version.cann " file=$ap_dir/{cann_file}" cat "$AP_HOME/$ap_dir/{cann_file}"',
        "\tfi",
        "done",
        "",
        "# The training interpreter's packages (importlib.metadata; torch_npu is never imported).",
        f"ap_run python '' ap_tool {q(python_path)} -c {q(python_pkgs.PROBE_CODE)}",
    ]
    return "\n".join(lines) + "\n"


#: Sections with one fixed probe name and command: section → (probe, command as messages name it).
_FIXED_PROBES: Dict[str, Tuple[str, str]] = {
    "hostname": ("hostname", "uname -n"),
    "arch": ("arch", "uname -m"),
    "os_release": ("os_release", f"cat {paths.OS_RELEASE}"),
    "tool.npu_smi": ("npu_smi", "locating npu_smi"),
    "tool.hccn_tool": ("hccn_tool", "locating hccn_tool"),
    "npu_smi.list": ("npu_smi.list", "npu-smi info -l"),
    "file.hccn_conf": ("hccn_conf", f"cat {paths.HCCN_CONF}"),
    "file.sysctl": ("sysctl_file", f"cat {paths.SYSCTL_FILE}"),
    "python": ("python", "python probe (importlib.metadata)"),
}


def parse_gather_output(text: str) -> HostFacts:
    """HostFacts from a gather script's stdout. Never raises: every failure becomes a ProbeError."""
    return _FactsBuilder(text).build()


class _FactsBuilder:
    """Reads the sections in order and fills HostFacts fields; one method per section kind."""

    def __init__(self, text: str) -> None:
        self.transcript = parse_transcript(text, KIND)
        self.errors: List[ProbeError] = []
        self.fields: Dict[str, Any] = {}
        self.npus: Dict[int, Dict[str, Any]] = {}
        self.health: List[NpuHealth] = []
        self.sysctl: Dict[str, str] = {}
        self.managed: Dict[str, ManagedFile] = {}
        self.firewall: Dict[str, FirewallTool] = {}
        self.versions: Dict[str, Any] = {"cann": []}
        self.timeout_s: Optional[int] = None
        self.ascend_home: Optional[str] = None
        self.python_path = ""
        self.job = jobenv.JobEnvReader()

    def build(self) -> HostFacts:
        if self.transcript.problem:
            self.errors.append(ProbeError(probe="gather", kind="error", message=self.transcript.problem))
        for section in self.transcript.sections:
            handler = self._handler(section.name)
            if handler is not None and self._cut(section):
                continue
            if handler is None:
                self._error(section.name, "error", f"unknown section {section.name!r} in the gather output")
                continue
            try:
                handler(section)
            except (ValueError, LookupError, TypeError, ArithmeticError, RecursionError) as exc:
                # One odd output (a 5,000-digit number int() refuses) costs that probe, not the host.
                probe, what, npu = self._probe_of(section)
                self._error(probe, "error", f"{what}: unreadable output ({type(exc).__name__}: {str(exc)[:200]})", npu)
        self.versions["cann"] = tuple(self.versions["cann"])
        return HostFacts(
            ascend_home=self.ascend_home,
            npus={devid: NpuFacts(devid=devid, **values) for devid, values in sorted(self.npus.items())},
            npu_health=tuple(self.health),
            sysctl=self.sysctl,
            managed_files=self.managed,
            firewall=Firewall(**self.firewall),
            versions=Versions(**self.versions),
            job=self.job.result(any(s.name.startswith("job.") for s in self.transcript.sections)),
            errors=tuple(self.errors),
            **self.fields,
        )

    def _handler(self, name: str) -> Optional[Callable[[Section], None]]:
        if name in hccn.QUERIES:
            return self._hccn
        if name in _VERSION_SECTIONS:
            return self._version
        if name.startswith("firewall."):
            return self._firewall
        if name.startswith("job."):
            return self._job
        return self._by_name.get(name)

    @property
    def _by_name(self) -> Dict[str, Callable[[Section], None]]:
        return {
            "settings": self._settings,
            "hostname": self._hostname,
            "arch": self._arch,
            "os_release": self._os_release,
            "tool.npu_smi": self._tool,
            "tool.hccn_tool": self._tool,
            "npu_smi.list": self._npu_smi_list,
            "npu_smi.health": self._npu_health,
            "npus": self._npus,
            "file.hccn_conf": self._hccn_conf,
            "sysctl": self._sysctl,
            "file.sysctl": self._sysctl_file,
            "managed": self._managed,
            "python": self._python,
            "net.addrs": self._net_addrs,
            "hostname.resolve": self._hostname_resolve,
        }

    # -- helpers -------------------------------------------------------------------------

    def _error(self, probe: str, kind: str, message: str, npu: Optional[int] = None) -> None:
        self.errors.append(ProbeError(probe=probe, kind=kind, message=message, npu=npu))

    def _failed(self, section: Section, probe: str, what: str, npu: Optional[int] = None) -> None:
        self.errors.append(classify_failure(section, probe, what, npu=npu, timeout_s=self.timeout_s))

    def _parsed(self, probe: str, what: str, parse: Callable[[], Any], npu: Optional[int] = None) -> Any:
        """parse(), or None with an error recorded when the output is not what the tool prints."""
        try:
            return parse()
        except ValueError as exc:  # UnexpectedOutput, or int() of a number Python refuses to read
            self._error(probe, "error", f"{what}: {exc}", npu)
            return None

    def _file_absent(self, section: Section) -> bool:
        return section.rc not in (0, None) and "no such file or directory" in section.stderr.lower()

    def _home_path(self, relative: str) -> str:
        home = (self.ascend_home or paths.DEFAULT_ASCEND_HOME).rstrip("/")
        return f"{home}/{relative}"

    def _cut(self, section: Section) -> bool:
        """Record the error of a section the node cut for size (it never reaches its parser)."""
        probe, what, npu = self._probe_of(section)
        error = over_cap_error(section, probe, what, npu)
        if error is not None:
            self.errors.append(error)
        return error is not None

    def _probe_of(self, section: Section) -> Tuple[str, str, Optional[int]]:
        """(probe, command as messages name it, npu) of a section, as its handler reports them."""
        name = section.name
        if name in hccn.QUERIES:
            return name, f"hccn_tool -i {section.npu} {' '.join(hccn.QUERIES[name])}", section.npu
        if name == "npu_smi.health":
            return name, f"npu-smi info -i {section.npu} -c {section.int_attr('chip')} -t health", section.npu
        if name.startswith("firewall.") and name.split(".", 1)[1] in _FIREWALLS:
            return name, _FIREWALLS[name.split(".", 1)[1]][1], None
        if name in _VERSION_SECTIONS:
            return name, f"cat {self._home_path(section.attrs.get('file', ''))}", None
        if name == "sysctl":
            key = section.attrs.get("key", "?")
            return f"sysctl:{key}", f"cat {paths.proc_sys_path(key)}", None
        if name == "managed":
            path = section.attrs.get("path", "?")
            return f"file:{path}", f"sha256sum {path}", None
        if name.startswith("job."):
            return jobenv.JobEnvReader.probe_of(section) + (None,)
        return _FIXED_PROBES.get(name, (name, name)) + (None,)

    # -- sections ------------------------------------------------------------------------

    def _settings(self, section: Section) -> None:
        for line in section.stdout.splitlines():
            key, _, value = line.partition("=")
            if key == "timeout" and value.isdigit():
                self.timeout_s = int(value)
            elif key == "ascend_home" and value:
                self.ascend_home = value
            elif key == "python":
                self.python_path = value

    def _hostname(self, section: Section) -> None:
        if section.rc != 0:
            return self._failed(section, "hostname", "uname -n")
        self.fields["hostname"] = self._parsed("hostname", "uname -n", lambda: system.parse_word(section.stdout, "hostname"))

    def _arch(self, section: Section) -> None:
        if section.rc != 0:
            return self._failed(section, "arch", "uname -m")
        self.fields["arch"] = self._parsed("arch", "uname -m", lambda: system.parse_word(section.stdout, "arch"))

    def _os_release(self, section: Section) -> None:
        if section.rc != 0:
            return self._failed(section, "os_release", f"cat {paths.OS_RELEASE}")
        self.fields["os_release"] = system.parse_os_release(section.stdout)

    def _tool(self, section: Section) -> None:
        tool = section.name.split(".", 1)[1]
        if section.rc != 0:
            return self._failed(section, tool, f"locating {tool}")
        field_name = {"hccn_tool": "hccn_tool", "npu_smi": "npu_smi_tool"}[tool]
        self.fields[field_name] = section.stdout.strip() or None

    def _npu_smi_list(self, section: Section) -> None:
        what = "npu-smi info -l"
        if section.rc != 0 or dcmi_failure(section.text):  # some builds print the DCMI failure with exit 0
            return self._failed(section, "npu_smi.list", what)
        self.fields["npu_smi"] = self._parsed("npu_smi.list", what, lambda: npu_smi.parse_list(section.stdout))

    def _npu_health(self, section: Section) -> None:
        npu, chip = section.npu, section.int_attr("chip")
        what = f"npu-smi info -i {npu} -c {chip} -t health"
        if npu is None or chip is None:
            return self._error("npu_smi.health", "error", f"{what}: section without npu/chip")
        if section.rc != 0:
            return self._failed(section, "npu_smi.health", what, npu)
        parsed = self._parsed("npu_smi.health", what, lambda: npu_smi.parse_health(section.stdout), npu)
        if parsed is not None:
            health, code, info = parsed
            self.health.append(NpuHealth(npu_id=npu, chip=chip, health=health, error_code=code, error_info=info))

    def _npus(self, section: Section) -> None:
        for word in section.stdout.split():
            if word.isdigit():
                self.npus.setdefault(int(word), {})

    def _hccn(self, section: Section) -> None:
        devid = section.npu
        args = " ".join(hccn.QUERIES[section.name])
        what = f"hccn_tool -i {devid} {args}"
        if devid is None:
            return self._error(section.name, "error", f"{what}: section without an NPU id")
        values = self.npus.setdefault(devid, {})
        if section.rc == 0:
            fields = self._parsed(section.name, what, lambda: hccn.PARSERS[section.name](section.stdout), devid)
        else:
            fields = hccn.not_configured(section.name, section.text)
            if fields is None:
                self._failed(section, section.name, what, devid)
        if fields:
            values.update(fields)

    def _hccn_conf(self, section: Section) -> None:
        if self._file_absent(section):
            return
        if section.rc != 0:
            return self._failed(section, "hccn_conf", f"cat {paths.HCCN_CONF}")
        self.fields["hccn_conf"] = hccn_conf.parse_hccn_conf(section.stdout)

    def _sysctl(self, section: Section) -> None:
        key = section.attrs.get("key", "?")
        if section.rc != 0:
            return self._failed(section, f"sysctl:{key}", f"cat {paths.proc_sys_path(key)}")
        value = self._parsed(f"sysctl:{key}", f"cat {paths.proc_sys_path(key)}", lambda: sysctl.parse_proc_value(section.stdout, key))
        if value is not None:
            self.sysctl[key] = value

    def _sysctl_file(self, section: Section) -> None:
        if self._file_absent(section):
            return
        if section.rc != 0:
            return self._failed(section, "sysctl_file", f"cat {paths.SYSCTL_FILE}")
        self.fields["sysctl_file"] = sysctl.parse_sysctl_conf(section.stdout)

    def _managed(self, section: Section) -> None:
        path = section.attrs.get("path", "?")
        probe, what = f"file:{path}", f"sha256sum {path}"
        if self._file_absent(section):
            self.managed[path] = ManagedFile(path=path, exists=False)
        elif section.rc != 0:
            self._failed(section, probe, what)
        else:
            digest = self._parsed(probe, what, lambda: system.parse_sha256sum(section.stdout))
            if digest is not None:
                self.managed[path] = ManagedFile(path=path, exists=True, sha256=digest)

    def _firewall(self, section: Section) -> None:
        name = section.name.split(".", 1)[1]
        if name not in _FIREWALLS:
            return self._error(section.name, "error", f"unknown firewall section {section.name!r}")
        parse, what = _FIREWALLS[name]
        if section.rc == 127:
            self.firewall[name] = FirewallTool(installed=False)
            return
        # firewall-cmd says "not running" with exit 252: the answer is on stdout either way.
        answered = section.rc == 0 or (name == "firewalld" and section.rc == 252 and section.stdout.strip())
        if not answered:
            self._failed(section, section.name, what)
            self.firewall[name] = FirewallTool(installed=True)
            return
        result = self._parsed(section.name, what, lambda: parse(section.stdout))
        if result is None:
            self.firewall[name] = FirewallTool(installed=True)
        elif name == "nftables":
            self.firewall[name] = FirewallTool(installed=True, active=bool(result), detail=", ".join(result) or None)
        else:
            self.firewall[name] = FirewallTool(installed=True, active=result)

    def _version(self, section: Section) -> None:
        relative = section.attrs.get("file", "")
        path = self._home_path(relative)
        if self._file_absent(section):
            return
        if section.rc != 0:
            return self._failed(section, section.name, f"cat {path}")
        info: Optional[VersionFile] = self._parsed(
            section.name, f"cat {path}", lambda: versions.parse_version_file(path, section.stdout)
        )
        if info is None:
            return
        key = section.name.split(".", 1)[1]
        if key == "cann":
            self.versions["cann"].append(info)
        else:
            self.versions[key] = info

    def _python(self, section: Section) -> None:
        what = "python probe (importlib.metadata)"
        if section.rc != 0:
            return self._failed(section, "python", what)
        parsed = self._parsed("python", what, lambda: python_pkgs.parse_python_probe(self.python_path, section.stdout))
        if parsed is not None:
            env, problem = parsed
            self.fields["python"] = env
            if problem:
                self._error("python", "error", problem)


    def _job(self, section: Section) -> None:
        self.errors.extend(self.job.read(section, self.ascend_home or paths.DEFAULT_ASCEND_HOME, self.timeout_s))

    def _net_addrs(self, section: Section) -> None:
        what = "ip -o addr show"
        if section.rc != 0:
            return self._failed(section, "net.addrs", what)
        parsed = self._parsed("net.addrs", what, lambda: netaddr.parse_ip_addr(section.stdout))
        if parsed is not None:
            self.fields["addresses"] = parsed

    def _hostname_resolve(self, section: Section) -> None:
        what = "getent ahosts $(uname -n)"
        if section.rc == netaddr.GETENT_NOT_FOUND_RC:
            self.fields["hostname_addresses"] = ()
            return
        if section.rc != 0:
            return self._failed(section, "hostname.resolve", what)
        parsed = self._parsed("hostname.resolve", what, lambda: netaddr.parse_getent_ahosts(section.stdout))
        if parsed is not None:
            self.fields["hostname_addresses"] = parsed
