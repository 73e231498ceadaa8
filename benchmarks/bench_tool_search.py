"""Tool search over many real servers: what all tool definitions cost in a model's context against the
discovery set, how well `hub.search_tools` finds the tool a person asks for, and how long a search takes.

One hub of the sixteen published MCP servers of `tests/server_corpus.py` (npm reference servers,
Playwright, Notion, GitHub, and Python servers on both SDK eras), installed once from the project's own
pin files (`tests/installs.py`: `npm ci` in tests/reference_servers, a virtualenv per requirements file).
Nothing is called: every server lists its tools with no key or network.

- (a) context cost: the sum of `Tool.context_tokens()` over every tool, per server
  (`hub.context_tokens()`), against the discovery set (`hub.function_specs(discovery=True)`: a search
  tool and a call tool), counted the same way (compact JSON, characters / 4); with tiktoken's
  `o200k_base` as a second column when tiktoken is installed (it is not a dependency).
- (b) quality: recall@1, @5, @10 and MRR of `hub.search_tools` on the labelled queries of
  `benchmarks/data/tool_search_queries.json` (a query is found at rank r when any of its tools ranks r),
  beside a naive baseline (rank by how many of the query's words occur in the tool's name and
  description); every query missed at 5 is listed with what ranked instead.
- (c) speed: one `search_tools` call on a registry of 1,000 tools (the corpus's tools replicated under
  distinct server names), median and p95, against the naive baseline and a plain substring filter
  over the same live registry, in alternating rounds.

    python benchmarks/bench_tool_search.py [--quick]

`--quick` runs fewer timing rounds; starting the sixteen servers (10-20 s) is the same either way.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import _common as c

from tests import server_corpus

TOOLS_AT_SCALE = 1000
RECALL_TARGET = 0.80  # recall@5 on the labelled set
SEARCH_TARGET_S = 0.005  # "well under a few ms" per query on 1,000 tools


def _compact(spec: dict[str, Any]) -> str:
    """A function spec as `Tool.context_tokens` counts it: compact JSON, non-ASCII as is."""
    return json.dumps(spec, separators=(",", ":"), ensure_ascii=False, default=str)


def _estimate(text: str) -> int:
    """The library's documented default estimate: characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


def _tiktoken() -> Callable[[str], int] | None:
    try:
        import tiktoken  # type: ignore[import-not-found]

        encoding = tiktoken.get_encoding("o200k_base")
    except Exception:  # not installed, or its encoding file cannot be had offline
        return None
    return lambda text: len(encoding.encode(text))


# ---------------------------------------------------------------------------------------------------
# the naive baselines: what a caller writes without a search library


_WORD = re.compile(r"[a-z0-9]+")


def naive_rank(tools: Sequence[Any], query: str, limit: int) -> list[Any]:
    """Tools ranked by how many of the query's words occur in their name and description (ties in
    registry order); tools with none left out."""
    words = set(_WORD.findall(query.lower()))
    scored = []
    for index, tool in enumerate(tools):
        text = f"{tool.name} {tool.description or ''}".lower()
        score = sum(1 for word in words if word in text)
        if score:
            scored.append((-score, index, tool))
    scored.sort(key=lambda item: (item[0], item[1]))
    return [tool for _, _, tool in scored[:limit]]


def substring_filter(tools: Sequence[Any], query: str, limit: int) -> list[Any]:
    """The tools whose name or description contains the query as typed (case aside)."""
    needle = query.lower()
    found = [tool for tool in tools if needle in f"{tool.name} {tool.description or ''}".lower()]
    return found[:limit]


# ---------------------------------------------------------------------------------------------------
# (a) context cost


