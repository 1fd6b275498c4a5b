"""The fast engines give Pygments' tokens, token for token: torture files, the standard
library, random text. Go's source tree is checked file by file in
bench/bench_code_tokenizer.py (it is a download)."""

import glob
import pickle
import sysconfig

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.code import ID, NUM, STR, CodeTokenizer, go_lexer
from neardup.code.lexers import COMPILED_LANGUAGES, CompiledLexer, first_chars
from neardup.shingling import ShingleOptions, hash_tokens, shingle

FLAGS = [(False, False), (True, True), (True, False), (False, True)]

# per language: nested comments where the language has them, raw and multi-line
# strings, escapes, non-ASCII identifiers, and (last) a string left open at the end;
# <3q> stands for three single quotes, which would close the raw literal
TORTURE = {
    "go": r'''// Package tørture: comments, runes, raw strings.
package tørture

import (
	"fmt" // merged with the next string: only a comment between
	/* block */ "os"
)

/* a /* not nested */ x := 1

var π, ñame, _x2, x٣ = 3.14159, "naïve\t\"q\"\\", 0x1F_FF, 0b1010
var runes = []rune{'a', '\'', '\\', '\x41', '\101', '\u00e9', '\U0001F600', '\n', <3q>, '\z'}
var raw = `C:\path\
multi
line`
var nums = []any{0, 07, 0o17, 0O_7, 0xDEAD_beef, 1_000_000, 1e9, 1E-9, 1.5e+3, .5, 5.,
	6.67e-11i, 1i, .25i, 0x1p-2, 089, 1__0, 0b, 0x, 1e+, 1.e-5i, ٣, ٣i, ٣.5}
func (r *T) Len() int { return len(r.s) + cap(r.s) }
func f() { len := 3; _ = len; x := complex (1, 2); go func() {}(); ch <- 1; a &^= b; c := <-ch }
label: goto label; fallthrough; select {}
s := "a" + "b" "c" // adjacent
t := "multi
line ok in Pygments"
u := "ends with escape \\" + "\"" + '"' + `"`
/* unterminated at the end? no, this one closes */ ...
v := x[1:2:3]; w := ~x; y := a<<=2; z := a>>b
#error $ @ ? \
e := "open string to the end
''',
    "c": r'''#include <stdio.h>
#include "local.h"
#define MAX(a, b) ((a) > (b) ? (a) : (b)) /* a comment */ \
    + continued
#if 0
this is dropped as a comment: int x = "
#endif
/* block /* not nested */ int n = 1;
static const char *s = "esc \" \\ \n \x41 \101" "merged" L"wide" u8"utf8" u"u" U"U";
size_t len; int32_t i = 0x1Fu, j = 017, k = 0b101, l = 1.5e-3f, m = .5L, n2 = 1'000;
char c = 'a', d = '\'', e = '\\', f = '\x41', g = 'ab';
struct ñ { int é; } über;
int main(void) { return MAX(i, j) ? printf("%d\n", i) : 0; }
#pragma once
  # /* comment before hash */ define X 1
x = a->b; y = a.b; z = ~a ^ b | c && d || !e; w <<= 2; q = a ? b : c;
// line comment \
   continued onto this line
char *open = "unterminated
''',
    "cpp": r'''#include <vector>
// C++: raw strings, templates, lambdas, digit separators
auto r = R"delim(raw \n "quotes" )not the end)delim";
auto r2 = u8R"(also raw)";
auto s = "a" "b"s;
template <typename T> class Box : public Base<T> {
  std::vector<T> items_;
 public:
  Box() noexcept = default;
  auto size() const -> std::size_t { return items_.size(); }
  static constexpr int kMax = 1'000'000;
};
namespace ñs { int été = 0x1'F; }
auto f = [&](int x) mutable { return x * 2.5e3; };
int main() { Box<int> b; std::cout << b.size() << '\n' << L'x'; }
/* multi
   line */ int z = 1; // line
const char *open = R"x(never closed
''',
    "java": r'''package org.tørture;

import java.util.*;

/** Javadoc: {@link Map}. */
@SuppressWarnings("unchecked")
public final class Tørture<T extends Comparable<T>> implements Runnable {
    private static final long BIG = 1_000_000L, HEX = 0xFFFF_FFFFL, BIN = 0b1010;
    private double d = 1.5e-3d, e = .5f, f = 5.;
    private char c = '\'', u = '\u00e9', o = '\\';
    private String s = "esc \" \\ \t" + "more";
    private String block = """
        a text block "with quotes" \
        and a continuation
        """;
    public <R> R map(java.util.function.Function<T, R> fn) throws Exception {
        int ñ = 0; /* block */ ñ += 1; // line
        if (this instanceof Runnable r && ñ > 0) { return fn.apply(null); }
        var list = new ArrayList<String>(); list.forEach(System.out::println);
        label: for (int i = 0; i < 10; i++) { continue label; }
        return switch (ñ) { case 1 -> null; default -> { yield null; } };
    }
    @Override public void run() {}
}
String open = "unterminated
''',
    "javascript": r'''// JS: regex literals, template strings, numbers
'use strict';
const ñame = /ab+c/gi, div = a / b / c, re2 = /[/]\//;
let t = `template ${x + `nested ${y}`} and \` tick`;
var s = 'single \' quote' + "double \" quote" + 'a' 'b';
const n = [0x1F, 0o17, 0b11, 1_000n, 1e-9, .5, 5., 123n];
class A extends B { #priv = 1; static async *gen() { yield* other(); }
  get x() { return this.#priv; } }
const f = async (a = 1, ...rest) => { await a?.b ?? c; return a ** 2; };
label: for (const k in obj) { if (k === 'x') break label; }
/* block */ x = y <!-- not a comment in modules
x >>>= 1; y = a !== b; z = typeof a === 'undefined';
const é = "unterminated
''',
    "typescript": r'''// TypeScript
import type { Foo } from './foo';
export interface Box<T> { readonly value: T; size?: number }
enum Color { Red = 1, Green = 0x2 }
declare module 'x' { export function f(a: string): void; }
abstract class Shape<T extends object = {}> implements Box<T> {
  private readonly ñ: number = 1_000;
  constructor(public value: T) { super(); }
  abstract area(): number;
}
const t = `tmpl ${a as unknown as string}`;
let x: Array<number> | undefined = <number[]>[1, 2.5e3];
type Fn = (a: number) => asserts a is 1;
const re = /^[a-z]+$/u;
let open = 'unterminated
''',
    "csharp": r'''// C#
using System;
namespace Tørture {
  /// <summary>doc comment</summary>
  [Serializable]
  public sealed class Box<T> where T : class {
    private const double D = 1.5e-3, F = 2.5f, M = 3.0m;
    private readonly long L = 0xFFUL, B = 0b1010;
    private char c = '\'', u = '\u00e9';
    private string s = "esc \" \\", v = @"verbatim ""quoted"" C:\path", i = $"interp {x} {{y}}";
    private string raw = """
        raw "string" literal
        """;
    public int Ñame { get; set; } = 0;
    public async Task<T?> GetAsync(int x) => await Task.FromResult<T?>(null);
    #region R
    #if DEBUG
    public void Dbg() { var é = x?.y ?? z; }
    #endif
    #endregion
  }
}
string open = "unterminated
''',
    "rust": r'''//! crate doc
/// item doc
/* outer /* nested */ still a comment */
use std::collections::HashMap;
#[derive(Debug, Clone)]
pub struct Tørture<'a, T: 'a> { name: &'a str, items: Vec<T> }
impl<'a, T> Tørture<'a, T> where T: Clone {
    pub fn new(ñame: &'a str) -> Self { Self { name: ñame, items: vec![] } }
    fn nums() -> (u8, i64, f32, usize) { (0xFFu8, 1_000i64, 1.5e-3f32, 0b1010) }
}
fn main() {
    let s = "esc \" \\ \n \u{1F600}";
    let r = r#"raw "quoted" string"#;
    let r2 = r##"a "# inside"##;
    let b = b"bytes\x00"; let c = 'c'; let q = '\''; let bc = b'\\';
    let m = "multi
line";
    println!("{} {:?}", s, r);
    let lbl = 'outer: loop { break 'outer; };
    let x = &mut y as *const i32;
}
let open = "unterminated
''',
    "python": r'''#!/usr/bin/env python3
# -*- coding: utf-8 -*-
"""Module docstring: dropped."""
from __future__ import annotations
import os.path as osp, sys
from . import sibling
from ..pkg import (a,
                   b)


class Tørture(Base, metaclass=Meta):
    """Class docstring."""
    ñ: int = 0x_FF + 0o17 + 0b1 + 1_000 + 1e-3 + 1.5j + .5 + 5.

    @property
    def name(self) -> str:
        r"""Raw docstring \d."""
        s = "esc \" \\ \n" 'single' r"\raw\d" b"bytes" rb'\x00' u"u"
        t = """triple
        "quoted" line""" + <3q>other<3q>
        f1 = f"{self.ñ!r:>{width}} {{literal}} {x['k']} {y:%Y-%m-%d}"
        f2 = rf"raw {z} \d" + F'{a}{b}' + f"""multi
        {c}"""
        f3 = f"{'nested ' + f'{d}'}"
        return s if t else None

    async def run(self, *args, **kwargs):
        match command.split():
            case [action, obj] if obj:
                pass
            case _:
                await asyncio.sleep(0)
        type X = list[int]
        lambda x: x ** 2 @ m
        print(__name__, __file__, len(args), ValueError, NotImplemented)
        return (yield from gen())


été = "unterminated
''',
}
TORTURE = {language: source.replace("<3q>", "'" * 3) for language, source in TORTURE.items()}
TORTURE["jsx"] = TORTURE["javascript"] + "\nconst el = <div className=\"x\">{ñ} text</div>;\n"
TORTURE["tsx"] = TORTURE["typescript"] + "\nconst el = <Box<T> value={1}>hi</Box>;\n"


