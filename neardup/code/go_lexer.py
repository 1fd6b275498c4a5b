"""Go's Pygments lexer as a numba kernel: the same tokens, without Python per token.

Pygments' ``GoLexer`` is one state of 27 rules (``GO_RULES``). ``_next_token`` applies
them in the same order to a text's code points, each rule as a hand-written loop that
matches what its regular expression matches (greedy, first alternative first, the same
backtracking outcomes; ``\\s``, ``\\w`` and ``\\d`` read from a table built with ``re``
itself, so Unicode letters, digits and spaces fall where they fall for Pygments). Out
come the tokens :class:`neardup.code.CodeTokenizer` keeps: comments and whitespace
dropped, each kept token's span and kind, a string following a string (with only
comments and whitespace between) marked as its continuation.

On top of that: :func:`go_tokens` gives the token list (``CodeTokenizer``'s, token for
token), :func:`go_token_hashes` the token hashes of many texts in one parallel kernel
(what :func:`neardup.shingling.hash_tokens` computes from the token lists, without
making a Python string per token).

The kernel is a translation of the rules, so it is used only while Pygments' GoLexer
still has exactly these rules (:func:`available`); otherwise the tokenizer falls back
to :class:`neardup.code.lexers.CompiledLexer`, which reads the rules themselves.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np

from .._core.hashing import GOLDEN, mix64
from .._core.jit import njit, prange

# GoLexer's rules (Pygments 2.x), in order, numbered from 1 in the comments below: the
# kernel is their translation
GO_RULES = (
    (r"\n", "Token.Text.Whitespace"),
    (r"\s+", "Token.Text.Whitespace"),
    (r"(\\)(\n)", "bygroups(Token.Text, Token.Text.Whitespace)"),
    (r"//(.*?)$", "Token.Comment.Single"),
    (r"/(\\\n)?[*][\s\S]*?[*](\\\n)?/", "Token.Comment.Multiline"),
    (r"(import|package)\b", "Token.Keyword.Namespace"),
    (r"(var|func|struct|type|interface|const)\b", "Token.Keyword.Declaration"),
    (r"(break|c(?:(?:as|ontinu)e)|def(?:ault|er)|else|f(?:allthrough|or)|go(?:(?:to)?)|if"
     r"|r(?:ange|eturn)|s(?:elect|witch))\b", "Token.Keyword"),
    (r"(true|false|iota|nil)\b", "Token.Keyword.Constant"),
    (r"(append|c(?:ap|l(?:ear|ose)|o(?:mplex|py))|delete|imag|len|m(?:a(?:ke|x)|in)|new"
     r"|p(?:anic|rint(?:(?:ln)?))|re(?:al|cover))\b(\()",
     "bygroups(Token.Name.Builtin, Token.Punctuation)"),
    (r"(any|b(?:ool|yte)|c(?:han|omp(?:arable|lex(?:128|64)))|error|float(?:32|64)"
     r"|int(?:(?:16|32|64|8)?)|map|rune|string|uint(?:(?:16|32|64|8|ptr)?))\b",
     "Token.Keyword.Type"),
    (r"\d+i", "Token.Literal.Number"),
    (r"\d+\.\d*([Ee][-+]\d+)?i", "Token.Literal.Number"),
    (r"\.\d+([Ee][-+]\d+)?i", "Token.Literal.Number"),
    (r"\d+[Ee][-+]\d+i", "Token.Literal.Number"),
    (r"\d+(\.\d+[eE][+\-]?\d+|\.\d*|[eE][+\-]?\d+)", "Token.Literal.Number.Float"),
    (r"\.\d+([eE][+\-]?\d+)?", "Token.Literal.Number.Float"),
    (r"0[bB](_?[01])+", "Token.Literal.Number.Bin"),
    (r"0[oO]?(_?[0-7])+", "Token.Literal.Number.Oct"),
    (r"0[xX](_?[0-9a-fA-F])+", "Token.Literal.Number.Hex"),
    (r"(0|[1-9](_?[0-9])*)", "Token.Literal.Number.Integer"),
    (r"""'(\\['"\\abfnrtv]|\\x[0-9a-fA-F]{2}|\\[0-7]{1,3}|\\u[0-9a-fA-F]{4}"""
     r"""|\\U[0-9a-fA-F]{8}|[^\\])'""", "Token.Literal.String.Char"),
    (r"`[^`]*`", "Token.Literal.String"),
    (r'"(\\\\|\\[^\\]|[^"\\])*"', "Token.Literal.String"),
    (r"(<<=|>>=|<<|>>|<=|>=|&\^=|&\^|\+=|-=|\*=|/=|%=|&=|\|=|\^=|&&|\|\||<-|\+\+|--|==|!="
     r"|:=|[+\-*/%&!=<>|^])", "Token.Operator"),
    (r"(\.\.\.|[()\[\]{}.,;:~])", "Token.Punctuation"),
    (r"[^\W\d]\w*", "Token.Name.Other"),
)
KEYWORDS = (  # rules 6 to 9 and 11: kept as they are by type-2 normalization
    "import package var func struct type interface const break default select case defer "
    "go else goto switch fallthrough if range continue for return true false iota nil "
    "uint uint8 uint16 uint32 uint64 int int8 int16 int32 int64 float32 float64 map chan "
    "complex64 complex128 byte rune string bool error uintptr any comparable"
).split()
BUILTINS = (  # rule 10: builtins only when "(" follows at once, else names
    "print println panic recover close complex real imag len cap append copy delete new "
    "make min max clear"
).split()
OPERATORS = (  # rule 25, in its order; then one of +-*/%&!=<>|^
    "<<= >>= << >> <= >= &^= &^ += -= *= /= %= &= |= ^= && || <- ++ -- == != :="
).split()