def context_cost(hub: Any, results: c.Results) -> None:
    from mcp_sync import function_spec

    tools = hub.tools()
    per_server: dict[str, int] = hub.context_tokens()
    total = sum(tool.context_tokens() for tool in tools)
    mismatched = [t.name for t in tools if t.context_tokens() != _estimate(_compact(function_spec(t)))]
    if mismatched:
        c.note(f"note: {len(mismatched)} tools' context_tokens() differ from characters/4 of compact JSON")
    discovery = hub.function_specs(discovery=True)
    discovery_tokens = sum(_estimate(_compact(spec)) for spec in discovery)
    names = ", ".join(spec["function"]["name"] for spec in discovery)

    counter = _tiktoken()
    per_server_tt: dict[str, int] = hub.context_tokens(tokenizer=counter) if counter else {}
    total_tt = sum(per_server_tt.values()) if counter else None
    discovery_tt = sum(counter(_compact(spec)) for spec in discovery) if counter else None

    c.note(f"(a) context cost of {len(tools)} tool definitions from {len(per_server)} servers")
    c.note(f"    {'server':<12} {'tools':>5} {'tokens (chars/4)':>17} {'tokens (o200k)':>15}")
    counts: dict[str, int] = {}
    for tool in tools:
        counts[tool.server_name or ""] = counts.get(tool.server_name or "", 0) + 1
    for server in sorted(per_server, key=lambda name: -per_server[name]):
        tt = f"{per_server_tt[server]:>15}" if counter else f"{'-':>15}"
        c.note(f"    {server:<12} {counts.get(server, 0):>5} {per_server[server]:>17} {tt}")
    tt_total = f"{total_tt:>15}" if total_tt is not None else f"{'-':>15}"
    c.note(f"    {'all':<12} {len(tools):>5} {sum(per_server.values()):>17} {tt_total}")
    tt_disc = f"{discovery_tt:>15}" if discovery_tt is not None else f"{'-':>15}"
    c.note(f"    {'discovery':<12} {len(discovery):>5} {discovery_tokens:>17} {tt_disc}   ({names})")
    if counter is None:
        c.note("    (tiktoken is not installed: no o200k_base column)")
    sys.stdout.flush()

    results.add(
        f"context tokens: discovery set vs all {len(tools)} tools (chars/4)",
        str(discovery_tokens),
        str(total),
        c.x(c.ratio(discovery_tokens, total), 4),
    )
    if total_tt is not None and discovery_tt is not None:
        results.add(
            f"context tokens: discovery set vs all {len(tools)} tools (tiktoken o200k_base)",
            str(discovery_tt),
            str(total_tt),
            c.x(c.ratio(discovery_tt, total_tt), 4),
        )


# ---------------------------------------------------------------------------------------------------
# (b) quality on the labelled queries


@dataclasses.dataclass
class Quality:
    ranks: list[int | None]  # per query: rank (1-based) of its first relevant tool in the top 10

    def recall(self, k: int) -> float:
        return sum(1 for rank in self.ranks if rank is not None and rank <= k) / len(self.ranks)

    @property
    def mrr(self) -> float:
        return sum(1 / rank for rank in self.ranks if rank is not None) / len(self.ranks)


def _rank(found: Sequence[Any], relevant: set[str]) -> int | None:
    for index, tool in enumerate(found, 1):
        if tool.name in relevant:
            return index
    return None


def quality(hub: Any, queries: list[dict[str, Any]], results: c.Results) -> None:
    tools = hub.tools()
    known = {tool.name for tool in tools}
    unknown = sorted({name for q in queries for name in q["relevant"]} - known)
    if unknown:
        c.note(f"warning: labelled tools not in the registry (a server missing?): {unknown}")
    ours = Quality([])
    naive = Quality([])
    misses = []
    for query in queries:
        relevant = set(query["relevant"])
        found = hub.search_tools(query["query"], limit=10)
        rank = _rank(found, relevant)
        ours.ranks.append(rank)
        naive.ranks.append(_rank(naive_rank(tools, query["query"], 10), relevant))
        if rank is None or rank > 5:
            misses.append((query, rank, found[:5]))

    c.note(f"(b) {len(queries)} labelled queries over {len(tools)} tools")
    for label, side in (("search_tools", ours), ("naive word overlap", naive)):
        c.note(
            f"    {label:<19} recall@1 {side.recall(1):.3f}  @5 {side.recall(5):.3f}  "
            f"@10 {side.recall(10):.3f}  MRR {side.mrr:.3f}"
        )
    c.note(f"    misses at 5 ({len(misses)}):")
    for query, rank, top in misses:
        where = f"rank {rank}" if rank is not None else "not in top 10"
        c.note(f"    - {query['query']!r} wants {', '.join(query['relevant'])} ({where}); got:")
        for index, tool in enumerate(top, 1):
            c.note(f"        {index}. {tool.name}")
        if not top:
            c.note("        (nothing)")
    sys.stdout.flush()

    for k in (1, 5, 10):
        results.add(
            f"recall@{k} on {len(queries)} labelled queries",
            f"{ours.recall(k):.3f}",
            f"{naive.recall(k):.3f}",
            c.x(c.ratio(ours.recall(k), naive.recall(k)), 2),
            f">= {RECALL_TARGET:.2f}" if k == 5 else "-",
            ours.recall(k) >= RECALL_TARGET if k == 5 else None,
        )
    results.add(
        f"MRR on {len(queries)} labelled queries",
        f"{ours.mrr:.3f}",
        f"{naive.mrr:.3f}",
        c.x(c.ratio(ours.mrr, naive.mrr), 2),
    )


# ---------------------------------------------------------------------------------------------------
# (c) speed on 1,000 tools


