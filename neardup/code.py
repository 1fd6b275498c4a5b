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

Speed: Pygments is the slow part (regular-expression lexers in pure Python); the
filtering here adds little. Measured with ``bench/bench_code_tokenizer.py`` on one core
of the 2-core dev machine, best of 3: a 3,000-line Python file (the standard library's
typing.py, 105 kB) 10,500 tokens kept in 0.23 s, about 45,000 tokens/s; a 3,000-line Go
file (70 kB) 17,100 tokens in 0.16 s, about 110,000 tokens/s. Both are about 0.45 MB of
source a second, 1.6 GB an hour per core; with the other core busy, runs gave as little
as 34,000 and 63,000 tokens/s. Parallelize over files for big corpora.

Generated files (:func:`is_generated`) and function-level granularity
(:func:`split_functions`) are here too.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import cache

from pygments.lexers import find_lexer_class_for_filename, get_lexer_by_name
from pygments.token import Comment, Keyword, Name, Number, String, Text
from pygments.util import ClassNotFound

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

ID, STR, NUM = "$ID", "$STR", "$NUM"

# token kinds, decided once per Pygments token type
_DROP, _KEEP, _NAME, _STRING, _NUMBER = range(5)
_KEPT_COMMENTS = (Comment.Preproc, Comment.PreprocFile)  # "#include <x.h>" is code
_BUILTIN_NAMES = (Name.Builtin, Name.Exception)  # Builtin.Pseudo (self, this) is inside


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
        kind = _KINDS[id(ttype)] = _classify(ttype)
    return kind


def _classify(ttype) -> int:
    if ttype in Comment:
        return _KEEP if any(ttype in kept for kept in _KEPT_COMMENTS) else _DROP
    if ttype in String.Doc:
        return _DROP
    if ttype in Text:  # whitespace (dropped once stripped), or stray text some lexers emit
        return _KEEP
    if ttype in Name and not any(ttype in builtin for builtin in _BUILTIN_NAMES):
        return _NAME
    if ttype in String:
        return _STRING
    if ttype in Number:
        return _NUMBER
    return _KEEP


@dataclass(frozen=True)
class CodeTokenizer:
    """Callable ``source -> tokens`` for one language; picklable (holds names and flags).

    language: a Pygments alias ("python", "go", "java", "c", "javascript", ...).
    normalize_identifiers: names -> "$ID" (type-2 clones).
    normalize_literals: strings -> "$STR", numbers -> "$NUM".
    """

    language: str
    normalize_identifiers: bool = False
    normalize_literals: bool = False

    def __post_init__(self) -> None:
        _lexer(self.language)  # unknown language: ValueError now, not on the first file

    @classmethod
    def for_path(cls, path: str, language: str | None = None, **flags) -> CodeTokenizer:
        """The tokenizer for ``path``'s extension (or ``language``); see lexer_for_path."""
        lexer_for_path(path, language)  # raises ValueError for an unknown extension
        return cls(language or guess_language(path), **flags)

    def __call__(self, source: str) -> list[str]:
        ids, literals = self.normalize_identifiers, self.normalize_literals
        tokens: list[str] = []
        in_string = False  # a string literal comes in pieces: quote, body, escapes, quote
        kinds = _KINDS
        for ttype, value in _lexer(self.language).get_tokens(source):
            kind = kinds.get(id(ttype))
            if kind is None:
                kind = _kind(ttype)
            if kind == _STRING:
                if in_string:
                    if not literals:
                        tokens[-1] += value
                else:
                    tokens.append(STR if literals else value)
                    in_string = True
                continue
            if kind == _DROP:
                continue  # "a" /* c */ "b" stays one literal, as the compiler sees it
            value = value.strip()  # whitespace tokens, preprocessor lines' newlines
            if not value:
                continue
            in_string = False
            if kind == _NAME and ids:
                tokens.append(ID)
            elif kind == _NUMBER and literals:
                tokens.append(NUM)
            else:
                tokens.append(value)
        return tokens


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
        if kind != _DROP and value.strip():
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

