"""Pygments lexers compiled for speed: one regular expression per lexer state and first
character.

A Pygments ``RegexLexer`` tries its rules one after the other at each position and takes
the first that matches, one ``re`` call per rule tried. :class:`CompiledLexer` joins the
rules into one alternation ``(?:rule0)()|(?:rule1)()|...``: Python's ``re`` tries the
alternatives in the same order with the same backtracking, so the same rule wins and
matches the same text, in one call; the empty group closing each alternative says which
rule it was (``match.lastindex``). Rules keep their own groups (``bygroups`` reads them at
an offset; back-references and named groups are renumbered); the actions, the state stack
and the two fallbacks (a newline no rule takes resets to ``root``, any other character is
one ``Error`` token) are Pygments' own, so the token stream is the lexer's, token for token.

``re`` enters every alternative that does not begin with a plain character test, which
costs about as much as a call: a state of 60 rules is slow joined whole. So each state is
joined once per first character (:func:`first_chars` reads from ``re``'s parser which
characters a rule can start with; a rule that can match nothing is in every join), from
the rules that can start there, in their order: leaving out rules that cannot match at
a position does not change which rule matches first.

What it returns is not Pygments' (type, value) stream but what
:class:`neardup.code.CodeTokenizer` keeps of it (comments and docstrings dropped, a string
literal as one token, ``$ID``/``$STR``/``$NUM`` for type-2 clones), so the per-token work
is done once. Callbacks other than ``bygroups`` of token types (``using(this)`` on a
prefix, in the C, Java, C# and Python lexers) run Pygments' own code on the rule's match.
Lexers with their own loop (``ExtendedRegexLexer``, an overridden
``get_tokens_unprocessed``, except C's type-name pass, which is reproduced) are refused.

:data:`COMPILED_LANGUAGES` are the lexers checked token for token against Pygments (the
Python standard library, Go's source tree, a torture file per language, random text:
``tests/code/test_lexers.py`` and ``bench/bench_code_tokenizer.py``).
"""

from __future__ import annotations

import re
from functools import cache

try:  # the parser behind re.compile: a rule's possible first characters
    from re import _constants as sre
    from re import _parser as sre_parse
except ImportError:  # Python 3.10
    import sre_constants as sre
    import sre_parse

from pygments.lexer import RegexLexer, _TokenType
from pygments.lexers import get_lexer_by_name
from pygments.lexers.c_cpp import CFamilyLexer
from pygments.token import Comment, Name, Number, String, Text

ID, STR, NUM = "$ID", "$STR", "$NUM"

# what CodeTokenizer keeps of a token, decided once per Pygments token type
DROP, KEEP, NAME, STRING, NUMBER, C_NAME = range(6)  # C_NAME: C's Name, maybe a type
_GROUPS, _CALL, _NEWLINE = 10, 11, 12  # rule actions other than one token
_KEPT_COMMENTS = (Comment.Preproc, Comment.PreprocFile)  # "#include <x.h>" is code
_BUILTIN_NAMES = (Name.Builtin, Name.Exception)  # Builtin.Pseudo (self, this) is inside

COMPILED_LANGUAGES = frozenset(
    {"go", "c", "cpp", "java", "javascript", "jsx", "typescript", "tsx", "csharp", "rust",
     "python"}
)  # fmt: skip


def classify(ttype) -> int:
    """DROP, KEEP, NAME, STRING or NUMBER: what CodeTokenizer does with a token type."""
    if ttype in Comment:
        return KEEP if any(ttype in kept for kept in _KEPT_COMMENTS) else DROP
    if ttype in String.Doc:
        return DROP
    if ttype in Text:  # whitespace (dropped once stripped), or stray text some lexers emit
        return KEEP
    if ttype in Name and not any(ttype in builtin for builtin in _BUILTIN_NAMES):
        return NAME
    if ttype in String:
        return STRING
    if ttype in Number:
        return NUMBER
    return KEEP