# what a kept piece is; a string piece right after a string continues it
KEEP, NAME, NUMBER, STRING, STRING_MORE = 1, 2, 3, 4, 5
SPACE, WORD, DIGIT = 1, 2, 4  # re's \s, \w, \d
CHUNK_CHARS = 1 << 23  # code points lexed per parallel kernel call


def _describe(action) -> str:
    if getattr(action, "__qualname__", "") == "bygroups.<locals>.callback":
        cells = dict(zip(action.__code__.co_freevars, action.__closure__, strict=False))
        return f"bygroups({', '.join(map(str, cells['args'].cell_contents))})"
    return str(action)


@cache
def available() -> bool:
    """True when Pygments' GoLexer has exactly the rules the kernel translates."""
    from pygments.lexers import get_lexer_by_name

    tokens = get_lexer_by_name("go")._tokens
    rules = [(rex.__self__.pattern, _describe(action), new_state)
             for rex, action, new_state in tokens.get("root", ())]
    return list(tokens) == ["root"] and rules == [(p, a, None) for p, a in GO_RULES]


@cache
def char_classes() -> np.ndarray:
    """uint8[0x110000]: SPACE, WORD and DIGIT bits, as re's Unicode \\s, \\w and \\d."""
    table = np.zeros(0x110000, dtype=np.uint8)
    everything = "".join(map(chr, range(0x110000)))
    for bit, pattern in ((SPACE, r"\s+"), (WORD, r"\w+"), (DIGIT, r"\d+")):
        for m in re.finditer(pattern, everything):
            table[m.start():m.end()] |= bit
    return table


def _word_table(words) -> np.ndarray:
    """uint32[len(words), 1 + longest]: each word's length, then its code points."""
    width = max(map(len, words))
    table = np.zeros((len(words), width + 1), dtype=np.uint32)
    for i, word in enumerate(words):
        table[i, 0] = len(word)
        table[i, 1:len(word) + 1] = [ord(c) for c in word]
    return table


def _by_first_letter(words) -> tuple[np.ndarray, np.ndarray]:
    """(word table sorted by first letter, int64[27] where a..z's words start)."""
    words = sorted(words, key=lambda w: w[0])
    starts = np.searchsorted(np.array([ord(w[0]) - 97 for w in words]), np.arange(27))
    return _word_table(words), starts.astype(np.int64)


_KEYWORDS, _KEYWORDS_AT = _by_first_letter(KEYWORDS)
_BUILTINS, _BUILTINS_AT = _by_first_letter(BUILTINS)
_OPERATORS = _word_table(OPERATORS)
_STARTS_OPERATOR, _SINGLE_OPERATOR, _PUNCTUATION = 1, 2, 4  # bits of _ASCII_OPERATORS


