"""`mcp-sync login` and `logout`: sign in to a server configured with `auth: oauth`, or forget its
tokens. No server is started; the hub only reads its configuration and its token store."""

from __future__ import annotations

import argparse
import sys

from .. import ConfigEntries, MCPHub
from .._auth.redirect import open_browser
from .parser import EXIT_OK, EXIT_SERVER, Failure

__all__ = ["login", "logout"]


def _check_known(args: argparse.Namespace, entries: ConfigEntries) -> None:
    if all(config.server_name != args.server for config in entries.configs):
        source = args.config or args.from_host
        raise Failure(f"no server named {args.server!r} in {source}", EXIT_SERVER, "not_found")


def login(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    _check_known(args, entries)
    def show(url: str) -> None:
        print(
            f"To sign in to {args.server!r}, open this address in a browser:\n\n  {url}\n",
            file=sys.stderr,
            flush=True,
        )
        if not args.no_browser:
            open_browser(url)
        if sys.stdin.isatty():
            print(
                "If the browser runs on another machine, paste here the address it ended on "
                "(http://127.0.0.1:.../callback?code=...):",
                file=sys.stderr,
                flush=True,
            )

    hub.login(
        args.server,
        open_url=show,
        read_redirect=input if sys.stdin.isatty() else None,
        timeout=args.timeout,
    )
    print(f"signed in to {args.server!r}; the tokens are stored for the next runs")
    return EXIT_OK


def logout(args: argparse.Namespace, entries: ConfigEntries, hub: MCPHub) -> int:
    _check_known(args, entries)
    if hub.logout(args.server):
        print(f"signed out of {args.server!r}: its stored tokens are deleted")
    else:
        print(f"no tokens were stored for {args.server!r}")
    return EXIT_OK
