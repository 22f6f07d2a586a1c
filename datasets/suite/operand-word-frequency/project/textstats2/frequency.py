"""Word frequencies for the 'keywords' box of a document viewer."""
import re

STOPWORDS = frozenset("a an and are as at be by for from in is it of on or that the to was with".split())
_WORD = re.compile(r"[a-z']+")


def words(text):
    """Lower-case words of the text, without stop words."""
    return [w.strip("'") for w in _WORD.findall(text.lower())
            if w.strip("'") and w.strip("'") not in STOPWORDS]


def counts(text):
    """Word -> number of occurrences."""
    result = {}
    for word in words(text):
        result[word] = result.get(word, 0) + 1
    return result


def top_keywords(text, n=5):
    """The n most frequent words as (word, count), most frequent first;
    ties are broken alphabetically."""
    ranked = sorted(counts(text).items())
    ranked.sort(key=lambda item: item, reverse=True)  # stable: ties stay alphabetical
    return ranked[:n]
