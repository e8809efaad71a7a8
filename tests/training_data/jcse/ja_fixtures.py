"""Fixtures for the JCSE data tests (imported by the tests that use them: a second conftest.py would shadow
tests/conftest.py, which other tests import by name): GiNZA once per session, a parsed clinic sample."""

from __future__ import annotations

import pytest

CLINIC_SAMPLE = 60  # real ja-clinic lines parsed once per session (~20-50 ms a sentence)


@pytest.fixture(scope="session")
def ginza_nlp():
    pytest.importorskip("ginza", reason="GiNZA not installed: pip install 'sentkit[ja]'")
    from sentkit.training_data.jcse.domain_corpus import load_pipeline

    return load_pipeline("ja")


@pytest.fixture(scope="session")
def clinic_lines(data_root):
    from sentkit.datasets.corpus import read_corpus

    return read_corpus(data_root / "corpora" / "ja-clinic")[:CLINIC_SAMPLE]


@pytest.fixture(scope="session")
def clinic_parsed(ginza_nlp, clinic_lines):
    from sentkit.training_data.jcse.domain_corpus import prepare_domain_corpus

    return prepare_domain_corpus(clinic_lines, ginza_nlp)
