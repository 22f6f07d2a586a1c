"""Progress reporting for long-running batch jobs."""


def percent(done, total):
    """Completion in percent with one decimal; an empty job is complete."""
    if total <= 0:
        return 100.0
    done = min(max(done, 0), total)
    return round(done / total * 10, 1)


def bar(done, total, width=20):
    """Text progress bar such as '[#####---------------]'."""
    filled = width if total <= 0 else int(width * min(done, total) / total)
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def eta_seconds(done, total, elapsed):
    """Estimated seconds remaining, assuming a constant rate; None if unknown."""
    if done <= 0:
        return None
    return round(elapsed / done * (total - done))


def status_line(name, done, total, elapsed):
    """'import  [####----] 50.0% (eta 10s)'."""
    eta = eta_seconds(done, total, elapsed)
    tail = "" if eta is None else f" (eta {eta}s)"
    return f"{name}  {bar(done, total, 8)} {percent(done, total)}%{tail}"
