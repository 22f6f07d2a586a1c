"""Choose MIME types and size limits for e-mail attachments."""
import os.path

MIME_TYPES = {
    ".pdf": "application/pdf",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".txt": "text/plain",
    ".csv": "text/csv",
}
MAX_TOTAL_BYTES = 10 * 1024 * 1024


def mime_type(filename):
    """MIME type from the file extension (case-insensitive), with a generic fallback."""
    ext = os.path.splitext(filename)
    return MIME_TYPES.get(ext.lower(), "application/octet-stream")


def is_inline(filename):
    """Images are shown inline, everything else is attached."""
    return filename != "" and mime_type(filename).startswith("image/")


def check_sizes(files):
    """Raise ValueError when the total size of (name, size) pairs is too large."""
    total = sum(size for _, size in files)
    if total > MAX_TOTAL_BYTES:
        raise ValueError(f"attachments too large: {total} bytes")
    return total
