"""``python -m ascendprep`` runs the command line."""

from ascendprep.cli import main

main()
