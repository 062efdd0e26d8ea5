"""Evaluating claims: ``verify`` (train what is missing, assess, report outcomes), the dry-run
``plan``, the ``falsify`` search, verdicts at another profile from stored runs
(``cross_profile``) and the guard of a user's script against re-running in spawned workers
(``script_guard``)."""
