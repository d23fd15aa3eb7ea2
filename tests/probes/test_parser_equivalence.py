"""The fast paths of the heaviest gather parsers read exactly what the plain line-by-line reading did.

``hccn.optical`` and ``hccn.stat`` are parsed for every NPU of every host a verify reads (issue 12:
a 4,096-host verify parses 65,536 of each), so both read their common form with one dict lookup
or one regex per answer. These tests hold them to the reading they replaced, on the recorded and
fixture outputs and on many randomly damaged variants of them (odd spacing and case, tabs, CRs,
blank lines, NA and garbage values, lane numbers past the last lane, repeated and 20-digit
counters, a missing last newline): the same fact, or the same refusal, word for word.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from ascendprep.facts.model import OpticalInfo, OpticalThresholds
from ascendprep.facts import optics, port_stats
from ascendprep.facts.sections import parse_transcript
from ascendprep.facts.text import UnexpectedOutput, content_lines, not_as_expected

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "probes"
RECORDED = ROOT / "bench" / "scale_data" / "a2-converged.gather.txt"


# -- the reference: parse_optical_info as it read before its one-lookup pass (commit 1a26be8) ----

def _ref_reading(key: str, value: str, unit: str) -> Optional[float]:
    """``4.4035 mW`` → 4.4035 (unit checked, case-insensitive); ``NA`` and the like → None."""
    if value.strip().lower() in optics._NO_VALUE:
        return None
    match = optics._NUMBER.match(value.strip())
    if not match or match.group(2).lower() != unit:
        raise UnexpectedOutput(f"optical {key} {value.strip()!r} is not a number in {unit}")
    return float(match.group(1))


def reference_parse_optical_info(stdout: str) -> OpticalInfo:
    """:class:`OpticalInfo` from ``-optical -g``; UnexpectedOutput for any other text."""
    if "digital diagnostic monitoring" in stdout.lower():
        raise UnexpectedOutput("the 'v2' table form of -optical -g (powers in dBm) is not supported; expected 'name : value' lines")
    present: Optional[bool] = None
    values: Dict[str, object] = {}
    thresholds: Dict[str, Optional[float]] = {}
    flags: Dict[str, Optional[int]] = {}
    lanes: Dict[Optional[int], Dict[str, Optional[float]]] = {}
    for line in content_lines(stdout):
        key, sep, value = line.partition(":")
        if not sep:
            if line.lower() in ("optical info", "..."):
                continue
            raise UnexpectedOutput(f"unrecognised optical line {line!r}")
        key = " ".join(key.split()).lower()
        value = value.strip()
        if key == "optical info":
            continue
        if key == "present":
            if value.lower() not in optics._PRESENT:
                raise UnexpectedOutput(f"optical present value {value!r}")
            present = optics._PRESENT[value.lower()]
        elif key == "temperature":
            if value.lower() in optics._NO_VALUE:
                values["temperature_note"] = value or "NA"
            else:
                values["temperature_c"] = _ref_reading(key, value, "c")
        elif key == "vcc":
            values["vcc_mv"] = _ref_reading(key, value, "mv")
        elif key == "high power enable reg":
            values["high_power_enabled"] = {"enabled": True, "not enabled": False}.get(value.lower())
        elif key == "xsfp wave length":
            wave = _ref_reading(key, value, "nm")
            values["wavelength_nm"] = int(wave) if wave else None
        elif key in optics._TEXT_KEYS:
            values[optics._TEXT_KEYS[key]] = value or None
        elif key in optics._THRESHOLD_KEYS:
            name, unit = optics._THRESHOLD_KEYS[key]
            thresholds[name] = _ref_reading(key, value, unit)
        elif key in optics._FLAG_KEYS:
            flags[optics._FLAG_KEYS[key]] = optics._flag(key, value)  # unchanged by the fast path: shared by both readings
        else:
            lane_key = optics._LANE_KEY.match(key)
            if lane_key is None:
                continue  # vendor org unique id, date code, SNR lines, vendor rev ...: not judged
            kind, index_text = lane_key.groups()
            index = int(index_text) if index_text else None
            if index is not None and index >= optics.MAX_LANES:
                raise UnexpectedOutput(f"optical lane {index} in {line!r}: at most {optics.MAX_LANES} lanes are known")
            name, unit = optics._LANE_FIELDS[kind]
            lanes.setdefault(index, {})[name] = _ref_reading(key, value, unit)
    if present is None:
        raise not_as_expected("'present : present|not present'", stdout)
    if None in lanes and len(lanes) > 1:
        indexed_only = {k: v for k, v in lanes.items() if k is not None}
        unindexed = lanes.pop(None)
        if any(v is not None for v in unindexed.values()) or not indexed_only:
            raise UnexpectedOutput("optical readings mix lane-numbered and unnumbered lines")
    indexed = None not in lanes
    return OpticalInfo(
        present_line=present,
        lanes=tuple(optics._lane(index, readings, [flags.get(name) for name in optics._LANE_FLAGS]) for index, readings in sorted(lanes.items(), key=lambda item: -1 if item[0] is None else item[0])),
        indexed=indexed,
        thresholds=OpticalThresholds(**thresholds),
        flags=flags,
        **values,  # type: ignore[arg-type]
    )


# -- inputs ----------------------------------------------------------------------------------


def _outputs(section: str) -> List[str]:
    """The fixtures' outputs of a section and, when the recording is there, the recorded ones."""
    texts = [json.loads(path.read_text()).get("output", "") for path in sorted((FIXTURES / section).glob("*.json"))]
    if RECORDED.exists():
        transcript = parse_transcript(RECORDED.read_text(), "gather")
        texts += [s.stdout for s in transcript.sections if s.name == section][:2]
    return [text for text in texts if isinstance(text, str) and text]


