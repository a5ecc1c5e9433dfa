"""Bundled benchmark suites (``<name>.json``)."""
