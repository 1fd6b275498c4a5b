"""``neardup`` on the command line: each command is one library call (see :mod:`neardup.api`).

Exit codes: 0 success, 1 failure while running, 2 usage error (bad option,
missing file, bad value), with a message that names what is wrong.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import warnings
from contextlib import contextmanager

from .. import api
from .._core import interrupt, progress
from .._core.interrupt import Terminated
from . import completion
from . import index as cli_index
from .parser import (
    SOURCE_KEYS,
    against_options,
    build_parser,
    code_keeps_paths,
    contamination_options,
    keyword_options,
    repeats_options,
)
from .summary import describe_repeats, describe_report, format_explain, format_report

__all__ = ["build_parser", "format_report", "main"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
EXIT_TERMINATED = 128 + signal.SIGTERM


def _show_warning(message, category, filename, lineno, file=None, line=None):
    progress.LOGGER.warning(str(message))


class _Stderr(logging.Handler):
    """The command's voice on stderr: progress lines as they are, warnings after
    "neardup: warning: " (the stream looked up at each line: a redirected stderr holds)."""

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        if record.levelno >= logging.WARNING:
            line = f"neardup: warning: {line}"
        print(line, file=sys.stderr, flush=True)


@contextmanager
def _logging_to_stderr(quiet: bool):
    """For the command: the ``neardup`` logger's records on stderr (progress unless
    ``quiet``, warnings always) and nowhere else; as it was afterwards."""
    logger = progress.LOGGER
    handler, saved = _Stderr(), (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _os_error(exc: OSError) -> str:
    """"nosuch.jsonl: no such file or directory" for an error of the system about a file
    (its own message when it names none)."""
    if exc.filename is None or not exc.strerror:
        return str(exc)
    return f"{os.fsdecode(exc.filename)}: {exc.strerror[:1].lower()}{exc.strerror[1:]}"


def _is_input(filename, args) -> bool:
    """Whether ``filename`` is one of the command's inputs or lies inside one."""
    if filename is None:
        return False
    path = os.path.abspath(os.fsdecode(filename))
    for source in [*getattr(args, "sources", ()), getattr(args, "result_dir", None)]:
        if source is None:
            continue
        root = os.path.abspath(source)
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def main(argv=None) -> int:
    parser = build_parser()
    this_process = argv is None  # the command of this process, not a call from Python
    argv = code_keeps_paths(sys.argv[1:] if argv is None else list(argv))
    args = parser.parse_args(argv)
    args.explicit = cli_index.explicit_options(parser, argv, args)  # for --against, index
    shown, warnings.showwarning = warnings.showwarning, _show_warning
    try:
        # Ctrl-C, SIGTERM: raised between batches, not in a kernel; for the life of the
        # process when this is its command, so that one during its exit is no death
        with interrupt.deferred(for_life=this_process), \
                _logging_to_stderr(getattr(args, "quiet", False)):
            return _run(args)
    except BrokenPipeError:  # `neardup ... | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    finally:
        warnings.showwarning = shown


