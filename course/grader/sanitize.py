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

import html as html_module
import math
import re

from bleach._vendor.html5lib.filters.base import Filter
from bleach.sanitizer import Cleaner

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


# TeX macros that MathJax (2, with its Safe extension: javascript: only is refused) turns
# into markup, a link, a style, or a file it loads: in the text a page shows, their
# backslash becomes a look-alike (U+29F5), so that MathJax reads letters and the attempt
# shows. The maths is text to the HTML policy; a student could otherwise write
# `$\href{https://...}{...}$` and get a link (round 7). MathJax reads a macro's name as
# the run of letters after the backslash, in the text the browser decodes (entities
# included, and text on both sides of a <br>): the filter below reads that text.
MATHJAX_MARKUP = (
    "href url class style cssId require unicode mmlToken bbox toggle mathtip texttip "
    "FontAwesome data html attr"
).split()
MACRO = re.compile(r"\\(?=(?:" + "|".join(MATHJAX_MARKUP) + r")(?![A-Za-z]))", re.IGNORECASE)
INERT_BACKSLASH = "\u29f5"
_TEXT = ("Characters", "SpaceCharacters", "Entity")


class _InertMaths(Filter):
    """Rewrites, in each run of page text (text and entities, through <br>), the backslash of
    a macro in MATHJAX_MARKUP; text without one is passed as it was."""

    def __iter__(self):
        run: list[dict] = []
        for token in super().__iter__():
            if token["type"] in _TEXT or (token["type"] == "EmptyTag" and token["name"] == "br"):
                run.append(token)
                continue
            yield from _inert_run(run)
            run = []
            yield token
        yield from _inert_run(run)


def _decoded(token: dict) -> str:
    if token["type"] == "Entity":
        return html_module.unescape(f"&{token['name']};")
    return token.get("data", "") if token["type"] in _TEXT else ""


def _inert_run(run: list[dict]):
    texts = [_decoded(token) for token in run]
    joined = "".join(texts)
    if not MACRO.search(joined):
        yield from run
        return
    joined = MACRO.sub(INERT_BACKSLASH, joined)  # one character for one: lengths hold
    start = 0
    for token, text in zip(run, texts, strict=True):
        if token["type"] in _TEXT:
            if text:
                yield {"type": "Characters", "data": joined[start : start + len(text)]}
            start += len(text)
        else:
            yield token


def clean_html(html: str) -> str:
    """HTML under the policy: what it does not allow is escaped or dropped; maths cannot
    make markup (MATHJAX_MARKUP)."""
    return Cleaner(
        tags=TAGS,
        attributes=_attribute,
        protocols=["data"],  # and only pictures, by _attribute
        strip=False,
        strip_comments=True,
        filters=[_InertMaths],
    ).clean(html)


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
    cleaned (as HTML), every other type dropped (javascript, widgets, SVG, LaTeX); of their
    metadata, only a picture's numeric size (round 7)."""
    for output in outputs:
        if output["output_type"] not in ("display_data", "execute_result"):
            continue  # streams and errors are text
        output["metadata"] = picture_sizes(output.get("metadata"))
        data = output["data"]
        if "text/markdown" in data:
            html = clean_html(markdown_html(_text(data.pop("text/markdown"))))
            data.setdefault("text/html", html)
        if "text/html" in data:
            data["text/html"] = clean_html(_text(data["text/html"]))
        for key in [k for k in data if k not in keep and k != "text/html"]:
            del data[key]
    return outputs


PICTURE_TYPES = ("image/png", "image/jpeg")
MAX_SIZE = 10_000  # pixels


def picture_sizes(metadata) -> dict:
    """The only output metadata a page gets: {picture type: {"width": int, "height": int}}.
    nbconvert's templates write a picture's width and height unquoted (a string there adds
    attributes: an event handler), take its `filenames` entry as the picture's address (a
    remote picture), and read other keys (`isolated`, `unconfined`...): everything else is
    dropped. Round 7."""
    kept: dict = {}
    if not isinstance(metadata, dict):
        return kept
    for mime in PICTURE_TYPES:
        sizes = metadata.get(mime)
        if not isinstance(sizes, dict):
            continue
        numbers = {}
        for name in ("width", "height"):
            value = sizes.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if math.isfinite(value) and 0 < value <= MAX_SIZE:
                    numbers[name] = int(value)
        if numbers:
            kept[mime] = numbers
    return kept


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


# What nbgrader, its formgrader and nbconvert's templates read of a cell's metadata, with
# the type each expects: anything else is dropped, and a key of another type too. A
# student's `magics_language` dict (nbconvert lowercases it) made generate_feedback exit 1
# (round 8); `slideshow`, `transient`, `raw_mimetype`, `widgets` change what a page shows.
NBGRADER_TYPES = {
    "grade": bool,
    "solution": bool,
    "locked": bool,
    "task": bool,
    "grade_id": str,
    "cell_type": str,
    "checksum": str,
    "schema_version": int,
    "points": (int, float),
}
CELL_FLAGS = ("collapsed", "editable", "deletable")
MAX_TAGS, MAX_TEXT = 32, 200


def _typed(value, kind) -> bool:
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def clean_cell_metadata(metadata) -> dict:
    """A cell's metadata reduced to what the pages read, each value of its expected type:
    nbgrader's keys, `tags` (short strings), `jupyter` (source_hidden, outputs_hidden),
    `collapsed`, `scrolled`, `editable`, `deletable`."""
    if not isinstance(metadata, dict):
        return {}
    kept: dict = {}
    nbgrader = metadata.get("nbgrader")
    if isinstance(nbgrader, dict):
        kept["nbgrader"] = {
            key: value
            for key, value in nbgrader.items()
            if key in NBGRADER_TYPES
            and _typed(value, NBGRADER_TYPES[key])
            and (not isinstance(value, str) or len(value) <= MAX_TEXT)
            and (not isinstance(value, float) or math.isfinite(value))
        }
    tags = metadata.get("tags")
    if isinstance(tags, list):
        kept["tags"] = [t for t in tags if isinstance(t, str) and len(t) <= MAX_TEXT][:MAX_TAGS]
    jupyter = metadata.get("jupyter")
    if isinstance(jupyter, dict):
        hidden = {k: v for k, v in jupyter.items() if k in ("source_hidden", "outputs_hidden")}
        kept["jupyter"] = {k: v for k, v in hidden.items() if isinstance(v, bool)}
    for key in CELL_FLAGS:
        if isinstance(metadata.get(key), bool):
            kept[key] = metadata[key]
    if isinstance(metadata.get("scrolled"), bool) or metadata.get("scrolled") == "auto":
        kept["scrolled"] = metadata["scrolled"]
    return kept


def clean_notebook_metadata(metadata, released: dict) -> dict:
    """The notebook's metadata: the released notebook's `kernelspec` and `language_info`
    (nbconvert reads the lexer and the language from them), nothing the student wrote."""
    return {k: released[k] for k in ("kernelspec", "language_info") if k in released}
