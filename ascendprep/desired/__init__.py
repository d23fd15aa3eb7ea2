"""WHAT MUST BE TRUE: an inventory turned into the desired state of every node and NPU
(``state``), with the files ascendprep writes (``envfiles``) and the HCCL rank table
(``ranktable``). Pure: imports the inventory, compat and the fact model, never a host."""
