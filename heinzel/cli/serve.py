"""``hz system serve``: the web head (`heinzel.web`) on 127.0.0.1."""

from __future__ import annotations

import click

from heinzel.cli.base import home_option, open_app
from heinzel.cli.commands import system


@system.command("serve")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, help="The port on 127.0.0.1.")
@home_option
def serve(port: int, home: str | None) -> None:
    """Serve "My Heinzelmännchen" on 127.0.0.1; prints the URL (with its token) to open.

    \b
    Example:
      hz system serve --port 8765
    """
    from heinzel.web.server import serve as run

    run(lambda: open_app(home), port, click.echo)
