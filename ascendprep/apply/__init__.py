"""ACT, the pure half: the one script a host runs for its changes (``script``) and the journal of
what was done (``journal``). Running it over SSH is :mod:`ascendprep.run.hosts`'s."""
