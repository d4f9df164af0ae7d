"""Every relative link in the README, CONTRIBUTING.md and docs/*.md points at a file that exists,
and every `#anchor` at a heading of that file: a doc moved or a heading renamed fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")  # [text](target), and so ![alt](image) too
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are code, not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())  # a link's text only
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a markdown file, numbered as GitHub numbers repeats (-1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        if match := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line):
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    text = _prose(path.read_text(encoding="utf-8"))
    # http:, https:, mailto: are not ours
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_the_docs_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in DOCS}
    assert {"README.md", "CONTRIBUTING.md", "docs/architecture.md"} <= names
    assert len(names) >= 5


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(doc: Path):
    broken = []
    for target in relative_links(doc):
        file_part, _, anchor = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)} has broken links:\n  " + "\n  ".join(broken)


def test_the_readme_links_the_architecture_and_contributing():
    assert {"docs/architecture.md", "CONTRIBUTING.md"} <= set(relative_links(ROOT / "README.md"))


def test_the_checker_catches_a_missing_file_and_a_missing_anchor(tmp_path: Path):
    (tmp_path / "a.md").write_text("# Title\n\n## How it works: `x.py`\n\nSee [b](b.md), [h](#how-it-works-xpy), "
                                   "[no](#nowhere), [web](https://example.org) and `[code](not-a-link.md)`.\n")
    assert relative_links(tmp_path / "a.md") == ["b.md", "#how-it-works-xpy", "#nowhere"]
    assert anchors(tmp_path / "a.md") == {"title", "how-it-works-xpy"}
    assert slug("Is timing trustworthy here? The self-check") == "is-timing-trustworthy-here-the-self-check"
