"""ablate.eval: everything that scores a model - decoding, BLEU, perplexity, one settings object.

- :mod:`ablate.eval.settings`: :class:`DecodeSettings` (beam, length penalty, length limit, batch),
  built once from ``cfg.eval`` and handed to every search.
- :mod:`ablate.eval.decode`: greedy and batched beam search with the incremental KV cache (section 6.1).
- :mod:`ablate.eval.bleu`: sacreBLEU corpus BLEU with its signature; paper-style tokenized BLEU.
- :mod:`ablate.eval.nll`: corpus NLL / perplexity and per-sentence NLL (teacher forcing).
- :mod:`ablate.eval.corpus`: a split's sources and references (:class:`BleuSet`), corpus decoding + BLEU.
- :mod:`ablate.eval.evaluate`: one split end to end (:func:`evaluate_split`); ``ablate eval`` re-scores a
  run's checkpoint with it from :mod:`ablate.train.rerun` (it loads the LightningModule).
- :mod:`ablate.eval.callback`: :class:`DevBleu`, dev BLEU during training as a Lightning callback.
Statistics over runs (seed tests, bootstraps, corrections, degeneracy) are not here: they live in
:mod:`ablate.stats`, which the report and the sweep use without touching a model.

Only ``callback`` imports Lightning; the rest needs torch or sacreBLEU.
"""