def _ascii_operators() -> np.ndarray:
    bits = np.zeros(128, dtype=np.uint8)
    for chars, bit in (({op[0] for op in OPERATORS}, _STARTS_OPERATOR),
                       ("+-*/%&!=<>|^", _SINGLE_OPERATOR), ("()[]{}.,;:~", _PUNCTUATION)):
        bits[[ord(c) for c in chars]] |= bit
    return bits


_ASCII_OPERATORS = _ascii_operators()
_CHAR_ESCAPES = np.array([ord(c) for c in "'\"\\abfnrtv"], dtype=np.uint32)
_HEX = np.array([ord(c) for c in "0123456789abcdefABCDEF"], dtype=np.uint32)
_PLACEHOLDER_ID, _PLACEHOLDER_STR, _PLACEHOLDER_NUM = (
    np.array([ord(c) for c in value], dtype=np.uint32) for value in ("$ID", "$STR", "$NUM"))


# ---------------------------------------------------------------- the kernel


@njit(cache=True)
def _at(cp, i, hi):
    """The code point at i, or -1 past the end."""
    return np.int64(cp[i]) if i < hi else np.int64(-1)


@njit(cache=True)
def _digits(cp, i, hi, classes):
    """End of the run of \\d from i."""
    while i < hi and classes[cp[i]] & DIGIT:
        i += 1
    return i


@njit(cache=True)
def _member(c, chars):
    for x in chars:
        if c == x:
            return True
    return False


@njit(cache=True)
def _sign(c):
    return c == 43 or c == 45  # + -


@njit(cache=True)
def _separated(cp, i, hi, kind):
    """End of (_?[set])* from i; kind 2: [01], 8: [0-7], 10: [0-9], 16: hex digits."""
    while True:
        j = i + 1 if _at(cp, i, hi) == 95 else i  # "_"
        c = _at(cp, j, hi)
        if kind == 2:
            ok = c == 48 or c == 49
        elif kind == 8:
            ok = 48 <= c <= 55
        elif kind == 10:
            ok = 48 <= c <= 57
        else:
            ok = 48 <= c <= 57 or 97 <= c <= 102 or 65 <= c <= 70
        if not ok:
            return i
        i = j + 1


@njit(cache=True)
def _exponent(cp, i, hi, classes, sign_required):
    """End of [eE][+-]?\\d+ (sign required: [eE][-+]\\d+) at i, or -1."""
    c = _at(cp, i, hi)
    if c != 101 and c != 69:
        return -1
    j = i + 1
    if _sign(_at(cp, j, hi)):
        j += 1
    elif sign_required:
        return -1
    k = _digits(cp, j, hi, classes)
    return k if k > j else -1


@njit(cache=True)
def _in_words(cp, lo, hi, table, at):
    """Whether cp[lo:hi] (a lowercase ASCII letter first) is one of the table's words."""
    n = hi - lo
    first = cp[lo] - 97
    for w in range(at[first], at[first + 1]):
        if table[w, 0] == n:
            same = True
            for k in range(1, n):
                if cp[lo + k] != table[w, k + 1]:
                    same = False
                    break
            if same:
                return True
    return False


