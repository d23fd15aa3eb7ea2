"""Scripts rendered per host (the ping and HCCS scripts) take their ~10 KB preamble from one
rendering per setting with the host's nonce swapped in (probes.shell._preamble_template): the
text must be what rendering it for that nonce gives, character for character."""

from __future__ import annotations

import random

import pytest

from ascendprep.facts import shell
from ascendprep.facts.ping import render_ping_script
from ascendprep.facts.sections import new_nonce


def test_a_preamble_is_its_own_rendering_for_every_nonce_and_setting() -> None:
    rng = random.Random(3)
    homes = ["/usr/local/Ascend", "~", "~/Ascend", "/opt/my Ascend", "/opt/it's"]
    for _ in range(300):
        kind = rng.choice(["gather", "ping", "hccs"])
        nonce = (
            new_nonce()
            if rng.random() < 0.8
            else rng.choice(["0" * 16, "f" * 16, "ABCDEF0123456789", "x'y z", "", "0123456789abcdef0"])
        )
        settings = (
            rng.randrange(1, 600),
            rng.randrange(0, 8),
            rng.choice(homes),
            rng.choice([1, 512, 4096, 65536, 16 << 20]),
            rng.randrange(1, 17),
        )
        timeout, retries, home, cap, parallel = settings
        for each in (nonce, new_nonce()):  # the second host of the same settings: from the cache
            made = shell.preamble(kind, each, timeout, retries, home, output_cap=cap, parallel=parallel)
            assert made == shell._render_preamble(kind, each, timeout, retries, home, cap, parallel)
    assert shell._preamble_template.cache_info().hits > 0


def test_a_nonce_that_is_not_sixteen_hex_digits_is_rendered_not_substituted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        shell, "_preamble_template", lambda *a: pytest.fail("a cached preamble took a nonce it cannot stand for")
    )
    text = shell.preamble("ping", "it's", 15, 5, "/usr/local/Ascend", output_cap=4096, parallel=8)
    assert "AP_M=@@it's" in text


def test_two_hosts_ping_scripts_differ_only_by_their_own_nonce() -> None:
    pairs = [(0, "10.20.0.9"), (1, "10.20.1.9")]
    first, second = (render_ping_script(pairs, per_command_timeout=15) for _ in range(2))
    nonce_of = lambda script: script.split("AP_M=@@", 1)[1][:16]  # noqa: E731
    assert nonce_of(first) != nonce_of(second)
    assert first.replace(nonce_of(first), nonce_of(second)) == second
    assert first.count(nonce_of(first)) == 2  # AP_M and the header line, nowhere else
