"""Exit codes, the same for every command (documented in the README)."""

OK = 0
#: Checks failed, a host failed or could not be reached, or an apply step failed.
FAILED = 1
#: Invalid input (inventory, plan file, arguments) or usage error; click uses 2 for usage too.
INVALID = 2
#: ``plan --detailed-exitcode``: the plan has changes pending.
CHANGES = 3
#: ``diagnose``: the root-cause rank was named (OK), or no rule decided it (the suspects are listed).
ROOT_NAMED = OK
NO_ROOT_DECIDED = FAILED