@njit(cache=True)
def _number(cp, p, hi, classes):
    """End of the number rules (12 to 21) at p, or -1: the first that matches."""
    c = np.int64(cp[p])
    if classes[c] & DIGIT:
        q = _digits(cp, p, hi, classes)
        nxt = _at(cp, q, hi)
        if nxt == 105:  # \d+i
            return q + 1
        if nxt == 46:  # \d+\.\d*([Ee][-+]\d+)?i
            r = _digits(cp, q + 1, hi, classes)
            e = _exponent(cp, r, hi, classes, True)
            if e >= 0 and _at(cp, e, hi) == 105:
                return e + 1
            if _at(cp, r, hi) == 105:
                return r + 1
        e = _exponent(cp, q, hi, classes, True)  # \d+[Ee][-+]\d+i
        if e >= 0 and _at(cp, e, hi) == 105:
            return e + 1
        if nxt == 46:  # \d+(\.\d+[eE][+\-]?\d+|\.\d*|[eE][+\-]?\d+)
            r = _digits(cp, q + 1, hi, classes)
            if r > q + 1:
                e = _exponent(cp, r, hi, classes, False)
                if e >= 0:
                    return e
            return r
        e = _exponent(cp, q, hi, classes, False)
        if e >= 0:
            return e
        if c == 48:  # "0": binary, octal, hex, zero
            c1 = _at(cp, p + 1, hi)
            if c1 == 98 or c1 == 66:
                e = _separated(cp, p + 2, hi, 2)
                if e > p + 2:
                    return e
            if c1 == 111 or c1 == 79:
                e = _separated(cp, p + 2, hi, 8)
                if e > p + 2:
                    return e
            e = _separated(cp, p + 1, hi, 8)
            if e > p + 1:
                return e
            if c1 == 120 or c1 == 88:
                e = _separated(cp, p + 2, hi, 16)
                if e > p + 2:
                    return e
            return p + 1
        if 49 <= c <= 57:
            return _separated(cp, p + 1, hi, 10)
        return -1  # a digit outside ASCII, with no "." or exponent: no rule
    if c == 46:  # "."
        r = _digits(cp, p + 1, hi, classes)
        if r > p + 1:
            e = _exponent(cp, r, hi, classes, True)  # \.\d+([Ee][-+]\d+)?i
            if e >= 0 and _at(cp, e, hi) == 105:
                return e + 1
            if _at(cp, r, hi) == 105:
                return r + 1
            e = _exponent(cp, r, hi, classes, False)  # \.\d+([eE][+\-]?\d+)?
            return e if e >= 0 else r
    return -1


@njit(cache=True)
def _char_literal(cp, p, hi):
    """End of rule 22 (a rune literal) at p, or -1."""
    a = p + 1
    c = _at(cp, a, hi)
    if c == 92:  # a backslash: the escapes, in the rule's order
        c1 = _at(cp, a + 1, hi)
        if c1 >= 0 and _member(c1, _CHAR_ESCAPES) and _at(cp, a + 2, hi) == 39:
            return a + 3
        if c1 == 120 and _member(_at(cp, a + 2, hi), _HEX) and _member(_at(cp, a + 3, hi), _HEX) \
                and _at(cp, a + 4, hi) == 39:
            return a + 5
        k = 0
        while k < 3 and 48 <= _at(cp, a + 1 + k, hi) <= 55:
            k += 1
        while k >= 1:  # {1,3}, greedy, giving back one at a time
            if _at(cp, a + 1 + k, hi) == 39:
                return a + 2 + k
            k -= 1
        for width, letter in ((4, 117), (8, 85)):
            if c1 == letter:
                ok = True
                for k in range(width):
                    if not _member(_at(cp, a + 2 + k, hi), _HEX):
                        ok = False
                        break
                if ok and _at(cp, a + 2 + width, hi) == 39:
                    return a + 3 + width
        return -1
    if c >= 0 and _at(cp, a + 1, hi) == 39:  # [^\\] then the quote
        return a + 2
    return -1


@njit(cache=True)
def _operator(cp, p, hi):
    """End of rule 25 or 26 (operators, punctuation) at p, or -1."""
    c = cp[p]
    if c >= 128:
        return -1
    bits = _ASCII_OPERATORS[c]
    if bits & _STARTS_OPERATOR:
        for w in range(_OPERATORS.shape[0]):
            n = _OPERATORS[w, 0]
            if p + n <= hi and c == _OPERATORS[w, 1]:
                same = True
                for k in range(1, n):
                    if cp[p + k] != _OPERATORS[w, k + 1]:
                        same = False
                        break
                if same:
                    return p + n
    if bits & _SINGLE_OPERATOR:
        return p + 1
    if c == 46 and _at(cp, p + 1, hi) == 46 and _at(cp, p + 2, hi) == 46:
        return p + 3
    if bits & _PUNCTUATION:
        return p + 1
    return -1