# ---------------------------------------------------------------- joining rules


_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")
_OCTAL = "01234567"


def _shift_groups(pattern: str, offset: int, suffix: str) -> str:
    """``pattern`` with numbered back-references moved up by ``offset`` and named groups
    renamed with ``suffix``, so that it can sit among other rules in one expression.

    Escapes are read as ``re``'s parser reads them: ``\\12`` is a group reference,
    ``\\0``, ``\\012`` and three octal digits are characters; nothing inside ``[...]``
    refers to a group.
    """
    out, i, n, in_class = [], 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if not in_class and nxt in "123456789":
                j = i + 2
                if j < n and pattern[j].isdigit():
                    if (nxt in _OCTAL and pattern[j] in _OCTAL and j + 1 < n
                            and pattern[j + 1] in _OCTAL):
                        out.append(pattern[i:j + 2])  # \ooo: a character
                        i = j + 2
                        continue
                    j += 1
                out.append(f"\\{int(pattern[i + 1:j]) + offset}")
                i = j
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # "[]...]": a literal bracket first
                out.append("]")
                i += 1
            in_class = True
            continue
        if pattern.startswith("(?P<", i) or pattern.startswith("(?P=", i):
            close = pattern.index(">" if pattern[i + 3] == "<" else ")", i)
            out.append(pattern[i:close] + suffix + pattern[close])
            i = close + 1
            continue
        if pattern.startswith("(?(", i):
            close = pattern.index(")", i + 3)
            ref = pattern[i + 3:close]
            ref = str(int(ref) + offset) if ref.isdigit() else ref + suffix
            out.append(f"(?({ref})")
            i = close + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _alternative(pattern: str, flags: int, offset: int, suffix: str) -> str:
    """One rule as an alternative that matches what it matches alone, then ``()``."""
    inline = ""
    while m := _GLOBAL_FLAGS.match(pattern):  # "(?s)..." only allowed at the start
        inline += m.group(1)
        pattern = pattern[m.end():]
    verbose = "x" in inline or flags & re.VERBOSE
    if _refers_to_groups(pattern, flags):
        if verbose:  # comments could hold what looks like a reference
            raise TypeError(f"a verbose rule with group references: {pattern!r}")
        pattern = _shift_groups(pattern, offset, suffix)
    end = "\n)" if verbose else ")"  # a verbose pattern may end in a comment
    return (f"(?{inline}:" if inline else "(?:") + pattern + end + "()"


def _refers_to_groups(pattern: str, flags: int) -> bool:
    """Whether a rule names groups or refers to one (these need renumbering)."""
    parsed = sre_parse.parse(pattern, flags)
    if parsed.state.groupdict:
        return True
    stack = [parsed]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple, sre_parse.SubPattern)):
            for sub in item:
                if isinstance(sub, tuple) and sub and sub[0] in (sre.GROUPREF,
                                                                 sre.GROUPREF_EXISTS):
                    return True
                stack.append(sub)
    return False


# ---------------------------------------------------------------- first characters

_ASCII = range(128)
_ALL = (1 << 128) - 1
_CATEGORY_PATTERNS = {
    "DIGIT": r"\d", "NOT_DIGIT": r"\D", "SPACE": r"\s", "NOT_SPACE": r"\S",
    "WORD": r"\w", "NOT_WORD": r"\W", "LINEBREAK": r"\n", "NOT_LINEBREAK": r"[^\n]",
}


@cache
def _category_mask(category) -> int:
    name = str(category).removeprefix("CATEGORY_").removeprefix("UNI_").removeprefix("LOC_")
    pattern = _CATEGORY_PATTERNS.get(name)
    if pattern is None:
        return _ALL
    compiled = re.compile(pattern)  # Unicode rules: a superset of ASCII and locale ones
    return sum(1 << c for c in _ASCII if compiled.match(chr(c)))


