"""What a student wrote or displayed, made inert for the pages that show an autograded
notebook: the instructor's formgrader (in the instructor's own Jupyter session) and the
feedback pages.

Markdown is rendered to HTML first, with nbconvert's own renderer (the one those pages
use): a link or a picture is then an element, whatever markdown spelled it (inline,
reference, autolink, raw HTML), and one policy judges them all. The policy: a short list of
text-formatting tags; links only to a place in the same page (`#...`); pictures only
embedded PNG or JPEG; no scripts, styles, classes, ids, frames or forms (escaped, so the
attempt shows). Rounds 5 and 6 of the attacks.
"""

from __future__ import annotations

import re

import bleach

TAGS = frozenset(
    "a abbr b blockquote br code dd del div dl dt em h1 h2 h3 h4 h5 h6 hr i img kbd li ol "
    "p pre s span strong sub sup table tbody td th thead tr ul".split()
)
PICTURE = re.compile(r"data:image/(png|jpeg);base64,[A-Za-z0-9+/=\s]*\Z")


def _attribute(tag: str, name: str, value: str) -> bool:
    if tag == "a":
        return name == "title" or (name == "href" and value.startswith("#"))
    if tag == "img":
        return name in ("alt", "title", "width", "height") or (
            name == "src" and bool(PICTURE.match(value))
        )
    if tag in ("td", "th"):
        return name in ("align", "colspan", "rowspan")
    return False


def clean_html(html: str) -> str:
    """HTML under the policy: what it does not allow is escaped or dropped."""
    return bleach.clean(
        html,
        tags=TAGS,
        attributes=_attribute,
        protocols=["data"],  # and only pictures, by _attribute
        strip=False,
        strip_comments=True,
    )


def markdown_html(source: str, attachments: dict | None = None) -> str:
    """Markdown as the feedback and formgrader pages render it (maths kept as text)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, attachments=attachments or {})
    return MarkdownWithMath(renderer=renderer).render(source)


def clean_markdown(source: str, attachments: dict | None = None) -> str | None:
    """None if the markdown renders to HTML the policy keeps as it is; otherwise inert
    markdown to put in its place: the cleaned HTML on one line in a <div> (one HTML block,
    which markdown passes through without reading anything inside as markdown again)."""
    rendered = markdown_html(source, attachments)
    cleaned = clean_html(rendered)
    if cleaned == rendered:
        return None
    return "<div>" + cleaned.strip().replace("\r", "").replace("\n", "&#10;") + "</div>"


def clean_outputs(outputs: list, keep: set[str]) -> list:
    """Code cell outputs: the `keep` types as they are, HTML cleaned, markdown rendered and
    cleaned (as HTML), every other type dropped (javascript, widgets, SVG, LaTeX)."""
    for output in outputs:
        if output["output_type"] not in ("display_data", "execute_result"):
            continue  # streams and errors are text
        data = output["data"]
        if "text/markdown" in data:
            html = clean_html(markdown_html(_text(data.pop("text/markdown"))))
            data.setdefault("text/html", html)
        if "text/html" in data:
            data["text/html"] = clean_html(_text(data["text/html"]))
        for key in [k for k in data if k not in keep and k != "text/html"]:
            del data[key]
    return outputs


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)
