"""TODO layer docstring."""
