"""The leaf every layer may use: limits, exit codes, findings, host ranges, bounded YAML and JSON
input with located errors, terminal-safe text, where things live on an Ascend host, and the one
safe writer of output files. Imports nothing else of ascendprep."""
