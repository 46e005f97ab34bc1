"""A `DiffReport` as one self-contained HTML page.

Inline CSS only: no script, font, image or style sheet is loaded, and a
Content-Security-Policy says so to the browser (``default-src 'none'``). Links to GitHub
permalinks are plain ``<a href>``. Every string from code, claims, paths and versions is
escaped (`html.escape`, quotes included, in text and attribute values alike).

With thousands of symbols the page stays usable: each section lists its symbols by
package in ``<details>``, closed in a long section, which lists its packages first, and
only the symbols the report carries sources for (cited ones first, up to a limit the
page states) get a side-by-side diff.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Iterable

from annotations.diffs.model import (
    COUNT_ORDER,
    LINES,
    NONE_STORED,
    NOT_LINKED,
    SECTION_TITLES,
    ArticleImpact,
    Citation,
    DiffReport,
    LineChange,
    LinePlace,
    Location,
    Section,
    SymbolChange,
)
from annotations.diffs.sidebyside import side_by_side
from annotations.wording import counted, of_count

OPEN_GROUPS_UP_TO = 60
"""A section listing at most this many symbols shows its package groups open; in a longer
one, a group claims cite is open when it lists at most this many (two or three screens),
and the others start closed, each linked from the package list above them."""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def e(value: object) -> str:
    """Escape for HTML text and attribute values alike."""
    return html.escape(str(value), quote=True)


def render(report: DiffReport) -> str:
    body = [_header(report)]
    if report.annotated:
        body += [_articles(report), _summary(report)]
    else:
        body += [_summary(report), _articles(report)]
    body += [_section(report, section) for section in Section]
    if report.lines:
        body.append(_lines(report))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{e('annotate diff: ' + report.title)}</title>\n<style>{_STYLE}</style>\n"
        "</head>\n<body>\n<main>\n" + "\n".join(body) + "\n</main>\n</body>\n</html>\n"
    )


# --- header and summary ---------------------------------------------------------------


def _header(report: DiffReport) -> str:
    compared = sum(report.counts.values()) - report.counts.get("added", 0)
    listed = sum(report.listed.values())
    lines = (f", and {counted(len(report.lines), 'cited line range')} that changed"
             if report.lines else "")
    scope = (f"only the <b>{listed}</b> {of_count(listed, 'changed symbol')} that claims "
             f"cite{lines} {of_count(listed + len(report.lines), 'is', 'are')} listed"
             if report.annotated else f"<b>{listed}</b> symbols changed, moved, were removed "
             f"or added{lines}")
    links = "".join(
        f'<a href="#{section.value}">{e(SECTION_TITLES[section])} '
        f'<span class="count">{report.listed[section.value]}</span></a>'
        for section in Section
    )
    if report.lines:
        links += (f'<a href="#{LINES}">Changed lines <span class="count">{len(report.lines)}'
                  "</span></a>")
    return (
        f'<header><h1><span class="repo">{e(report.repo)}</span> '
        f"<code>{e(report.version_a)}</code> <span class=\"arrow\">→</span> "
        f"<code>{e(report.version_b)}</code></h1>"
        f'<p class="lead">{compared} symbols of {e(report.version_a)} compared; {scope}.</p>'
        f'<nav><a href="#summary">Summary</a><a href="#claims">Claims '
        f'<span class="count">{report.claim_count}</span></a>{links}</nav></header>'
    )


def _summary(report: DiffReport) -> str:
    cards = "".join(
        f'<div class="card v-{verdict}"><span class="num">{report.counts.get(verdict, 0)}'
        f'</span><span class="label">{verdict}</span></div>'
        for verdict in COUNT_ORDER
    )
    return (
        f'<section id="summary">{_h2("Summary")}<div class="cards">{cards}</div>'
        f"{_packages(report)}</section>"
    )


def _packages(report: DiffReport) -> str:
    verdicts = COUNT_ORDER[1:]
    rows = sorted(
        ((package, counts) for package, counts in report.packages.items()
         if any(counts.get(v) for v in verdicts)),
        key=lambda item: (-sum(item[1].get(v, 0) for v in verdicts), item[0]),
    )
    head = "".join(f'<th class="v-{v}">{v}</th>' for v in verdicts)
    body = "".join(
        f"<tr><td><code>{e(package)}</code></td>"
        + "".join(f'<td class="num">{_count(counts.get(v, 0))}</td>' for v in verdicts)
        + f'<td class="num muted">{counts.get("unchanged", 0)}</td></tr>'
        for package, counts in rows
    )
    return (
        f'<details class="packages"{" open" if len(rows) <= 12 else ""}><summary>By package '
        f'<span class="count">{len(rows)}</span></summary><table class="grid"><thead><tr>'
        f'<th>package</th>{head}<th class="muted">unchanged</th></tr></thead>'
        f"<tbody>{body}</tbody></table></details>"
    )


def _h2(title: str) -> str:
    """A section's heading, with a link back to the top of the page (``#top`` is the top
    of the document when no element has that id)."""
    return f'<h2>{title}<a class="top" href="#top">↑ top</a></h2>'


def _count(value: int) -> str:
    return str(value) if value else '<span class="muted">·</span>'


# --- claims ---------------------------------------------------------------------------


def _articles(report: DiffReport) -> str:
    head = f'<section id="claims">{_h2("Affected articles and claims")}'
    commands = {"link": "<code>annotate link</code>", "check": "<code>annotate check</code>"}
    if not report.claims_linked:
        return f'{head}<p class="note">{NOT_LINKED.format(**commands)}</p></section>'
    if not report.claims_stored:
        return f'{head}<p class="note">{NONE_STORED.format(**commands)}</p></section>'
    if not report.articles:
        return head + '<p class="muted">No claim cites a listed symbol.</p></section>'
    count = report.claim_count
    lead = (f'<p class="lead">{counted(count, "claim")} in '
            f'{counted(len(report.articles), "article")} {"cites" if count == 1 else "cite"} '
            f"{report.claims_cite}.</p>")
    articles = "".join(_article(article) for article in report.articles)
    return head + lead + _article_index(report.articles) + articles + "</section>"


def _article_index(articles: tuple[ArticleImpact, ...]) -> str:
    """A link to each article's claims, with how many there are."""
    links = "".join(
        f'<li><a href="#{e(_article_anchor(article))}"><code>{e(article.article)}</code> '
        f'<span class="count">{len(article.claims)}</span></a></li>'
        for article in articles
    )
    return f'<ul class="articles">{links}</ul>'


