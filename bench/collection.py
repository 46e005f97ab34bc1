#!/usr/bin/env python3
"""A synthetic article collection, for `bench/run.py`'s big-collection case.

    python bench/collection.py INDEX_DB OUTDIR [--scale 1.0]

Writes OUTDIR/articles/**: at scale 1.0, 300 files in 12 sections (200 YAML annotation
files of 52 claims, 100 Markdown articles with 30 front-matter claims and 25 body
permalinks each), about 15,500 claims and 35,000 refs, citing symbols of vllm v0.20.0 and
v0.25.0 and lmcache v0.5.1 from INDEX_DB (read only; those three versions must be
indexed). Every ref form occurs (PATH::QUALNAME pinned by the file or written with its
own pin, dotted names, permalinks to whole symbols or some of their lines, line refs),
with quotes, `uses:` relations, waivers and about 1.5% broken refs (a misspelt qualname
or path). Symbols are drawn with a Zipf-like popularity, and the draws are seeded: the
same index gives the same collection. Prints, as JSON, how many files, claims and refs it
wrote and `popular`, the name of the symbol drawn most often (for `annotate links`).
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import random
import re
import sqlite3
import zlib
from pathlib import Path

SEED = 20261204
GITHUB = {"vllm": "https://github.com/vllm-project/vllm",
          "lmcache": "https://github.com/LMCache/LMCache"}
WORDS = [
    "缓存", "调度", "注意力", "内核", "张量并行", "显存", "预填充", "解码", "量化", "路由",
    "投机解码", "专家并行", "prefix", "caching", "scheduler", "attention", "kernel",
    "sharding", "memory", "prefill", "decode", "quantization", "router", "speculative",
    "experts", "block", "pool", "allocator", "graph", "capture",
]
POOL_SIZES = {("vllm", "v0.20.0"): 20000, ("vllm", "v0.25.0"): 8000, ("lmcache", "v0.5.1"): 3000}
FILES_AT_SCALE_1 = 300

Row = tuple[str, str, str, int, int, str]  # path, qualname, kind, start, end, blob id


class Collection:
    """The draws of one collection: an index's symbols and a seeded random source."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.rng = random.Random(SEED)
        self.lines: dict[str, list[str]] = {}
        self.pools = {key: self._pool(*key, size) for key, size in POOL_SIZES.items()}
        self.weights = {key: list(itertools.accumulate(1 / (rank + 1) ** 0.9
                                                       for rank in range(len(rows))))
                        for key, rows in self.pools.items()}
        classes: dict[str, list[str]] = {}
        for path, qualname, kind, *_ in self.pools["vllm", "v0.20.0"]:
            if kind == "class" and "." not in qualname:
                classes.setdefault(qualname, []).append(path)
        self.unique_classes = {name: paths[0] for name, paths in classes.items()
                               if len(paths) == 1}
        self.claims = self.refs = 0

    def _pool(self, repo: str, version: str, size: int) -> list[Row]:
        rows = self.conn.execute(
            "SELECT path, qualname, kind, start_line, end_line, blob_id FROM version_symbols"
            " WHERE repo = ? AND version = ? AND qualname NOT LIKE '%<locals>%'"
            " ORDER BY path, qualname", (repo, version)).fetchall()
        if not rows:
            raise SystemExit(f"{repo}@{version} is not indexed in the database")
        self.rng.shuffle(rows)
        return rows[:size]

    def draw(self, repo: str, version: str) -> Row:
        cumulative = self.weights[repo, version]
        pick = self.rng.random() * cumulative[-1]
        return self.pools[repo, version][bisect.bisect_left(cumulative, pick)]

    def popular(self) -> str:
        return self.pools["vllm", "v0.20.0"][0][1]

    def source_lines(self, blob_id: str) -> list[str]:
        if blob_id not in self.lines:
            (content,) = self.conn.execute("SELECT content FROM blobs WHERE id = ?",
                                           (blob_id,)).fetchone()
            self.lines[blob_id] = zlib.decompress(content).decode("utf-8", "replace").splitlines()
        return self.lines[blob_id]

    def quote_of(self, row: Row) -> str | None:
        _, _, _, start, end, blob_id = row
        body = self.source_lines(blob_id)[start - 1:end]
        candidates = [line.strip() for line in body[1:] if 12 <= len(line.strip()) <= 70]
        candidates = [text for text in candidates
                      if '"' not in text and "\\" not in text and not text.startswith("#")]
        return self.rng.choice(candidates) if candidates else None

    def uses_of(self, row: Row) -> str | None:
        _, _, _, start, end, blob_id = row
        text = "\n".join(self.source_lines(blob_id)[start - 1:end])
        names = [name for name in set(re.findall(r"\b[A-Z][A-Za-z0-9]+\b", text))
                 if name in self.unique_classes]
        if not names:
            return None
        name = self.rng.choice(sorted(names))
        return f"{self.unique_classes[name]}::{name}"

    def permalink(self, repo: str, version: str, row: Row) -> str:
        path, _, _, start, end, _ = row
        if self.rng.random() < 0.5 or end == start:
            return f"{GITHUB[repo]}/blob/{version}/{path}#L{start}-L{end}"
        first = self.rng.randint(start + 1, end)
        last = min(end, first + self.rng.randint(0, 5))
        return f"{GITHUB[repo]}/blob/{version}/{path}#L{first}-L{last}"

    def written_ref(self, file_pin: str) -> tuple[str, str, str, Row]:
        """A ref as written, with the repo, version and symbol it was drawn from."""
        roll = self.rng.random()
        other = "v0.25.0" if file_pin == "v0.20.0" else "v0.20.0"
        if roll < 0.50:
            repo, version = "vllm", file_pin
            row = self.draw(repo, version)
            return repo, version, f"{row[0]}::{row[1]}", row
        if roll < 0.62:
            repo, version = "vllm", other
            row = self.draw(repo, version)
            return repo, version, f"{repo}@{version}:{row[0]}::{row[1]}", row
        if roll < 0.67:
            repo, version = "lmcache", "v0.5.1"
            row = self.draw(repo, version)
            return repo, version, f"lmcache@v0.5.1:{row[0]}::{row[1]}", row
        if roll < 0.75:
            repo, version = "vllm", "v0.20.0"
            row = self.draw(repo, version)
            module = row[0][:-3].replace("/", ".").removesuffix(".__init__")
            return repo, version, f"vllm@v0.20.0:{module}.{row[1]}", row
        if roll < 0.85:
            repo, version = "vllm", self.rng.choice(("v0.20.0", "v0.20.0", "v0.25.0"))
            row = self.draw(repo, version)
            return repo, version, self.permalink(repo, version, row), row
        repo, version = "vllm", "v0.20.0"
        row = self.draw(repo, version)
        if roll < 0.93:
            first = self.rng.randint(row[3], row[4])
            last = min(row[4], first + self.rng.randint(0, 8))
            return repo, version, f"vllm@v0.20.0:{row[0]}#L{first}-L{last}", row
        return repo, version, f"{row[0]}::{row[1]}", row

    def ref_lines(self, file_pin: str) -> list[str]:
        """One ref entry as YAML lines (indented under ``refs:``)."""
        self.refs += 1
        repo, version, written, row = self.written_ref(file_pin)
        if self.rng.random() < 0.015:  # a broken ref: a misspelt qualname or path
            written = (written.replace("::", "::Missing") if "::" in written
                       else written.replace(".py", "_old.py"))
        lines = [f"      - ref: {quoted(written)}"]
        if self.rng.random() < 0.30 and "#L" not in written:
            quote = self.quote_of(row)
            if quote:
                lines.append(f"        quote: {quoted(quote)}")
        if (self.rng.random() < 0.06 and (repo, version) == ("vllm", "v0.20.0")
                and "::" in written):
            target = self.uses_of(row)
            if target:
                pinned = written.startswith("vllm@") or file_pin == "v0.20.0"
                target = target if pinned else f"vllm@v0.20.0:{target}"
                lines.append(f"        uses: [{quoted(target)}]")
        return lines

    def claim_lines(self, number: int, file_pin: str) -> list[str]:
        self.claims += 1
        text = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(4, 12)))
        lines = [f"  - id: claim-{number}", f"    text: {quoted(text)}"]
        if self.rng.random() < 0.02:
            lines += ["    waive:",
                      '      - {status: changed, until: 2099-12-31, reason: "reviewed"}']
        lines.append("    refs:")
        for _ in range(self.rng.choices((1, 2, 3, 4), (0.25, 0.3, 0.2, 0.25))[0]):
            lines += self.ref_lines(file_pin)
        return lines

    def claims_of(self, count: int, file_pin: str) -> list[str]:
        return [line for number in range(count) for line in self.claim_lines(number, file_pin)]

    def yaml_file(self, name: str, claims: int) -> str:
        pin = self.rng.choice(("v0.20.0",) * 4 + ("v0.25.0",))
        head = [f"# synthetic article {name}", f"article: synth/{name}.md",
                f"title: {quoted('合成文章 ' + name)}", f"at: vllm@{pin}", "claims:"]
        return "\n".join(head + self.claims_of(claims, pin)) + "\n"

    def markdown_file(self, name: str, claims: int, links: int) -> str:
        front = ["---", f"title: {quoted('博客 ' + name)}", "at: vllm@v0.20.0", "claims:",
                 *self.claims_of(claims, "v0.20.0"), "---"]
        body = [f"# {name}", ""]
        for number in range(links):
            version = self.rng.choice(("v0.20.0", "v0.25.0"))
            url = self.permalink("vllm", version, self.draw("vllm", version))
            words = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(5, 25)))
            if number % 7 == 3:  # code: not a claim
                body += ["```python", f"# Adapted from {url}", "```", ""]
            else:
                self.claims += 1
                self.refs += 1
                link = f"{words}，见 [源码]({url})。" if number % 2 else f"{words} {url} 中的实现。"
                body += [link, ""]
        return "\n".join(front + body) + "\n"


def quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def write_collection(index_db: Path, out: Path, scale: float) -> dict[str, object]:
    """Write the collection's articles under ``out``; what it holds."""
    conn = sqlite3.connect(f"file:{index_db}?mode=ro", uri=True)
    try:
        collection = Collection(conn)
        files = round(FILES_AT_SCALE_1 * scale)
        for number in range(files):
            section = out / "articles" / f"section{number % 12}"
            section.mkdir(parents=True, exist_ok=True)
            name = f"post-{number:04d}"
            if number % 3 == 2:
                text, suffix = collection.markdown_file(name, 30, 25), ".md"
            else:
                text, suffix = collection.yaml_file(name, 52), ".yml"
            (section / f"{name}{suffix}").write_text(text, encoding="utf-8")
    finally:
        conn.close()
    return {"files": files, "claims": collection.claims, "refs": collection.refs,
            "popular": collection.popular()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("index_db", type=Path, help="an index of vllm v0.20.0 and v0.25.0 "
                        "and lmcache v0.5.1")
    parser.add_argument("out", type=Path, help="the folder to write articles/ in")
    parser.add_argument("--scale", type=float, default=1.0, help="1.0: 300 files")
    args = parser.parse_args()
    print(json.dumps(write_collection(args.index_db, args.out, args.scale)))


if __name__ == "__main__":
    main()
