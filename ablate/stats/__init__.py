"""ablate.stats: statistics over runs, below the report and the sweep; no model, data or training code.

- :mod:`ablate.stats.seeds`: tests over seeds (paired by seed, else Welch; equivalence within a margin).
- :mod:`ablate.stats.significance`: paired bootstraps over dev sentences (two trained models, one dev set).
- :mod:`ablate.stats.correction`: Holm and Benjamini-Hochberg over a table's rows.
- :mod:`ablate.stats.degeneracy`: hypotheses collapsed into repetition or nothing (a row that learned
  nothing has its statistics withheld).

Each procedure ships with a simulation test of its error rate or coverage (``tests/stats/``).
"""
