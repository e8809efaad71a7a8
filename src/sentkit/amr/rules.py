"""An offline AMR-style parser: rules over a spaCy dependency parse (no AMR parser weights install offline).

Content words become concepts (verbs take their most frequent PropBank sense in the training graphs, see
`Lexicon`), function words become roles or vanish, and the AMR conventions seen in the Little Prince
training graphs are applied: copulas give `:domain`, modals wrap the verb (`possible-01`), coordination an
`and` node with `:opN`, negation `:polarity -`, controlled subjects and shared subjects of coordinated
verbs are re-entrancies, relative clauses inverse roles. English uses spaCy's ClearNLP labels, Japanese
(GiNZA) Universal Dependencies; the tables below hold both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sentkit.amr.lexicon import Lexicon

SUBJECT = "SUBJ"  # resolved per frame: :ARG0, or :ARG1 for frames never seen with an ARG0
DEP_ROLES = {
    "nsubj": SUBJECT, "csubj": SUBJECT, "nsubjpass": ":ARG1", "nsubj:pass": ":ARG1", "csubjpass": ":ARG1",
    "dobj": ":ARG1", "obj": ":ARG1", "iobj": ":ARG2", "dative": ":ARG2", "oprd": ":ARG2", "attr": ":ARG1",
    "xcomp": ":ARG1", "ccomp": ":ARG1", "pcomp": ":ARG1",
    "amod": ":mod", "compound": ":mod", "nmod": ":mod", "npadvmod": ":mod", "appos": ":mod", "acl": ":mod",
    "poss": ":poss", "nummod": ":quant", "quantmod": ":quant", "advcl": ":time", "obl": ":mod",
    "dep": ":mod", "intj": ":mod", "acomp": ":ARG1", "relcl": ":mod", "predet": ":mod", "det": ":mod",
}  # fmt: skip
SKIPPED_DEPS = frozenset(
    {"punct", "aux", "auxpass", "case", "mark", "cc", "expl", "prt", "meta", "cop", "fixed", "discourse"}
    | {"dep:cc", "mark:rel", "compound:prt"}
)
PREPOSITION_ROLES = {
    "in": ":location", "on": ":location", "at": ":location", "inside": ":location", "near": ":location",
    "under": ":location", "above": ":location", "behind": ":location", "among": ":location",
    "to": ":destination", "into": ":destination", "toward": ":direction", "towards": ":direction",
    "from": ":source", "with": ":accompanier", "without": ":manner", "for": ":beneficiary",
    "about": ":topic", "of": ":poss", "like": ":mod", "as": ":mod", "by": ":ARG0", "than": ":compared-to",
    "during": ":time", "before": ":time", "after": ":time", "until": ":time", "since": ":time",
    "through": ":path", "across": ":path", "over": ":location", "because": ":cause",
    # Japanese case particles on an `obl` / `nmod` dependent (GiNZA keeps them as `case` children)
    "で": ":location", "に": ":ARG2", "から": ":source", "へ": ":destination", "と": ":accompanier",
    "まで": ":extent", "より": ":compared-to", "の": ":poss",
}  # fmt: skip
CLAUSE_MARKERS = {
    "because": ":cause", "since": ":cause", "as": ":time", "if": ":condition", "unless": ":condition",
    "when": ":time", "while": ":time", "before": ":time", "after": ":time", "until": ":time",
    "though": ":concession", "although": ":concession", "so": ":purpose", "to": ":purpose",
    "ので": ":cause", "から": ":cause", "ば": ":condition", "たら": ":condition", "とき": ":time",
    "が": ":concession", "けれど": ":concession", "ても": ":concession", "ため": ":purpose",
}  # fmt: skip
PRONOUNS = {
    "i": "i", "me": "i", "my": "i", "mine": "i", "myself": "i", "we": "we", "us": "we", "our": "we",
    "ours": "we", "you": "you", "your": "you", "yours": "you", "yourself": "you", "he": "he", "him": "he",
    "his": "he", "himself": "he", "she": "she", "her": "she", "hers": "she", "herself": "she",
    "it": "it", "its": "it", "itself": "it", "they": "they", "them": "they", "their": "they",
    "theirs": "they", "themselves": "they",
}  # fmt: skip
QUESTION_WORDS = frozenset(
    {"what", "who", "whom", "where", "why", "how", "which", "when", "何", "誰", "どこ"}
)
RELATIVE_WORDS = frozenset({"who", "whom", "which", "that", "whose"})
KEPT_DETERMINERS = frozenset({"this", "that", "these", "those", "all", "every", "each", "some", "any"})
KEPT_DETERMINERS |= frozenset({"another", "other", "both", "such", "many", "much", "few", "several"})
NEGATORS = frozenset({"not", "n't", "never", "no", "ない", "ぬ", "ず", "ん", "ません"})
MODALS = {"can": ("possible-01", ":ARG1"), "could": ("possible-01", ":ARG1"), "may": ("possible-01", ":ARG1")}
MODALS |= {"might": ("possible-01", ":ARG1"), "must": ("obligate-01", ":ARG2")}
MODALS |= {"should": ("recommend-01", ":ARG1"), "できる": ("possible-01", ":ARG1")}
DEGREE_WORDS = frozenset({"very", "too", "so", "more", "most", "quite", "rather", "less", "least", "enough"})
TIME_WORDS = frozenset({"now", "then", "again", "always", "never", "today", "yesterday", "soon", "once"})
TIME_WORDS |= frozenset({"already", "still", "ever", "tomorrow", "later", "早く", "今", "昨日", "今日"})
COORDINATORS = {"and": "and", "or": "or", "but": "contrast-01", "nor": "and", "と": "and", "や": "and"}
ENTITY_TYPES = {"PERSON": "person", "GPE": "country", "LOC": "location", "ORG": "organization"}
ENTITY_TYPES |= {"NORP": "nationality", "FAC": "facility", "Person": "person", "Province": "province"}
NUMBER_WORDS = {
    w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())
}
NUMBER_WORDS |= {"eleven": "11", "twelve": "12", "twenty": "20", "hundred": "100", "thousand": "1000"}


@dataclass
class _Graph:
    """Nodes are ints; edges (source, role, target) with target an int (a node) or a str (a constant)."""

    concepts: list[str] = field(default_factory=list)
    edges: list[tuple[int, str, int | str]] = field(default_factory=list)

    def node(self, concept: str) -> int:
        self.concepts.append(concept)
        return len(self.concepts) - 1

    def penman(self, top: int, metadata: dict):
        """A connected `penman.Graph` (nodes unreachable from `top` hang off it as `:mod`)."""
        from sentkit.amr import require

        penman = require("penman")
        reached, frontier = {top}, [top]
        adjacent: dict[int, set[int]] = {}
        self.edges = [(s, r, t) for s, r, t in self.edges if s is not None and t is not None]
        for s, _, t in self.edges:
            if isinstance(t, int):
                adjacent.setdefault(s, set()).add(t)
                adjacent.setdefault(t, set()).add(s)
        while frontier:
            for nxt in adjacent.get(frontier.pop(), ()):
                if nxt not in reached:
                    reached.add(nxt)
                    frontier.append(nxt)
        edges = list(self.edges)
        for orphan in range(len(self.concepts)):
            if orphan not in reached:
                edges.append((top, ":mod", orphan))
                reached.add(orphan)
        names: dict[int, str] = {}
        counts: dict[str, int] = {}
        for i, concept in enumerate(self.concepts):
            letter = next((c for c in concept.lower() if "a" <= c <= "z"), "x")
            counts[letter] = counts.get(letter, 0) + 1
            names[i] = letter if counts[letter] == 1 else f"{letter}{counts[letter]}"
        order = [top] + [i for i in range(len(self.concepts)) if i != top]
        triples = [(names[i], ":instance", _concept_token(self.concepts[i])) for i in order]
        seen = set()
        for s, role, t in edges:
            target = names[t] if isinstance(t, int) else t
            key = (names[s], role, target)
            if key not in seen and not (isinstance(t, int) and t == s):
                seen.add(key)
                triples.append(key)
        return penman.Graph(triples, top=names[top], metadata=metadata)


def _concept_token(concept: str) -> str:
    cleaned = "".join(c for c in concept if not c.isspace() and c not in '()"/:~') or "thing"
    return cleaned


def _constant(text: str) -> str:
    return '"' + text.replace('"', "") + '"'


class DependencyRules:
    """Converts one spaCy `Doc` into a `penman.Graph`; `lang` picks the concept rules (en: English lemmas)."""

    def __init__(self, lexicon: Lexicon, lang: str = "en") -> None:
        self.lexicon = lexicon
        self.lang = lang

    # ---- concepts --------------------------------------------------------------------------------
    def concept(self, token) -> str:
        lemma = token.lemma_.lower() if self.lang == "en" else token.lemma_
        if lemma in QUESTION_WORDS and token.tag_ in ("WP", "WRB", "WDT", "WP$") or lemma in ("何", "誰"):
            return "amr-unknown"
        if token.pos_ == "PRON" and token.lower_ in PRONOUNS:
            return PRONOUNS[token.lower_]
        if self.lang != "en":
            return lemma
        if token.pos_ == "VERB" or (token.pos_ == "AUX" and token.dep_ == "ROOT"):
            return self.lexicon.frame(lemma)
        if token.pos_ == "ADV" and lemma.endswith("ly") and self.lexicon.knows(lemma[:-2]):
            return lemma[:-2]
        if (
            token.pos_ in ("ADJ", "NOUN", "ADV")
            and not self.lexicon.knows(lemma)
            and lemma in self.lexicon.frames
        ):
            return self.lexicon.frames[lemma]  # e.g. an adjective annotated as a frame (afraid -> fear-01)
        return lemma

    def subject_role(self, concept: str) -> str:
        return self.lexicon.subject_role.get(concept, ":ARG0")

    # ---- the conversion ---------------------------------------------------------------------------
    def convert(self, doc, metadata: dict | None = None):
        graph = _Graph()
        roots = []
        for sent in doc.sents:
            top = self._sentence(sent, graph)
            if top is not None:
                roots.append(top)
        if not roots:
            top = graph.node("amr-empty")
        elif len(roots) == 1:
            top = roots[0]
        else:
            top = graph.node("multi-sentence")
            for i, root in enumerate(roots, 1):
                graph.edges.append((top, f":snt{i}", root))
        return graph.penman(top, dict(metadata or {}))

    def _sentence(self, sent, graph: _Graph) -> int | None:
        node_of: dict[int, int] = {}  # token index -> its concept node
        outer: dict[int, int] = {}  # token index -> the node its parent attaches to (modal / coordination)
        alias: dict[int, int] = {}  # copula token -> the predicate token standing for it
        name_parts: set[int] = set()

        def skipped(tok) -> bool:
            if tok.i in name_parts or tok.pos_ in ("PUNCT", "SPACE", "SYM"):
                return True
            if tok.dep_ == "det":
                return tok.lemma_.lower() not in KEPT_DETERMINERS and tok.lemma_.lower() != "no"
            if tok.lemma_.lower() in NEGATORS or tok.lemma_.lower() in MODALS:
                return True
            if tok.pos_ == "ADP" and (tok.dep_ in ("prep", "agent", "dative") or self.lang != "en"):
                return True
            if tok.lemma_.lower() in RELATIVE_WORDS and tok.head.dep_ == "relcl":
                return True
            if tok.pos_ == "NUM" or tok.dep_ in ("nummod",):
                return True
            return tok.dep_ in SKIPPED_DEPS

        # copulas: "the planet is small" -> (small :domain planet); the adjective stands for "is"
        for tok in sent:
            if tok.lemma_ == "be" and tok.pos_ == "AUX":
                pred = [c for c in tok.children if c.dep_ in ("acomp", "attr")]
                if pred:
                    alias[tok.i] = pred[0].i
        # named entities: one (type :name (name :op1 ...)) node per entity
        for ent in sent.ents:
            if ent.label_ in ("CARDINAL", "ORDINAL", "QUANTITY", "DATE", "TIME", "MONEY", "PERCENT"):
                continue
            if self.lang != "en" and ent.label_ not in ENTITY_TYPES:
                continue  # GiNZA's fine-grained types (Animal, Food, ...) are not names
            head = ent.root
            kind = ENTITY_TYPES.get(ent.label_, "thing")
            node = graph.node(kind)
            name = graph.node("name")
            graph.edges.append((node, ":name", name))
            for k, part in enumerate(ent, 1):
                graph.edges.append((name, f":op{k}", _constant(part.text)))
                if part.i != head.i:
                    name_parts.add(part.i)
            node_of[head.i] = node

        for tok in sent:
            if tok.i in node_of or skipped(tok) or tok.i in alias:
                continue
            node_of[tok.i] = graph.node(self.concept(tok))

        def node(tok) -> int | None:
            tok = sent.doc[alias.get(tok.i, tok.i)]
            return node_of.get(tok.i)

        def top_of(tok) -> int | None:
            tok = sent.doc[alias.get(tok.i, tok.i)]
            return outer.get(tok.i, node_of.get(tok.i))

        def concept_of(n: int | None) -> str:
            return graph.concepts[n] if n is not None else ""

        # modals wrap their verb: "can draw" -> (possible-01 :ARG1 (draw-01))
        for tok in sent:
            target = sent.doc[alias.get(tok.i, tok.i)]
            for child in tok.children:
                lemma = child.lemma_.lower()
                if child.dep_ in ("aux", "aux:pass") and lemma in MODALS and target.i in node_of:
                    concept, role = MODALS[lemma]
                    wrap = graph.node(concept)
                    graph.edges.append((wrap, role, top_of(target)))
                    outer[target.i] = wrap
        # negation goes on the outermost node of its head
        for tok in sent:
            if tok.lemma_.lower() in NEGATORS and (
                tok.dep_ in ("neg", "advmod", "aux", "det") or tok.pos_ == "AUX"
            ):
                head = tok.head
                n = top_of(head)
                if n is not None:
                    graph.edges.append((n, ":polarity", "-"))
        # coordination: X and Y -> (and :op1 X :op2 Y); a verb without its own subject shares X's
        for tok in sent:
            conjuncts = [c for c in tok.children if c.dep_ == "conj" and node(c) is not None]
            if not conjuncts or node(tok) is None:
                continue
            cc = next((c.lemma_.lower() for c in tok.children if c.dep_ == "cc"), "and")
            for c in conjuncts:
                cc = next((g.lemma_.lower() for g in c.children if g.dep_ == "cc"), cc)
            coord = graph.node(COORDINATORS.get(cc, "and"))
            members = [tok, *conjuncts]
            for k, member in enumerate(members, 1):
                role = f":ARG{k}" if COORDINATORS.get(cc) == "contrast-01" else f":op{k}"
                graph.edges.append((coord, role, top_of(member)))
            subject = next((c for c in tok.children if c.dep_ in ("nsubj", "nsubjpass")), None)
            if subject is not None and node(subject) is not None:
                for c in conjuncts:
                    if c.pos_ == "VERB" and not any(g.dep_.startswith("nsubj") for g in c.children):
                        n = node(c)
                        graph.edges.append((n, self.subject_role(concept_of(n)), top_of(subject)))
            outer[alias.get(tok.i, tok.i)] = coord

        # every other dependency: child attaches to its (aliased) head with a role
        root_node = None
        for tok in sent:
            if tok.dep_ == "ROOT" or tok.head.i == tok.i:
                root_node = top_of(tok)
                if self.lang == "en" and tok.pos_ == "VERB" and tok.tag_ == "VB":
                    if not any(c.dep_.startswith("nsubj") for c in tok.children) and sent[-1].text != "?":
                        n = node(tok)  # an imperative: (draw-01 :mode imperative :ARG0 (you))
                        graph.edges.append((n, ":mode", "imperative"))
                        graph.edges.append((n, self.subject_role(concept_of(n)), graph.node("you")))
                if sent[-1].text in ("?", "？") and not any(
                    concept_of(n) == "amr-unknown" for t, n in node_of.items() if sent.start <= t < sent.end
                ):
                    graph.edges.append((root_node, ":mode", "interrogative"))
                continue
            if tok.dep_ == "conj":
                continue
            child = top_of(tok) if tok.i not in alias else None
            if tok.i in alias:
                continue
            head_tok = tok.head
            if head_tok.dep_ in ("prep", "agent", "dative") and tok.dep_ in ("pobj", "pcomp"):
                role = self._prep_role(head_tok)
                head_tok = head_tok.head
            elif tok.dep_ in ("obl", "nmod") and self.lang != "en":
                particle = next((c.lemma_ for c in tok.children if c.dep_ == "case"), "")
                role = PREPOSITION_ROLES.get(particle, ":mod")
            elif tok.dep_ == "advmod":
                lemma = tok.lemma_.lower()
                role = ":degree" if lemma in DEGREE_WORDS else ":time" if lemma in TIME_WORDS else ":manner"
                if lemma in QUESTION_WORDS:
                    role = {"where": ":location", "why": ":cause", "how": ":manner", "when": ":time"}.get(
                        lemma, ":mod"
                    )
            elif tok.dep_ == "advcl":
                mark = next((c.lemma_.lower() for c in tok.children if c.dep_ in ("mark", "case")), "")
                role = CLAUSE_MARKERS.get(mark, ":time" if self.lang == "en" else ":mod")
            elif tok.dep_ in ("nsubj", "nsubjpass") and head_tok.lemma_ == "be" and head_tok.i in alias:
                pred = concept_of(node(head_tok))
                role = self.subject_role(pred) if pred[-3:-2] == "-" else ":domain"
            elif tok.dep_ == "nummod" or tok.pos_ == "NUM":
                n = node(head_tok)
                if n is not None and tok.dep_ in ("nummod", "quantmod", "npadvmod", "dobj", "attr"):
                    graph.edges.append((n, ":quant", NUMBER_WORDS.get(tok.lower_, tok.text)))
                continue
            else:
                role = DEP_ROLES.get(tok.dep_, ":mod")
            if child is None:
                continue
            head = node(head_tok)
            if head is None:
                continue
            if role == SUBJECT:
                role = self.subject_role(concept_of(head))
            if tok.dep_ in ("relcl", "acl") and self.lang == "en":
                rel = next((c for c in tok.children if c.lemma_.lower() in RELATIVE_WORDS), None)
                relrole = DEP_ROLES.get(rel.dep_, ":ARG1") if rel is not None else ":ARG1"
                relrole = self.subject_role(concept_of(child)) if relrole == SUBJECT else relrole
                if relrole.startswith(":ARG"):
                    graph.edges.append((node(tok), relrole, head))  # planet :ARG1-of (see-01)
                    continue
            if tok.dep_ == "acl" and self.lang != "en":
                graph.edges.append((node(tok), ":ARG0", head))  # a Japanese relative clause
                continue
            graph.edges.append((head, role, child))
            # control: "want to go" -> go-02's subject is want-01's (a re-entrancy)
            if tok.dep_ == "xcomp" and self.lang == "en":
                own = node(tok)
                if own is not None and not any(c.dep_.startswith("nsubj") for c in tok.children):
                    controller = next((c for c in head_tok.children if c.dep_ in ("dobj", "obj")), None)
                    controller = controller or next(
                        (c for c in head_tok.children if c.dep_ in ("nsubj", "nsubjpass")), None
                    )
                    if controller is not None and node(controller) is not None:
                        graph.edges.append((own, self.subject_role(concept_of(own)), top_of(controller)))
        if root_node is None:  # the root was a function word or a number: take the first concept
            root_node = next((n for t, n in sorted(node_of.items()) if sent.start <= t < sent.end), None)
        return root_node

    def _prep_role(self, prep) -> str:
        if prep.dep_ == "agent":
            return ":ARG0"
        if prep.dep_ == "dative":
            return ":ARG2"
        return PREPOSITION_ROLES.get(prep.lemma_.lower(), ":mod")
