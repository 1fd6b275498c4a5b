import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.shingling import normalize_light
from neardup.text.cleaning import (
    PRESETS,
    STEPS,
    UNSPACED_RANGES,
    Cleaner,
    make_cleaner,
    needs_char_shingles,
    strip_html,
    unspaced_share,
    unspaced_shares,
)


def only(step, language="en"):
    return make_cleaner("none", language=language, **{step: True})


# ---------------------------------------------------------------- single steps


def test_html_drops_tags_scripts_styles_and_decodes_entities():
    page = (
        "<html><head><title>T</title><style>p {color: red}</style>"
        "<script>if (a < b) { alert('x') }</script></head>"
        "<body><p>caf&eacute; &amp; cr&egrave;me</p><div>one</div><div>two</div>"
        "<noscript>enable js</noscript>in<b>line</b><br>next<!-- hidden --></body></html>"
    )
    text = only("html")(page)
    assert text.split() == ["T", "café", "&", "crème", "one", "two", "inline", "next"]


def test_html_keeps_plain_text_with_angle_brackets():
    assert strip_html("a < b and c > d") == "a < b and c > d"
    assert strip_html("no markup at all") == "no markup at all"


def test_nfkc_casefold_whitespace():
    assert only("nfkc")("ﬁne Ｆｕｌｌ") == "fine Full"
    assert only("casefold")("Straße ΣΑΣ") == "strasse σασ"
    assert only("whitespace")("  a \t\n b\u00a0 c  ") == "a b c"


def test_accents_strip_marks_german_french():
    assert only("accents")("Äpfel über Größe, déjà vu, naïve") == "Apfel uber Große, deja vu, naive"
    assert only("accents")("ø stays") == "ø stays"  # no decomposition, no mark


def test_punctuation_and_digits():
    assert only("punctuation")("a,b.c!«d»—e") == "a b c  d  e"
    assert only("digits")("a1b٣c") == "abc"  # Arabic-Indic digit is Nd too


def test_stopwords_several_languages():
    assert make_cleaner("text", stopwords=True, language="fr")(
        "Le chat est sur la table."
    ) == "chat table"
    assert make_cleaner("text", stopwords=True, language="de")(
        "Die Katze und der Hund"
    ) == "katze hund"
    assert make_cleaner("text", stopwords=True, language="en")("The cat is on the mat") == "cat mat"


def test_stem_italian_russian_english():
    assert make_cleaner("light", stem=True, language="it")("gatti gatto") == "gatt gatt"
    assert make_cleaner("light", stem=True, language="ru")("Кошки бегали") == "кошк бега"
    assert make_cleaner("light", stem=True, language="en")("running dogs") == "run dog"


def test_lemmatize_german_keeps_lowercase():
    # simplemma's German lemmas are capitalized nouns; a casefolded chain stays casefolded
    assert make_cleaner("light", lemmatize=True, language="de")("die häuser liefen") == (
        "der haus laufen"
    )


def test_mojibake():
    assert only("mojibake")("cafÃ© dÃ©jÃ  vu") == "café déjà vu"


# ---------------------------------------------------------------- presets and the builder


def test_presets_known_output():
    text = "<p>Ãœber 42 CAFÉS, naïve&nbsp;people!</p><script>x()</script>"
    assert make_cleaner("none")(text) == text
    assert make_cleaner("light")("  Ｃafé\tNAÏVE  ") == "café naïve"
    assert make_cleaner("text")("Über 42 CAFÉS, naïve people!") == "uber cafes naive people"
    assert make_cleaner("web")(text) == "uber cafes naive people"


def test_light_preset_is_normalize_light():
    light = make_cleaner("light")
    for text in ["", "  A  b ", "ǅ ﬁ Ⅻ ß İ", "\u0345\u0301x"]:
        assert light(text) == normalize_light(text)


def test_steps_run_in_canonical_order_and_can_be_added_or_removed():
    cleaner = make_cleaner("text", stem=True, stopwords=True, digits=False, language="it")
    assert cleaner.steps == (
        "nfkc", "casefold", "stopwords", "stem", "accents", "punctuation", "whitespace",
    )  # fmt: skip
    assert make_cleaner("web").steps == ("mojibake", "html", *PRESETS["text"])
    assert make_cleaner("none", whitespace=True, html=True).steps == ("html", "whitespace")


