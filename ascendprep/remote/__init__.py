"""TRANSPORT only: how one command reaches one host. SSH through paramiko and fabric (the only
importer of either), the same interface on this machine (``local``), host keys, sudo, output caps,
the launcher line, failure kinds and what a failed connect means, and the command's deadline.

This file imports nothing, so that a command (or ``--help``) that needs one light module, say
``remote.sudo``, does not load paramiko and fabric with it: import from the modules.
"""
