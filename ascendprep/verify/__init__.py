"""JUDGE: the node and cluster checks (``checks/``), which NPU pairs to ping (``mesh``), and the
all-reduce (``allreduce/``: the worker that runs on the nodes with the stdlib and torch only,
the scripts around it and the verdict over its records). Pure: evidence in, results out."""
