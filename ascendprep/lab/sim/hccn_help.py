"""Usage blocks of the simulated ``hccn_tool`` commands (shape of docs/ascend-reference.md §1.4 "Help").

``hccn_tool -h`` prints, per command, ``hccn_tool -i devid -<opt>`` and then the option block; a
parameter error prints ``[ hccn_tool -i devid -<opt> ] needs the following parameters:`` and the
block. Blocks end with a newline and are printed with one more, so a blank line follows each
(as the C tool's ``printf("%s\\n", help)`` does). Only the commands the simulator implements are
listed, in the real tool's table order (core commands first, then product extensions).
The texts follow the IPv4-only, non-debug build of the 910B/A3 tool.
"""

from __future__ import annotations

#: (attr, attr_value, option, help block) in the order ``hccn_tool -h`` prints them.
COMMANDS: tuple[tuple[str, str, str, str], ...] = (
    (
        "-i",
        "devid",
        "-ip",
        "   [-s]                 : set ip cfg \n"
        "       address %s       : set IPv4 ip address, such as x.x.x.x\n"
        "       netmask %s       : set IPv4 ip netmask, such as x.x.x.x\n"
        "   [-g]                 : get ip address and netmask/prefix_length \n",
    ),
    (
        "-i",
        "devid",
        "-gateway",
        "   [-s]                : set gateway cfg \n"
        "       gateway %s      : set IPv4 gateway, such as x.x.x.x\n"
        "   [-g]                : get gateway address \n",
    ),
    (
        "-i",
        "devid",
        "-netdetect",
        "   [-s]                : set net detect cfg \n"
        "       address %s      : set net detect IPv4 ip address, such as x.x.x.x\n"
        "   [-g]                : get net detect cfg \n",
    ),
    ("-i", "devid", "-lldp", "   [-g]        : get lldp cfg \n"),
    ("-i", "devid", "-cfg", "   recovery    : recovery cfg \n   status      : config status \n"),
    (
        "-i",
        "devid",
        "-link",
        "   [-s]                   : set the eth ports link status\n"
        "       down               : shut down eth port \n"
        "       up                 : start up eth port \n"
        "   [-g]                   : get the eth ports link status, UP or DOWN \n",
    ),
    ("-i", "devid", "-net_health", "   [-g]        : get net health status\n"),
    ("-i", "devid", "-optical", "   [-g]               : get optical info \n"),
    ("-i", "devid", "-stat", "   [-g]        : get packet statistics\n   [-c]        : clear packet statistics\n"),
    ("-a", "", "-cfg", "    recovery   : recovery cfg \n"),
    (
        "-i",
        "devid",
        "-tls",
        "   [-s]        : set tls cfg\n"
        "       enable %d : set tls enable, 0: disable, 1: enable\n"
        "       host      : if you want to set tls enable on host, you need to add host flag on the tail\n"
        "   [-g]        : get tls cfg\n"
        "       host      : if you want to get tls certificate suite on host, you need to add host flag on the tail\n",
    ),
    (
        "-i",
        "devid",
        "-link_stat",
        "   [-g]        : get link history statistics\n   [-c]        : clear link history statistics\n",
    ),
    ("-i", "devid", "-speed", "   [-g]        : get the speed of eth ports\n"),
    # [I] -duplex / -fec: the wording follows -speed's; their help text is not in the reference.
    ("-i", "devid", "-duplex", "   [-g]        : get the duplex of eth ports\n"),
    ("-i", "devid", "-fec", "   [-g]        : get the fec mode of eth ports\n"),
    (
        "-i",
        "devid",
        "-ping",
        "   [-g]                : get ping result\n"
        "       address %s      : set net detect IPv4 ip address, such as x.x.x.x\n"
        "      pkt %d           : ping cfg, the packet data length, [0 ~ 65507]\n",
    ),
)


def full_help() -> str:
    """Everything ``hccn_tool -h`` prints."""
    parts = []
    for attr, attr_value, option, block in COMMANDS:
        parts.append(f"hccn_tool {attr} {attr_value} {option}\n")
        parts.append(block + "\n")
    return "".join(parts)


def usage(attr: str, option: str) -> str:
    """The block a parameter error prints for one command."""
    for cmd_attr, _value, cmd_option, block in COMMANDS:
        if cmd_attr == attr and cmd_option == option:
            return f"[ hccn_tool {attr} devid {option} ] needs the following parameters:\n{block}\n"
    raise KeyError(f"{attr} {option}")
