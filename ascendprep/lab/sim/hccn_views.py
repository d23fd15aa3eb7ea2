"""Text renderers of ``hccn_tool`` queries whose output is more than a line or two.

Pure functions of a device document (see :mod:`ascendprep.lab.sim.state`); the formats are those
of docs/ascend-reference.md §1.4 (``-stat -g``, ``-tls -g``, ``-link_stat -g``).
"""

from __future__ import annotations

import time

#: ``-stat -g`` counters in the order the tool prints them (docs/ascend-reference.md §1.4).
STAT_KEYS: tuple[str, ...] = (
    ("mac_tx_mac_pause_num", "mac_rx_mac_pause_num", "mac_tx_pfc_pkt_num")
    + tuple(f"mac_tx_pfc_pri{i}_pkt_num" for i in range(8))
    + ("mac_rx_pfc_pkt_num",)
    + tuple(f"mac_rx_pfc_pri{i}_pkt_num" for i in range(8))
    + (
        "mac_tx_total_pkt_num",
        "mac_tx_total_oct_num",
        "mac_tx_bad_pkt_num",
        "mac_tx_bad_oct_num",
        "mac_rx_total_pkt_num",
        "mac_rx_total_oct_num",
        "mac_rx_bad_pkt_num",
        "mac_rx_bad_oct_num",
        "mac_rx_fcs_err_pkt_num",
        "roce_rx_rc_pkt_num",
        "roce_rx_all_pkt_num",
        "roce_rx_err_pkt_num",
        "roce_tx_rc_pkt_num",
        "roce_tx_all_pkt_num",
        "roce_tx_err_pkt_num",
        "roce_cqe_num",
        "roce_rx_cnp_pkt_num",
        "roce_tx_cnp_pkt_num",
        "roce_unexpected_ack_num",
        "roce_out_of_order_num",
        "roce_verification_err_num",
        "roce_qp_status_err_num",
        "roce_new_pkt_rty_num",
        "nic_tx_all_pkg_num",
        "nic_tx_all_oct_num",
        "nic_rx_all_pkg_num",
        "nic_rx_all_oct_num",
    )
)

#: Simulated factory certificates (``tls preconfigured[1]``: issued by a Huawei equipment CA).
_CERTS = (
    ("pub cert", "/C=CN/O=Huawei/OU=Ascend/CN=ascendprep-lab-npu", "/C=CN/O=Huawei/CN=Huawei Equipment CA"),
    ("ca1 cert", "/C=CN/O=Huawei/CN=Huawei Equipment CA", "/C=CN/O=Huawei/CN=Huawei Equipment Root CA"),
)
_CERT_START = 1704679973  # Mon Jan  8 02:12:53 2024 UTC
_CERT_END = 2335831973  # 20 years later


def stat_lines(device: dict) -> list[str]:
    """``-stat -g``: ``packet statistics:`` then ``key:value`` counters."""
    counters = device["counters"]
    return ["packet statistics:"] + [f"{key}:{counters.get(key, 0)}" for key in STAT_KEYS]


def stat_lines_short(device: dict) -> list[str]:
    """``-stat -g`` of an older (Atlas 800) driver: only the two RoCE error counters."""
    counters = device["counters"]
    return ["packet statistics:"] + [
        f"{key}:{counters.get(key, 0)}" for key in ("roce_rx_err_pkt_num", "roce_tx_err_pkt_num")
    ]


def link_stat_lines(devid: int, device: dict, legacy: bool, now: float, tag_word: str = "devid") -> list[str]:
    """``-link_stat -g``: counts and link changes, newest first, times in ``asctime`` form.

    ``legacy`` (Atlas 800 / 910, or an older driver) drops the ``link down count`` line, as older
    captures show; ``tag_word`` is ``device`` on drivers that print ``[device N]``.
    """
    tag = f"[{tag_word} {devid}]"
    lines = [
        f"{tag}current time        : {time.asctime(time.localtime(now))}",
        f"{tag}link up count       : {device['link_up_count']}",
    ]
    if not legacy:
        lines.append(f"{tag}link down count     : {device['link_down_count']}")
    history = device["link_history"]
    lines.append(f"{tag}link change records :" if history else f"{tag}link change records : NA")
    for when, up in reversed(history):
        lines.append(f"{tag}    {time.asctime(time.localtime(when))}    {'LINK UP' if up else 'LINK DOWN'}")
    return lines


def tls_lines(devid: int, switch: int, legacy: bool) -> list[str]:
    """``-tls -g``: the switch line, then one block per (simulated factory) certificate.

    ``legacy`` (Atlas 800 / 910) omits ``tls preconfigured[...]`` like older drivers.
    """
    head = f"dev_id:{devid}, tls switch[{switch}](0:disable, 1:enable), "
    if not legacy:
        head += "tls preconfigured[1](0:non-preset, 1:preset), "
    lines = [head + "tls alarm time threshold[60]days"]
    start = time.asctime(time.gmtime(_CERT_START))
    end = time.asctime(time.gmtime(_CERT_END))
    for kind, subject, issuer in _CERTS:
        lines += [
            f"dev_id:{devid}, [{kind}] info:",
            f"\t subject[{subject}]",
            f"\t issuer[{issuer}]",
            f"\t start_time[{start} GMT]",
            f"\t end_time[{end} GMT]",
            "\t tls expiration status[0](0:normal, 1:near expiration, 2:has expired)",
        ]
    return lines


#: The older ``-tls -g`` certificate blocks (HCCL fault-diagnosis docs): issuer and validity only.
_LEGACY_CERTS = (
    ("pub cert", "/C=CN/ST=GD/O=HUAWEI/OU=2012/CN=2_1thCA"),
    ("ca1 cert", "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA"),
    ("ca2 cert", "/C=CN/ST=GD/L=SZ/O=HUAWEI/CN=1thCA"),
)
_LEGACY_INDENT = " " * 9


def tls_lines_legacy(devid: int, switch: int) -> list[str]:
    """``-tls -g`` of an older driver: no ``tls preconfigured``, 9-space-indented issuer/start/end lines."""
    lines = [f"dev_id:{devid}, tls switch[{switch}](0:disable, 1:enable), tls alarm time threshold[60]days"]
    start = time.asctime(time.gmtime(_CERT_START))
    end = time.asctime(time.gmtime(_CERT_END))
    for kind, issuer in _LEGACY_CERTS:
        lines += [
            f"dev_id:{devid}, [{kind}] info:",
            f"{_LEGACY_INDENT}issuer[{issuer}]",
            f"{_LEGACY_INDENT}start_time[{start} GMT]",
            f"{_LEGACY_INDENT}end_time[{end} GMT]",
        ]
    return lines
