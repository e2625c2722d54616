"""The ``sa`` command line."""
