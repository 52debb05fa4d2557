"""The one exception family a user sees: bad input, reported as one line and exit code 2."""


class AblateError(Exception):
    """Base of every error caused by user input (config, data, sweep file, run directory).

    The CLI prints ``error: <message>`` and exits with status 2; the message must say what is wrong,
    where (file, line, key) and what to do.
    """


class ConfigError(AblateError, ValueError):
    """A configuration is invalid; the message is one line: what, where, what to do."""
