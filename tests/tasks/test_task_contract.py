"""Every registered task (the registry is the list) loads its real files and scores a random encoder near chance.

A hashed random encoder gives each distinct sentence a fixed random vector: scores well above chance would
mean a task leaks its gold labels into the score. Tasks whose English data is user-supplied are skipped.
"""

from __future__ import annotations

import math

import pytest
from fakes import TableEncoder

from sentkit.tasks import SUITES, TASKS, get_task, resolve_tasks

USER_SUPPLIED = {"sts12-16"}  # English STS12-16 is not shipped; tests/tasks/test_sts.py covers its reader
# Variants of a task already in `all`: a dev split used for model selection and samples for speed.
VARIANTS = {
    "jacsts-dev": "jacsts",
    "xnli-100": "xnli",
    "mewsc16-100": "mewsc16",
    "knn-mewsc16-100": "knn-mewsc16",
}
# Upper bounds for a random encoder: percent-scale scores near chance level for the task.
CHANCE_CEILING = {
    "tatoeba": 5.0,  # 1 in ~1000 candidates
    "bucc": 5.0,
    "qabot": 40.0,  # MAP over ~1141 candidates with up to 7 relevant
}


def test_every_suite_names_registered_tasks():
    for suite, members in SUITES.items():
        assert members and all(m in TASKS for m in members), suite
    everything = set(resolve_tasks("all"))
    assert everything == set(TASKS.names()) - USER_SUPPLIED - set(VARIANTS)
    assert set(VARIANTS.values()) <= everything


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in TASKS.names() if n not in USER_SUPPLIED])
def test_task_contract_on_real_data(name, data_root):
    task = get_task(name, data_root=data_root, batch_size=256)
    assert task.name == name and task.languages
    scores = task.evaluate(TableEncoder(dim=24))
    assert "main_score" in scores and all(math.isfinite(v) for v in scores.values())
    if name == "alignment-uniformity":
        return  # not a percent score: -(alignment + uniformity)
    assert -100.0 <= min(scores.values()) and max(scores.values()) <= 100.0
    ceiling = CHANCE_CEILING.get(name)
    if ceiling is not None:
        assert scores["main_score"] < ceiling
    if name.startswith(("sts", "ja-sts", "jsts", "jsick", "jacsts")):
        assert abs(scores["main_score"]) < 15.0  # random vectors: no correlation with gold
