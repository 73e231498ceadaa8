"""A stdio MCP server with a hostile tool listing, for the mcp_sync reliability tests.

Run as ``python hostile_server.py [flags]``; it speaks MCP over stdio (2.x SDK low-level server,
both protocol eras). Every tool takes ``text: str = ""`` and returns ``"<raw name>|<text>"``
(``"big|<text>"`` for ``big_description``), so a caller can tell which raw name the server
received. The listing is built once at start-up, so even a huge one pages cheaply.

Flags
-----
--tool NAME              list a tool with the raw name NAME (repeatable; any string).
--description-bytes N    list a tool ``big_description`` whose description is N characters
                         long (`description_text(N)`: numbered, so truncation or corruption
                         shows).
--tools N                list N more tools ``t00000`` ... ``t<N-1>``.
--page-size P            ``tools/list`` pages hold P tools, chained by ``nextCursor``
                         (default 0: one page with everything).
--subscriptions          serve ``subscriptions/listen`` (2026-07-28) and list two more tools:
                         ``grow()`` adds a tool ``grown_<n>`` and announces it on the
                         subscription bus; ``end_subscriptions()`` ends every open listen
                         stream the graceful way, as the SDK does to a stream whose backlog
                         overflows (its client is expected to listen again and re-list).
--prompt NAME            list a prompt NAME, without arguments (repeatable): a server that offers
                         prompts too (listed only; ``prompts/get`` is not served).
Without ``--subscriptions`` the server answers ``subscriptions/listen`` with METHOD_NOT_FOUND.
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    ListPromptsResult,
    ListToolsResult,
    Prompt,
    TextContent,
    Tool,
)

INPUT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string", "default": ""}}}


def description_text(size: int) -> str:
    """`size` characters: ``[000000]-----...[000001]-----...`` (64-character chunks, numbered)."""
    chunk = 64
    parts = [f"[{i:06d}]" + "-" * (chunk - 8) for i in range(size // chunk + 1)]
    return "".join(parts)[:size]


def build_tools(names: list[str], description_bytes: int, extra: int) -> list[Tool]:
    tools = [Tool(name=name, description=f"Tool {name!r}.", input_schema=INPUT_SCHEMA) for name in names]
    if description_bytes > 0:
        tools.append(
            Tool(
                name="big_description",
                description=description_text(description_bytes),
                input_schema=INPUT_SCHEMA,
            )
        )
    tools += [
        Tool(name=f"t{i:05d}", description=f"Extra hostile tool number {i}.", input_schema=INPUT_SCHEMA)
        for i in range(extra)
    ]
    return tools


def build_server(
    tools: list[Tool], page_size: int, subscriptions: bool, prompts: list[str] | None = None
) -> Server[Any]:
    tools = list(tools)
    bus = InMemorySubscriptionBus()
    listen = ListenHandler(bus)
    if subscriptions:
        tools += [
            Tool(name="grow", description="Add a tool grown_<n> and announce it.", input_schema=INPUT_SCHEMA),
            Tool(name="end_subscriptions", description="End every listen stream.", input_schema=INPUT_SCHEMA),
        ]
    size = page_size if page_size > 0 else max(len(tools), 1)

    async def list_tools(_ctx: Any, params: Any) -> ListToolsResult:
        cursor = getattr(params, "cursor", None) if params is not None else None
        offset = 0
        if cursor is not None:
            try:
                offset = int(cursor)
            except ValueError:
                raise MCPError(code=INVALID_PARAMS, message=f"Invalid cursor: {cursor!r}") from None
        end = offset + size
        return ListToolsResult(tools=tools[offset:end], next_cursor=str(end) if end < len(tools) else None)

    async def call_tool(_ctx: Any, params: Any) -> CallToolResult:
        name = params.name
        if name not in {tool.name for tool in tools}:
            return CallToolResult(
                content=[TextContent(type="text", text=f"unknown tool {name!r}")], is_error=True
            )
        text = (params.arguments or {}).get("text", "")
        if name == "grow":
            grown = f"grown_{sum(tool.name.startswith('grown_') for tool in tools) + 1}"
            tools.append(Tool(name=grown, description="Grown at run time.", input_schema=INPUT_SCHEMA))
            await bus.publish(ToolsListChanged())
            return CallToolResult(content=[TextContent(type="text", text=grown)])
        if name == "end_subscriptions":
            listen.close()
            return CallToolResult(content=[TextContent(type="text", text="ended")])
        reply = "big" if name == "big_description" else name
        return CallToolResult(content=[TextContent(type="text", text=f"{reply}|{text}")])

    async def list_prompts(_ctx: Any, _params: Any) -> ListPromptsResult:
        return ListPromptsResult(prompts=[Prompt(name=name) for name in prompts or ()])

    return Server(
        "mcp-sync-hostile",
        on_list_prompts=list_prompts if prompts else None,
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=listen if subscriptions else None,
    )


async def serve(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser(description="mcp_sync test server with a hostile tool listing")
    parser.add_argument("--tool", action="append", default=[])
    parser.add_argument("--description-bytes", type=int, default=0)
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--subscriptions", action="store_true")
    parser.add_argument("--prompt", action="append", default=[])
    args = parser.parse_args()
    tools = build_tools(args.tool, args.description_bytes, args.tools)
    anyio.run(serve, build_server(tools, args.page_size, args.subscriptions, args.prompt))


if __name__ == "__main__":
    main()