_SPACES = ["", " ", "  ", "\t", " \t "]


def _mutate_line(rng: random.Random, line: str, values: List[str]) -> List[str]:
    choice = rng.randrange(12)
    key, sep, value = line.partition(":")
    if choice == 0:
        return [line.upper()]
    if choice == 1 and sep:
        return [key.replace(" ", rng.choice(_SPACES) or " ") + sep + value]
    if choice == 2 and sep:
        return [rng.choice(_SPACES) + key + rng.choice(_SPACES) + ":" + rng.choice(_SPACES) + value.strip() + rng.choice(_SPACES)]
    if choice == 3 and sep:
        return [key + ":" + rng.choice(values)]
    if choice == 4:
        return [line, ""]
    if choice == 5:
        return [line + "\r"]
    if choice == 6:
        return []
    if choice == 7:
        return [line, line]
    if choice == 8 and sep:
        digits = "".join(ch for ch in key if ch.isdigit())
        lane = rng.choice(["0", "3", "7", "8", "9", "10", "07", " 2", ""])
        return [key.rstrip().rstrip("0123456789") + lane + " " * 3 + ":" + value] if digits or rng.random() < 0.3 else [line]
    if choice == 9:
        return [rng.choice(["optical info", "...", "garbage line", "Tx Power : 1.0 mW", "Tx Power0 : 1.0 mW", "present : not present", "vendor rev : A"])]
    if choice == 10:
        return [line.lower()]
    return [line]


def _variants(texts: List[str], values: List[str], count: int, seed: int) -> List[str]:
    rng = random.Random(seed)
    out = list(texts)
    for _ in range(count):
        lines = rng.choice(texts).split("\n")
        mutated: List[str] = []
        for line in lines:
            mutated.extend(_mutate_line(rng, line, values) if rng.random() < 0.15 else [line])
        text = "\n".join(mutated)
        if rng.random() < 0.2:
            text = text.rstrip("\n")
        out.append(text)
    return out


def _outcome(parse, text: str):
    try:
        return ("fact", parse(text))
    except UnexpectedOutput as exc:
        return ("refused", str(exc))


# -- the tests -------------------------------------------------------------------------------

_OPTICAL_VALUES = ["NA", "na", "not supported", "get failed", "", "0.8912 mW", "0.8912 MW", "3262.90 mV", "45 C", "850 nm", "-1.5 dBm",
                   "abc", "0x0", "0x3", "0x10000", "12", "enabled", "not enabled", "present", "not present", "maybe", "1e3 mW"]


def test_optical_fast_reading_matches_the_line_reading() -> None:
    texts = _outputs("hccn.optical")
    assert texts, "no optical outputs to compare"
    variants = _variants(texts, _OPTICAL_VALUES, 3000, seed=12)
    facts = 0
    for text in variants:
        got, want = _outcome(optics.parse_optical_info, text), _outcome(reference_parse_optical_info, text)
        assert got == want, text
        facts += got[0] == "fact"
    assert facts > 300  # the variants exercise the accepting path, not only refusals


_STAT_VALUES = ["0", "12", "18446744073709551615", "18446744073709551616", "99999999999999999999", "1234567890123456789",
                " 5", "x", "", "-1", "٣"]