def _article_anchor(article: ArticleImpact) -> str:
    return f"article:{article.article}"


def _article(article: ArticleImpact) -> str:
    title = f' <span class="title">{e(article.title)}</span>' if article.title else ""
    claims = "".join(
        f'<li><div><code class="claim">#{e(claim.claim)}</code> '
        f'<span class="pin">@{e(claim.version)}</span> '
        f'<span class="where">{e(claim.where)}</span> '
        f'<span class="text">{e(claim.text)}</span></div><div class="cites">'
        + "".join(
            f'<a class="chip v-{e(section)}" href="#{e(_anchor(section, ref))}">'
            f"{e(ref)}</a>"
            for ref, section in claim.symbols
        )
        + "</div></li>"
        for claim in article.claims
    )
    return (f'<div class="article" id="{e(_article_anchor(article))}"><h3><code>'
            f"{e(article.article)}</code>{title}</h3>"
            f'<ul class="claims">{claims}</ul></div>')


def _anchor(section: str, ref: str) -> str:
    return f"{section}:{ref}"


# --- sections -------------------------------------------------------------------------


def _section(report: DiffReport, section: Section) -> str:
    changes = report.section(section)
    title = (f'<span class="dot v-{section.value}"></span>{e(SECTION_TITLES[section])} '
             f'<span class="count">{len(changes)}</span>')
    head = f'<section id="{section.value}">{_h2(title)}'
    if not changes:
        return head + '<p class="muted">None.</p></section>'
    note = _diff_note(report) if section is Section.CHANGED else ""
    groups: dict[str, list[SymbolChange]] = defaultdict(list)
    for change in changes:
        groups[change.package].append(change)
    packages = sorted(groups.items())
    if len(changes) <= OPEN_GROUPS_UP_TO:
        return head + note + "".join(_group(package, items, True)
                                     for package, items in packages) + "</section>"
    body = "".join(_group(package, items, _opens(items), _package_anchor(section, package))
                   for package, items in packages)
    return head + note + _package_index(section, packages) + body + "</section>"


def _opens(changes: list[SymbolChange]) -> bool:
    """Whether a package group of a long section starts open: claims cite it, and it is
    short (a link into a closed one opens it: the browser opens the <details> that holds
    the element an address's #fragment names)."""
    return len(changes) <= OPEN_GROUPS_UP_TO and any(change.citations for change in changes)


