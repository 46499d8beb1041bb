"""More encoder-only models (flopcalc/models/hf/encoders2.py), each compared as the class
AutoModelForMaskedLM builds, as tests/sweep/cases_encoders.py's are."""

from . import Case

BERT = dict(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=96, max_position_embeddings=64)
ROBERTA = {**BERT, "pad_token_id": 1}
UNTIED = dict(tie_word_embeddings=False)
ENC = (1, 7)

CASES = [
    # RoBERTa's copies: positions offset by pad + 1
    Case("data2vec-text", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(dict(type_vocab_size=1, **UNTIED), dict(max_position_embeddings=514))),
    Case("ibert", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(UNTIED, dict(max_position_embeddings=514, type_vocab_size=1))),
    # pre-norm relatives: a final norm; the embedding norm kept (RoBERTa-PreLayerNorm) or not
    Case("roberta-prelayernorm", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(UNTIED, dict(type_vocab_size=1, max_position_embeddings=514))),
    Case("xlm-roberta-xl", auto="masked_lm", shrink=ROBERTA, lengths=ENC,
         variants=(UNTIED, dict(type_vocab_size=2, num_hidden_layers=3))),
    Case("megatron-bert", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(UNTIED, dict(type_vocab_size=3, num_hidden_layers=3))),
    # ERNIE: BERT, with a task-type table when use_task_id
    Case("ernie", auto="masked_lm", shrink=BERT, lengths=ENC,
         variants=(dict(use_task_id=True), dict(use_task_id=True, task_type_vocab_size=5,
                                                **UNTIED))),
]
