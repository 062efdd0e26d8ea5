"""The §5 multi-head family of Snell et al. (2021), after the official ``multihead.py``: heads
on a shared base initialisation, classified good or bad by single-head runs, then bundled.

Two claims (:mod:`.multihead_rescues_permutations`, :mod:`.one_good_head_rescues`) and what
they share: their typed parameters (:mod:`.params`), how the protocol counts a success
(:mod:`.success`), the classification of the candidate heads in stages (:mod:`.stages`), the
decision on success counts (:mod:`.decision`), the direct protocol of the multi-head claim at
smoke and quick (:mod:`.direct`) and the bundles' figures (:mod:`.figures`)."""