def engines(language):
    return ["regex"] + (["numba"] if language == "go" else [])


@pytest.mark.parametrize("language", sorted(TORTURE))
@pytest.mark.parametrize("ids,literals", FLAGS)
def test_torture_file_tokens_are_pygments_tokens(language, ids, literals):
    source = TORTURE[language]
    expected = CodeTokenizer(language, ids, literals, engine="pygments")(source)
    for engine in engines(language):
        assert CodeTokenizer(language, ids, literals, engine=engine)(source) == expected
    # and every piece of the file without its end: strings left open anywhere
    lines = source.splitlines(keepends=True)
    for cut in range(1, len(lines), 3):
        part = "".join(lines[:cut]) + lines[cut][: len(lines[cut]) // 2]
        expected = CodeTokenizer(language, ids, literals, engine="pygments")(part)
        for engine in engines(language):
            assert CodeTokenizer(language, ids, literals, engine=engine)(part) == expected


EDGES = [
    "", "\n\n", "   ", "// only a comment", "/* open comment",
    "\ufeffpackage p\r\nx := \"a\rb\"\r\n",  # a BOM, CRLF and CR newlines
    "x := \"\udc80\" + y\udc81z\n",  # lone surrogates: bytes that were not UTF-8
    "s := \"tab\there\" \t\u00a0 \u2028 \u3000 é\u0301\n",  # Unicode spaces, a combining mark
    "\x00\x01 x\x00y \"\x00\"",  # NUL: also the token separator the Go kernel prefers
    "08" * 500 + "'a''b'" * 100,  # more type-2 placeholder characters than source ones
]


@pytest.mark.parametrize("language", sorted(TORTURE))
def test_edge_texts_give_pygments_tokens(language):
    for text in EDGES:
        for ids, literals in FLAGS[:2]:
            expected = CodeTokenizer(language, ids, literals, engine="pygments")(text)
            for engine in engines(language):
                assert CodeTokenizer(language, ids, literals, engine=engine)(text) == expected


def test_torture_files_cover_what_they_claim():
    go = CodeTokenizer("go")(TORTURE["go"])
    assert "`C:\\path\\\nmulti\nline`" in go  # a raw string is one token, newlines kept
    assert '"fmt""os"' in go  # strings with only comments between are one literal
    assert "π" in go and "ñame" in go and "x٣" in go  # non-ASCII identifiers
    assert go[-6:] == ['"', "open", "string", "to", "the", "end"]  # open: an error token
    rust = CodeTokenizer("rust")(TORTURE["rust"])
    assert not any("nested" in t or "still" in t for t in rust)  # nested comment dropped
    assert 'r#"raw "quoted" string"#' in rust
    cpp = CodeTokenizer("cpp")(TORTURE["cpp"])
    assert 'R"delim(raw \\n "quotes" )not the end)delim"' in cpp
    python = CodeTokenizer("python")(TORTURE["python"])
    assert not any("docstring" in t.lower() for t in python)  # docstrings dropped
    c = CodeTokenizer("c")(TORTURE["c"])
    assert c[:3] == ["#", "include", "<stdio.h>"]  # preprocessor lines are code
    assert "dropped" not in " ".join(c)  # what "#if 0" leaves out is a comment


STDLIB = sorted(p for p in glob.glob(f"{sysconfig.get_paths()['stdlib']}/*.py"))


@pytest.mark.parametrize("path", STDLIB[:: max(1, len(STDLIB) // 30)][:30],
                         ids=lambda p: p.rsplit("/", 1)[-1])
def test_standard_library_files_give_pygments_tokens(path):
    with open(path, "rb") as f:
        source = f.read().decode("utf-8", "surrogateescape")
    for ids, literals in FLAGS[:2]:
        expected = CodeTokenizer("python", ids, literals, engine="pygments")(source)
        assert CodeTokenizer("python", ids, literals, engine="regex")(source) == expected


SYNTAX = "{}()[]\"'`/*#\\\n \t.,;:=+-<>!&|^%~?@$_0123456789xeEbBoOjJiLuUrRfF"


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from(SYNTAX) | st.characters(), max_size=60))
def test_random_text_gives_pygments_tokens(text):
    for language in sorted(COMPILED_LANGUAGES):
        for ids, literals in FLAGS[:2]:
            expected = CodeTokenizer(language, ids, literals, engine="pygments")(text)
            for engine in engines(language):
                assert CodeTokenizer(language, ids, literals, engine=engine)(text) == expected


def test_engines_chosen_and_checked():
    assert CodeTokenizer("go").runs_on == "numba"
    assert CodeTokenizer("python").runs_on == "regex"
    assert CodeTokenizer("haskell").runs_on == "pygments"  # not checked: Pygments
    assert CodeTokenizer("kotlin", engine="regex").runs_on == "regex"  # on request
    with pytest.raises(ValueError, match="engine must be one of"):
        CodeTokenizer("go", engine="fast")
    with pytest.raises(ValueError, match="engine='numba' is Go's"):
        CodeTokenizer("python", engine="numba")
    with pytest.raises(ValueError, match="engine='regex' cannot run"):
        CodeTokenizer("ruby", engine="regex")  # an ExtendedRegexLexer
    tokenizer = CodeTokenizer("go", normalize_identifiers=True, engine="regex")
    assert pickle.loads(pickle.dumps(tokenizer)) == tokenizer
    assert go_lexer.available()  # the installed Pygments has the rules the kernel translates


@pytest.mark.parametrize("ids,literals", FLAGS)
@pytest.mark.parametrize("parallel", [False, True])
def test_go_token_hashes_are_hashes_of_the_tokens(ids, literals, parallel, monkeypatch):
    if parallel:  # every chunk on the threads, and many small chunks
        monkeypatch.setattr(go_lexer, "PARALLEL_CHARS", 0)
        monkeypatch.setattr(go_lexer, "CHUNK_CHARS", 300)
    texts = [TORTURE["go"], "", "package x\n", 'import ("a"\n"b")\n', "x := `a` /* */ `b`"]
    texts += [TORTURE["go"][i:i + 200] for i in range(0, len(TORTURE["go"]), 97)]
    tokenizer = CodeTokenizer("go", ids, literals)
    expected = hash_tokens([tokenizer(t) for t in texts], seed=5)
    got = tokenizer.token_hashes(texts, seed=5)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])
    assert tokenizer.token_hashes([], seed=5)[1].tolist() == [0]
    python = CodeTokenizer("python", ids, literals)
    expected = hash_tokens([python(t) for t in texts], seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(python.token_hashes(texts, 5), expected))