def test_stat_fast_reading_matches_the_line_reading() -> None:
    texts = _outputs("hccn.stat")
    assert texts, "no -stat outputs to compare"
    variants = _variants(texts, _STAT_VALUES, 3000, seed=20)
    fast = 0
    for text in variants:
        want = _outcome(port_stats._parse_stat_lines, text)
        assert _outcome(port_stats.parse_stat, text) == want, text
        assert _outcome(port_stats.read_counters, text) == want, text  # what the gather's unit reads
        fast += port_stats._driver_form(text) is not None
    assert fast > 100  # many variants take the one-regex path


@pytest.mark.parametrize(
    "text, refusal",
    [
        ("packet statistics:\na:1\na:2\n", "counter a is listed twice"),
        ("packet statistics:\na:18446744073709551616\n", "a 18446744073709551616 is larger than a 64-bit counter"),
        ("packet statistics:\n" + "".join(f"c{i}:1\n" for i in range(513)), "more than 512 counters"),
    ],
)
def test_stat_refusals_are_worded_by_the_line_reading(text: str, refusal: str) -> None:
    with pytest.raises(UnexpectedOutput, match=refusal):
        port_stats.parse_stat(text)


def _reference_os_release(text: str) -> Dict[str, str]:
    """parse_os_release as it read before its one-word fast path: every value through shlex."""
    import re
    import shlex

    values: Dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.match(r"^[A-Z][A-Z0-9_]*$", key):
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            continue
        values[key] = " ".join(words)
    return values


def test_os_release_one_word_values_read_as_shlex_reads_them() -> None:
    from ascendprep.facts import system

    rng = random.Random(17)
    alphabet = ["a", "B", " ", '"', "'", "\\", "\t", "#", "(", "=", "\u00a0", "\x0b", "$", "é", "\n", "\r", "\u2028"]
    for _ in range(30000):
        text = "KEY=" + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 8)))
        assert system.parse_os_release(text) == _reference_os_release(text), repr(text)
    recorded = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nNAME=\'x y\'\nV="a\\"b"\n'
    assert system.parse_os_release(recorded) == _reference_os_release(recorded)


def test_device_addresses_read_as_ipaddress_reads_them() -> None:
    import ipaddress

    from ascendprep.facts import hccn

    def reference(value: str) -> Optional[str]:
        try:
            return str(ipaddress.IPv4Address(value))
        except ValueError:
            return None

    def fast(value: str) -> Optional[str]:
        try:
            return hccn._ipv4(value, "ipaddr")
        except UnexpectedOutput:
            return None

    rng = random.Random(4)
    parts = ["0", "1", "00", "01", "9", "10", "99", "100", "199", "200", "249", "250", "255", "256", "300", "1000", "", "٣", " 1", "a", "-1", "+1"]
    accepted = 0
    for _ in range(30000):
        value = ".".join(rng.choice(parts) for _ in range(rng.choice([3, 4, 4, 4, 5])))
        if rng.random() < 0.05:
            value += "\n"
        assert fast(value) == reference(value), repr(value)
        accepted += fast(value) is not None
    assert accepted > 300


def test_host_addresses_read_as_ipaddress_reads_them() -> None:
    """``ip -o addr``'s address/prefix and getent's addresses: IPv4 in its own spelling is taken as
    it is (issue 12); every text reads as ipaddress.ip_interface / ip_address read it."""
    import ipaddress

    from ascendprep.facts import netaddr

    def reference(text: str):
        try:
            network = ipaddress.ip_interface(text)
        except ValueError:
            return None
        return str(network.ip), network.network.prefixlen

    def fast(text: str):
        try:
            return netaddr._address_prefix(text, "eth0")
        except UnexpectedOutput:
            return None

    def getent(word: str) -> Optional[Tuple[str, ...]]:
        try:
            return netaddr.parse_getent_ahosts(f"{word}   STREAM node1\n")
        except UnexpectedOutput:
            return None

    def getent_reference(word: str) -> Optional[Tuple[str, ...]]:
        try:
            return (str(ipaddress.ip_address(word)),)
        except ValueError:
            return None

    rng = random.Random(5)
    octets = ["0", "1", "01", "10", "99", "255", "256", "٣", "a", ""]
    prefixes = ["", "/", "/0", "/8", "/24", "/024", "/32", "/33", "/64", "/064", "/128", "/129", "/٣", "/255.255.255.0", "/0.0.0.255", "/x", "/ 24", "/24 ", "/64/64"]
    accepted = 0
    for _ in range(20000):
        address = ".".join(rng.choice(octets) for _ in range(rng.choice([3, 4, 4, 4])))
        if rng.random() < 0.3:
            address = rng.choice(["::1", "fe80::1", "fe80::7c24:1fff:fe82:209d", "2001:db8::", "1::2::3", "FE80::A", "fe80::1%eth0", "::ffff:1.2.3.4", "fe80:::1", "::", ":", "fe80::٣"])
        text = address + rng.choice(prefixes)
        assert fast(text) == reference(text), repr(text)
        assert getent(address) == getent_reference(address), repr(address)
        accepted += fast(text) is not None
    assert accepted > 1000


