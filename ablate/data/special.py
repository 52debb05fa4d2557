"""The special token ids, fixed in every SentencePiece model ablate trains (docs/architecture.md).

Source = subwords + EOS. Target input = BOS + subwords; target output = subwords + EOS; PAD fills.
The one definition: the tokenizer, the batches, the model's padding and the decoders import it.
"""

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3
SPECIAL_IDS = frozenset((PAD_ID, UNK_ID, BOS_ID, EOS_ID))
