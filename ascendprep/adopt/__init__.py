"""Adoption: what a running cluster already is (hosts, the vendor deployer's INI, a rank table),
read into one model and written back as the most compact inventory that reproduces it."""
