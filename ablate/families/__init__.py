"""The built-in model families (:mod:`ablate.family` says what a family answers): ``encdec``, the paper's
encoder-decoder translator, and ``decoder``, a decoder-only language model. They register on import;
``ablate/__init__.py`` imports this package, so every use of ablate finds them (a plugin family registers
through a sweep file's ``imports:``). Each module imports no torch at the top."""

from ablate.families import decoder, translator

__all__ = ["decoder", "translator"]
