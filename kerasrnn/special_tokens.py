"""The special tokens and their ids: the contract between the vocabularies
(`kerasrnn.data.Vocabulary`), the models (padding masks, decoding's start and end), the
tasks' preprocessors and the exported SavedModels.

=========== ==  ======================================================
token       id  meaning
=========== ==  ======================================================
``[PAD]``   0   padding: masked by `Embedding(mask_zero=True)`, never counted in a loss
``[UNK]``   1   every out-of-vocabulary token
``[START]`` 2   start of a sequence (a decoder's first input, a sentence batch's LM)
``[END]``   3   end of a sequence (decoding stops there)
=========== ==  ======================================================

Regular tokens follow from id 4. The reference client of the ONNX and LiteRT bundles
(`kerasrnn/export/client.py`) repeats these four ids: it runs without kerasrnn.
"""

PAD, UNK, START, END = "[PAD]", "[UNK]", "[START]", "[END]"
SPECIAL_TOKENS = (PAD, UNK, START, END)
PAD_ID, UNK_ID, START_ID, END_ID = range(len(SPECIAL_TOKENS))
