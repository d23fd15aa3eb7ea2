"""Result codes of ``hccn_tool`` and what each prints, on which stream (docs/ascend-reference.md §1.2).

The real tool returns its internal code from ``main()`` (the shell sees ``code & 0xFF``) and
prints by family: 0x1xxx command-line errors and 0x2xxx parameter errors on stderr (parameter
errors add the command's usage block on stdout), 0x3xxx tool and 0x4xxx driver errors from a
table whose "info"-level entries go to stdout (``hccn_tool is busy, please try again.``).
Codes follow the enum order of the tool's ``ossl_user_linux.h``.
"""

from __future__ import annotations

from .hccn_help import usage

# Internal result codes (ossl_user_linux.h enum order; the shell sees code & 0xFF).
OK = 0
MAJOR_CMD_TYPE_ERR = 0x1001
MAJOR_CMD_NUM_ERR = 0x1002
MAJOR_CMD_INVALID_ERR = 0x1003
MAJOR_CMD_DEV_ID_ERR = 0x1004
MAJOR_CMD_LEN_ERR = 0x1005
PARAM_INVALID_ERR = 0x2001
PARAM_OP_NOT_SUPPORT_ERR = 0x2003
PARAM_CMD_COUNT_ERR = 0x2004
PARAM_IP_INVALID_ERR = 0x2006
PARAM_CONFLICT_IP_ADDR_ERR = 0x2007
PARAM_DIFF_SEGMT_GTWY_ERR = 0x2008
PARAM_TLS_NO_CERT_ERR = 0x200E
PARAM_TLS_INVALID_ENABLE_ERR = 0x2010
TOOL_SYS_WRITE_FILE_ERR = 0x3004
TOOL_SYS_BUSY_ERR = 0x300B
TOOL_CMD_UNSUPPORT_ON_PRODUCT_ERR = 0x300D
TOOL_GATEWAY_NO_IP_CONF_ERR = 0x301A
TOOL_ACCESS_CONF_FILE_ERR = 0x301D
TOOL_CONFIG_BROAD_ADDRESS_ERR = 0x3025
DSMI_EXE_ERR = 0x4001
DSMI_GATEWAY_NOT_PRESET_ERR = 0x4002
DSMI_IPCONF_NOT_PRESET_ERR = 0x400D
DSMI_LINK_IS_DOWN_ERR = 0x4016

_ERR, _INFO = "err", "info"

#: Messages of tool-system (0x3xxx) and driver (0x4xxx) codes: (stream, text).
_CODE_MESSAGES: dict[int, tuple[str, str]] = {
    TOOL_SYS_WRITE_FILE_ERR: (
        _ERR,
        "Write configurations to config file failed. User configurations cannot be "
        "persisted! pls check cmd run permission.",
    ),
    TOOL_SYS_BUSY_ERR: (_INFO, "hccn_tool is busy, please try again."),
    TOOL_CMD_UNSUPPORT_ON_PRODUCT_ERR: (_INFO, "The command is not supported on this product."),
    TOOL_GATEWAY_NO_IP_CONF_ERR: (_ERR, "Unable to configure gateway, because ip is not configured!"),
    TOOL_ACCESS_CONF_FILE_ERR: (
        _ERR,
        "The hccn.conf can't access, cmd execute failed! pls check the conf file or cmd run permission.",
    ),
    TOOL_CONFIG_BROAD_ADDRESS_ERR: (_ERR, "Can not config broadcast address!"),
    DSMI_EXE_ERR: (_ERR, "Command execute failed!"),
    DSMI_GATEWAY_NOT_PRESET_ERR: (_ERR, "Get gateway failed, because no gateway was preset there!"),
    DSMI_IPCONF_NOT_PRESET_ERR: (_ERR, "Get ipconf failed, because no ip was preset there!"),
    DSMI_LINK_IS_DOWN_ERR: (_ERR, "Execute failed: Link status is down."),
}

_MAJOR_MESSAGES: dict[int, tuple[str, ...]] = {
    MAJOR_CMD_TYPE_ERR: (
        'Get invalid major cmd type. The valid major cmd type should be "-a" or "-i".',
        "Enter [ hccn_tool -h ] for more details.",
    ),
    MAJOR_CMD_INVALID_ERR: ("Get invalid major cmd.", "Enter [ hccn_tool -h ] for more details."),
    MAJOR_CMD_NUM_ERR: (
        "Get invalid major cmd number. Please check your input.",
        "Enter [ hccn_tool -h ] for more details.",
    ),
    MAJOR_CMD_DEV_ID_ERR: ("Get invalid device id.",),
    MAJOR_CMD_LEN_ERR: ("Get invalid input param len.",),
}

#: Parameter errors: (message, whether the command's usage block follows on stdout).
_PARAM_MESSAGES: dict[int, tuple[str, bool]] = {
    PARAM_INVALID_ERR: ("Get invalid parameters!", True),
    PARAM_OP_NOT_SUPPORT_ERR: ("Get unknown option!", True),
    PARAM_CMD_COUNT_ERR: ("The total count of input parameters is wrong!", True),
    PARAM_IP_INVALID_ERR: ("The ip address you configured is invalid!", False),
    PARAM_CONFLICT_IP_ADDR_ERR: ("The ip address configured is conflicted!", False),
    PARAM_DIFF_SEGMT_GTWY_ERR: (
        "The segment of configured gateway doesn't match that of the configured ip adress!",
        False,
    ),
    PARAM_TLS_NO_CERT_ERR: ("No certificate found, please set certs firstly!", False),
    PARAM_TLS_INVALID_ENABLE_ERR: ("Get invalid enable value!", True),
}

RECOVERY_FAILED = "Recovery failed. Check '/var/log/hccn_tool/hccn_config.log' for details."
LINK_UP_RECOVERY_FAILED = (
    "Link up executed, but recovery failed, please check '/var/log/hccn_tool/hccn_config.log' for details."
)


def report(code: int, attr: str, option: str, out, err) -> None:
    """Print the message(s) of a non-zero result code on the streams the real tool uses."""
    family = code & 0xF000
    if family == 0x1000:
        for line in _MAJOR_MESSAGES.get(code, ("Cmd execute failed!",)):
            err.write(line + "\n")
    elif family == 0x2000:
        message, with_usage = _PARAM_MESSAGES.get(code, ("Cmd execute failed!", False))
        err.write(message + "\n")
        if with_usage:
            out.write(usage(attr, option))
    elif code in _CODE_MESSAGES:
        stream, message = _CODE_MESSAGES[code]
        (out if stream == _INFO else err).write(message + "\n")
    else:
        err.write("Cmd execute failed!\n")