def scaled_hub(tools: Sequence[Any], count: int) -> tuple[Any, list[Any]]:
    """A hub without servers whose registry holds `count` tools: `tools` again and again, each copy
    under its own server name (`c2_<server>`, ...), as a hub of many servers would have them; and the
    leases through which each copy's tools are written."""
    from mcp_sync import MCPHub, ToolRegistry

    registry = ToolRegistry()
    by_server: dict[str, list[Any]] = {}
    for tool in tools:
        by_server.setdefault(tool.server_name, []).append(tool)
    leases = []
    left = count
    copy = 1
    while left > 0:
        for server, own in sorted(by_server.items()):
            if left <= 0:
                break
            name = f"c{copy}_{server}"
            lease = registry.reserve_server(name, None)
            leases.append(lease)
            chosen = own[:left]
            lease.replace_tools(
                [
                    dataclasses.replace(tool, name=f"mcp__{name}__{tool.raw_name}", server_name=name)
                    for tool in chosen
                ]
            )
            left -= len(chosen)
        copy += 1
    return MCPHub(registry=registry), leases


def speed(tools: Sequence[Any], queries: list[dict[str, Any]], quick: bool, results: c.Results) -> None:
    big, leases = scaled_hub(tools, TOOLS_AT_SCALE)
    try:
        assert len(big.tools()) == TOOLS_AT_SCALE, len(big.tools())
        texts = [q["query"] for q in queries]
        rounds = 4 if quick else 20
        clock = time.perf_counter

        def timed(search: Callable[[str], object]) -> Callable[[], list[float]]:
            def run() -> list[float]:
                out = []
                for text in texts:
                    t0 = clock()
                    search(text)
                    out.append(clock() - t0)
                return out

            return run

        registry = big.registry
        sides = [
            c.Side("search_tools", timed(lambda q: big.search_tools(q, limit=5))),
            c.Side("naive", timed(lambda q: naive_rank(registry.tools(), q, 5))),
            c.Side("substring", timed(lambda q: substring_filter(registry.tools(), q, 5))),
        ]
        t0 = clock()
        big.search_tools(texts[0], limit=5)
        first = clock() - t0
        c.alternate(sides, rounds, progress="(c) timing")
        # One server's tool list changes (a tool goes): the next search sees the new registry.
        changed = leases[0]
        kept = big.registry.server_tools(changed.server_name)[1:]
        t0 = clock()
        changed.replace_tools(kept)
        big.search_tools(texts[0], limit=5)
        after_change = clock() - t0
        ours, naive, plain = (side.samples for side in sides)
        c.note(f"(c) one search over {TOOLS_AT_SCALE} tools, {len(texts)} queries x {rounds} rounds")
        c.note(f"    first search on a fresh registry (builds its index): {c.ms(first)}")
        c.note(f"    first search after one server's tools change (a tool removed): {c.ms(after_change)}")
        for side in sides:
            c.note(f"    {side.name:<13} {c.summary(side.samples, 1e6, ' µs')}")
        median, p95 = c.median(ours), c.percentile(ours, 95)
        results.add(
            f"search_tools on {TOOLS_AT_SCALE} tools, median (baseline: naive word overlap)",
            c.us(median),
            c.us(c.median(naive)),
            c.x(c.ratio(median, c.median(naive))),
            f"≤ {c.ms(SEARCH_TARGET_S)}",
            median <= SEARCH_TARGET_S,
        )
        results.add(
            f"search_tools on {TOOLS_AT_SCALE} tools, p95 (baseline: naive word overlap)",
            c.us(p95),
            c.us(c.percentile(naive, 95)),
            c.x(c.ratio(p95, c.percentile(naive, 95))),
            f"≤ {c.ms(SEARCH_TARGET_S)}",
            p95 <= SEARCH_TARGET_S,
        )
        results.add(
            f"search_tools on {TOOLS_AT_SCALE} tools, median (baseline: substring filter)",
            c.us(median),
            c.us(c.median(plain)),
            c.x(c.ratio(median, c.median(plain))),
        )
    finally:
        big.close()


def main() -> None:
    args = c.parse_args(__doc__.splitlines()[0])
    c.quiet_logs()
    c.print_header("tool search over 16 published servers: context cost, recall, speed", args.quick)

    from mcp_sync import MCPHub

    queries = json.loads(server_corpus.QUERIES_FILE.read_text())["queries"]
    installed = server_corpus.install()
    load = c.LoadMeter()
    with tempfile.TemporaryDirectory(prefix="tool-search-") as workdir:
        configs = server_corpus.configs(installed, Path(workdir))
        t0 = time.perf_counter()
        hub = MCPHub(configs).start()
        try:
            not_ready = {name: s.state for name, s in hub.servers.items() if s.state != "ready"}
            c.note(
                f"{len(configs)} servers started in {c.sec(time.perf_counter() - t0)}"
                + (f"; not ready: {not_ready}" if not_ready else "")
            )
            results = c.Results()
            context_cost(hub, results)
            quality(hub, queries, results)
            tools = hub.tools()
        finally:
            hub.close()
    speed(tools, queries, args.quick, results)
    c.note(load.report())
    results.print()


if __name__ == "__main__":
    main()
