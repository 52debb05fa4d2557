"""ablate.train: the LightningModule, the paper's recipe, decoding, metrics and the run engine.

`train(cfg)` and `evaluate_run(run_dir)` live in ablate/train/run.py (imported lazily: Lightning is slow to import).
"""
