"""The ``hz`` command line: a thin layer over the Python API."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="heinzel", prog_name="hz")
def hz() -> None:
    """hz: a local-first engine for durable agents (Heinzelmännchen).

    Example: hz heinzel list --json
    """


def main() -> None:
    """Entry point of the ``hz`` console script."""
    hz()
