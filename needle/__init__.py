"""Needle: hybrid search over markdown notes, as Haystack pipelines declared in YAML.

Needle runs offline: Haystack's usage telemetry is off unless the user turns it on explicitly.
"""

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
