"""The package's version: one place, read by the public API, the command line and the tracer."""

__version__ = "0.1.0"
