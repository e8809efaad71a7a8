"""Seq2seq infilling end to end on a tiny random T5: span-corruption fine-tuning, then constrained beam search."""

from __future__ import annotations

import pytest
from t5_fixture import make_tiny_t5

from sentkit.training_data.jcse.chunk_masking import MaskedSentence
from sentkit.training_data.jcse.domain_corpus import NounChunk

SENTENCES = [
    "入院前日から発熱と頭痛があり当院外来を受診した.",
    "血液検査所見ではCRPの上昇を認めた.",
    "胸部CT検査で両側肺に浸潤影を認めた.",
    "抗菌薬治療を開始し症状は軽快した.",
    "症例は39歳女性で主訴は発熱である.",
    "免疫グロブリン投与後に全身状態は改善した.",
    "既往歴に特記すべき事項はなかった.",
    "腹部超音波検査で肝腫大を認めた.",
]


def headache() -> MaskedSentence:
    return MaskedSentence(
        "頭痛と発熱を訴えた.",
        ("", "と", "を訴えた."),
        (NounChunk(0, 2, "頭痛", "a"), NounChunk(3, 5, "発熱", "a")),
    )


@pytest.fixture
def one_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model gains nothing from threads on a shared machine
    yield
    torch.set_num_threads(before)


def test_parse_fillers():
    pytest.importorskip("transformers")
    model, tokenizer = make_tiny_t5(SENTENCES)
    from sentkit.training_data.jcse.t5_infill import T5InfillGenerator

    g = T5InfillGenerator(model, tokenizer)
    assert g.parse("<pad><extra_id_0> 咳 <extra_id_1>悪寒</s>", 2) == ["咳", "悪寒"]
    assert g.parse("<pad><extra_id_0>咳<extra_id_1></s>", 2) is None  # empty filler
    assert g.parse("<pad><extra_id_0>咳</s>", 2) is None  # sentinel 1 missing
    assert g.parse("<extra_id_1>悪寒<extra_id_0>咳", 2) == ["咳", "悪寒"]


def test_finetune_then_infill_end_to_end(tmp_path, one_thread):
    from sentkit.training_data.jcse.span_corruption import finetune_infiller
    from sentkit.training_data.jcse.t5_infill import T5InfillGenerator

    model, tokenizer = make_tiny_t5(SENTENCES)
    losses = finetune_infiller(
        model, tokenizer, SENTENCES * 4, tmp_path / "t5", max_steps=16, batch_size=8, logging_steps=1
    )
    assert len(losses) == 16
    assert sum(losses[-4:]) / 4 < sum(losses[:4]) / 4 - 0.5  # Adafactor at 1e-3 learns the format fast
    # the saved checkpoint loads by path, as a user's would
    generator = T5InfillGenerator(str(tmp_path / "t5"), num_beams=6, max_new_tokens=12)
    masked = [
        headache(),
        MaskedSentence(
            "CRPの上昇を認めた.",
            ("", "の", "を認めた."),
            (NounChunk(0, 3, "CRP", "a"), NounChunk(4, 6, "上昇", "a")),
        ),
    ]
    out = generator.generate(masked, k=4)
    assert len(out) == 2 and all(1 <= len(x) <= 4 for x in out)  # constrained decoding: well-formed beams
    for m, contradictions in zip(masked, out):
        assert len(set(contradictions)) == len(contradictions)
        assert all(m.differs_only_inside_chunks(c) for c in contradictions), contradictions
