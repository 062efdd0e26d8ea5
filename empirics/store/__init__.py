"""Where results live: the run store (``run_store``), archives of runs (``archive``),
checkpoints of runs in training (``checkpoint``), the keys of attnverify 0.1.0
(``legacy_keys``) and atomic output files (``output_paths``)."""
