"""Output for people (rich tables) and machines (JSON with a schema_version, JUnit XML)."""

SCHEMA_VERSION = 1
