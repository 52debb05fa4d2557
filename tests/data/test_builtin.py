"""The synthetic corpus keeps its promises: deterministic, sized, structured, varied in length."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from ablate.data import builtin
from ablate.data.builtin import ADJ_END, AUX, DEF_ART, INDEF_ART, REL_PRON, T_CONJ, Generator, Options


@pytest.fixture(scope="module")
def sample() -> list[tuple[str, str, dict[str, int]]]:
    opts = Options(n_train=4000)
    gen = Generator(opts, builtin.build_lexicon(opts), "train")
    return [gen.pair() for _ in range(4000)]


def test_deterministic_from_the_seed_and_sized() -> None:
    opts = Options(n_train=300, n_valid=40, n_test=50)
    a = {split: list(builtin.generate(opts, split)) for split in ("train", "valid", "test")}
    b = {split: list(builtin.generate(opts, split)) for split in ("train", "valid", "test")}
    assert a == b
    assert [len(a[s]) for s in ("train", "valid", "test")] == [300, 40, 50]
    other = list(builtin.generate(dataclasses.replace(opts, seed=2), "train"))
    assert other != a["train"]
    assert a["valid"][:10] != a["train"][:10]  # every split has its own stream


def test_vocabulary_has_thousands_of_words(sample: list[tuple[str, str, dict[str, int]]]) -> None:
    src_words = {w.strip(".,").lower() for s, _, _ in sample for w in s.split()}
    tgt_words = {w.strip(".,").lower() for _, t, _ in sample for w in t.split()}
    assert len(src_words) > 2000 and len(tgt_words) > 4000  # inflection and compounds add target forms


def test_lengths_vary_up_to_about_fifty_words(sample: list[tuple[str, str, dict[str, int]]]) -> None:
    lengths = [len(s.split()) for s, _, _ in sample] + [len(t.split()) for _, t, _ in sample]
    assert min(lengths) >= 3 and max(lengths) <= 50
    assert max(lengths) >= 35 and statistics.pstdev(lengths) > 4


def test_every_construction_occurs(sample: list[tuple[str, str, dict[str, int]]]) -> None:
    totals = {k: sum(f[k] for _, _, f in sample) for k in builtin.FEATURES}
    for feature, count in totals.items():
        assert count >= 100, f"{feature} occurs only {count} times in 4000 sentences"


def test_subordinate_clauses_are_verb_final(sample: list[tuple[str, str, dict[str, int]]]) -> None:
    lex = builtin.build_lexicon(Options())
    verb_forms = {builtin.t_verb(t, n) for _, t, _ in lex.verbs for n in ("sg", "pl")} | set(AUX.values())
    checked = 0
    for s, t, _ in sample:
        words = t.rstrip(".").split()
        conj = [i for i, w in enumerate(words) if w in T_CONJ]
        if not conj or " and " in s:
            continue
        checked += 1
        assert words[-1] in verb_forms, t  # the finite verb closes the subordinate clause
    assert checked > 500


def test_fronted_adverb_inverts_subject_and_verb() -> None:
    opts = Options()
    lex = builtin.build_lexicon(opts)
    adverbs = dict(lex.adverbs)
    finite = {builtin.t_verb(t, n) for _, t, _ in lex.verbs for n in ("sg", "pl")} | set(AUX.values())
    gen = Generator(opts, lex, "check")
    seen = 0
    for _ in range(3000):
        s, t, f = gen.pair()
        first = s.split()[0].lower()
        if first in adverbs and f["coordination"] == 0:
            seen += 1
            tw = t.split()
            assert tw[0].lower() == adverbs[first] and tw[1] in finite, (s, t)  # verb second
    assert seen > 50


def test_articles_and_adjectives_agree_with_the_noun() -> None:
    opts = Options()
    lex = builtin.build_lexicon(opts)
    gender = {stem: g for _, stem, g in lex.nouns}
    gen = Generator(opts, lex, "agree")
    forms_of_the: set[str] = set()
    checked = 0
    for _ in range(3000):
        s, t, _ = gen.pair()
        words = t.rstrip(".").replace(",", "").split()
        for i in range(len(words) - 1):
            art, noun = words[i].lower(), words[i + 1]
            if noun in gender and art in {*DEF_ART.values(), *INDEF_ART.values()}:
                # a bare singular noun right after its article: the article must fit the noun's gender
                allowed = {v for table in (DEF_ART, INDEF_ART) for (g, _), v in table.items() if g == gender[noun]}
                assert art in allowed, (t, art, noun)
                checked += 1
                if art in DEF_ART.values():
                    forms_of_the.add(art)
    assert checked > 500
    assert len(forms_of_the) >= 5  # one source "the", many target articles: gender x case x number
    assert len(set(ADJ_END.values())) >= 4 and len(set(REL_PRON.values())) == 4


def test_synonyms_leave_the_source_and_structure_and_vary_the_target() -> None:
    small = dict(n_train=400, n_nouns=30, n_adjectives=8, n_verbs=10, n_adverbs=4, max_words=20)
    plain, syn = Options(**small), Options(**small, synonyms=3)
    a, b = list(builtin.generate(plain, "train")), list(builtin.generate(syn, "train"))
    assert [s for s, _ in a] == [s for s, _ in b]  # synonyms draw from their own stream
    assert [len(t.split()) for _, t in a] == [len(t.split()) for _, t in b]  # same words, same order
    assert sum(ta != tb for (_, ta), (_, tb) in zip(a, b)) > 300
    lex = builtin.build_lexicon(syn)
    assert lex.nouns == builtin.build_lexicon(plain).nouns  # the lexicon itself is unchanged
    assert all(len(set(v)) == 3 and v[0] == k for k, v in lex.synonyms.items())
    # Every occurrence draws anew: the most frequent noun appears as at least two of its synonyms.
    noun = lex.nouns[0]
    used = {w for _, t in b for w in t.rstrip(".").replace(",", "").split()}
    assert len(set(lex.synonyms[noun[1]]) & used) >= 2
    assert list(builtin.generate(syn, "train")) == b  # and deterministically so
