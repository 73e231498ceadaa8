"""Tool search: the registry's tools ranked for a query in plain words, with BM25 over weighted fields.

Each tool is a bag of words from four fields, weighted name > title > description > arguments
(BM25F's way: a word's count in a field is multiplied by the field's weight before BM25's saturation).
Words are split at snake_case, camelCase and kebab-case boundaries, lowercased, stop words dropped,
and cut by a light suffix stemmer ("files", "listing" and "listed" meet "file" and "list"). No model,
no network: a query costs a few dictionary look-ups per word over an inverted index.

`ToolSearch` keeps one index, current for one registry snapshot: the registry replaces its map of tools
on every change (never edits it), so the index is current as long as the registry hands out the same
map. On a change it compares the maps tool by tool (by identity, then equality) and re-reads only the
tools that came, went or changed, so a change costs a pass over the names, not a rebuild.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .tool import Tool, same_tool

__all__ = ["ToolSearch", "words"]

# BM25's usual constants (Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and
# Beyond", 2009): term-frequency saturation and length normalisation.
_K1 = 1.2
_B = 0.75

# How much one occurrence of a word counts in each field.
_NAME_WEIGHT = 3.0
_TITLE_WEIGHT = 2.0
_DESCRIPTION_WEIGHT = 1.0
_ARGUMENT_WEIGHT = 0.5

# How deep argument names and descriptions are read in a nested input schema.
_SCHEMA_DEPTH = 3

_CHUNK = re.compile(r"[^\W_]+")
# One word of an ASCII chunk: "HTTPServer" -> HTTP, Server; "createIssue2" -> create, Issue, 2.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

_STOP_WORDS = frozenset(
    {
        "a",
        "about",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "should",
        "so",
        "some",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "use",
        "using",
        "want",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
        "mcp",
    }
)
"""English function words and query filler; "mcp" starts every server tool's public name."""


def words(text: str, stems: dict[str, str] | None = None) -> list[str]:
    """The search words of `text`: split at case and punctuation, lowercased, stop words out, stemmed.
    `stems` remembers each word's stem across the calls of one index build (most words recur)."""
    if stems is None:
        stems = {}
    if text.isascii():  # the usual case: one pass, the camel-case pattern skips punctuation itself
        parts = _CAMEL.findall(text)
    else:
        chunks = _CHUNK.findall(text)
        parts = [p for chunk in chunks for p in (_CAMEL.findall(chunk) if chunk.isascii() else [chunk])]
    found = []
    for part in parts:
        word = part.lower()
        if word in _STOP_WORDS:
            continue
        stem = stems.get(word)
        if stem is None:
            stem = stems[word] = _stem(word)
        found.append(stem)
    return found


def _stem(word: str) -> str:
    """A light suffix stemmer: plurals, -ing, -ed and a final -e, so that inflections of one word meet."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and any(c in "aeiouy" for c in stem):
            word = stem
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, but not spelled -> spel
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


@dataclass(frozen=True, slots=True)
class _Document:
    """One tool's weighted word counts and their sum (its BM25 length)."""

    counts: Mapping[str, float]
    length: float


def _document(tool: Tool, stems: dict[str, str]) -> _Document:
    counts: dict[str, float] = {}

    def add(text: str | None, weight: float) -> None:
        for word in words(text or "", stems):
            counts[word] = counts.get(word, 0.0) + weight

    add(tool.name, _NAME_WEIGHT)
    add(tool.title, _TITLE_WEIGHT)
    add(tool.description, _DESCRIPTION_WEIGHT)
    for name, description in _arguments(tool.input_schema, _SCHEMA_DEPTH):
        add(name, _ARGUMENT_WEIGHT)
        add(description, _ARGUMENT_WEIGHT)
    return _Document(counts, sum(counts.values()))


def _arguments(schema: Any, depth: int) -> Iterator[tuple[str, str | None]]:
    """(name, description) of each property of `schema`, and of nested objects' and arrays' properties."""
    if depth <= 0 or not isinstance(schema, Mapping):
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, value in properties.items():
            description = value.get("description") if isinstance(value, Mapping) else None
            yield str(name), description if isinstance(description, str) else None
            yield from _arguments(value, depth - 1)
    yield from _arguments(schema.get("items"), depth - 1)


class ToolSearch:
    """Ranks the tools of a registry snapshot for a query; brings its index up to date when the
    snapshot changes, re-reading only the tools that changed.

    The index holds each tool's weighted word counts and, for each word, the tools that have it; BM25's
    weights, which depend on every tool (the average length, how many tools have a word), are computed
    at query time from them. Safe from any thread: one lock covers an update and a ranking, so searches
    right after a change bring the index up to date once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._source: Mapping[str, Tool] | None = None
        self._documents: dict[str, tuple[Tool, _Document]] = {}  # by public name, with the tool read
        self._postings: dict[str, dict[str, float]] = {}  # word -> public name -> weighted count
        self._average = 1.0
        self._weighted: dict[str, tuple[tuple[str, float], ...]] = {}  # word -> BM25 weights, until a change

    def search(self, tools: Mapping[str, Tool], query: str, limit: int) -> list[Tool]:
        """The best `limit` tools of `tools` (a registry snapshot) for `query`, best first; ties by name.
        Tools that share no word with the query are left out."""
        query_words = set(words(query))
        with self._lock:
            if self._source is not tools:
                self._update(tools)
            scores: dict[str, float] = {}
            for word in query_words:
                for name, weight in self._weights(word):
                    scores[name] = scores.get(name, 0.0) + weight
            best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0]))
            return [self._documents[name][0] for name, _score in best]

    def _weights(self, word: str) -> tuple[tuple[str, float], ...]:
        """Each tool with `word` and its BM25 term weight, for the current tools; kept until a change."""
        found = self._weighted.get(word)
        if found is not None:
            return found
        entries = self._postings.get(word, {})
        # BM25's inverse document frequency, in the form that stays positive for a word in most tools.
        idf = math.log(1 + (len(self._documents) - len(entries) + 0.5) / (len(entries) + 0.5))
        documents, average = self._documents, self._average
        found = self._weighted[word] = tuple(
            (
                name,
                idf
                * (count * (_K1 + 1) / (count + _K1 * (1 - _B + _B * documents[name][1].length / average))),
            )
            for name, count in entries.items()
        )
        return found

    def _update(self, tools: Mapping[str, Tool]) -> None:
        """Make the index that of `tools`: drop the tools that left or changed, read the new ones. A tool
        object the registry kept, or an equal one it made anew, keeps its words."""
        documents, postings = self._documents, self._postings
        for name, (tool, document) in list(documents.items()):
            now = tools.get(name)
            if now is tool:
                continue
            if now is not None and same_tool(now, tool):
                documents[name] = (now, document)
                continue
            del documents[name]
            for word in document.counts:
                entries = postings[word]
                del entries[name]
                if not entries:
                    del postings[word]
        stems: dict[str, str] = {}
        for name, tool in tools.items():
            if name in documents:
                continue
            document = _document(tool, stems)
            documents[name] = (tool, document)
            for word, count in document.counts.items():
                postings.setdefault(word, {})[name] = count
        lengths = math.fsum(document.length for _tool, document in documents.values())
        self._average = (lengths / len(documents) if documents else 0.0) or 1.0
        self._weighted = {}
        self._source = tools