@njit(cache=True)
def _next_token(cp, p, hi, classes):
    """(start, end, kind) of the first kept token of cp[p:hi] (KEEP, NAME, NUMBER or
    STRING), skipping whitespace and comments; start is hi when there is none."""
    while p < hi:
        c = np.int64(cp[p])
        cls = classes[c]
        end = -1
        kind = KEEP
        if c == 10:  # \n
            p += 1
            continue
        if cls & SPACE:  # \s+
            p += 1
            while p < hi and classes[cp[p]] & SPACE:
                p += 1
            continue
        if c == 92 and _at(cp, p + 1, hi) == 10:  # (\\)(\n): "\" kept, the newline not
            end = p + 1
        elif c == 47 and _at(cp, p + 1, hi) == 47:  # //(.*?)$
            p += 2
            while p < hi and cp[p] != 10:
                p += 1
            continue
        elif c == 47:  # /(\\\n)?[*][\s\S]*?[*](\\\n)?/
            q = p + 1
            if _at(cp, q, hi) == 92 and _at(cp, q + 1, hi) == 10:
                q += 2
            if _at(cp, q, hi) == 42:
                r = q + 1
                while r < hi:
                    if cp[r] == 42:
                        c1 = _at(cp, r + 1, hi)
                        if c1 == 47:
                            end = r + 2
                            break
                        if c1 == 92 and _at(cp, r + 2, hi) == 10 and _at(cp, r + 3, hi) == 47:
                            end = r + 4
                            break
                    r += 1
                if end >= 0:
                    p = end
                    continue
        if end < 0 and cls & WORD and not cls & DIGIT:  # keywords, builtins, names
            q = p + 1
            while q < hi and classes[cp[q]] & WORD:
                q += 1
            end = q
            if q - p <= 11 and 97 <= c <= 122:
                if _in_words(cp, p, q, _KEYWORDS, _KEYWORDS_AT):
                    kind = KEEP
                elif _at(cp, q, hi) == 40 and _in_words(cp, p, q, _BUILTINS, _BUILTINS_AT):
                    kind = KEEP
                else:
                    kind = NAME
            else:
                kind = NAME
        if end < 0:
            end = _number(cp, p, hi, classes)
            if end >= 0:
                kind = NUMBER
        if end < 0 and c == 39:
            end = _char_literal(cp, p, hi)
            if end >= 0:
                kind = STRING
        if end < 0 and c == 96:  # `[^`]*`
            q = p + 1
            while q < hi and cp[q] != 96:
                q += 1
            if q < hi:
                end = q + 1
                kind = STRING
        if end < 0 and c == 34:  # "(\\\\|\\[^\\]|[^"\\])*"
            q = p + 1
            while q < hi:
                c1 = cp[q]
                if c1 == 34:
                    end = q + 1
                    kind = STRING
                    break
                if c1 == 92:
                    if q + 1 >= hi:
                        break
                    q += 2
                else:
                    q += 1
        if end < 0:
            end = _operator(cp, p, hi)
        if end < 0:
            end = p + 1  # no rule: Pygments' Error token, one character, kept
        return p, end, kind
    return hi, hi, KEEP


@njit(cache=True)
def _placeholder_hash(h, chars):
    for c in chars:
        h = mix64(h + np.uint64(c) * GOLDEN + np.uint64(1))
    return h


@njit(cache=True)
def _joined_tokens(cp, classes, ids, literals, sep, out):
    """Lex the text cp and write its tokens' code points into out, ``sep`` between two
    tokens (out holds 5 per code point of cp: "08" is two numbers, "$NUM" and "$NUM",
    and a separator); returns the length written."""
    hi = cp.size
    k = 0
    in_string = False
    p = 0
    while True:
        first, end, kind = _next_token(cp, p, hi, classes)
        if first >= hi:
            return k
        p = end
        if kind == STRING and in_string:  # the same literal, continued
            if literals:
                continue
        elif k > 0:
            out[k] = sep
            k += 1
        in_string = kind == STRING
        if ids and kind == NAME:
            chars = _PLACEHOLDER_ID
        elif literals and kind == STRING:
            chars = _PLACEHOLDER_STR
        elif literals and kind == NUMBER:
            chars = _PLACEHOLDER_NUM
        else:
            for q in range(first, end):
                out[k] = cp[q]
                k += 1
            continue
        for c in chars:
            out[k] = c
            k += 1


