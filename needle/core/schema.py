"""What Needle's index holds, declared once: the stores' roles.

A graph names the store a component reads or writes by its role; each role is one store (an embedded engine
folder, or a Qdrant server collection) whose folder or collection name takes the role's suffix.
"""

from __future__ import annotations

# Store roles a graph may name, and the suffix of each one's folder / server collection: `chunks` holds the
# chunks of every file, `files` one document per whole file (kept apart so each level has its own BM25 statistics).
STORE_ROLES = {"chunks": "", "files": "_files"}

__all__ = ["STORE_ROLES"]