def _run(args) -> int:
    try:
        if args.command == "tune":
            plan = api.tune(args.threshold, args.num_perm, bands=args.bands, rows=args.rows)
            print(json.dumps(plan.as_dict(), indent=2) if args.json else plan.describe())
        elif args.command == "find" and args.explain is not None:
            options = keyword_options(args)
            for key in ("items", "items_field", "transpose"):
                options.pop(key, None)
            print(format_explain(api.explain(args.sources, args.explain, **options)))
        elif args.command == "completion":
            if args.install:
                print(completion.install(build_parser(), args.shell))
            else:
                print(completion.script(build_parser(), args.shell), end="")
        elif args.command == "index":
            cli_index.run(args, keyword_options, SOURCE_KEYS)
        elif args.command == "find":
            result = api.find(tuple(args.sources), out=args.out, output_format=args.output_format,
                              quiet=args.quiet, report=args.report,
                              representative_field=args.representative_field,
                              engine=args.engine, memory_limit=args.memory_limit,
                              work_dir=args.work_dir, escape_formulas=args.escape_formulas,
                              layout=args.layout, against=args.against, force=args.force,
                              unit=args.unit, **against_options(args))
            to_stdout = args.out == api.STDOUT  # the pairs there, the summary to stderr
            print(format_report(result, top=args.top,
                                out="standard output" if to_stdout else args.out),
                  file=sys.stderr if to_stdout else sys.stdout)
        elif args.command == "evaluate":
            options = keyword_options(args)
            options.pop("method")
            evaluation = api.evaluate(args.sources, quiet=args.quiet, sweep=args.sweep,
                                      curve_from=args.curve_from, plot=args.plot,
                                      json_path=args.json, truth=args.truth,
                                      engine=args.engine,
                                      compare_sketches=args.compare_sketches, **options)
            print(evaluation.describe())
        elif args.command == "repeats":
            to_stdout = args.out == api.STDOUT
            result = api.repeats_run(tuple(args.sources), args.out, unit=args.unit,
                                     min_tokens=args.min_tokens, top=args.top,
                                     max_chars=args.max_chars,
                                     output_format=args.output_format, quiet=args.quiet,
                                     escape_formulas=args.escape_formulas,
                                     memory_limit=args.memory_limit, work_dir=args.work_dir,
                                     engine=args.engine, summary=args.summary,
                                     min_unit_chars=args.min_unit_chars,
                                     min_unit_words=args.min_unit_words,
                                     **repeats_options(args))
            print(describe_repeats(result, "standard output" if to_stdout else args.out),
                  file=sys.stderr if to_stdout else sys.stdout)
            from ..units.run import describe_spared

            if (spared := describe_spared(result.repeats, args.unit)) is not None:
                print(spared, file=sys.stderr if to_stdout else sys.stdout)
        elif args.command == "contamination":
            result = api.contamination(
                tuple(args.sources), list(args.evals), fields=args.eval_fields,
                eval_text=args.eval_text, eval_id=args.eval_id, rule=args.rule,
                ngram=args.ngram, containment=args.containment, require=args.require,
                report=args.report, matches=args.matches, clean=args.clean_out,
                clean_spans=args.clean_spans, flag_eval=args.flag_eval, engine=args.engine,
                memory_limit=args.memory_limit, quiet=args.quiet,
                **contamination_options(args))
            print(result.describe(), file=sys.stderr if args.matches == api.STDOUT else sys.stdout)
        elif args.command == "report":
            from ..report import write_report

            drawn = write_report(args.result_dir, args.out, root=args.root,
                                 max_bytes=args.max_bytes, max_chords=args.max_chords,
                                 plots=args.plots)
            print(describe_report(drawn))
        else:
            to_stdout = args.out == api.STDOUT  # the records there, the summary to stderr
            result = api.dedup(tuple(args.sources), args.out, quiet=args.quiet,
                               representative_field=args.representative_field,
                               against=args.against, add=args.add, force=args.force,
                               engine=args.engine, explain=args.explain, unit=args.unit,
                               min_tokens=args.min_tokens, keep=args.keep,
                               min_chars=args.min_chars, memory_limit=args.memory_limit,
                               work_dir=args.work_dir, annotate=args.annotate,
                               summary=args.summary, min_unit_chars=args.min_unit_chars,
                               min_unit_words=args.min_unit_words,
                               **against_options(args))
            summary = (result.describe() if args.unit != "document" else
                       format_report(result, top=0,
                                     out="standard output" if to_stdout else args.out))
            print(summary, file=sys.stderr if to_stdout else sys.stdout)
    except (FileNotFoundError, NotADirectoryError) as exc:  # a missing input, named plainly
        print(f"neardup: error: {_os_error(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except PermissionError as exc:  # an input that cannot be read is the command's error
        if _is_input(exc.filename, args):
            print(f"neardup: error: {_os_error(exc)}", file=sys.stderr)
            return EXIT_USAGE
        print(f"neardup: failed: {_os_error(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except ValueError as exc:
        print(f"neardup: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ImportError as exc:  # an optional part that is not installed: the extra is named
        print(f"neardup: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Terminated:
        print("neardup: terminated; temporary files removed", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("neardup: interrupted; temporary files removed", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        raise
    except OSError as exc:  # a full disk, a folder without write permission: name the file
        what = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        print(f"neardup: failed: {what}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as exc:  # a failure while running: say what, not a traceback
        print(f"neardup: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK
