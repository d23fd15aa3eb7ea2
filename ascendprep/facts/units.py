"""The gather script's probes, in the order the script runs them: :data:`UNITS`.

Adding a probe (see :mod:`ascendprep.facts.unit` for what each field means):

1. Write its parser in its own module under ``ascendprep/facts/`` (text in, value out, raising
   :class:`~ascendprep.facts.text.UnexpectedOutput` on output the tool does not print), and
   the field it fills in :class:`~ascendprep.facts.model.HostFacts` (or ``NpuFacts``), with a
   default so that facts saved before it still load.
2. Declare one :class:`~ascendprep.facts.unit.ProbeUnit` and add it to :data:`UNITS` where it
   should run. A host-wide command::

       ProbeUnit(
           section="npu_procs",
           command=lambda ctx: "ap_tool \\"$AP_NPUSMI\\" info proc",
           guard='[ -n "$AP_NPUSMI" ]',
           describe=fixed("npu-smi info proc"),
           parse=text_only(npu_procs.parse_procs),
           fill=set_field("npu_procs"),
           fact="npu_procs",
           phases=VERIFY_ONLY,
       )

   A per-NPU hccn_tool query is ``hccn_query("hccn.foo", ("-foo", "-g"), hccn_foo.parse,
   fact="npus[devid].foo")`` (its parser returns a dict of NpuFacts fields); a per-chip npu-smi
   query uses ``scope=CHIP`` and ``$ap_id``/``$ap_c`` in its command.
3. Add fixtures ``tests/fixtures/probes/<section>/<case>.json`` (see the README there): the
   generic test (tests/probes/test_probe_fixtures.py) runs every case through the unit and
   fails for a unit without a case directory.

Section names are unique; :func:`by_section` refuses duplicates.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any, Dict, Optional, Sequence, Tuple

from ascendprep.base import paths
from ascendprep.facts import (
    firewall,
    hccn,
    hccn_conf,
    jobenv,
    netaddr,
    npu_smi,
    optics,
    pci,
    port_state,
    port_stats,
    python_pkgs,
    superpod,
    sysctl,
    system,
    ub_units,
    versions,
)
from ascendprep.facts.blockers import JOB_UNITS
from ascendprep.facts.failures import dcmi_failure
from ascendprep.facts.model import FirewallTool, ManagedFile, NpuHealth, VersionFile
from ascendprep.facts.sections import Section
from ascendprep.facts.unit import (
    BOTH,
    CHIP,
    NPU,
    VERIFY_ONLY,
    Draft,
    Given,
    ProbeUnit,
    RenderContext,
    Where,
    file_absent,
    fixed,
    nothing_if_absent,
    on_failure,
    set_field,
    text_only,
    update_npu,
)

q = shlex.quote


# -- the script's own settings --------------------------------------------------------------


def _parse_settings(stdout: str, where: Where) -> Dict[str, str]:
    return dict(line.partition("=")[::2] for line in stdout.splitlines())


def _fill_settings(draft: Draft, where: Where, values: Dict[str, str]) -> None:
    """The settings later sections are read with: time limit, Ascend home, interpreter."""
    if values.get("timeout", "").isdigit():
        draft.timeout_s = int(values["timeout"])
    if values.get("ascend_home"):
        draft.ascend_home = values["ascend_home"]
    if "python" in values:
        draft.python_path = values["python"]


SETTINGS = ProbeUnit(
    section="settings",
    lenient=True,
    command=lambda ctx: (
        "printf 'timeout=%s\\nbusy_retries=%s\\nascend_home=%s\\npython=%s\\n' "
        f'"$AP_T" "$AP_RETRIES" "$AP_HOME" {q(ctx.python_path)}'
    ),
    describe=fixed("settings"),
    parse=_parse_settings,
    fill=_fill_settings,
    fact="(the gather's own settings: the time limit, Ascend home and interpreter later sections use)",
    answered=lambda section: True,
)


# -- system -----------------------------------------------------------------------------------

HOSTNAME = ProbeUnit(
    section="hostname",
    command=lambda ctx: "uname -n",
    describe=fixed("uname -n"),
    parse=lambda stdout, where: system.parse_word(stdout, "hostname"),
    fill=set_field("hostname"),
    fact="hostname",
    phases=VERIFY_ONLY,
)

#: The shell remembers the architecture for the toolkit's version file path.
ARCH = ProbeUnit(
    section="arch",
    command=lambda ctx: "uname -m",
    after=(
        "AP_ARCH=",
        'if [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then AP_ARCH=$(cat "$AP_TMP/out"); fi',
        "case $AP_ARCH in '' | *[!A-Za-z0-9_]*) AP_ARCH=unknown ;; esac",
    ),
    describe=fixed("uname -m"),
    parse=lambda stdout, where: system.parse_word(stdout, "arch"),
    fill=set_field("arch"),
    fact="arch",
    phases=VERIFY_ONLY,
)


OS_RELEASE = ProbeUnit(
    section="os_release",
    lenient=True,
    command=lambda ctx: "ap_os_release",
    describe=fixed(f"cat {paths.OS_RELEASE}"),
    parse=text_only(system.parse_os_release),
    fill=set_field("os_release"),
    fact="os_release",
    phases=VERIFY_ONLY,
)


# -- npu-smi ----------------------------------------------------------------------------------


def _tool_path(stdout: str, where: Where) -> Optional[str]:
    return stdout.strip() or None


NPU_SMI_TOOL = ProbeUnit(
    section="tool.npu_smi",
    lenient=True,
    comment="NPUs: npu-smi's list gives NPU ids and chips; health is asked per chip.",
    command=lambda ctx: f'ap_locate npu-smi "$AP_HOME/{paths.NPU_SMI_IN_HOME}"',
    after=(
        "AP_NPUSMI= AP_CHIPS= AP_SPOD= AP_A5=",
        'if [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then AP_NPUSMI=$(cat "$AP_TMP/out"); fi',
    ),
    probe=fixed("npu_smi"),
    describe=fixed("locating npu_smi"),
    parse=_tool_path,
    fill=set_field("npu_smi_tool"),
    fact="npu_smi_tool",
)

NPU_SMI_LIST = ProbeUnit(
    section="npu_smi.list",
    command=lambda ctx: 'ap_tool "$AP_NPUSMI" info -l',
    guard='[ -n "$AP_NPUSMI" ]',
    after=(
        'if [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then AP_CHIPS=$(ap_npu_chips <"$AP_TMP/out"); fi',
        # an Ascend 950 host: the UB probes (facts/ub_units.py) run instead of the 910 per-NPU loop
        f'if [ "$ap_rc" -eq 0 ] && grep -q {shlex.quote(ub_units.A5_PRODUCT_NAME)} "$AP_TMP/out"; then AP_A5=1; fi',
    ),
    describe=fixed("npu-smi info -l"),
    parse=text_only(npu_smi.parse_list),
    # Some builds print the DCMI failure with exit 0.
    answered=lambda section: section.rc == 0 and dcmi_failure(section.text) is None,
    fill=set_field("npu_smi"),
    fact="npu_smi",
)


def _render_pci(ctx: RenderContext) -> list:
    """The Huawei PCI functions of the host, ``<vendor> <device>`` per line (sysfs, no tool)."""
    return [
        "# ap_pci_ids: vendor and device id of every Huawei PCI function (in a subshell: globbing on).",
        "ap_pci_ids() (",
        "\tset +f",
        "\tfor ap_p in /sys/bus/pci/devices/*; do",
        '\t\tif [ -r "$ap_p/vendor" ] && [ -r "$ap_p/device" ]; then',
        '\t\t\tap_v=$(cat "$ap_p/vendor")',
        '\t\t\tcase $ap_v in 0x19e5) printf \'%s %s\\n\' "$ap_v" "$(cat "$ap_p/device")" ;; esac',
        "\t\tfi",
        "\tdone",
        ")",
        "ap_run pci.npus '' ap_pci_ids",
    ]


#: Which Ascend generation the host's NPUs are, whatever the inventory says: an inventory for
#: one generation must never drive another's tool syntax (plan refuses the host).
PCI_NPUS = ProbeUnit(
    section="pci.npus",
    command=lambda ctx: "ap_pci_ids",
    render=_render_pci,
    describe=fixed("the Huawei NPUs' PCI device ids (/sys/bus/pci/devices)"),
    parse=text_only(pci.parse_pci_ids),
    fill=set_field("npu_pci_ids"),
    fact="npu_pci_ids",
)


def _render_map(ctx: RenderContext) -> list:
    """Ascend 950 only: ``npu-smi info -m``, and ``$AP_SLOTS`` ("NPU:SLOT" words) from its rows
    when its header is the 950 one (``NPU ID  Slot ID ...``)."""
    if not ctx.is_950:
        return []
    return [
        "AP_SLOTS=",
        'if [ -n "$AP_NPUSMI" ]; then',
        "\tap_run npu_smi.map '' ap_tool \"$AP_NPUSMI\" info -m",
        '\tif [ "$ap_rc" -eq 0 ] && [ -z "$ap_over" ]; then',
        "\t\tap_hdr=",
        '\t\twhile IFS= read -r ap_line || [ -n "$ap_line" ]; do',
        "\t\t\tset -- $ap_line",
        '\t\t\tif [ -z "$ap_hdr" ]; then',
        '\t\t\t\tif [ "$#" -eq 0 ]; then continue; fi',
        '\t\t\t\tcase "${1-} ${2-} ${3-} ${4-}" in "NPU ID Slot ID") ap_hdr=1 ;; *) ap_hdr=0 ;; esac',
        "\t\t\t\tcontinue",
        "\t\t\tfi",
        '\t\t\tif [ "$ap_hdr" != 1 ]; then break; fi',
        '\t\t\tcase "${1-}:${2-}" in *[!0-9:]* | :* | *:) continue ;; esac',
        '\t\t\tAP_SLOTS="$AP_SLOTS $1:$2"',
        '\t\tdone <"$AP_TMP/out"',
        "\tfi",
        "fi",
    ]


NPU_SMI_MAP = ProbeUnit(
    section="npu_smi.map",
    command=lambda ctx: 'ap_tool "$AP_NPUSMI" info -m',
    render=_render_map,
    describe=fixed("npu-smi info -m"),
    parse=text_only(npu_smi.parse_map),
    answered=lambda section: section.rc == 0 and dcmi_failure(section.text) is None,
    fill=set_field("npu_chips"),
    fact="npu_chips",
)


def _parse_health(stdout: str, where: Where) -> NpuHealth:
    health, code, info = npu_smi.parse_health(stdout)
    return NpuHealth(npu_id=where.npu, chip=where.chip, health=sys.intern(health), error_code=code, error_info=info)  # type: ignore[arg-type]


def _fill_health(draft: Draft, where: Where, health: NpuHealth) -> None:
    draft.npu_health.append(health)


def _render_health(ctx: RenderContext) -> list:
    """Health per chip; the Ascend 950 npu-smi takes no ``-c`` (card-level queries only: 950 guide,
    querying-the-device-health-status.md, ``npu-smi info -t health -i <id>``)."""
    if ctx.is_950:
        return ['ap_run npu_smi.health " npu=$ap_id chip=$ap_c card=1" ap_tool "$AP_NPUSMI" info -t health -i "$ap_id"']
    return ['ap_run npu_smi.health " npu=$ap_id chip=$ap_c" ap_tool "$AP_NPUSMI" info -i "$ap_id" -c "$ap_c" -t health']


def _describe_health(where: Where) -> str:
    if "card" in where.attrs:
        return f"npu-smi info -t health -i {where.npu}"
    return f"npu-smi info -i {where.npu} -c {where.chip} -t health"


NPU_SMI_HEALTH = ProbeUnit(
    section="npu_smi.health",
    scope=CHIP,
    command=lambda ctx: 'ap_tool "$AP_NPUSMI" info -i "$ap_id" -c "$ap_c" -t health',
    render=_render_health,
    describe=_describe_health,
    parse=_parse_health,
    fill=_fill_health,
    fact="npu_health[]",
    phases=VERIFY_ONLY,
)


def _fill_board_firmware(draft: Draft, where: Where, version: Optional[str]) -> None:
    draft.fields.setdefault("npu_firmware", {})[where.npu] = version


#: Board info is per NPU, not per chip: asked in the chip loop for chip 0 only.
NPU_SMI_BOARD = ProbeUnit(
    section="npu_smi.board",
    scope=CHIP,
    command=lambda ctx: 'ap_tool "$AP_NPUSMI" info -t board -i "$ap_id"',
    render=lambda ctx: [
        'if [ "$ap_c" -eq 0 ]; then',
        '\tap_run npu_smi.board " npu=$ap_id chip=$ap_c" ap_tool "$AP_NPUSMI" info -t board -i "$ap_id"',
        "fi",
    ],
    describe=lambda where: f"npu-smi info -t board -i {where.npu}",
    parse=text_only(port_state.parse_board_firmware),
    answered=lambda section: section.rc == 0 and dcmi_failure(section.text) is None,
    fill=_fill_board_firmware,
    fact="npu_firmware[npu id]",
    phases=VERIFY_ONLY,
)

# -- the device ids hccn_tool is asked about ------------------------------------------------


def _parse_devids(stdout: str, where: Where) -> Tuple[int, ...]:
    return tuple(int(word) for word in stdout.split() if word.isdigit())


def _fill_devids(draft: Draft, where: Where, devids: Tuple[int, ...]) -> None:
    for devid in devids:
        draft.npu(devid)


NPUS = ProbeUnit(
    section="npus",
    lenient=True,
    command=lambda ctx: "printf '%s\\n' $AP_DEVS",
    attrs='" from=$AP_DEVS_FROM"',
    describe=fixed("npus"),
    parse=_parse_devids,
    answered=lambda section: True,
    fill=_fill_devids,
    fact="npus (the device ids)",
)


# -- hccn_tool, per NPU -------------------------------------------------------------------------


HCCN_TOOL = ProbeUnit(
    section="tool.hccn_tool",
    lenient=True,
    command=lambda ctx: f'ap_locate hccn_tool "$AP_HOME/{paths.HCCN_TOOL_IN_HOME}"',
    render=lambda ctx: ["ap_hccn_tool"],  # the preamble's function runs that command and sets $AP_HCCN
    comment="hccn_tool: the live state of every NPU port.",
    probe=fixed("hccn_tool"),
    describe=fixed("locating hccn_tool"),
    parse=_tool_path,
    fill=set_field("hccn_tool"),
    fact="hccn_tool",
)


def _hccn_settle(name: str):
    @on_failure
    def settle(section: Section) -> Optional[Given]:
        if section.rc == 0:
            return None
        fields = hccn.not_configured(name, section.text)
        return Given(fields) if fields is not None else None

    return settle


def hccn_query(
    name: str,
    args: Tuple[str, ...],
    parse: Any,
    fact: str,
    phases: frozenset = BOTH,
    on_950: Optional[str] = None,
    parse_950: Any = None,
) -> ProbeUnit:
    """A per-NPU ``hccn_tool -i <devid> <args>`` query whose parser returns NpuFacts fields.

    ``on_950``: how the Ascend 950 tool asks the same (its syntax puts the mode first,
    ``hccn_tool -g -<cmd> -i <id>``): ``"bond"`` for the commands of the NPU's bond device
    (``-d bond<slot>``, the slot from ``npu-smi info -m``), ``"device"`` for the per-device ones
    (hicann/driver ``src/custom/network/hccn/ascend950``, ``tool_shell_ops.c``). None: the
    query has no 950 form here and is rendered as before. ``parse_950``: the parser of the 950
    answer where it differs (a 950 section carries ``slot=``)."""
    words = " ".join(args)

    def parse_either(stdout: str, where: Where) -> Any:
        return (parse_950 if parse_950 is not None and "slot" in where.attrs else parse)(stdout)

    command = args[0]

    def render(ctx: RenderContext) -> list:
        if ctx.is_950 and on_950 is not None:
            bond = ' -d "bond$ap_slot"' if on_950 == "bond" else ""
            return [f'ap_run {name} " npu=$ap_dev slot=$ap_slot" ap_hccn -g {command} -i "$ap_dev"{bond}']
        return [f'ap_run {name} " npu=$ap_dev" ap_hccn -i "$ap_dev" {words}']

    def describe(where: Where) -> str:
        if "slot" not in where.attrs:
            return f"hccn_tool -i {where.npu} {words}"
        bond = f" -d bond{where.attrs['slot']}" if on_950 == "bond" else ""
        return f"hccn_tool -g {command} -i {where.npu}{bond}"

    return ProbeUnit(
        section=name,
        scope=NPU,
        command=lambda ctx: f'ap_hccn -i "$ap_dev" {words}',
        render=render,
        describe=describe,
        parse=parse_either,
        settle=_hccn_settle(name),
        fill=update_npu,
        fact=fact,
        phases=phases,
    )


#: The per-NPU queries, in the order they run: twelve calls per NPU, each a few hundred ms on a
#: real driver; add one only for a fact a check needs. ``plan`` runs only the four it diffs
#: (ip, gateway, netdetect, tls); the rest are verify's.
HCCN_QUERIES = (
    hccn_query(
        "hccn.ip", ("-ip", "-g"), hccn.parse_ip, "npus[devid].ip, .netmask", on_950="bond", parse_950=hccn.parse_ip_950
    ),
    hccn_query(
        "hccn.gateway",
        ("-gateway", "-g"),
        hccn.parse_gateway,
        "npus[devid].gateway, .gateway_iface",
        on_950="bond",
        parse_950=hccn.parse_gateway_950,
    ),
    hccn_query(
        "hccn.netdetect",
        ("-netdetect", "-g"),
        hccn.parse_netdetect,
        "npus[devid].netdetect",
        on_950="device",
        parse_950=hccn.parse_netdetect_950,
    ),
    hccn_query("hccn.link", ("-link", "-g"), hccn.parse_link, "npus[devid].link", VERIFY_ONLY),
    hccn_query("hccn.net_health", ("-net_health", "-g"), hccn.parse_net_health, "npus[devid].net_health", VERIFY_ONLY),
    hccn_query("hccn.lldp", ("-lldp", "-g"), hccn.parse_lldp, "npus[devid].lldp", VERIFY_ONLY),
    # the 950 tool's -tls answer is the 910 form (hicann/driver Ascend_950_HCCN_Tool,
    # querying-the-tls-certificate-information-of-an-npu-device.md): the same parser reads it
    hccn_query("hccn.tls", ("-tls", "-g"), hccn.parse_tls, "npus[devid].tls", on_950="device"),
    hccn_query("hccn.link_stat", ("-link_stat", "-g"), hccn.parse_link_stat, "npus[devid].link_stat", VERIFY_ONLY),
    hccn_query(
        "hccn.optical", ("-optical", "-g"), optics.parse_optical, "npus[devid].optical_present, .optics", VERIFY_ONLY
    ),
    hccn_query("hccn.speed", ("-speed", "-g"), hccn.parse_speed, "npus[devid].speed_mbps", VERIFY_ONLY),
    hccn_query("hccn.duplex", ("-duplex", "-g"), port_state.parse_duplex, "npus[devid].duplex", VERIFY_ONLY),
    hccn_query("hccn.fec", ("-fec", "-g"), port_state.parse_fec, "npus[devid].fec", VERIFY_ONLY),
)


#: The per-NPU units a script rendered for the Ascend 950 runs: those with a 950 form. The 910
#: forms of the others (``-i N -link -g``, ``-stat -g``, ...) are refused by the 950 hccn_tool.
NPU_SECTIONS_950 = frozenset({"hccn.ip", "hccn.gateway", "hccn.netdetect", "hccn.tls"})


# -- files and kernel settings ----------------------------------------------------------------

HCCN_CONF = ProbeUnit(
    section="file.hccn_conf",
    lenient=True,
    comment="Files and kernel settings.",
    command=lambda ctx: f"cat {q(paths.HCCN_CONF)}",
    probe=fixed("hccn_conf"),
    describe=fixed(f"cat {paths.HCCN_CONF}"),
    parse=text_only(hccn_conf.parse_hccn_conf),
    settle=nothing_if_absent,
    fill=set_field("hccn_conf"),
    fact="hccn_conf",
)


def _fill_sysctl(draft: Draft, where: Where, value: str) -> None:
    draft.sysctl[sys.intern(where.attrs.get("key", "?"))] = sys.intern(value)


SYSCTL = ProbeUnit(
    section="sysctl",
    items=lambda ctx: ctx.sysctl_keys,
    item_attrs=lambda key: {"key": key},
    command=lambda ctx, key: f"cat {q(paths.proc_sys_path(key))}",
    probe=lambda where: f"sysctl:{where.attrs.get('key', '?')}",
    describe=lambda where: f"cat {paths.proc_sys_path(where.attrs.get('key', '?'))}",
    parse=lambda stdout, where: sysctl.parse_proc_value(stdout, where.attrs.get("key", "?")),
    fill=_fill_sysctl,
    fact="sysctl[key]",
)

SYSCTL_FILE = ProbeUnit(
    section="file.sysctl",
    lenient=True,
    command=lambda ctx: f"cat {q(paths.SYSCTL_FILE)}",
    probe=fixed("sysctl_file"),
    describe=fixed(f"cat {paths.SYSCTL_FILE}"),
    parse=text_only(sysctl.parse_sysctl_conf),
    settle=nothing_if_absent,
    fill=set_field("sysctl_file"),
    fact="sysctl_file",
)


def _managed_settle(section: Section) -> Optional[Given]:
    return Given(ManagedFile(path=section.attrs.get("path", "?"), exists=False)) if file_absent(section) else None


def _fill_managed(draft: Draft, where: Where, managed: ManagedFile) -> None:
    draft.managed_files[sys.intern(managed.path)] = managed


MANAGED = ProbeUnit(
    section="managed",
    items=lambda ctx: paths.MANAGED_FILES,
    item_attrs=lambda path: {"path": path},
    command=lambda ctx, path: f"sha256sum {q(path)}",
    probe=lambda where: f"file:{where.attrs.get('path', '?')}",
    describe=lambda where: f"sha256sum {where.attrs.get('path', '?')}",
    parse=lambda stdout, where: ManagedFile(
        path=where.attrs.get("path", "?"), exists=True, sha256=system.parse_sha256sum(stdout)
    ),
    settle=_managed_settle,
    fill=_fill_managed,
    fact="managed_files[path]",
)


ENV_FILE = ProbeUnit(
    section="file.env",
    command=lambda ctx: f"cat {q(paths.ENV_SH)}",
    probe=fixed("env_sh"),
    describe=fixed(f"cat {paths.ENV_SH}"),
    parse=text_only(system.parse_env_sh),
    settle=nothing_if_absent,
    fill=set_field("env_sh"),
    fact="env_sh",
    comment="The variables env.sh exports, so that a plan says which of them it adds, changes or drops.",
)


# -- firewalls ----------------------------------------------------------------------------------


def _firewall(name: str, command: str, parse: Any, answered: Any = None, comment: Optional[str] = None) -> ProbeUnit:
    """A firewall front end, asked only when installed (exit 127 otherwise: "not installed")."""

    def fill(draft: Draft, where: Where, tool: FirewallTool) -> None:
        draft.firewall[name] = tool

    return ProbeUnit(
        section=f"firewall.{name}",
        command=lambda ctx: f"ap_installed {command.split()[0]} ap_tool {command}",
        describe=fixed(command),
        parse=parse,
        settle=lambda section: Given(FirewallTool(installed=False)) if section.rc == 127 else None,
        answered=answered or (lambda section: section.rc == 0),
        unknown=lambda where: FirewallTool(installed=True),
        fill=fill,
        fact=f"firewall.{name}",
        comment=comment,
    )


FIREWALLS = (
    _firewall(
        "ufw",
        "ufw status",
        lambda stdout, where: FirewallTool(installed=True, active=firewall.parse_ufw_status(stdout)),
        comment="Firewalls that could block HCCL's host ports (only those installed are asked).",
    ),
    _firewall(
        "firewalld",
        "firewall-cmd --state",
        lambda stdout, where: FirewallTool(installed=True, active=firewall.parse_firewalld_state(stdout)),
        # firewall-cmd says "not running" with exit 252: the answer is on stdout either way.
        answered=lambda section: section.rc == 0 or (section.rc == 252 and bool(section.stdout.strip())),
    ),
    _firewall("nftables", "nft list tables", lambda stdout, where: _nft_tool(firewall.parse_nft_tables(stdout))),
)


def _nft_tool(tables: Tuple[str, ...]) -> FirewallTool:
    return FirewallTool(installed=True, active=bool(tables), detail=", ".join(tables) or None)


# -- versions -------------------------------------------------------------------------------------


def _parse_version(stdout: str, where: Where) -> VersionFile:
    return versions.parse_version_file(where.home_path(where.attrs.get("file", "")), stdout)


def _version(key: str, relative: str, comment: Optional[str] = None) -> ProbeUnit:
    def fill(draft: Draft, where: Where, info: VersionFile) -> None:
        draft.versions[key] = info

    return ProbeUnit(
        section=f"version.{key}",
        attrs=f'" file={relative}"',
        command=lambda ctx: f'cat "$AP_HOME/{relative}"',
        describe=lambda where: f"cat {where.home_path(where.attrs.get('file', ''))}",
        parse=_parse_version,
        settle=nothing_if_absent,
        fill=fill,
        fact=f"versions.{key}",
        comment=comment,
        phases=VERIFY_ONLY,
    )


def _render_cann(ctx: RenderContext) -> list:
    """One section per ``<home>/cann`` and ``<home>/cann-<ver>`` directory (found by the shell)."""
    cann_file = paths.CANN_RUNTIME_VERSION_FILE
    return [
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
    ]


def _fill_cann(draft: Draft, where: Where, info: VersionFile) -> None:
    draft.versions["cann"].append(info)


VERSIONS = (
    _version("driver", paths.DRIVER_VERSION_FILE, comment="Driver, firmware and CANN versions."),
    _version("firmware", paths.FIRMWARE_VERSION_FILE),
    # $AP_ARCH: set after the arch unit (the toolkit directory is named after the architecture).
    _version("toolkit", paths.TOOLKIT_INFO_FILE.format(arch="$AP_ARCH")),
    _version("nnae", paths.NNAE_INFO_FILE),
    ProbeUnit(
        section="version.cann",
        command=lambda ctx: f'cat "$AP_HOME/$ap_dir/{paths.CANN_RUNTIME_VERSION_FILE}"',
        render=_render_cann,
        describe=lambda where: f"cat {where.home_path(where.attrs.get('file', ''))}",
        parse=_parse_version,
        settle=nothing_if_absent,
        fill=_fill_cann,
        fact="versions.cann[]",
        phases=VERIFY_ONLY,
    ),
)


# -- the training interpreter ---------------------------------------------------------------------


def _fill_python(draft: Draft, where: Where, parsed: Any) -> None:
    env, problem = parsed
    draft.fields["python"] = env
    if problem:
        draft.error("python", "error", problem)


PYTHON = ProbeUnit(
    section="python",
    comment="The training interpreter's packages (importlib.metadata; torch_npu is never imported).",
    command=lambda ctx: f"ap_tool {q(ctx.python_path)} -c {q(python_pkgs.PROBE_CODE)}",
    describe=fixed("python probe (importlib.metadata)"),
    parse=lambda stdout, where: python_pkgs.parse_python_probe(where.python_path, stdout),
    fill=_fill_python,
    fact="python (and an error when the interpreter is too old)",
    phases=VERIFY_ONLY,
)


# -- host network -----------------------------------------------------------------------------------

NET_ADDRS = ProbeUnit(
    section="net.addrs",
    comment="Host NICs, and where the hostname points (loopback makes gloo/NCCL/HCCL miss each other).",
    command=lambda ctx: "ap_tool ip -o addr show",
    describe=fixed("ip -o addr show"),
    parse=text_only(netaddr.parse_ip_addr),
    fill=set_field("addresses"),
    fact="addresses",
    phases=VERIFY_ONLY,
)

HOSTNAME_RESOLVE = ProbeUnit(
    section="hostname.resolve",
    command=lambda ctx: "ap_resolve_self",
    describe=fixed("getent ahosts $(uname -n)"),
    parse=text_only(netaddr.parse_getent_ahosts),
    settle=lambda section: Given(()) if section.rc == netaddr.GETENT_NOT_FOUND_RC else None,
    fill=set_field("hostname_addresses"),
    fact="hostname_addresses",
    phases=VERIFY_ONLY,
)


#: Every unit, in the order the script runs them. ``chip`` units run inside the chip loop
#: rendered before ``npus``; ``npu`` units inside the hccn_tool loop after ``tool.hccn_tool``.
UNITS: Tuple[ProbeUnit, ...] = (
    SETTINGS,
    HOSTNAME,
    ARCH,
    OS_RELEASE,
    NPU_SMI_TOOL,
    NPU_SMI_LIST,
    PCI_NPUS,
    NPU_SMI_MAP,
    NPU_SMI_HEALTH,
    NPU_SMI_BOARD,
    superpod.SPOD_INFO,
    NPUS,
    HCCN_TOOL,
    *HCCN_QUERIES,
    superpod.VNIC,
    port_stats.FIRST_READ,
    *ub_units.UNITS,
    HCCN_CONF,
    SYSCTL,
    SYSCTL_FILE,
    MANAGED,
    ENV_FILE,
    *FIREWALLS,
    *VERSIONS,
    PYTHON,
    NET_ADDRS,
    HOSTNAME_RESOLVE,
    *JOB_UNITS,
    *jobenv.JOBENV_UNITS,
    port_stats.SECOND_READ,
    ub_units.UB_STAT2,
)


def by_section(units: Sequence[ProbeUnit] = UNITS) -> Dict[str, ProbeUnit]:
    """Section name → unit; two units printing the same section are a programming error."""
    table: Dict[str, ProbeUnit] = {}
    for unit in units:
        if unit.section in table:
            raise ValueError(f"two probe units print section {unit.section!r}")
        table[unit.section] = unit
    return table
