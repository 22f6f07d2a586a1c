from collections import Counter


def words(text):
    return [w.strip(".,;:!?").lower() for w in text.split() if w.strip(".,;:!?")]


def top_words(text, n):
    counts = Counter(words(text))
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [word for word, _ in ranked[: n - 1]]
