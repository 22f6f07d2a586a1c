"""Play queue with albums, de-duplication and duration summaries."""


class Playlist:
    """An ordered queue of tracks; each track is a dict with 'id', 'title', 'seconds'."""

    def __init__(self, name):
        self.name = name
        self.tracks = []

    def add(self, track):
        """Queue one track at the end."""
        self.tracks.append(track)

    def add_album(self, album_tracks):
        """Queue every track of an album, in album order."""
        self.tracks.append(album_tracks)

    def remove_duplicates(self):
        """Keep only the first occurrence of each track id."""
        seen = set()
        unique = []
        for track in self.tracks:
            if track["id"] not in seen:
                seen.add(track["id"])
                unique.append(track)
        self.tracks = unique

    def duration(self):
        """Total play time in seconds."""
        return sum(track["seconds"] for track in self.tracks)

    def describe(self):
        """Human-readable summary like 'Road trip: 3 tracks, 10:05'."""
        minutes, seconds = divmod(self.duration(), 60)
        return f"{self.name}: {len(self.tracks)} tracks, {minutes}:{seconds:02d}"
