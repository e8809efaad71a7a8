"""Language codes: tasks name languages as their files do; users may pass ISO 639-1 everywhere."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from sentkit.errors import LanguageNotCovered

# ISO 639-1 -> the three-letter codes of the Tatoeba (LASER) file names. Tatoeba uses macrolanguage
# members where the data is one variety: Persian is `pes`, Chinese `cmn`, Latvian `lvs`, Malay `zsm`.
ISO1_TO_TATOEBA = {
    "af": "afr", "am": "amh", "ar": "ara", "az": "aze", "be": "bel", "bg": "bul", "bn": "ben", "br": "bre",
    "bs": "bos", "ca": "cat", "cs": "ces", "cy": "cym", "da": "dan", "de": "deu", "el": "ell", "en": "eng",
    "eo": "epo", "es": "spa", "et": "est", "eu": "eus", "fa": "pes", "fi": "fin", "fo": "fao", "fr": "fra",
    "fy": "fry", "ga": "gle", "gd": "gla", "gl": "glg", "he": "heb", "hi": "hin", "hr": "hrv", "hu": "hun",
    "hy": "hye", "id": "ind", "ia": "ina", "ie": "ile", "io": "ido", "is": "isl", "it": "ita", "ja": "jpn",
    "jv": "jav", "ka": "kat", "kk": "kaz", "km": "khm", "ko": "kor", "ku": "kur", "la": "lat", "lt": "lit",
    "lv": "lvs", "mk": "mkd", "ml": "mal", "mn": "mon", "mr": "mar", "ms": "zsm", "nb": "nob", "nl": "nld",
    "nn": "nno", "oc": "oci", "pl": "pol", "pt": "por", "ro": "ron", "ru": "rus", "sk": "slk", "sl": "slv",
    "sq": "sqi", "sr": "srp", "sv": "swe", "sw": "swh", "ta": "tam", "te": "tel", "th": "tha", "tk": "tuk",
    "tl": "tgl", "tr": "tur", "tt": "tat", "ug": "uig", "uk": "ukr", "ur": "urd", "uz": "uzb", "vi": "vie",
    "xh": "xho", "yi": "yid", "zh": "cmn",
}  # fmt: skip


def tatoeba_code(lang: str) -> str:
    """`de` -> `deu`; three-letter codes pass through unchanged."""
    lang = lang.strip()
    return ISO1_TO_TATOEBA.get(lang, lang)


# ---- training languages that encoders declare (`encoder.languages`, ISO 639-1) ----------------------------
# mUSE v3 (Yang et al. 2020, "Multilingual Universal Sentence Encoder for Semantic Retrieval", Sec. 3):
# 16 languages; zh-cn and zh-tw both map to `zh`, hence 15 codes.
MUSE_LANGUAGES: tuple[str, ...] = (
    "ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh",
)  # fmt: skip

# multilingual-e5 is initialised from XLM-RoBERTa and, per its model card, supports XLM-R's 100 CC-100
# languages: the list of Conneau et al. 2020 ("Unsupervised Cross-lingual Representation Learning at
# Scale", Table 6) as printed in fairseq's examples/xlmr/README.md. Its 7 romanised or second-script
# entries (Bengali/Hindi/Tamil/Telugu/Urdu romanised, Burmese Zawgyi, Traditional Chinese) fold into their
# language, leaving 93 codes.
XLMR_LANGUAGES: tuple[str, ...] = (
    "af", "am", "ar", "as", "az", "be", "bg", "bn", "br", "bs", "ca", "cs", "cy", "da", "de", "el", "en",
    "eo", "es", "et", "eu", "fa", "fi", "fr", "fy", "ga", "gd", "gl", "gu", "ha", "he", "hi", "hr", "hu",
    "hy", "id", "is", "it", "ja", "jv", "ka", "kk", "km", "kn", "ko", "ku", "ky", "la", "lo", "lt", "lv",
    "mg", "mk", "ml", "mn", "mr", "ms", "my", "ne", "nl", "no", "om", "or", "pa", "pl", "ps", "pt", "ro",
    "ru", "sa", "sd", "si", "sk", "sl", "so", "sq", "sr", "su", "sv", "sw", "ta", "te", "th", "tl", "tr",
    "ug", "uk", "ur", "uz", "vi", "xh", "yi", "zh",
)  # fmt: skip


# ---- choosing a task's languages ---------------------------------------------------------------------------
def select_languages(
    task: str,
    langs: Iterable[str] | None,
    available: Sequence[str],
    default: Sequence[str] | None = None,
    expand: Callable[[list[str]], Iterable[str]] | None = None,
    hint: str = "",
) -> tuple[str, ...]:
    """The languages (or pairs) a task runs: `default` (else all `available`) when `langs` is None, else
    the asked ones it has, in the order asked. Every task selects through here.

    `expand` maps the asked items to candidate names first (ISO 639-1 -> Tatoeba codes, "de" -> "de-en").
    Asked items the task lacks are dropped (a global --langs names languages of many tasks); when none
    is left, LanguageNotCovered names the task, what was asked and what it has (evaluation skips it).
    """
    if langs is None:
        return tuple(default if default is not None else available)
    asked = list(dict.fromkeys(s.strip() for s in langs if s.strip()))
    candidates = expand(asked) if expand is not None else asked
    have = set(available)
    chosen = tuple(dict.fromkeys(c for c in candidates if c in have))
    if not chosen:
        shown = ", ".join(available) if len(available) <= 40 else f"{len(available)} languages"
        raise LanguageNotCovered(
            f"task {task!r} has no data for {', '.join(asked) or 'the empty list'} (it has: {shown})"
            + (f"; {hint}" if hint else "")
        )
    return chosen
