"""CappedOutput: the controller keeps at most the cap, and says when it dropped bytes."""

from ascendprep.remote.capture import STDERR_RESERVE, CappedOutput


def test_bytes_past_the_cap_are_counted_and_dropped() -> None:
    output = CappedOutput(10)
    output.add_stdout(b"0123456")
    output.add_stdout(b"789abc")
    assert (bytes(output.stdout), output.dropped, output.over_cap) == (b"0123456789", 3, True)


def test_stderr_first_bytes_survive_a_stdout_flood() -> None:
    output = CappedOutput(10)
    output.add_stdout(b"x" * 50)
    output.add_stderr(b"@ascendprep-started 42\n")
    assert bytes(output.stderr) == b"@ascendprep-started 42\n"
    output.add_stderr(b"e" * (STDERR_RESERVE * 2))
    assert len(output.stderr) == STDERR_RESERVE
    assert output.kept <= 10 + STDERR_RESERVE


def test_output_within_the_cap_is_whole() -> None:
    output = CappedOutput(100)
    output.add_stdout(b"out")
    output.add_stderr(b"err")
    assert (bytes(output.stdout), bytes(output.stderr), output.over_cap) == (b"out", b"err", False)
