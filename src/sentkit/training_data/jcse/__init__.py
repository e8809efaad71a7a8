"""JCSE's training data (Chen, Handa & Shirahama): in-domain contradictions (stage one), NLI (stage two).

Stage one (`build`, `sentkit build contradictions`): prepare the domain corpus (`domain_corpus`), mask
noun chunks (`chunk_masking`), refill them with a domain-tuned T5 (`span_corruption`, `t5_infill`) or
the offline `chunk_swap`, and write (anchor, anchor, contradiction) rows (`contradictions`). Stage two:
JSICK triplets (`stage2`, the `jsick` data spec). The loss: `sentkit.objectives.supervised`.
"""
