"""The training data contract, named in one place.

Builders return a `datasets.Dataset`; its text columns decide what an objective sees:
one text column = dropout positives (unsupervised SimCSE), two = (anchor, positive) pairs,
three = (anchor, positive, hard negative) triplets, as SimCSE's `num_sent`.
"""

ANCHOR = "anchor"
POSITIVE = "positive"
NEGATIVE = "negative"
TEXT_COLUMNS = (ANCHOR, POSITIVE, NEGATIVE)

# extra columns later objectives use
LANG = "lang"
LABEL = "label"
ENTITY_IDS = "entity_ids"
NEGATIVE_ENTITY_IDS = "negative_entity_ids"
LANG_ID = "lang_id"
GRAPH = "graph"
# rows sharing a group id (translations of one sentence, rows of one source sentence) are not each other's
# in-batch negatives (sentkit.objectives.negatives); a negative id = in no group
GROUP = "group"
# integer id columns: the training collator turns each into a LongTensor, (batch,) or (batch, k)
INT_COLUMNS = (LABEL, ENTITY_IDS, NEGATIVE_ENTITY_IDS, LANG_ID, GROUP)
ADVERSARIAL = "adversarial"  # Emu: an unlabelled sentence of another language (or a translation)


def text_columns(column_names) -> list[str]:
    """The text columns present, in contract order (anchor, positive, negative)."""
    present = [c for c in TEXT_COLUMNS if c in column_names]
    if not present or present[0] != ANCHOR:
        raise ValueError(f"training data needs an {ANCHOR!r} column, got columns {list(column_names)}")
    return present
