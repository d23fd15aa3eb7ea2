"""Reading a failed job's logs: events, the root rank, the faults (docs/when-a-job-fails.md)."""
