"""ablate.train: the LightningModule, the paper's recipe (loss, schedule), the Trainer and its callbacks,
and the run engine.

`train(cfg)` lives in ablate/train/run.py (imported lazily: Lightning is slow to import); evaluation
(decoding, BLEU, PPL) is ablate.eval; `ablate eval` (re-scoring a run's checkpoint) is ablate.train.rerun.
"""
