"""Exam results for a course: pass/fail decisions and grade letters."""

PASS_MARK = 55
GRADE_BANDS = [(85, "A"), (70, "B"), (55, "C"), (40, "D")]


def passed(score):
    """A student passes with a score of PASS_MARK or more."""
    return score > PASS_MARK


def letter(score):
    """Letter grade: the first band whose lower bound the score reaches, else 'F'."""
    for bound, grade in GRADE_BANDS:
        if score >= bound:
            return grade
    return "F"


def report(scores):
    """{'passed': [...], 'failed': [...]} with student names sorted."""
    result = {"passed": [], "failed": []}
    for name, score in sorted(scores.items()):
        result["passed" if passed(score) else "failed"].append(name)
    return result


def pass_rate(scores):
    """Percentage of students who passed, one decimal."""
    if not scores:
        return 0.0
    return round(100 * len(report(scores)["passed"]) / len(scores), 1)
