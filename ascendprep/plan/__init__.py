"""DECIDE: desired state against a host's facts. ``drift`` judges each managed item once (plan and
verify share it), ``changes`` are the typed changes that describe and render themselves,
``diff`` makes a host's plan, ``planfile`` saves and reads it, ``reads`` says which probes a plan
needs, ``superpods`` confirms an A3 pod against the hardware. Pure."""