def _package_index(section: Section, packages: list[tuple[str, list[SymbolChange]]]) -> str:
    """A link to each package group, with how many symbols it lists and claims cite."""
    links = "".join(
        f'<li><a href="#{e(_package_anchor(section, package))}"><code>{e(package)}</code> '
        f'<span class="count">{len(changes)}</span>{_cited_note(changes)}</a></li>'
        for package, changes in packages
    )
    return f'<ul class="packages">{links}</ul>'


def _package_anchor(section: Section, package: str) -> str:
    return f"{section.value}-package:{package}"


def _diff_note(report: DiffReport) -> str:
    if report.diffable <= report.with_sources:
        return ""
    return (
        f'<p class="note">Side-by-side diffs are shown for {report.with_sources} of the '
        f"{report.diffable} changed, moved-and-changed and cosmetic symbols (those claims "
        f"cite first, then in listed order): the limit is {report.diff_limit}. The others "
        "link to both versions on GitHub.</p>"
    )


def _group(package: str, changes: list[SymbolChange], opened: bool,
           anchor: str | None = None) -> str:
    """A package's symbols; ``anchor`` names what they are in, which opens the group
    when a link lands on it."""
    symbols = "".join(_symbol(change) for change in changes)
    if anchor is not None:
        symbols = f'<div class="in" id="{e(anchor)}">{symbols}</div>'
    return (
        f'<details class="group"{" open" if opened else ""}><summary>'
        f'<code>{e(package)}</code> <span class="count">{len(changes)}</span>'
        f"{_cited_note(changes)}</summary>{symbols}</details>"
    )


def _cited_note(changes: list[SymbolChange]) -> str:
    cited = sum(bool(change.citations) for change in changes)
    return f' <span class="chip cited">{cited} cited</span>' if cited else ""


def _symbol(change: SymbolChange) -> str:
    """A symbol with more to show than its links opens as ``<details>``; the others (most
    additions and removals) are one line, which keeps a page of thousands light."""
    anchor = ""  # only what the claims section links to: a page of thousands stays light
    if change.citations:
        anchor = f' id="{e(_anchor(change.section.value, change.ref))}"'
    if not _has_details(change):
        return f'<div class="sym line"{anchor}>{_title(change, linked=True)}</div>'
    opened = " open" if change.citations else ""  # where a claim's link lands
    return (
        f'<details class="sym"{anchor}{opened}>'
        f"<summary>{_title(change)}</summary>"
        f'<div class="body">{_details(change)}</div></details>'
    )


def _lines(report: DiffReport) -> str:
    rows = "".join(_line_change(change) for change in report.lines)
    title = f'Changed lines <span class="count">{len(report.lines)}</span>'
    return (f'<section id="{LINES}">{_h2(title)}<p class="muted">Lines that line refs '
            f"cite, that no listed symbol holds, and that no longer stand as written in their "
            f"file at {e(report.version_b)}.</p>"
            f"{rows}</section>")


def _line_change(change: LineChange) -> str:
    ref = _a(f'<code class="ref">{e(change.ref)}</code>', change.url)
    where = "file gone" if change.file_gone else "changed"
    return (f'<div class="sym line" id="{e(_anchor(LINES, change.ref))}">{ref} '
            f'<span class="pin">@{e(change.version)}</span> <span class="chip">{where}</span>'
            f"{_moved_to(change)}{_cited_by(change.citations)}</div>")


def _moved_to(change: LineChange) -> str:
    """Where the lines of a file gone stand at B, or where its code went, as links."""
    went = change.code_went_to
    if went is not None:
        link = _a(f"<code>{e(went.path)}</code>", went.url)
        return f'<span class="to">→ its code went to {link}</span>'
    if change.new is None:
        return ""
    places = [_candidate(change.new)]
    if change.candidates:
        places.append("or " + ", ".join(_candidate(place) for place in change.candidates))
    return f'<span class="to">→ moved to {" ".join(places)}</span>'


def _a(inner: str, url: str | None) -> str:
    """``inner`` as a link to ``url``, when there is one."""
    return f'<a href="{e(url)}" rel="noreferrer">{inner}</a>' if url else inner


def _has_details(change: SymbolChange) -> bool:
    usage = change.usage
    return bool(change.changes or change.candidates or change.citations
                or change.has_sources or (usage and (usage.started or usage.stopped)))


