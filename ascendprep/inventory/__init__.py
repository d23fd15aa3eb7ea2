"""WHAT WAS ASKED: the inventory's schema (``model``), its loading with located errors (``load``),
the products (``products``), the device addressing rules (``addressing``, ``groups``), A3
super-pods (``superpods``), the rules HCCL puts on a rank table and on the ``env:`` the inventory
sets (``ranktable_rules``, ``hccl_env``), the sysctl allow-list (``sysctl``) and the grey-failure
thresholds an inventory may override (``thresholds``). Imports only :mod:`ascendprep.base`."""
