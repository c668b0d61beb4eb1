"""The feedback page (issue 22, item 7): hidden checks by the section they grade, reports
that wrap, no bare `Out[n]: 0.0` after each report."""

import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course.grader.nbgrader_ext import FEEDBACK_CSS, ExerciseFeedback


def graded_cell(grade_id, score, points, report, described="what it checks"):
    cell = new_code_cell(
        f"# Hidden check ({points} points): {described},\n# over two lines.\n"
        '### BEGIN HIDDEN TESTS\ncheck("x", globals())\n### END HIDDEN TESTS'
    )
    cell.metadata["nbgrader"] = {
        "grade": True,
        "solution": False,
        "grade_id": grade_id,
        "points": points,
        "score": score,
    }
    cell.outputs = [
        new_output("stream", name="stdout", text=report),
        new_output("execute_result", data={"text/plain": repr(score)}, execution_count=3),
    ]
    return cell


def test_the_feedback_names_exercises_and_drops_the_bare_score():
    nb = new_notebook(
        cells=[
            new_markdown_cell("## 1 · Graphs\n### Hidden checks of the `Value` engine"),
            graded_cell("value_ops", 2.0, 3, "value_ops: 2 of 3\n  FAIL a * b\n", "+ - * /"),
            graded_cell("value_functions", 1.0, 1, "all pass\n", "exp and log"),
            new_markdown_cell("### Exercise 2.1: <a numerical gradient>"),
            graded_cell("eval_numerical_gradient", 3.0, 3, "all pass\n"),
        ]
    )
    resources = {"nbgrader": {"late_penalty": 1.5}, "inlining": {"css": ["nbconvert's"]}}
    nb, resources = ExerciseFeedback().preprocess(nb, resources)
    table = nb.cells[0].source
    rows = table.split("<tr>")[2:]
    assert rows[0].startswith("<td>Hidden checks of the Value engine</td>")
    assert '<a href="#value_ops"><code>value_<wbr>ops</code></a>' in rows[0]
    assert "<td>+ - * /, over two lines.</td>" in rows[0] and "2 / 3" in rows[0]
    # A section's name once, however many hidden checks it has (issue 33's persona walk).
    assert rows[1].startswith("<td></td>") and "exp and log, over two lines." in rows[1]
    assert rows[2].startswith("<td>Exercise 2.1: &lt;a numerical gradient&gt;</td>")
    assert '<a href="#eval_numerical_gradient">' in rows[2] and "3 / 3" in rows[2]
    assert "Late submission" in table and "-1.5" in table
    for cell in nb.cells[1:]:
        kinds = [o["output_type"] for o in cell.get("outputs", [])]
        assert "execute_result" not in kinds
    assert nb.cells[2].outputs[0]["text"].startswith("value_ops: 2 of 3")  # the report stays
    assert resources["inlining"]["css"] == ["nbconvert's", FEEDBACK_CSS]
    assert "pre-wrap" in FEEDBACK_CSS
    nbformat.validate(nb)


# ---------------------------------------------------------------- maths, offline


def rendered(template: str, nb=None, base_url: str = "/user/ada") -> str:
    """01's source notebook (or `nb`) through nbgrader's `template` ("feedback":
    generate_feedback, with its CSS and ExerciseFeedback; "formgrade": the formgrader's view
    of a submission) with the course's settings."""
    import re
    from pathlib import Path

    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    from course.paths import course_root

    root = course_root()
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    if template == "formgrade":
        # The formgrader's own settings (FormgradeExtension.build_extra_config), then the
        # course's nbgrader_config.py over them, in the order nbgrader loads them.
        from nbgrader.server_extensions.formgrader import handlers

        extra = Config()
        extra.HTMLExporter.template_name = "formgrade"
        extra.HTMLExporter.extra_template_basedirs = [handlers.template_path]
        extra.merge(config)
        config = extra
    else:  # what generate_feedback adds (its template, bootstrap's CSS)
        config = GenerateFeedback(coursedir=CourseDirectory(config=config), config=config).config
    nb = nb or nbformat.read(Path(root, "source/01_backprop/backprop.ipynb"), as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["score"] = 0.0
    resources = {
        "nbgrader": {"notebook": "backprop", "score": 0, "max_score": 1, "late_penalty": 0},
        **{k: "x" for k in ("assignment_id", "notebook_id", "submission_id", "student")},
        **{k: "x" for k in ("first_name", "last_name", "notebook_path")},
        "base_url": base_url,
        "index": 0,
        "total": 1,
        "config_dir": "/nonexistent",
    }
    exporter = HTMLExporter(config=config)
    if template == "feedback":  # generate_feedback's page CSS, then the course's table and CSS
        from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor

        exporter.register_preprocessor(CSSHTMLHeaderPreprocessor(config=config), enabled=True)
        exporter.register_preprocessor(ExerciseFeedback(config=config), enabled=True)
    html, _ = exporter.from_notebook_node(nb, resources=resources)
    assert re.search(r"\$[^$\n]+\$", html), "the notebook's maths is in the page, for MathJax"
    return html


@pytest.mark.parametrize("template", ["feedback", "formgrade"])
def test_reports_wrap_between_words_in_the_feedback_and_the_formgrader(template):
    """Bootstrap breaks a <pre> anywhere ("batchnorm_f" / "orward"), and the formgrader had no
    wrapping at all (lines clipped): both pages get REPORT_CSS (issue 33, item 4; the
    layout itself is measured in Chromium, tests/test_browser.py)."""
    from course.grader.nbgrader_ext import REPORT_CSS

    assert "word-break: normal" in REPORT_CSS and "pre-wrap" in REPORT_CSS
    assert REPORT_CSS.strip() in rendered(template)


@pytest.mark.parametrize("template", ["feedback", "formgrade"])
def test_maths_renders_offline(template):
    """MathJax from the installed jupyter-server-mathjax, never a CDN: the page loads the
    server's copy when a Jupyter server serves it, the installed file when opened from disk."""
    import re
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    html = rendered(template)
    scripts = re.findall(r"<script[^>]*\bsrc=[\"']([^\"']+)", html)
    assert not [s for s in scripts if s.startswith(("http:", "https:", "//"))], scripts
    assert "cdnjs" not in html and "cdn.jsdelivr" not in html
    [url] = re.findall(r'data-course-mathjax="([^"]+)"', html)
    assert url.startswith("file:///") and url.endswith("/MathJax.js")
    path = Path(unquote(urlparse(url).path))
    assert path.is_file()
    # The combined configuration it asks for, and the fonts that configuration is told to use.
    assert (path.parent / "config/TeX-AMS-MML_HTMLorMML-full.js").is_file()
    assert (path.parent / "fonts/HTML-CSS/STIX-Web/woff").is_dir()
    assert "static/jupyter_server_mathjax/MathJax.js" in html  # served by a Jupyter server


def test_student_cells_are_sanitized_and_the_graders_outputs_kept():
    """Round 5: a student's <script> (markdown, text/html, javascript) must not reach the
    formgrader or feedback; plain text, pictures and maths without tags stay as they are."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from course.grader.nbgrader_ext import SanitizeStudentCells

    code = new_code_cell("x")
    code.outputs = [
        new_output("stream", name="stdout", text="verdict\n"),
        new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "fig"}),
        new_output(
            "display_data",
            data={"text/html": "<b>ok</b><script>steal()</script>", "text/javascript": "x()"},
        ),
    ]
    maths = new_markdown_cell("$a < b$ and $x_i$, `code`")
    nb = new_notebook(cells=[new_markdown_cell("hi <script>steal()</script>"), maths, code])
    nb, _ = SanitizeStudentCells().preprocess(nb, {})
    assert "<script>" not in nb.cells[0].source
    assert nb.cells[1].source == "$a < b$ and $x_i$, `code`"
    outputs = nb.cells[2].outputs
    assert outputs[0].text == "verdict\n" and outputs[1].data["image/png"] == "iVBORw0KGgo="
    assert (
        "<script>" not in outputs[2].data["text/html"]
        and "<b>ok</b>" in outputs[2].data["text/html"]
    )
    assert "text/javascript" not in outputs[2].data


def test_student_links_and_pictures_are_inert_however_markdown_spells_them():
    """Round 6: links of a student (markdown's inline, reference and autolink forms, raw
    HTML, a markdown output) lead nowhere, pictures load nothing from elsewhere, and
    javascript: never reaches a page; a picture embedded as data stays."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from course.grader.nbgrader_ext import SanitizeStudentCells
    from course.grader.sanitize import markdown_html

    png = "iVBORw0KGgo="
    sources = [
        "[md link](javascript:alert(4)) and [ok](https://evil.example/a)",
        "[ref][1]\n\n[1]: javascript:alert(5)",
        "<https://evil.example/auto> and <a href='JaVaScRiPt:alert(6)'>x</a>",
        "![pixel](https://evil.example/track.png) ![mine](data:image/png;base64," + png + ")",
        "<img src=https://evil.example/p.png onerror=alert(7)>",
        "```\n[x](javascript:alert(8))\n\n\n[y](javascript:alert(9))\n```",
        "[inside](#section-2)",
    ]
    code = new_code_cell("x")
    code.outputs = [
        new_output("display_data", data={"text/markdown": "[out](javascript:alert(10))"}),
        new_output(
            "display_data",
            data={"text/html": '<a href="https://evil.example/h">h</a><img src="//evil.example">'},
        ),
    ]
    nb = new_notebook(cells=[new_markdown_cell(s) for s in sources] + [code])
    nb, _ = SanitizeStudentCells().preprocess(nb, {})
    # As the pages render them: the markdown of each cell, then the outputs' HTML.
    page = "".join(markdown_html(c.source) for c in nb.cells if c.cell_type == "markdown")
    page += "".join(o.data["text/html"] for o in nb.cells[-1].outputs)
    assert not re.search(r"(href|src)\s*=\s*[\"']?\s*javascript:", page, re.I), page
    assert not re.search(r"(href|src)\s*=\s*[\"']?(https?:)?//", page, re.I), page
    assert "onerror" not in page
    assert f'src="data:image/png;base64,{png}"' in page
    assert 'href="#section-2"' in page
    assert "md link" in page and "[x](javascript:alert(8))" in page  # the text stays


def test_picture_metadata_keeps_only_a_numeric_size():
    """Round 7: nbconvert writes a picture's width and height unquoted and takes its
    `filenames` entry as its address; of an output's metadata only numeric sizes stay."""
    from course.grader.nbgrader_ext import SanitizeStudentCells

    code = new_code_cell("x")
    code.outputs = [
        new_output(
            "display_data",
            data={"image/png": "iVBORw0KGgo=", "text/plain": "fig"},
            metadata={
                "image/png": {"width": "1 onerror=alert(1)", "height": 120.7},
                "image/jpeg": {"width": True, "height": float("inf")},
                "filenames": {"image/png": "https://evil.example/p.png"},
                "width": "1 onerror=alert(2)",
                "text/html": {"isolated": True},
            },
        ),
        new_output(
            "display_data",
            data={"image/png": "iVBORw0KGgo="},
            metadata={"image/png": {"width": 300}},
        ),
    ]
    nb, _ = SanitizeStudentCells().preprocess(new_notebook(cells=[code]), {})
    assert [o.metadata for o in nb.cells[0].outputs] == [
        {"image/png": {"height": 120}},
        {"image/png": {"width": 300}},
    ]


LINKING_MATHS = [
    "$\\href{https://evil.example/a}{x}$",
    "$$\\url{https://evil.example/b}$$",
    "$\\class{x}{y} \\style{background:url(https://evil.example/c)}{y} \\cssId{i}{y}$",
    "$\\require{[Contrib]/evil} \\unicode[evil]{x41} \\bbox[background:url(x)]{y}$",
    "$&#92;href{https://evil.example/d}{x}$",  # an entity the browser decodes to a backslash
    "$\\h&#114;ef{https://evil.example/e}{x}$",
    "<p>$\\hr<br>ef{https://evil.example/f}{x}$</p>",
]


@pytest.mark.parametrize("source", LINKING_MATHS)
def test_maths_that_mathjax_would_turn_into_markup_is_made_inert(source):
    """Round 7: maths is text to the HTML policy, but MathJax turns \\href, \\url, \\class,
    \\style, \\cssId, \\require, \\unicode, \\bbox... into links, styles or loads: in a
    student's markdown, an HTML, markdown or LaTeX output, or a raw cell, the backslash of
    such a macro reaches the page as a look-alike (the attempt shows)."""
    import html

    from course.grader.nbgrader_ext import SanitizeStudentCells
    from course.grader.sanitize import MACRO, markdown_html

    code = new_code_cell("x")
    code.outputs = [
        new_output("display_data", data={"text/html": source, "text/plain": "x"}),
        new_output("display_data", data={"text/markdown": source}),
        new_output("display_data", data={"text/latex": source, "text/plain": "x"}),
    ]
    raw = nbformat.v4.new_raw_cell(source)
    nb = new_notebook(cells=[new_markdown_cell(source), raw, code])
    nb, _ = SanitizeStudentCells().preprocess(nb, {})
    pages = [markdown_html(nb.cells[0].source), nb.cells[1].source]
    pages += [o.data.get("text/html", "") for o in nb.cells[2].outputs]
    assert all("text/latex" not in o.data for o in nb.cells[2].outputs)
    for page in pages:
        text = html.unescape(re.sub(r"<br\s*/?>", "", page))
        assert not MACRO.search(text), page
    assert "\u29f5" in pages[2]  # an HTML output: its entities are decoded
    if "&#" not in source:  # in markdown maths an entity stays as written (inert)
        assert "\u29f5" in pages[0]


def test_maths_without_markup_macros_is_kept_as_it_is():
    from course.grader.sanitize import clean_markdown

    for source in ("$\\frac{a}{b} \\hat{y} \\mathrm{d}x \\hrefx \\urls$", "$$\\text{class}$$"):
        assert clean_markdown(source) is None, source


def test_a_check_is_named_by_the_exercise_it_grades():
    """Issue 33's walk: 04 checks its four update rules after the last of them, and the
    table named all four "Exercise 3.4: adamw"; a check is named by its solution's heading."""
    import nbformat

    from course.grader.nbgrader_ext import check_sections
    from course.paths import course_root

    nb = nbformat.read(course_root() / "release" / "04_optimisers" / "optimisers.ipynb", 4)
    sections = check_sections(nb)
    assert sections["sgd_momentum"] == "Exercise 3.1: sgd_momentum"
    assert sections["adam"] == "Exercise 3.3: adam"
    assert sections["adamw"] == "Exercise 3.4: adamw"


FEEDBACK_PREPROCESSORS = """
import logging
import sys
from nbconvert import HTMLExporter
from traitlets.config import Application
from traitlets.config.loader import PyFileConfigLoader

config = PyFileConfigLoader("nbgrader_config.py", path=sys.argv[1]).load_config()
del config.Application.logging_config  # as the formgrader's own log: no course filters
app = Application.instance(config=config)
app.log.setLevel(logging.INFO)
exporter = HTMLExporter(parent=app)
for preprocessor in config.GenerateFeedback.preprocessors:
    exporter.register_preprocessor(preprocessor, enabled=True)
app.log.warning("the end")
"""


def test_feedback_warns_of_nothing_about_display_data_priority():
    """Issue 33's third walk: every feedback page (generate_feedback, which course check
    runs, the formgrader) warned "Config option `display_data_priority` not recognized by
    `ClearHiddenTests`" and by `ExerciseFeedback`: nbconvert's HTMLExporter sets it for
    every preprocessor it runs. A log filter hid it from nbgrader's commands, not from the
    formgrader's Generate Feedback (issue 53, item 6): the feedback's preprocessors now
    take the setting, and nothing is said, whatever the log."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-c", FEEDBACK_PREPROCESSORS, str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "display_data_priority" not in proc.stderr and "the end" in proc.stderr, proc.stderr


# ---------------------------------------------------------------- one block per stream

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from course.grader.nbgrader_ext import coalesce_streams  # noqa: E402


@st.composite
def chunked(draw, text: str, name: str) -> list:
    """`text` on stream `name`, cut where a kernel's flush timer might cut it."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=4)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return [new_output("stream", name=name, text=p) for p in pieces if p]


@st.composite
def interleaved(draw) -> list:
    """What a cell printing to both streams may send: each stream's chunks in order, the two
    streams' chunks in any order."""
    failed = draw(chunked("check it FAILED: not written yet\n", "stderr"))
    losses = draw(chunked("loss 2.302\nloss 2.301\n", "stdout"))
    order = draw(st.permutations([0] * len(failed) + [1] * len(losses)))
    streams = [failed, losses]
    return [streams[which].pop(0) for which in order]


@given(before=interleaved(), after=interleaved())
def test_two_gradings_of_one_cell_keep_the_same_outputs_however_the_kernel_chunked_them(
    before, after
):
    """Issue 55: one stderr line arrived in one message or two, and two gradings of one
    submission differed. A figure flushes both streams, so a run ends there."""
    figure = new_output("display_data", data={"text/plain": "<Figure>"})
    first = coalesce_streams([*before, figure, *after])
    assert [(o.output_type, o.get("name")) for o in first] == [
        ("stream", "stdout"),
        ("stream", "stderr"),
        ("display_data", None),
        ("stream", "stdout"),
        ("stream", "stderr"),
    ]
    assert first[0].text == first[3].text == "loss 2.302\nloss 2.301\n"
    assert first[1].text == first[4].text == "check it FAILED: not written yet\n"
