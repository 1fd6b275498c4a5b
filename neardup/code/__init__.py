"""Source code as tokens, for code-clone detection: text -> list of tokens.

:class:`CodeTokenizer` plugs into ``ShingleOptions(kind="word", tokenize=...)`` (with
``normalize=None``: code is case-sensitive). It lexes with Pygments and keeps the tokens
a compiler would see:

- dropped: comments (``Token.Comment.*`` except preprocessor lines, which are code),
  docstrings (``Token.Literal.String.Doc``) and whitespace;
- a string literal is one token, however many pieces Pygments cuts it into.

Clone types (Roy & Cordy's taxonomy):

- type 1, the default: identical token sequences, layout and comments aside;
- type 2: ``normalize_identifiers=True`` maps every ``Token.Name.*`` except builtins
  (``len``, ``self``, ``ValueError``) to ``"$ID"`` (keywords and builtin types are not
  names and stay), and ``normalize_literals=True`` maps strings to ``"$STR"`` and numbers
  to ``"$NUM"``. A file with its variables renamed gives the same sequence. The mapping is
  blind, not consistent renaming: ``a + b`` and ``a + a`` both become ``$ID + $ID``.

The language comes from the file extension (:func:`guess_language`, :func:`lexer_for_path`)
or is named (``language="go"``, any Pygments alias). An unknown extension without
``language=`` is a ValueError naming the extension; nothing guesses from content.

Engines (``engine=``), all giving the same tokens, token for token: Pygments token by
token (the reference), :class:`neardup.code.lexers.CompiledLexer` (the same Pygments lexer,
one joined regular expression per lexer state and first character; chosen for Go, C,
C++, Java, JavaScript, JSX, TypeScript, TSX, C#, Rust and Python) and, for Go,
:mod:`neardup.code.go_lexer` (GoLexer's rules as a numba kernel). The default picks the
fastest the language has; other languages stay on Pygments. Measured with
``bench/bench_code_tokenizer.py`` (BENCHMARKS.md; 2 cores shared with other work): on
Go's source tree (8,076 files, 92 MB), identical on every file, Pygments keeps about
300,000 tokens/s (1.8 MB/s), the joined expressions 1.3 M (4x), the kernel 11 M (36x);
on the Python standard library (1,790 files, 32 MB) Pygments 150,000 tokens/s, the
joined expressions 900,000 (6x). :meth:`CodeTokenizer.token_hashes` gives the token
hashes of many texts without a Python string per token (Go: the kernel hashes them).

Generated files (:func:`is_generated`) and function-level granularity
(:func:`split_functions`) are here too.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import cache

import numpy as np
from pygments.lexers import find_lexer_class_for_filename, get_lexer_by_name
from pygments.token import Keyword, Name
from pygments.util import ClassNotFound

from ..shingling import hash_tokens
from . import go_lexer
from .lexers import (
    COMPILED_LANGUAGES,
    DROP,
    ID,
    NAME,
    NUM,
    NUMBER,
    STR,
    STRING,
    CompiledLexer,
    classify,
    compiled_lexer,
)

# extension -> Pygments alias; checked before Pygments' own filename patterns, which are
# broad and sometimes surprising (".h" is C++ there, ".m" Objective-C or MATLAB).
EXTENSIONS = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".go": "go", ".java": "java", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "jsx",
    ".ts": "typescript", ".tsx": "tsx", ".cs": "csharp", ".rs": "rust", ".rb": "ruby",
    ".php": "php", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".swift": "swift",
    ".sh": "bash", ".bash": "bash", ".sql": "sql", ".lua": "lua", ".pl": "perl",
    ".r": "r", ".hs": "haskell", ".ml": "ocaml", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".dart": "dart", ".jl": "julia", ".m": "objective-c",
}  # fmt: skip

ENGINES = ("auto", "numba", "regex", "pygments")
__all__ = ["ID", "NUM", "STR", "ENGINES", "CodeTokenizer", "guess_language", "lexer_for_path",
           "is_generated", "split_functions"]  # ID, NUM, STR come from neardup.code.lexers


def guess_language(path: str) -> str | None:
    """The Pygments alias for ``path``'s extension, or None when it is not source code."""
    name = os.path.basename(path)
    ext = os.path.splitext(name)[1].lower()
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    lexer_class = find_lexer_class_for_filename(name)
    if lexer_class is None or not lexer_class.aliases or lexer_class.aliases[0] == "text":
        return None
    return lexer_class.aliases[0]