# -- the ping summary: searched from the last '=' before the first '%' (ping.parse_ping_summary) --

def _reference_ping_summary(stdout: str) -> Optional[Tuple[int, int, float]]:
    """parse_ping_summary as it read before its bounded search: the pattern searched over the whole text."""
    from ascendprep.facts.ping import _SUMMARY_RE

    match = _SUMMARY_RE.search(stdout)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), float(match.group(3))


def test_ping_summary_bounded_search_finds_the_first_summary() -> None:
    from ascendprep.facts.ping import parse_ping_summary

    recorded = (ROOT / "bench" / "scale_data" / "a2-converged.ping.txt").read_text()
    pings = [section.stdout for section in parse_transcript(recorded, "ping").sections if section.name == "ping"]
    assert pings
    # Pieces a summary is made of, their case variants (re.IGNORECASE also matches ſ, K, İ, ı),
    # Unicode digits and spaces, and what lies around a summary (=, %, other lines).
    pieces = ["3", "0", "12", "1234567890", "٣", " ", "\n", "\t", "\x0b", "\u2028", "%", "=", ",", ".", "0.00",
              "packets transmitted,", "PACKETS TRANSMITTED,", "packet transmitted,", "received,", "ReCeIvEd,",
              "packet loss", "packets loss", "pacKets", "paſſ", "İı", "seq=1,time=0.03ms", "100.00%", "% packet loss",
              " packets transmitted, ", " received, ", "3 packets transmitted, 3 received, 0.00% packet loss"]
    rng = random.Random(12)
    texts = list(pings)
    for _ in range(20000):
        if rng.random() < 0.3:
            base = rng.choice(pings)
            cut = rng.randrange(len(base) + 1)
            texts.append(base[:cut] + "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 4))) + base[cut:])
        else:
            texts.append("".join(rng.choice(pieces) for _ in range(rng.randrange(0, 12))))
    found = 0
    for text in texts:
        want = _reference_ping_summary(text)
        assert parse_ping_summary(text) == want, text
        found += want is not None
    assert found > 1000  # the texts exercise matches, not only misses


def test_a_ping_loss_that_is_no_number_is_no_summary() -> None:
    """``1.2.3%`` once matched the summary and then made float() raise, losing every pair of the
    transcript; now that line is no summary, and the pair says so."""
    from ascendprep.facts.ping import parse_ping_output, parse_ping_summary

    assert parse_ping_summary("3 packets transmitted, 3 received, 1.2.3% packet loss\n") is None
    assert parse_ping_summary("3 packets transmitted, 3 received, 1.2.3% packet loss\n3 packets transmitted, 3 received, 0.00% packet loss\n") == (3, 3, 0.0)
    recorded = (ROOT / "bench" / "scale_data" / "a2-converged.ping.txt").read_text()
    results = parse_ping_output(recorded.replace("0.00% packet loss", "1.2.3% packet loss", 1))
    assert len(results) == 8 and sum(result.ok for result in results) == 7
    assert not results[0].ok and "no ping summary" in (results[0].error or "")


@pytest.mark.parametrize("npu", ["²", "9" * 5000])
def test_an_id_int_refuses_costs_the_section_not_the_host(npu: str) -> None:
    """``npu=²`` (a digit to str.isdigit(), not to int()) or a 5,000-digit id once raised out of
    the gather and the ping parse, losing every section or pair of the host."""
    from ascendprep.facts.gather import parse_gather_output
    from ascendprep.facts.ping import parse_ping_output

    facts = parse_gather_output(RECORDED.read_text().replace("begin hccn.ip npu=3", f"begin hccn.ip npu={npu}", 1))
    assert any(error.probe == "hccn.ip" and "without an NPU id" in error.message for error in facts.errors)
    assert facts.npus[3].optics is not None  # the NPU's other sections still read
    pings = (ROOT / "bench" / "scale_data" / "a2-converged.ping.txt").read_text()
    results = parse_ping_output(pings.replace("npu=3 target", f"npu={npu} target", 1))
    assert len(results) == 8 and sum(result.ok for result in results) == 7
    assert any("not run" in (result.error or "") for result in results)