def _chars_mask(chars, ignore_case: bool) -> tuple[int, bool]:
    """(ASCII mask, may be non-ASCII) of a set of code points given as ranges."""
    mask, other = 0, False
    for lo, hi in chars:
        if hi >= 128:
            other = True
        for c in range(lo, min(hi, 127) + 1):
            mask |= 1 << c
            if ignore_case:
                mask |= 1 << ord(chr(c).swapcase()[0]) if chr(c).isalpha() else 0
    if ignore_case and other:
        mask = _ALL  # "K" (U+212A) matches "k": leave it to re
    return mask, other or ignore_case


def _in_mask(items, ignore_case: bool) -> tuple[int, bool]:
    mask, other, negate = 0, False, False
    for op, arg in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            m, o = _chars_mask([(arg, arg)], ignore_case)
            mask, other = mask | m, other or o
        elif op is sre.RANGE:
            m, o = _chars_mask([arg], ignore_case)
            mask, other = mask | m, other or o
        elif op is sre.CATEGORY:
            mask, other = mask | _category_mask(arg), True
        else:
            return _ALL, True
    if negate:
        return (_ALL & ~mask if not ignore_case else _ALL), True
    return mask, other


def _first(items, flags: int) -> tuple[int, bool, bool]:
    """(ASCII mask, may be non-ASCII, may be empty) of what a parsed pattern can start
    with; a superset is safe (the rule is only tried where it might match)."""
    mask, other = 0, False
    ignore_case = bool(flags & re.IGNORECASE)
    for op, arg in items:
        if op is sre.LITERAL:
            m, o = _chars_mask([(arg, arg)], ignore_case)
            return mask | m, other or o, False
        if op is sre.IN:
            m, o = _in_mask(arg, ignore_case)
            return mask | m, other or o, False
        if op in (sre.NOT_LITERAL, sre.ANY):
            return _ALL, True, False
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # zero width: what follows starts here
        if op is sre.SUBPATTERN:
            _group, add, remove, sub = arg
            m, o, empty = _first(sub, (flags | add) & ~remove)
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
            low, _high, sub = arg
            m, o, empty = _first(sub, flags)
            empty = empty or low == 0
        elif op is getattr(sre, "ATOMIC_GROUP", None):
            m, o, empty = _first(arg, flags)
        elif op is sre.BRANCH:
            m, o, empty = 0, False, False
            for alternative in arg[1]:
                am, ao, ae = _first(alternative, flags)
                m, o, empty = m | am, o or ao, empty or ae
        else:  # group references, conditionals: anything, maybe nothing
            return _ALL, True, True
        mask, other = mask | m, other or o
        if not empty:
            return mask, other, False
    return mask, other, True


def first_chars(pattern: str, flags: int) -> tuple[int, bool, bool]:
    """(ASCII mask, may start with a non-ASCII character, may match the empty string)."""
    parsed = sre_parse.parse(pattern, flags)
    return _first(parsed.data, parsed.state.flags)


