"""Quick start: connect to the servers in a config file, list their tools, call them.

Run from the repository root, with the virtualenv active:

    python examples/quickstart.py
"""

from mcp_sync import MCPHub, ToolNotFoundError


def main() -> None:
    # start() connects every server in parallel; leaving the block closes them all.
    with MCPHub.from_file("examples/servers.yaml") as hub:
        print(hub)
        for name, server in hub.servers.items():
            print(f"server {name}: {server.state}, protocol {server.protocol_version}")

        print("\ntools:")
        for tool in hub.tools():
            print(f"  {tool.name:<32} {tool.description}")

        # A blocking call; the result's text is what a model would read.
        result = hub.call_tool("mcp__demo__word_count", {"text": "the quick brown fox"}, timeout=10)
        print("\nword_count:", result.structured_content)

        result = hub.call_tool("mcp__demo__convert_units", {"value": 10, "from_unit": "km", "to_unit": "mi"})
        print("10 km in miles:", result.text)

        # A tool that fails answers with an error result, not an exception.
        result = hub.call_tool("mcp__demo__calculate", {"expression": "1 / 0"})
        if result.is_error:
            print("calculate reported an error:", result.text)

        # A name that no server offers is an exception.
        try:
            hub.call_tool("mcp__demo__no_such_tool", {})
        except ToolNotFoundError as exc:
            print("as expected:", exc)


if __name__ == "__main__":
    main()
