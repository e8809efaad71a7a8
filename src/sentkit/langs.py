"""Language codes: tasks name languages as their files do; users may pass ISO 639-1 everywhere."""

from __future__ import annotations

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
