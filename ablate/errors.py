"""The one exception family a user sees: bad input, reported as one line and exit code 2."""


class AblateError(Exception):
    """Base of every error caused by user input (config, data, sweep file, run directory).

    The CLI prints ``error: <message>`` and exits with status 2; the message must say what is wrong,
    where (file, line, key) and what to do.
    """


class ConfigError(AblateError, ValueError):
    """A configuration is invalid; the message is one line: what, where, what to do."""


class ContractError(AssertionError):
    """A registered class (model variant, corpus, launcher) broke one check of the contract its registry
    promises (ablate/model/contract.py, ablate/data/contract.py, ablate/sweep/launch/contract.py); the
    message is one line saying how."""


class Pruned(Exception):
    """A search trial stopped early by its row's Optuna pruner (a result, not a failure)."""

    def __init__(self, step: int, value: float, metric: str) -> None:
        super().__init__(f"pruned at step {step} ({metric} {value:.4g})")
        self.step, self.value, self.metric = step, value, metric
