"""BM25 product search in pure Python, standing in for WebShop's pyserini/Lucene index.

WebShop indexes, per product, the lower-cased ``Title + Description + BulletPoints[0] + option text`` and returns
the top 50 hits of Lucene's BM25 (Anserini defaults ``k1=0.9``, ``b=0.4``). We do the same with an in-memory
inverted index: Lucene's BM25 formula (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``), a small analyzer close to
Lucene's English one (possessive ``'s`` removed, Lucene's English stop words dropped, plurals folded by Harman's
S-stemmer instead of Porter's), and ties broken by catalog order so rankings are deterministic.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

SEARCH_RETURN_N = 50
# Lucene's EnglishAnalyzer default stop set.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """Harman's S-stemmer: ``ies -> y`` (not ``eies``/``aies``), ``es -> e`` (not ``aes``/``ees``/``oes``), ``s -> ''``
    (not ``us``/``ss``)."""
    if len(word) > 3 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if len(word) > 2 and word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-case ASCII word tokens, possessives and stop words removed, plurals stemmed."""
    text = text.lower().replace("'s ", " ").replace("'s,", ",")
    return [stem(t) for t in _TOKEN.findall(text) if t not in STOP_WORDS]


class BM25Index:
    """An inverted index over documents with Lucene's BM25 scoring.

    Args:
        documents: the text of each document; results are indices into this list.
        k1: term-frequency saturation (Anserini default 0.9).
        b: length normalisation (Anserini default 0.4).
    """

    def __init__(self, documents: list[str], k1: float = 0.9, b: float = 0.4):
        if k1 < 0:
            raise ValueError(f"k1={k1!r} must be >= 0")
        if not 0.0 <= b <= 1.0:
            raise ValueError(f"b={b!r} must be in [0, 1]")
        self.k1, self.b = float(k1), float(b)
        self.num_docs = len(documents)
        self._postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self._lengths: list[int] = []
        for doc_id, text in enumerate(documents):
            tokens = tokenize(text)
            self._lengths.append(len(tokens))
            for term, tf in Counter(tokens).items():
                self._postings[term].append((doc_id, tf))
        self._avg_length = sum(self._lengths) / max(1, self.num_docs)
        self._norms = [self.k1 * (1.0 - self.b + self.b * n / self._avg_length) if self._avg_length else self.k1
                       for n in self._lengths]

    def idf(self, term: str) -> float:
        """Lucene's BM25 idf of ``term`` (0 for a term no document holds)."""
        df = len(self._postings.get(term, ()))
        return math.log(1.0 + (self.num_docs - df + 0.5) / (df + 0.5)) if df else 0.0

    def scores(self, query: str) -> dict[int, float]:
        """BM25 score of every document holding at least one query term (each query token counts, repeats too)."""
        totals: dict[int, float] = defaultdict(float)
        for term in tokenize(query):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for doc_id, tf in postings:
                totals[doc_id] += idf * tf * (self.k1 + 1.0) / (tf + self._norms[doc_id])
        return totals

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """Indices of the ``k`` best documents, best first; ties keep index order. Empty if nothing matches."""
        totals = self.scores(query)
        return sorted(totals, key=lambda doc_id: (-totals[doc_id], doc_id))[:k]