class _State(dict):
    """One lexer state, as a dict: first character -> (match, actions) of the joined
    expression of the rules that can start with it (in the lexer's order); "" is the end
    of the text. ``actions[group]``, for the group closing an alternative, is (what the
    rule emits, its groups or callback, its state change). Built on first use."""

    def __init__(self, rules, flags: int, name_kind):
        super().__init__()
        self.flags = flags
        # (pattern, groups, ASCII mask, non-ASCII, empty, (match, action, change))
        self.rules = []
        for rexmatch, action, new_state in rules:
            rule = rexmatch.__self__
            _alternative(rule.pattern, flags, 0, "")  # TypeError now for what cannot join
            mask, other, empty = first_chars(rule.pattern, flags)
            self.rules.append((rule.pattern, rule.groups, mask, other, empty,
                               (rexmatch, action, _state_change(new_state))))
        self.name_kind = name_kind
        self.by_rules: dict[tuple, tuple] = {}

    def __missing__(self, char: str):
        if char == "":
            chosen = tuple(i for i, r in enumerate(self.rules) if r[4])
        elif ord(char) < 128:
            bit = 1 << ord(char)
            chosen = tuple(i for i, r in enumerate(self.rules) if r[2] & bit or r[4])
        else:
            chosen = tuple(i for i, r in enumerate(self.rules) if r[3] or r[4])
        key = (chosen, char != "")  # the end of the text has no fallbacks
        entry = self.by_rules.get(key)
        if entry is None:
            entry = self.by_rules[key] = self._join(*key)
        self[char] = entry
        return entry

    def _join(self, chosen, fallbacks: bool):
        parts, actions, groups = [], {}, 0
        for index in chosen:
            pattern, n_groups, _mask, _other, _empty, (rexmatch, action, change) = \
                self.rules[index]
            parts.append(_alternative(pattern, self.flags, groups, f"__r{index}"))
            first = groups + 1  # the rule's own group 1
            groups += n_groups + 1
            actions[groups] = (*_action(action, rexmatch, first, self.name_kind), change)
        if fallbacks:
            parts.append(r"\n()")
            actions[groups + 1] = (_NEWLINE, None, None)
            parts.append(r"(?s:.)()")
            actions[groups + 2] = (KEEP, None, None)  # Pygments' Error token, one character
        pattern = re.compile("|".join(parts) or "(?!)", self.flags)
        assert pattern.groups == max(actions, default=0), "a rule's groups were miscounted"
        return pattern.match, [actions.get(g) for g in range(pattern.groups + 1)]


def _action(action, rexmatch, first: int, name_kind):
    """(kind, data): a token type's kind; _GROUPS with [(group, kind)] for bygroups of
    token types; _CALL with (rexmatch, callback) for anything else."""
    if action is None:
        return DROP, None  # default(): a state change that emits nothing
    if type(action) is _TokenType:
        return name_kind(action), None
    args = _bygroups_args(action)
    if args is not None and all(a is None or type(a) is _TokenType for a in args):
        return _GROUPS, [(first + i, name_kind(a)) for i, a in enumerate(args) if a is not None]
    return _CALL, (rexmatch, action)


def _bygroups_args(action):
    """The token types a ``bygroups(...)`` callback was made with, else None."""
    if getattr(action, "__qualname__", "") != "bygroups.<locals>.callback":
        return None
    cells = dict(zip(action.__code__.co_freevars, action.__closure__ or (), strict=False))
    return cells["args"].cell_contents if "args" in cells else None


def _state_change(new_state):
    """Pygments' processed state change as a tuple of steps: "#pop", "#push", a state
    name, or an int (pop that many, keeping root)."""
    if new_state is None:
        return None
    if isinstance(new_state, tuple):
        return new_state
    return (new_state,)


