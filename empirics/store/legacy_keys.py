"""Migration from the run keys of attnverify 0.1.0 to the keys of declared numerics versions.

In 0.1.0 a run's key hashed its spec, the package version and the *source bytes* of the
``empirics`` modules the run executed (its task's and model's modules, the optimizers, the loop
and what they import). The numerics of that code are the numerics of version 1 of every config
class and of the loop (the change to declared versions moved files and edited nothing that
computes), so a run stored under the 0.1.0 key of its spec *with the sources of the last 0.1.0
code* is the run its new key names. :data:`LEGACY_SOURCE_HASHES` holds those source hashes, one
per (task kind, model kind) pair the claims train; a stored run whose key is the 0.1.0 key of its
spec under them is re-keyed, anything else (a run of older code, a pair not listed) stays stale.
That the numerics did not change was checked on the diff of the computing code (imports and the
new version attributes only) and by retraining a sample of the archived runs (CHANGELOG.md,
0.2.0).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from attnverify.empirics.spec import RunSpec

if TYPE_CHECKING:
    from attnverify.empirics.store.run_store import RunStore

LEGACY_PACKAGE_VERSION = "0.1.0"
LEGACY_SOURCE_HASHES: dict[tuple[str, str], str] = {
    ("copy", "snell_seq2seq"): "f51ce07398c2",
    ("copy", "free_attention_toy"): "6006cc597fc3",
    ("toy_classifier", "toy_classifier"): "eee0bfdade7f",
    ("musat_retrieval", "musat_transformer"): "b95455587a19",
    ("random_walk_lm", "bao_attention_lm"): "4d9ead7846a7",
    ("text_corpus", "bao_attention_lm"): "f93898426da0",
}
"""(task kind, model kind) -> the 0.1.0 hash of the sources such a run executed, as the last
0.1.0 code computed it (``empirics.versions.code_version`` of the modules of the pair)."""


def legacy_key(spec: RunSpec) -> str | None:
    """The key the last 0.1.0 code gave ``spec``; None for a pair it did not train."""
    source_hash = LEGACY_SOURCE_HASHES.get((spec.task.kind, spec.model.kind))
    if source_hash is None:
        return None
    payload = json.dumps({"spec": spec.to_dict(), "version": LEGACY_PACKAGE_VERSION,
                          "code": source_hash}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def migrated(key: str, meta: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(new key, metadata under it)`` for a sound entry stored under the 0.1.0 key of its
    spec; None when ``key`` is not that (an entry of other code, or one already current)."""
    try:
        spec = RunSpec.from_dict(meta["spec"])
    except (KeyError, ValueError, TypeError):
        return None
    if legacy_key(spec) != key:
        return None
    new_key = spec.key()
    return new_key, {**meta, "key": new_key}


def migrate_store(store: RunStore) -> tuple[int, int]:
    """Re-key every 0.1.0 entry of ``store`` in place: each is published under its current key
    (its arrays byte for byte, its metadata naming the new key), then the old entry removed.
    Returns ``(migrated, left)``: ``left`` counts the other stale entries (made by older code,
    damaged, or not readable as a run by this code: never read again, left as they are)."""
    from attnverify.empirics.store.run_store import CorruptEntryError, result_of

    done = left = 0
    for key in list(store.keys()):
        if store.is_current(key):
            continue
        try:
            legacy = migrated(key, store.metadata(key))
            if legacy is None:
                left += 1
                continue
            files, _, arrays = store.read_entry(key)
            result_of(store.entry_path(key), legacy[1], arrays)  # a run of its spec here
        except (CorruptEntryError, KeyError, ValueError, TypeError):
            left += 1
            continue
        new_key, new_meta = legacy
        store.publish_files(new_key, files["arrays.npz"], json.dumps(new_meta, indent=1).encode())
        store.remove(key)
        done += 1
    return done, left