def _title(change: SymbolChange, linked: bool = False) -> str:
    location = change.location
    ref = (f'<code class="ref"><span class="path">{e(location.path)}::</span>'
           f"{e(location.qualname)}</code>")
    parts = [f'<span class="kind">{e(change.kind)}</span>', _linked(ref, location, linked)]
    if change.section is Section.MOVED and change.new is not None:
        target = _linked(f"<code>{e(change.new.ref)}</code>", change.new, linked)
        parts.append(f'<span class="to">→ {target}</span>')
    if change.code_went_to:
        places = ", ".join(_linked(f"<code>{e(place.ref)}</code>", place, linked)
                           for place in change.code_went_to)
        parts.append(f'<span class="to">→ its code went to {places}</span>')
    if change.users_now_use:
        places = ", ".join(_linked(f"<code>{e(place.ref)}</code>", place, linked)
                           for place in change.users_now_use)
        parts.append(f'<span class="to">→ its users now use {places}</span>')
    parts += [f'<span class="chip">{e(kind)}</span>' for kind in change.kinds]
    if change.how:
        parts.append(f'<span class="chip">{e(change.how)}</span>')
    if change.content and change.section is Section.MOVED:
        parts.append(f'<span class="chip">content {e(change.content)}</span>')
    if change.citations:
        parts.append(f'<span class="chip cited">cited ×{len(change.citations)}</span>')
    return " ".join(parts)


def _linked(inner: str, location: Location, linked: bool) -> str:
    return _a(inner, location.url) if linked else inner


def _details(change: SymbolChange) -> str:
    parts = [_links(change)]
    if change.changes:
        parts.append('<ul class="changes">' + "".join(
            f"<li>{e(line)}</li>" for line in change.changes_in_full) + "</ul>")
    parts.append(_usage(change))
    parts.append(_candidates(change))
    parts.append(_places("its code went to", change.code_went_to))
    parts.append(_places("its users now use", change.users_now_use))
    parts.append(_citations(change))
    if change.has_sources and change.old is not None and change.new is not None:
        parts.append(side_by_side(change.old_source or "", change.new_source or "",
                                  change.old.start_line, change.new.start_line))
    return "".join(parts)


def _links(change: SymbolChange) -> str:
    links = [_link(label, location) for label, location in (("at A", change.old),
                                                            ("at B", change.new)) if location]
    return '<p class="links">' + " ".join(links) + "</p>"


def _link(label: str, location: Location) -> str:
    text = f"{e(label)}: <code>{e(location.ref)}</code> L{location.lines}"
    if location.url:
        return f'<a href="{e(location.url)}" rel="noreferrer">{text}</a>'
    return f"<span>{text}</span>"


def _usage(change: SymbolChange) -> str:
    usage = change.usage
    if usage is None or not (usage.started or usage.stopped):
        return ""
    return (f'<p class="usage">{_names("started using", "add", usage.started, usage.started_total)}'
            f'{_names("stopped using", "del", usage.stopped, usage.stopped_total)}</p>')


def _names(label: str, style: str, names: Iterable[str], total: int) -> str:
    shown = list(names)
    if not shown:
        return ""
    more = total - len(shown)
    extra = f' <span class="muted">+{more} more</span>' if more > 0 else ""
    chips = "".join(f'<code class="name {style}">{e(name)}</code>' for name in shown)
    return f'<span class="label">{e(label)}</span> {chips}{extra} '


def _candidates(change: SymbolChange) -> str:
    label = "other candidates" if change.section is Section.MOVED else "closest at B"
    return _places(label, change.candidates)


def _places(label: str, places: tuple[Location, ...]) -> str:
    """``places`` as links, under ``label``: the summary, a toggle, links none of them."""
    if not places:
        return ""
    items = "".join(f"<li>{_candidate(location)}</li>" for location in places)
    return f'<div class="cands"><span class="label">{e(label)}</span><ul>{items}</ul></div>'


def _candidate(place: Location | LinePlace) -> str:
    return _a(f"<code>{e(place.ref)}</code>", place.url)


def _citations(change: SymbolChange) -> str:
    return _cited_by(change.citations)


def _cited_by(citations: tuple[Citation, ...]) -> str:
    if not citations:
        return ""
    items = "".join(
        f'<li><code>{e(c.article)}#{e(c.claim)}</code>{" (in its uses:)" if c.used_by else ""}'
        f' <span class="pin">@{e(c.version)}</span> <span class="where">{e(c.where)}</span>'
        f' <span class="text">{e(c.text)}</span>{_quote(c)}</li>'
        for c in citations
    )
    return f'<div class="cites-list"><span class="label">cited by</span><ul>{items}</ul></div>'