class CompiledLexer:
    """A Pygments ``RegexLexer`` run with one expression per state; see the module.

    ``tokens(source, ids, literals)`` is what ``CodeTokenizer(language, ids, literals)``
    returns with Pygments: the same list, token for token.
    """

    def __init__(self, lexer: RegexLexer):
        if not isinstance(lexer, RegexLexer) or any(
            "get_tokens_unprocessed" in vars(k)
            for k in type(lexer).__mro__
            if k not in (RegexLexer, CFamilyLexer) and issubclass(k, RegexLexer)
        ):
            raise TypeError(f"{type(lexer).__name__} is not a plain RegexLexer")
        self.lexer = lexer
        # CFamilyLexer turns a Name in its type lists into Keyword.Type after lexing
        self.c_types = frozenset()
        if isinstance(lexer, CFamilyLexer):
            self.c_types = frozenset().union(*(
                getattr(lexer, attr) for flag, attr in (
                    ("stdlibhighlighting", "stdlib_types"), ("c99highlighting", "c99_types"),
                    ("c11highlighting", "c11_atomic_types"),
                    ("platformhighlighting", "linux_types"),
                ) if getattr(lexer, flag)
            ))  # fmt: skip

        def name_kind(ttype):
            return C_NAME if self.c_types and ttype is Name else classify(ttype)

        self.states = {name: _State(rules, lexer.flags, name_kind)
                       for name, rules in lexer._tokens.items()}

    def prepare(self, source: str) -> str:
        """The text Pygments lexes: BOM removed, newlines normalized, one at the end."""
        preprocess = getattr(self.lexer, "_preprocess_lexer_input", None)
        return preprocess(source) if preprocess is not None else _prepare(self.lexer, source)

    def tokens(self, source: str, ids: bool = False, literals: bool = False) -> list[str]:
        text = self.prepare(source)
        out: list[str] = []
        append = out.append
        in_string = False  # a string literal comes in pieces: quote, body, escapes, quote
        c_types = self.c_types
        states = self.states
        stack = ["root"]
        state = states["root"]
        pos = 0
        pending = None  # tokens of a callback: (kind, value) pairs
        while True:
            match, actions = state[text[pos:pos + 1]]
            m = match(text, pos)
            if m is None:  # the end: the last alternative takes any other character
                break
            pos = m.end()
            kind, data, change = actions[m.lastindex]
            if kind >= _GROUPS:
                if kind == _GROUPS:
                    pending = [(k, m.group(g)) for g, k in data]
                    pending = [(k, v) for k, v in pending if v]
                elif kind == _CALL:
                    rexmatch, callback = data
                    pending = []
                    for _, ttype, value in callback(self.lexer, rexmatch(text, m.start())):
                        k = classify(ttype)
                        if c_types and ttype is Name:
                            k = C_NAME
                        pending.append((k, value))
                else:  # a newline no rule took: back to root
                    del stack[1:]
                    state = states["root"]
                    continue
                for k, value in pending:
                    if k == STRING:
                        if in_string:
                            if not literals:
                                out[-1] += value
                        else:
                            append(STR if literals else value)
                            in_string = True
                    elif k != DROP:
                        stripped = value.strip()
                        if stripped:
                            in_string = False
                            if k == KEEP:
                                append(stripped)
                            elif k == NAME:
                                append(ID if ids else stripped)
                            elif k == NUMBER:
                                append(NUM if literals else stripped)
                            else:
                                append(ID if ids and value not in c_types else stripped)
            elif kind == STRING:
                if in_string:
                    if not literals:
                        out[-1] += m.group()
                else:
                    append(STR if literals else m.group())
                    in_string = True
            elif kind != DROP:
                value = m.group()
                stripped = value.strip()
                if stripped:
                    in_string = False
                    if kind == KEEP:
                        append(stripped)
                    elif kind == NAME:
                        append(ID if ids else stripped)
                    elif kind == NUMBER:
                        append(NUM if literals else stripped)
                    else:
                        append(ID if ids and value not in c_types else stripped)
            if change is not None:
                for step in change:
                    if step == "#pop":
                        if len(stack) > 1:
                            stack.pop()
                    elif step == "#push":
                        stack.append(stack[-1])
                    elif isinstance(step, int):
                        if -step >= len(stack):
                            del stack[1:]
                        else:
                            del stack[step:]
                    else:
                        stack.append(step)
                state = states[stack[-1]]
        return out


def _prepare(lexer, text: str) -> str:
    """Pygments' own preparation of a str (Lexer.get_tokens), for versions without
    ``_preprocess_lexer_input``."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if lexer.stripall:
        text = text.strip()
    elif lexer.stripnl:
        text = text.strip("\n")
    if lexer.tabsize > 0:
        text = text.expandtabs(lexer.tabsize)
    if lexer.ensurenl and not text.endswith("\n"):
        text += "\n"
    return text


@cache
def compiled_lexer(language: str) -> CompiledLexer:
    """The compiled lexer for a Pygments alias (built once per process)."""
    return CompiledLexer(get_lexer_by_name(language, stripnl=False))
