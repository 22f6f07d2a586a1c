"""Access rules for a shared document store."""
from dataclasses import dataclass, field


@dataclass
class User:
    name: str
    is_admin: bool = False
    groups: frozenset = frozenset()


@dataclass
class Document:
    title: str
    owner: str
    shared_with: set = field(default_factory=set)
    public: bool = False


def can_edit(user, doc):
    """Admins may edit everything; other users only their own documents."""
    return user.is_admin and doc.owner == user.name


def can_read(user, doc):
    """Editors, public documents, and users or groups the document is shared with."""
    if doc.public or can_edit(user, doc):
        return True
    return user.name in doc.shared_with or bool(user.groups & doc.shared_with)


def visible_titles(user, docs):
    return sorted(d.title for d in docs if can_read(user, d))