@njit(cache=True)
def _doc_hashes(cp, lo, hi, classes, ids, literals, seed, out, at):
    """Lex cp[lo:hi] and write its token hashes from out[at]; returns how many."""
    start = mix64(seed ^ GOLDEN)
    count = 0
    in_string = False
    h = start
    p = lo
    while True:
        first, end, kind = _next_token(cp, p, hi, classes)
        if first >= hi:
            break
        p = end
        if kind == STRING and in_string:  # the same literal, continued
            if literals:
                continue
        else:
            if count:
                out[at + count - 1] = h
            count += 1
            h = start
        in_string = kind == STRING
        if ids and kind == NAME:
            h = _placeholder_hash(h, _PLACEHOLDER_ID)
        elif literals and kind == STRING:
            h = _placeholder_hash(h, _PLACEHOLDER_STR)
        elif literals and kind == NUMBER:
            h = _placeholder_hash(h, _PLACEHOLDER_NUM)
        else:
            for q in range(first, end):
                h = mix64(h + np.uint64(cp[q]) * GOLDEN + np.uint64(1))
    if count:
        out[at + count - 1] = h
    return count


def _hashes(cp, doc_offsets, classes, ids, literals, seed):
    """Token hashes of the texts cp[doc_offsets[d]:doc_offsets[d + 1]], and offsets; a
    text has fewer tokens than code points, so each is hashed once into its own span of
    a scratch array, then compacted."""
    n_docs = doc_offsets.size - 1
    base = doc_offsets[0]
    scratch = np.empty(doc_offsets[-1] - base, dtype=np.uint64)
    counts = np.zeros(n_docs, dtype=np.int64)
    for d in prange(n_docs):
        counts[d] = _doc_hashes(cp, doc_offsets[d], doc_offsets[d + 1], classes, ids,
                                literals, seed, scratch, doc_offsets[d] - base)
    offsets = np.zeros(n_docs + 1, dtype=np.int64)
    for d in range(n_docs):
        offsets[d + 1] = offsets[d] + counts[d]
    out = np.empty(offsets[-1], dtype=np.uint64)
    for d in prange(n_docs):
        at = doc_offsets[d] - base
        out[offsets[d]:offsets[d + 1]] = scratch[at:at + counts[d]]
    return out, offsets


# threads pay once the work outlasts waking them (a busy machine can take 20 ms)
_hashes_serial = njit(cache=True)(_hashes)
_hashes_parallel = njit(cache=True, parallel=True)(_hashes)
PARALLEL_CHARS = 1 << 22  # code points from which a chunk is lexed on every thread


# ---------------------------------------------------------------- Python side


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _separator(text: str) -> str:
    for c in "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12\x13\x14\x15":
        if c not in text:
            return c
    return next(chr(c) for c in range(0xE000, 0x110000) if chr(c) not in text)


def go_tokens(text: str, ids: bool = False, literals: bool = False) -> list[str]:
    """CodeTokenizer("go")'s tokens of ``text``, already prepared as Pygments prepares it
    (see :meth:`neardup.code.lexers.CompiledLexer.prepare`)."""
    cp = _code_points(text)
    sep = _separator(text)
    out = np.empty(5 * cp.size, dtype=np.uint32)
    length = _joined_tokens(cp, char_classes(), ids, literals, ord(sep), out)
    if length == 0:
        return []
    return out[:length].tobytes().decode("utf-32-le", "surrogatepass").split(sep)


def go_token_hashes(texts: list[str], ids: bool = False, literals: bool = False,
                    seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(token hashes uint64[T], offsets int64[n + 1]) of prepared texts: what
    ``hash_tokens([go_tokens(t) for t in texts], seed)`` returns, texts lexed in parallel
    (a chunk of about CHUNK_CHARS code points at a time bounds the scratch memory)."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    bounds = np.flatnonzero(np.diff(np.cumsum(lengths) // CHUNK_CHARS, prepend=0)) + 1
    bounds = [0, *bounds.tolist(), len(texts)] if len(texts) else [0, 0]
    seed64 = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    values, counts = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if lo == hi:
            continue
        doc_offsets = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum(lengths[lo:hi], out=doc_offsets[1:])
        cp = _code_points("".join(texts[lo:hi]))
        kernel = _hashes_parallel if cp.size >= PARALLEL_CHARS else _hashes_serial
        hashes, offsets = kernel(cp, doc_offsets, char_classes(), ids, literals, seed64)
        values.append(hashes)
        counts.append(np.diff(offsets))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    if counts:
        np.cumsum(np.concatenate(counts), out=offsets[1:])
    hashes = np.concatenate(values) if values else np.empty(0, dtype=np.uint64)
    return hashes, offsets
