"""Dev BLEU during training, as a Lightning callback (no state injected into the LightningModule).

Every ``every``-th validation (0 = never during training; the final numbers come from
:func:`ablate.eval.evaluate.evaluate_split` after fit) rank 0 beam-searches the dev subset and logs
``val/bleu``, ``val/bleu_signature`` is not logged (a string), ``val/bleu_tok`` when asked. The count of
validations is the callback's state, saved in checkpoints, so a resumed run scores BLEU at the same steps.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl

from ablate.eval.corpus import BleuSet, score_bleu
from ablate.eval.settings import DecodeSettings


class DevBleu(pl.Callback):
    """Logs ``val/bleu`` (and ``val/bleu_tok``) of ``data`` every ``every`` validations during fit."""

    def __init__(self, data: BleuSet, settings: DecodeSettings, every: int, tokenized: bool = False) -> None:
        self.data, self.settings, self.every, self.tokenized = data, settings, int(every), tokenized
        self.validations = 0  # completed validations during fit

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.state.fn != "fit":
            return
        self.validations += 1
        if self.every <= 0 or self.validations % self.every:
            return
        if trainer.is_global_zero:
            model = pl_module.model  # type: ignore[attr-defined]
            result = score_bleu(model, self.data, self.settings, tokenized=self.tokenized, device=pl_module.device)
            for key in ("bleu", "bleu_tok"):
                if key in result:
                    pl_module.log(f"val/{key}", float(result[key]), rank_zero_only=True)

    def state_dict(self) -> dict[str, Any]:
        return {"validations": self.validations}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.validations = int(state_dict.get("validations", 0))
