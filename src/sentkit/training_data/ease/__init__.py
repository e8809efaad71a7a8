"""EASE's training data (Nishikawa et al., NAACL 2022): Wikipedia sentences and the entities they link.

`entity_pairs` (`sentkit build ease`) reads a dump (`wikipedia_dump`), cleans its markup (`wikitext`),
splits sentences (`sentence_split`), keys entities across languages (`wikidata`, `langlinks`) and mines
same-type hard negatives (`hard_negatives`); `xnli_entities` adds offline multilingual rows and
`entity_vectors` the Wikipedia2Vec vectors that initialise the entity table. The loss:
`sentkit.objectives.entity`.
"""