@cache
def _lexer(language: str):
    # stripnl=False keeps leading blank lines, so that line numbers stay the file's
    try:
        return get_lexer_by_name(language, stripnl=False)
    except ClassNotFound:
        raise ValueError(f"unknown language {language!r}: not a Pygments lexer alias") from None


def lexer_for_path(path: str, language: str | None = None):
    """The (cached) Pygments lexer for ``path``, or for ``language`` when given.

    Raises ValueError naming the extension when it is unknown and no language is given.
    """
    if language is None:
        language = guess_language(path)
        if language is None:
            ext = os.path.splitext(path)[1] or "(none)"
            raise ValueError(
                f"no code language for extension {ext!r} of {path!r}; pass language="
            )
    return _lexer(language)


_KINDS: dict[int, int] = {}  # id(token type) -> kind; token types are singletons


def _kind(ttype) -> int:
    kind = _KINDS.get(id(ttype))
    if kind is None:
        kind = _KINDS[id(ttype)] = classify(ttype)
    return kind


@cache
def _engine(language: str, engine: str) -> str:
    """The engine that runs: "auto" is the fastest checked against Pygments."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    name = _lexer(language).aliases[0]  # unknown language: ValueError
    if engine == "auto":
        if name == "go" and go_lexer.available():
            return "numba"
        return "regex" if name in COMPILED_LANGUAGES else "pygments"
    if engine == "numba" and not (name == "go" and go_lexer.available()):
        raise ValueError(f"engine='numba' is Go's (with Pygments' GoLexer rules), not {language!r}")
    if engine == "regex":
        try:
            compiled_lexer(name)
        except TypeError as err:
            raise ValueError(f"engine='regex' cannot run {language!r}: {err}") from None
    return engine


@dataclass(frozen=True)
class CodeTokenizer:
    """Callable ``source -> tokens`` for one language; picklable (holds names and flags).

    language: a Pygments alias ("python", "go", "java", "c", "javascript", ...).
    normalize_identifiers: names -> "$ID" (type-2 clones).
    normalize_literals: strings -> "$STR", numbers -> "$NUM".
    engine: who lexes; every engine gives the same tokens, token for token.
        "auto": the fastest below that the language has;
        "numba": Go only, a numba kernel translating GoLexer's rules
        (:mod:`neardup.code.go_lexer`);
        "regex": the Pygments lexer with one joined expression per state
        (:mod:`neardup.code.lexers`; "auto" picks it for :data:`COMPILED_LANGUAGES`, checked
        against Pygments: Go, C, C++, Java, JavaScript, JSX, TypeScript, TSX, C#, Rust,
        Python);
        "pygments": Pygments itself, token by token.
    """

    language: str
    normalize_identifiers: bool = False
    normalize_literals: bool = False
    engine: str = "auto"

    def __post_init__(self) -> None:
        _engine(self.language, self.engine)  # unknown language or engine: ValueError now

    @classmethod
    def for_path(cls, path: str, language: str | None = None, **flags) -> CodeTokenizer:
        """The tokenizer for ``path``'s extension (or ``language``); see lexer_for_path."""
        lexer_for_path(path, language)  # raises ValueError for an unknown extension
        return cls(language or guess_language(path), **flags)

    @property
    def runs_on(self) -> str:
        """The engine that runs ("numba", "regex" or "pygments"), "auto" resolved."""
        return _engine(self.language, self.engine)

    def __call__(self, source: str) -> list[str]:
        engine = _engine(self.language, self.engine)
        ids, literals = self.normalize_identifiers, self.normalize_literals
        if engine == "numba":
            return go_lexer.go_tokens(_compiled(self.language).prepare(source), ids, literals)
        if engine == "regex":
            return _compiled(self.language).tokens(source, ids, literals)
        return self._pygments_tokens(source)

    def token_hashes(self, texts, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(token hashes uint64[T], offsets int64[n + 1]) of ``texts``: what
        ``neardup.shingling.hash_tokens([self(t) for t in texts], seed)`` returns. With
        the numba engine no token becomes a Python string and the texts are lexed in
        parallel, so ``shingle`` can call this instead (see ``bench_code_tokenizer.py``).
        """
        if _engine(self.language, self.engine) == "numba":
            compiled = _compiled(self.language)
            return go_lexer.go_token_hashes([compiled.prepare(t) for t in texts],
                                            self.normalize_identifiers,
                                            self.normalize_literals, seed)
        return hash_tokens([self(t) for t in texts], seed)

    def _pygments_tokens(self, source: str) -> list[str]:
        ids, literals = self.normalize_identifiers, self.normalize_literals
        tokens: list[str] = []
        in_string = False  # a string literal comes in pieces: quote, body, escapes, quote
        kinds = _KINDS
        for ttype, value in _lexer(self.language).get_tokens(source):
            kind = kinds.get(id(ttype))
            if kind is None:
                kind = _kind(ttype)
            if kind == STRING:
                if in_string:
                    if not literals:
                        tokens[-1] += value
                else:
                    tokens.append(STR if literals else value)
                    in_string = True
                continue
            if kind == DROP:
                continue  # "a" /* c */ "b" stays one literal, as the compiler sees it
            value = value.strip()  # whitespace tokens, preprocessor lines' newlines
            if not value:
                continue
            in_string = False
            if kind == NAME and ids:
                tokens.append(ID)
            elif kind == NUMBER and literals:
                tokens.append(NUM)
            else:
                tokens.append(value)
        return tokens


def _compiled(language: str) -> CompiledLexer:
    return compiled_lexer(_lexer(language).aliases[0])


# ---------------------------------------------------------------- generated files

_GENERATED_MARKERS = re.compile(
    r"^// Code generated .* DO NOT EDIT\.$"  # the Go convention, exactly
    r"|@generated\b"  # Facebook/Meta, Rust, many code generators
    r"|\bauto-?generated\b"
    r"|\bautomatically generated\b"
    r"|\bmachine[- ]generated\b"
    r"|\bgenerated by the protocol buffer compiler\b"
    r"|\bgenerated (?:code|file)\b.*\bdo not (?:edit|modify)\b"
    r"|\bdo not (?:edit|modify)\b.*\bgenerated\b",
    re.IGNORECASE | re.MULTILINE,
)
GENERATED_HEADER_LINES = 20


def is_generated(text: str, header_lines: int = GENERATED_HEADER_LINES) -> bool:
    """True when the first ``header_lines`` lines mark the file as generated.

    Looks for the Go header ("// Code generated ... DO NOT EDIT."), "@generated",
    "autogenerated"/"auto-generated", "automatically generated", "machine generated",
    protoc's header, and "generated ... do not edit" in either order on one line.
    A marker further down, or a generator that writes none, is missed.
    """
    header = "\n".join(text.split("\n", header_lines)[:header_lines])
    return _GENERATED_MARKERS.search(header) is not None


# ---------------------------------------------------------------- functions

BRACE_LANGUAGES = frozenset(
    {"go", "java", "c", "cpp", "javascript", "jsx", "typescript", "tsx", "csharp", "rust",
     "kotlin", "scala", "swift", "php", "dart"}
)  # fmt: skip
_HEADER_TAIL_MAX = 24  # tokens allowed between ")" and "{": return types, throws, const
_HEADER_TAIL_STOPS = frozenset({";", "{", "}", "=", "=>"})


def split_functions(text: str, language: str) -> list[tuple[str, int, int, str]]:
    """Functions of a source file: ``(name, start_line, end_line, text)``, lines 1-based
    and inclusive, in file order.

    Python (``ast``): top-level functions and the methods of top-level classes (named
    ``Class.method``), decorators included; nested functions stay inside their parent.
    A file that does not parse gives [].

    Brace languages (:data:`BRACE_LANGUAGES`), from Pygments tokens: a name, a
    parenthesized list, at most a few tokens (return type, ``throws``, ``const``) with no
    ``;``, ``=``, ``=>`` or control keyword, then ``{`` ... matching ``}``. Found: Go
    functions and methods, Java/C#/Kotlin methods and constructors inside classes, C
    functions, JavaScript ``function f()`` and class/object methods ``f() {``. The text
    spans whole lines from the name's line, so Java modifiers and Go receivers on that
    line are in; annotations and comments on the lines above are not. Missed: anonymous
    functions and arrow functions (they stay inside their parent), bodies without braces,
    functions inside functions. Taken for a function by mistake: a macro call followed by
    a block (``FOREACH(x) {``).
    """
    if language == "python":
        return _python_functions(text)
    if language in BRACE_LANGUAGES:
        return _brace_functions(text, language)
    raise ValueError(
        f"split_functions supports python and {sorted(BRACE_LANGUAGES)}, got {language!r}"
    )


def _python_functions(text: str) -> list[tuple[str, int, int, str]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.splitlines()
    found = []

    def add(node, name):
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        found.append((name, start, node.end_lineno, "\n".join(lines[start - 1 : node.end_lineno])))

    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions):
            add(node, node.name)
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, functions):
                    add(member, f"{node.name}.{member.name}")
    return found


def _brace_functions(text: str, language: str) -> list[tuple[str, int, int, str]]:
    # significant tokens with their line; comments and whitespace only advance the line
    kinds, values, lines_of = [], [], []
    line = 1
    for ttype, value in _lexer(language).get_tokens(text):
        kind = _kind(ttype)
        if kind != DROP and value.strip():
            kinds.append(ttype)
            values.append(value.strip())
            lines_of.append(line)
        line += value.count("\n")
    match = _match_brackets(values)
    source_lines = text.splitlines()
    found = []
    i, n = 0, len(values)
    while i < n - 1:
        if (
            values[i + 1] == "("
            and (kinds[i] in Name or values[i] == "constructor")  # JS: a keyword
            and (i == 0 or values[i - 1] not in ("new", "."))
            and (i + 1) in match
        ):
            body = _body_after(match[i + 1] + 1, values, kinds, match)
            if body is not None:
                start, end = lines_of[i], lines_of[match[body]]
                found.append(
                    (values[i], start, end, "\n".join(source_lines[start - 1 : end]))
                )
                i = match[body] + 1
                continue
        i += 1
    return found


def _body_after(j: int, values, kinds, match) -> int | None:
    """Index of the "{" opening a function body after a parameter list ending at j - 1."""
    for k in range(j, min(j + _HEADER_TAIL_MAX, len(values))):
        value = values[k]
        if value == "{":
            return k if k in match else None
        if value in _HEADER_TAIL_STOPS:
            return None
        if kinds[k] in Keyword and not (
            kinds[k] in Keyword.Type or kinds[k] in Keyword.Declaration
            or value in ("const", "noexcept", "override", "final", "throws", "map", "chan")
        ):
            return None  # if, for, return, ...: a call, not a header
        if value == "(" and k in match:  # Go's multiple results: (int, error)
            return _body_after(match[k] + 1, values, kinds, match) if k == j else None
    return None


def _match_brackets(values) -> dict[int, int]:
    """Opening index -> closing index for balanced ( ) and { }; unbalanced ones are left out."""
    match, stack = {}, []
    pairs = {")": "(", "}": "{"}
    for i, value in enumerate(values):
        if value in ("(", "{"):
            stack.append(i)
        elif value in pairs:
            # recover from a stray closer by popping to its opener, if there is one
            while stack and values[stack[-1]] != pairs[value]:
                stack.pop()
            if stack:
                match[stack.pop()] = i
    return match

