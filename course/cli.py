"""The `course` command: build the course, grade a demo class, benchmark.

course build        text sources -> source notebooks, release/, references/
course references   only recompute references/ from the source solutions
course grade A      autograde every submission of assignment A; report problems
course export       carry your exported cells of work/ into the later assignments' folders
course lab          open JupyterLab as a learner (--instructor: with every nbgrader tool)
course check NB     grade one notebook of yours, as the instructor would
course validate NB  run a notebook as Validate does; exit 1 when a cell fails
course demo         the instructor's pipeline on bundled demo students, kept in demo/course
course bench        notebook and autograding timings; --conv: 06's convolution against PyTorch;
                    --processors: the solutions' marks under emulated processors;
                    --bands: the training checks' bands against correct and wrong code;
                    --landscape: course.landscape's 41 x 41 slice on 03's net
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from course.paths import course_root, is_course_directory, learner_work, tool_env


def _build(args) -> int:
    from course.authoring import build

    root = course_root()
    written = build.build_sources(root)
    print(f"source notebooks: {', '.join(str(p.relative_to(root)) for p in written)}")
    build.build_release(root)
    print(f"release/: {', '.join(build.assignments(root))}")
    build.write_references(root, build.compute_references(root))
    print("references/: recomputed from the source solutions")
    return 0


def _references(args) -> int:
    from course.authoring import build

    root = course_root()
    build.write_references(root, build.compute_references(root))
    print("references/: recomputed from the source solutions")
    return 0


def _grade(args) -> int:
    from course.grader import autograde
    from course.grader.cluster import ClusterError, checked
    from course.grader.inputs import InputsError
    from course.grader.nbgrader_ext import GraderFault
    from course.grader.sandbox import SandboxUnavailable

    if args.course is not None:
        if not is_course_directory(args.course):
            print(
                f"course grade: {args.course} is not a course directory (it has no "
                "nbgrader_config.py): name the folder that holds release/ and submitted/",
                file=sys.stderr,
            )
            return 2
        # Every process of the run (workers, nbgrader) finds the course the same way.
        os.environ["COURSE_ROOT"] = str(args.course.resolve())
    root = course_root()
    known = sorted(p.name for p in (root / "release").glob("*") if p.is_dir())
    if args.assignment not in known:
        print(
            f"course grade: no assignment {args.assignment!r} in {root / 'release'}: name one "
            f"of {', '.join(known) or '(none: run `course build`)'}",
            file=sys.stderr,
        )
        return 2
    try:
        scheduler = args.scheduler and checked(args.scheduler, args.tls, args.insecure_scheduler)
    except ClusterError as exc:
        print(f"course grade: nothing graded: {exc}", file=sys.stderr)
        return 2
    try:
        statuses = autograde.grade(
            root,
            args.assignment,
            sandboxed=not args.unsandboxed,
            scheduler=scheduler or None,
            **{k: v for k, v in vars(args).items() if k in ("workers", "force")},
        )
    except (SandboxUnavailable, FileNotFoundError) as exc:
        print(f"course grade: nothing graded: {exc}", file=sys.stderr)
        return 2
    except (GraderFault, InputsError) as exc:
        print(f"course grade: the grader failed, not the students: {exc}", file=sys.stderr)
        return 2
    autograde.print_table(statuses)
    return 0 if all(s.graded and not s.problems for s in statuses) else 1


def _check(args) -> int:
    from course import selfcheck
    from course.grader.sandbox import SandboxUnavailable

    try:
        return selfcheck.check(Path(args.notebook), sandboxed=not args.unsandboxed)
    except (FileNotFoundError, SandboxUnavailable) as exc:
        print(f"course check: {exc}", file=sys.stderr)
        return 2


def _export(args) -> int:
    from course.carry import export

    root = course_root()
    work = Path(args.work).expanduser() if args.work else learner_work(root)
    if not work.is_dir():
        print(
            f"course export: no folder {work}: run `make lab` first (it makes work/), or name "
            "your assignments' folder with --work",
            file=sys.stderr,
        )
        return 2
    if args.assignment and not (work / args.assignment).is_dir():
        known = sorted(p.name for p in work.iterdir() if p.is_dir() and not p.name.startswith("."))
        print(
            f"course export: no assignment folder {work / args.assignment}: name one of "
            f"{', '.join(known) or '(none yet: run `make lab`)'}",
            file=sys.stderr,
        )
        return 2
    written = export(root, only=args.assignment, work=work)
    if not written:
        print("course export: every carried module is up to date")
    return 0


def _validate(args) -> int:
    from course import selfcheck

    try:
        return selfcheck.validate(Path(args.notebook))
    except FileNotFoundError as exc:
        print(f"course validate: {exc}", file=sys.stderr)
        return 2


def _lab(args) -> int:
    from course import workspace

    return workspace.lab(instructor=args.instructor, extra=args.jupyter_args, root=args.course)


def _demo(args) -> int:
    from course.authoring import demo

    return demo.main(into=args.into)


def _cluster_certs(args) -> int:
    from course.grader import cluster

    try:
        cluster.make_certificates(args.folder)
    except cluster.ClusterError as exc:
        print(f"course cluster-certs: {exc}", file=sys.stderr)
        return 2
    options = " ".join(cluster.dask_options(args.folder))
    print(
        f"{args.folder}: the grading cluster's certificates (keep the folder private).\n"
        f"  dask scheduler --protocol tls {options}\n"
        f"  dask worker tls://SCHEDULER:8786 --nthreads 1 {options}\n"
        f"  course grade ASSIGNMENT --scheduler tls://SCHEDULER:8786 --tls {args.folder}"
    )
    return 0


def _bench(args) -> int:
    from course.authoring import bench

    if args.processors:
        from course.authoring import processors

        return processors.main()
    if args.bands:
        from course.authoring import bands

        return bands.main(only=args.check or None, seeds=args.seeds)

    return bench.main(
        notebooks_only=args.notebooks,
        class_only=args.class_only,
        conv_only=args.conv,
        landscape_only=args.landscape,
    )


def default_course() -> Path | None:
    """The current folder, if it is a course directory and $COURSE_ROOT names none: an
    instructor who runs `course grade` in demo/course means that course, as nbgrader's own
    commands do. None: course_root() decides."""
    here = Path.cwd()
    if "COURSE_ROOT" in os.environ or not is_course_directory(here):
        return None
    return here


class Parser(argparse.ArgumentParser):
    """argparse, whose errors also say where to read more (the command's --help)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\nsee `{self.prog} --help`\n")


def positive(text: str) -> int:
    """A whole number of at least 1 (--workers)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1, e.g. 2")
    return value


# What `course --help` lists: a learner's commands (on a class's hub, the only ones that
# work), the instructor's and author's behind `--help-all`.
LEARNER_COMMANDS = ("lab", "check", "validate", "export")


def listing(commands: dict[str, str], every: bool) -> str:
    """The commands' section(s) of `course --help`, one line each."""

    def section(title: str, names: list[str]) -> str:
        width = max(map(len, commands))
        lines = (
            textwrap.fill(
                commands[n],
                88,
                initial_indent=f"    {n:<{width}}  ",
                subsequent_indent=" " * (width + 6),
            )
            for n in names
        )
        return f"{title}:\n" + "\n".join(lines)

    learner = section("your commands", [n for n in LEARNER_COMMANDS if n in commands])
    others = [n for n in commands if n not in LEARNER_COMMANDS]
    if every:
        return f"{learner}\n\n{section('for instructors and course authors', others)}"
    rest = f"For instructors and course authors ({', '.join(others)}): course --help-all"
    return f"{learner}\n\n{textwrap.fill(rest, 88)}"


class HelpAll(argparse.Action):
    """--help-all: the help with every command, the instructor's and author's too."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.description = parser.description_every
        parser.print_help()
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="course",
        usage="course [-h | --help-all] COMMAND ...",
        epilog="example: course check work/01_backprop/backprop.ipynb\n"
        "Each command has its own --help, e.g. `course check --help`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--help-all", action=HelpAll, help="list every command, the instructor's too"
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS
    )
    said: dict[str, str] = {}  # each command and what it does, for the listing

    def command(name: str, what: str, *examples: str) -> argparse.ArgumentParser:
        """A subcommand whose --help says what it does and shows how it is called."""
        shown = "\n".join(f"  {e}" for e in examples)
        said[name] = what
        return commands.add_parser(
            name,
            prog=f"course {name}",  # not the top-level usage's words
            description=textwrap.fill(f"{what[0].upper()}{what[1:]}.", 88),
            epilog=f"example{'s' if len(examples) > 1 else ''}:\n{shown}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    command(
        "build",
        "regenerate source notebooks, release/ and references/ from source/*/*.pct.py",
        "course build",
    )
    command(
        "references",
        "recompute references/ from the source solutions (source/ and release/ untouched)",
        "course references",
    )
    grade = command(
        "grade",
        "autograde every submission of an assignment in submitted/*/<assignment>/ and print "
        "one line per student: the score, or why it was not graded",
        "course grade 01_backprop",
        "course grade 01_backprop --workers 2 --force",
    )
    grade.add_argument("assignment", help="a folder of release/, e.g. 01_backprop")
    grade.add_argument(
        "--course",
        type=Path,
        default=default_course(),
        help="the course directory (default: the current folder if it is one, e.g. after "
        "`cd demo/course`, else $COURSE_ROOT or this checkout)",
    )
    # One source of defaults, autograde.grade's: an option left out is not passed on.
    grade.add_argument(
        "--workers",
        type=positive,
        default=argparse.SUPPRESS,
        help="execute this many submissions at once (default: one per core)",
    )
    grade.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="execute on a Dask cluster over TLS, e.g. tls://10.0.0.5:8786 (with --tls)",
    )
    grade.add_argument(
        "--tls",
        metavar="DIR",
        type=Path,
        help="the cluster's certificates (made by `course cluster-certs DIR`)",
    )
    grade.add_argument(
        "--insecure-scheduler",
        action="store_true",
        help="accept a scheduler without TLS (only one nobody else can reach: any of its "
        "clients runs code on the workers, outside the sandbox)",
    )
    grade.add_argument(
        "--force",
        action="store_true",
        default=argparse.SUPPRESS,
        help="regrade every submission, not only the new or changed ones",
    )
    grade.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run grading kernels without the sandbox (only on purpose: "
        "student code then runs with your rights)",
    )
    check = command(
        "check",
        "grade one notebook of yours, as the instructor would, and write its feedback "
        "(<name>.feedback.html) beside it",
        "course check work/01_backprop/backprop.ipynb",
    )
    check.add_argument("notebook", help="e.g. work/01_backprop/backprop.ipynb")
    check.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run the kernel without the sandbox (where bubblewrap is missing)",
    )
    export = command(
        "export",
        "write your `#| export` cells of work/<a>/ into my_<a>.py of each later assignment",
        "course export",
        "course export 04_optimisers",
    )
    export.add_argument(
        "assignment", nargs="?", help="only into this assignment's folder, e.g. 04_optimisers"
    )
    export.add_argument(
        "--work",
        metavar="DIR",
        help="the folder holding your assignment folders (default: work/ of the course; "
        "on a class's hub, your home folder)",
    )
    validate = command(
        "validate",
        "run a notebook from a fresh kernel as Validate does; exit 1 if any cell fails",
        "course validate work/01_backprop/backprop.ipynb",
    )
    validate.add_argument("notebook", help="e.g. work/01_backprop/backprop.ipynb")
    lab = command(
        "lab",
        "copy new assignments into work/ and open JupyterLab on the start page "
        "(what `make lab` does, on every platform); JupyterLab's own options go after --",
        "course lab",
        "course lab --instructor -- --no-browser --port 9999",
    )
    lab.add_argument(
        "--instructor",
        action="store_true",
        help="every nbgrader tool, formgrader included (what `make lab-instructor` does)",
    )
    lab.add_argument(
        "--course",
        type=Path,
        help="another course directory, e.g. demo/course (default: this checkout's)",
    )
    lab.add_argument(
        "jupyter_args",
        nargs="*",
        help="passed to `jupyter lab` after `--`, e.g. -- --no-browser --port=8890",
    )
    demo = command(
        "demo",
        "grade a demo class in demo/course, headless (open it with `course lab --instructor "
        "--course demo/course`)",
        "course demo",
        "course demo --into /tmp/demo",
    )
    demo.add_argument(
        "--into", type=Path, help="folder of the demo (default: demo/ in the course directory)"
    )
    certs = command(
        "cluster-certs",
        "make the TLS certificates of a Dask grading cluster (`course grade --tls`)",
        "course cluster-certs ~/grading-certs",
    )
    certs.add_argument("folder", type=Path, help="where to write them (a new, private folder)")
    bench = command(
        "bench",
        "time every notebook and the autograding of one submission",
        "course bench --notebooks",
    )
    bench.add_argument(
        "--notebooks", action="store_true", help="only each notebook's execution time"
    )
    bench.add_argument(
        "--class",
        dest="class_only",
        action="store_true",
        help="only the throughput of grading a class of generated submissions",
    )
    bench.add_argument(
        "--conv",
        action="store_true",
        help="only 06's fast convolution against the naive loops and PyTorch (if installed), "
        "and the margin of its graded speed check",
    )
    bench.add_argument(
        "--landscape",
        action="store_true",
        help="only course.landscape's 41 x 41 slice, interpolation and trajectory PCA on 03's "
        "two-layer net (the solutions), with one BLAS thread and with two",
    )
    bench.add_argument(
        "--processors",
        action="store_true",
        help="only the solutions' marks with NumPy's SIMD paths, OpenBLAS's kernel and the "
        "thread counts of other processors, emulated (exit 1 if any point is lost)",
    )
    bench.add_argument(
        "--bands",
        action="store_true",
        help="only the training checks' bands (LOSS_BAND, CONVNET_BAND) against the largest "
        "deviation of correct implementations (tests/variants_*.py's alternates) and the "
        "smallest of the mutants, on a few secret seeds (exit 1 if a band misjudges one)",
    )
    bench.add_argument(
        "--check",
        action="append",
        metavar="NAME",
        help="with --bands: only this check (repeatable), e.g. normalised_training or "
        "normalised_training:scores",
    )
    bench.add_argument(
        "--seeds", type=positive, default=3, help="with --bands: secret seeds per check (3)"
    )
    parser.description = listing(said, every=False)
    parser.description_every = listing(said, every=True)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser, with its usage and its --help
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    # nbgrader's API runs `alembic` by name: make this environment's tools findable even
    # when it was never activated (`.venv/bin/course ...`).
    os.environ["PATH"] = tool_env()["PATH"]
    handler = {
        "build": _build,
        "references": _references,
        "grade": _grade,
        "check": _check,
        "export": _export,
        "validate": _validate,
        "lab": _lab,
        "demo": _demo,
        "cluster-certs": _cluster_certs,
        "bench": _bench,
    }
    return handler[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