def _quote(citation: Citation) -> str:
    if citation.quote is None or citation.used_by:
        return ""
    return f'<div class="quote">quote <code>{e(citation.quote)}</code></div>'


_STYLE = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa;
--changed:#9a6700;--changed-bg:#fff8c5;--moved:#0969da;--moved-bg:#ddf4ff;
--removed:#cf222e;--removed-bg:#ffebe9;--added:#1a7f37;--added-bg:#dafbe1;
--cosmetic:#6e7781;--cosmetic-bg:#f6f8fa;--unchanged:#57606a;--unchanged-bg:#fff;
--mono:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,"Liberation Mono",monospace}
*{box-sizing:border-box}
body{margin:0;background:var(--soft);color:var(--fg);
font:14px/1.5 system-ui,-apple-system,"Segoe UI","Noto Sans",Helvetica,Arial,"PingFang SC",
"Hiragino Sans GB","Microsoft YaHei","Noto Sans CJK SC","WenQuanYi Micro Hei",sans-serif}
main{max-width:1180px;margin:0 auto;padding:24px 20px 64px}
code{font-family:var(--mono);font-size:12.5px}
header{margin-bottom:16px}
h1{font-size:26px;margin:0 0 4px;font-weight:600}
h1 code{font-size:22px;background:#fff;border:1px solid var(--line);border-radius:6px;
padding:1px 8px}
h1 .repo{margin-right:4px}.arrow{color:var(--muted)}
.lead{color:var(--muted);margin:4px 0 12px}
nav{display:flex;flex-wrap:wrap;gap:6px}
nav a{color:var(--fg);text-decoration:none;background:#fff;border:1px solid var(--line);
border-radius:20px;padding:2px 12px;font-size:13px}
nav a:hover{border-color:var(--moved)}
section{background:#fff;border:1px solid var(--line);border-radius:10px;padding:16px 20px;
margin:16px 0}
h2{font-size:18px;margin:0 0 12px;display:flex;align-items:center;gap:8px}
h2 a.top{margin-left:auto;font-size:12px;font-weight:400;color:var(--muted);
text-decoration:none}
h3{font-size:14px;margin:12px 0 6px}
.count{display:inline-block;min-width:22px;text-align:center;background:var(--soft);
border:1px solid var(--line);border-radius:20px;padding:0 7px;font-size:12px;
font-weight:500;color:var(--muted)}
.dot{width:10px;height:10px;border-radius:50%;display:inline-block}
.cards{display:grid;grid-template-columns:repeat(6,1fr);gap:10px;margin-bottom:12px}
.card{border:1px solid var(--line);border-left-width:4px;border-radius:8px;padding:8px 12px;
display:flex;flex-direction:column}
.card .num{font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}
.card .label{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.v-changed{border-left-color:var(--changed)}.dot.v-changed{background:var(--changed)}
.v-moved{border-left-color:var(--moved)}.dot.v-moved{background:var(--moved)}
.v-removed{border-left-color:var(--removed)}.dot.v-removed{background:var(--removed)}
.v-added{border-left-color:var(--added)}.dot.v-added{background:var(--added)}
.v-cosmetic{border-left-color:var(--cosmetic)}.dot.v-cosmetic{background:var(--cosmetic)}
.v-unchanged{border-left-color:var(--line)}
table.grid{border-collapse:collapse;width:100%;margin-top:8px}
.grid th,.grid td{border-bottom:1px solid #eaeef2;padding:4px 10px;text-align:left}
.grid th{font-size:12px;color:var(--muted);font-weight:600;text-transform:uppercase}
.grid td.num,.grid th.v-changed,.grid th.v-moved,.grid th.v-removed,.grid th.v-added,
.grid th.v-cosmetic,.grid th.muted{text-align:right}
.grid tr:hover td{background:var(--soft)}
.num{font-variant-numeric:tabular-nums}
.muted{color:var(--muted)}
details>summary{cursor:pointer}
details.packages>summary,details.group>summary{font-weight:600;padding:6px 0}
details.group{border-top:1px solid #eaeef2}
details.group>summary code{font-size:13px}
details.sym{margin:4px 0 4px 14px;border:1px solid #eaeef2;border-radius:6px;background:#fff}
details.sym>summary,.sym.line{padding:5px 10px;display:flex;flex-wrap:wrap;
align-items:center;gap:6px;list-style:none}
.sym.line{margin:4px 0 4px 14px;border:1px solid #eaeef2;border-radius:6px;padding-left:26px}
.sym.line a{color:inherit;text-decoration:none}.sym.line a:hover code{text-decoration:underline}
details.sym>summary::before{content:"▸";color:var(--muted);width:10px}
details.sym[open]>summary::before{content:"▾"}
details.sym[open]>summary{border-bottom:1px solid #eaeef2;background:var(--soft)}
details.diff{margin-top:8px}
details.diff>summary{color:var(--moved);font-size:13px;width:max-content}
.kind{font-size:11px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em;
min-width:60px}
.ref .path{color:var(--muted)}
.to code{color:var(--moved)}
.chip{font-size:11px;border:1px solid var(--line);border-radius:20px;padding:0 8px;
background:var(--soft);color:var(--fg);text-decoration:none;overflow-wrap:anywhere}
code,.links a{overflow-wrap:anywhere}
a.chip{font-family:var(--mono)}
.chip.cited{background:#fbefff;border-color:#d8b9ff;color:#8250df}
.chip.v-changed{background:var(--changed-bg)}.chip.v-moved{background:var(--moved-bg)}
.chip.v-removed{background:var(--removed-bg)}.chip.v-added{background:var(--added-bg)}
.body{padding:8px 12px 12px}
.links{margin:0 0 6px;display:flex;flex-wrap:wrap;gap:14px}
.links a{color:var(--moved);text-decoration:none}.links a:hover{text-decoration:underline}
.changes{margin:4px 0 8px;padding-left:18px;font-family:var(--mono);font-size:12px}
.label{font-size:11px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em;
margin-right:4px}
.usage{margin:6px 0}
code.name{border-radius:4px;padding:0 5px;margin:0 3px 3px 0;display:inline-block}
code.name.add{background:var(--added-bg);color:var(--added)}
code.name.del{background:var(--removed-bg);color:var(--removed)}
.cands ul,.cites-list ul{margin:2px 0 8px;padding-left:18px}
.claims{list-style:none;padding:0;margin:0}
.claims li{border-left:3px solid #d8b9ff;padding:4px 10px;margin:6px 0;background:#fcfaff}
.claims .cites{margin-top:4px;display:flex;flex-wrap:wrap;gap:4px}
.claim{color:#8250df}.pin,.where{color:var(--muted);font-size:12px}
.where{font-family:var(--mono);overflow-wrap:anywhere}
.quote{color:var(--muted);font-size:12px;margin:2px 0}
.quote code{white-space:pre-wrap;background:var(--soft);padding:0 4px;border-radius:4px}
ul.articles,ul.packages{list-style:none;padding:0;margin:0 0 8px;display:flex;
flex-wrap:wrap;gap:6px}
ul.articles a,ul.packages a{color:var(--fg);text-decoration:none;
border:1px solid var(--line);border-radius:20px;padding:1px 10px}
ul.articles a:hover,ul.packages a:hover{border-color:var(--moved)}
details.group>.in{scroll-margin-top:40px}
.article h3 .title{font-weight:400;color:var(--muted)}
.note{background:#fff8c5;border:1px solid #eed888;border-radius:6px;padding:6px 10px;
font-size:13px}
table.sbs{width:100%;border-collapse:collapse;table-layout:fixed;margin-top:8px;
border:1px solid #eaeef2;font-family:var(--mono);font-size:12px;line-height:1.45}
.sbs col.ln{width:46px}
.sbs td{vertical-align:top;padding:0 6px;white-space:pre-wrap;overflow-wrap:anywhere;
tab-size:4}
.sbs td.ln{color:#8c959f;text-align:right;user-select:none;background:var(--soft);
border-right:1px solid #eaeef2}
.sbs td.del{background:#ffebe9}.sbs td.add{background:#e6ffec}
.sbs td.empty{background:repeating-linear-gradient(135deg,#f6f8fa,#f6f8fa 4px,#fff 4px,
#fff 8px)}
.sbs del{background:#ffc1bd;text-decoration:none;border-radius:2px}
.sbs ins{background:#abf2bc;text-decoration:none;border-radius:2px}
.sbs tr.fold td{background:#ddf4ff;color:var(--muted);text-align:center;font-family:inherit}
@media (max-width:800px){.cards{grid-template-columns:repeat(3,1fr)}}
@media print{h2 a.top{display:none}
@supports selector(::details-content){
details.diff::details-content{content-visibility:visible;display:block}
details.diff>summary{display:none}
details.group::details-content{content-visibility:visible;display:block}
details.group:not([open]) .sym:not([id]){display:none}}}
"""