def test_shingles_identical_whatever_the_engine():
    texts = [TORTURE["go"], TORTURE["go"].replace("ñame", "name2"), "package p\n"]
    sets = [shingle(texts, ShingleOptions(kind="word", size=5, normalize=None,
                                          tokenize=CodeTokenizer("go", True, True, engine=e)))
            for e in ("pygments", "regex", "numba")]
    for other in sets[1:]:
        assert np.array_equal(other.offsets, sets[0].offsets)
        assert np.array_equal(other.values, sets[0].values)


def test_type2_placeholders_from_every_engine():
    for engine in ("regex", "numba"):
        tokens = CodeTokenizer("go", True, True, engine=engine)('x := f("s", 42, `r`)\n')
        assert tokens == [ID, ":=", ID, "(", STR, ",", NUM, ",", STR, ")"]


def test_first_characters_of_a_rule():
    def chars(pattern, flags=0):
        mask, other, empty = first_chars(pattern, flags)
        return "".join(chr(c) for c in range(128) if mask >> c & 1), other, empty

    assert chars(r"(?<!\.)(self|cls)\b") == ("cs", False, False)
    assert chars(r"[^\W\d]\w*")[0] == "ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"
    assert chars(r"(?i)r[ft]") == ("Rr", True, False)  # ignore case: both, and beyond ASCII
    assert chars(r"\d*x")[0] == "0123456789x"
    assert chars(r"$")[2] and chars(r"")[2]  # match the empty string: tried everywhere


def test_compiled_lexer_refuses_lexers_with_their_own_loop():
    from pygments.lexers import RubyLexer

    with pytest.raises(TypeError, match="not a plain RegexLexer"):
        CompiledLexer(RubyLexer())
