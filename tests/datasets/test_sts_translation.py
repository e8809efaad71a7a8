"""Translated-STS construction (JCSE sec. 4.1) with a stub translator that makes known errors."""

from __future__ import annotations

import numpy as np
import pytest

from sentkit.datasets.senteval_sts import read_senteval_sts
from sentkit.datasets.sts_pairs import STSPairs
from sentkit.errors import InvalidArgument

pytest.importorskip("sacrebleu", reason="pip install 'sentkit[ja]'")

from sentkit.datasets.sts_translation import bleu1, load_translator, translate_sts, write_senteval_sts  # noqa: E402

EN_JA = {
    "a": "",
    "man": "男性",
    "woman": "女性",
    "is": "が",
    "playing": "弾いている",
    "guitar": "ギターを",
    "dog": "犬",
    "running": "走っている",
    "cooking": "料理している",
    "cat": "犬",
    "not": "",
}
JA_EN = {
    "男性": "man",
    "女性": "woman",
    "が": "is",
    "弾いている": "playing",
    "ギターを": "guitar",
    "犬": "dog",
    "走っている": "running",
    "料理している": "cooking",
}


class StubTranslator:
    """Word-for-word en<->ja with two known errors: "cat" becomes 犬 (dog) and "not" is dropped."""

    calls: list[tuple[str, str, int]] = []

    def translate(self, texts, src, tgt):
        self.calls.append((src, tgt, len(texts)))
        if (src, tgt) == ("en", "ja"):
            return ["".join(EN_JA[w] for w in t.lower().split()) for t in texts]
        out = []
        for text in texts:  # greedy longest match over the Japanese words
            words, i = [], 0
            while i < len(text):
                match = max((k for k in JA_EN if text.startswith(k, i)), key=len)
                words.append(JA_EN[match])
                i += len(match)
            out.append("a " + " ".join(words))
        return out


def pairs() -> STSPairs:
    s1 = ["a man is playing guitar", "a cat is running", "a woman is cooking", "a man is not running"]
    s2 = ["a man is playing guitar", "a dog is running", "a man is cooking", "a man is running"]
    return STSPairs(s1, s2, np.array([5.0, 3.2, 1.0, 1.5]), "en", "toy")


def test_bleu1_hand_values():
    assert bleu1(["a dog is running"], ["a cat is running"])[0] == pytest.approx(75.0)
    # all 4 words right but one missing: brevity penalty exp(1 - 5/4)
    assert bleu1(["a man is running"], ["a man is not running"])[0] == pytest.approx(100 * np.exp(1 - 5 / 4))
    assert bleu1(["私は犬が好き"], ["私は猫が好き"], tokenize="char")[0] == pytest.approx(100 * 5 / 6)
    assert bleu1(["私は犬が好きです"], ["私は猫が好きです"], tokenize="ja-mecab")[0] == pytest.approx(
        100 * 5 / 6
    )


def test_known_errors_are_filtered_out(tmp_path):
    result = translate_sts(pairs(), StubTranslator(), min_bleu=80.0)
    assert result.kept.tolist() == [True, False, True, False]  # the cat pair and the dropped "not" go
    assert result.bleu[1, 0] == pytest.approx(75.0) and result.bleu[1, 1] == pytest.approx(100.0)
    assert result.pairs.sent1 == ["男性が弾いているギターを", "女性が料理している"]
    assert result.pairs.gold.tolist() == [5.0, 1.0]
    assert result.pairs.lang == "ja"
    inp, gold = write_senteval_sts(result.pairs, tmp_path, "toy")
    back = read_senteval_sts(inp, gold, lang="ja")
    assert back.sent2 == result.pairs.sent2 and back.gold.tolist() == [5.0, 1.0]
    assert translate_sts(pairs(), StubTranslator(), min_bleu=70.0).kept.tolist() == [True, True, True, True]


def test_translator_spec_and_batches(monkeypatch):
    import sys
    import types

    module = types.ModuleType("stub_mt")
    module.Stub = StubTranslator
    monkeypatch.setitem(sys.modules, "stub_mt", module)
    translator = load_translator("stub_mt:Stub")
    StubTranslator.calls = []
    translate_sts(pairs(), translator, batch_size=3)
    assert StubTranslator.calls == [
        ("en", "ja", 3),
        ("en", "ja", 3),
        ("en", "ja", 2),
        ("ja", "en", 3),
        ("ja", "en", 3),
        ("ja", "en", 2),
    ]
    with pytest.raises(InvalidArgument, match="module:attribute"):
        load_translator("stub_mt")
    with pytest.raises(InvalidArgument, match="cannot be loaded"):
        load_translator("stub_mt:Nope")
