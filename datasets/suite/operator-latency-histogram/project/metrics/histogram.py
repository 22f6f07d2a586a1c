"""Fixed-width latency histograms for a monitoring dashboard (values in ms)."""


def bucket_index(value, width):
    """Index of the bucket [i*width, (i+1)*width) that contains value."""
    if value < 0:
        raise ValueError("latency cannot be negative")
    return int(value % width)


def histogram(values, width, buckets):
    """Counts per bucket; values beyond the last bucket go into the last one."""
    counts = [0] * buckets
    for value in values:
        counts[min(bucket_index(value, width), buckets - 1)] += 1
    return counts


def labels(width, buckets):
    """'0-9', '10-19', ..., and '90+' style labels for integer-millisecond buckets."""
    result = [f"{i * width}-{(i + 1) * width - 1}" for i in range(buckets - 1)]
    return result + [f"{(buckets - 1) * width}+"]


def render(values, width, buckets, scale=1):
    """One text bar per bucket."""
    counts = histogram(values, width, buckets)
    return [f"{label:>9} {'#' * (count // scale)}" for label, count in zip(labels(width, buckets), counts)]