def test_explain_traces_each_step():
    trace = make_cleaner("text").explain("Déjà 2 FOIS!")
    assert [step for step, _ in trace] == list(PRESETS["text"])
    assert trace[1] == ("casefold", "déjà 2 fois!")
    assert trace[-1] == ("whitespace", "deja fois")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"preset": "heavy"}, "preset must be one of"),
        ({"stemming": True}, "unknown cleaning step"),
        ({"stem": "yes"}, "must be True or False"),
        ({"stem": True, "lemmatize": True}, "alternatives"),
        ({"stem": True, "language": "xx"}, "not supported by step 'stem'"),
        ({"stopwords": True, "language": "klingon"}, "not supported by step 'stopwords'"),
    ],
)
def test_builder_validates_at_the_door(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_cleaner(**kwargs)


def test_language_is_not_checked_without_word_steps():
    assert make_cleaner("text", language="xx")("A!") == "a"


def test_cleaner_pickles():
    cleaner = make_cleaner("web", stem=True, stopwords=True, language="ru")
    copy = pickle.loads(pickle.dumps(cleaner))
    assert isinstance(copy, Cleaner) and copy == cleaner
    assert copy("<b>Кошки</b> и собаки") == cleaner("<b>Кошки</b> и собаки")


# ---------------------------------------------------------------- scripts without spaces


def test_needs_char_shingles():
    assert needs_char_shingles("我爱北京天安门，天安门上太阳升")
    assert needs_char_shingles("これは日本語の文章です")
    assert needs_char_shingles("ภาษาไทยไม่มีการเว้นวรรค")
    assert not needs_char_shingles("한국어는 띄어쓰기를 합니다")  # Hangul has spaces
    assert not needs_char_shingles("plain English text with one 字")
    assert not needs_char_shingles("   ")
    assert unspaced_share("ab 字字") == 0.5


def test_whitespace_table_is_what_the_regex_calls_whitespace():
    from neardup.text.cleaning import _LAST_SPACE

    spaces = [c for c in range(0x110000) if re.match(r"\s", chr(c))]
    assert spaces == [c for c in range(0x110000) if chr(c).isspace()]
    assert max(spaces) <= _LAST_SPACE


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.one_of(st.sampled_from("字 ab\u3000\u00a0ภา\t한"),
                                  st.characters(blacklist_categories=("Cs",)))), max_size=6))
def test_unspaced_shares_match_the_regex_count(texts):
    for text, share in zip(texts, unspaced_shares(texts)):
        visible = len(text) - sum(len(m) for m in re.findall(r"\s+", text))
        unspaced = sum(1 for c in text if any(a <= ord(c) <= b for a, b in UNSPACED_RANGES))
        assert share == (unspaced / visible if visible else 0.0)


# ---------------------------------------------------------------- properties

ALL_STEPS_CLEANERS = [make_cleaner(preset) for preset in PRESETS] + [
    make_cleaner("none", **{step: True}) for step in STEPS
] + [
    make_cleaner("web", stopwords=True, stem=True),
    make_cleaner("web", stopwords=True, lemmatize=True, language="de"),
]  # fmt: skip

unicode_text = st.text(max_size=60) | st.text(
    st.sampled_from("<>&;/ ap=\"'#x0123éÃ©\u0301ß\u00a0字"), max_size=60
)


@settings(max_examples=150, deadline=None)
@given(text=unicode_text)
def test_every_cleaner_returns_a_str_on_any_text(text):
    for cleaner in ALL_STEPS_CLEANERS:
        assert isinstance(cleaner(text), str)


@settings(max_examples=300, deadline=None)
@given(text=unicode_text)
def test_light_and_text_presets_are_idempotent(text):
    # "web" is not: decoding "&lt;b&gt;" makes markup that a second pass removes
    light, text_preset = make_cleaner("light"), make_cleaner("text")
    once = text_preset(text)
    assert text_preset(once) == once
    once = light(text)
    assert light(text) == normalize_light(text)
    assert light(once) == once


def test_casefold_composes_what_it_decomposes():
    # "ß" + combining acute folds to "ss" + acute: composed at once to "sś", so a rerun agrees
    once = make_cleaner("light")("ß\u0301")
    assert once == "s\u015b" and make_cleaner("light")(once) == once
