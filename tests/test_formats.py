"""Instruction and chat data (data.format=alpaca|sharegpt|messages): rendered by the tokenizer's chat template
or the plain one, labels on exactly the answers through every padding strategy, truncation, the cache, bad
columns as one line and exit 2, and a causal LM trained from the command line."""
import json
import logging
import pickle

import pytest
import torch

from src.base import files as disk
from src.data import collate, formats, prepare, tokenize
from src.config.errors import ConfigError
from src.measure.meter import TokenCounter, window_tokens
from src.run import run
from tests.conftest import QUICK, ROOT, cli, compose, read_report

ALPACA = ROOT / "tests/data/alpaca.jsonl"
ACCOUNTS = ROOT / "tests/data/accounts.csv"
ROWS = [json.loads(line) for line in ALPACA.read_text().splitlines()]
CHAT = ["task=causal_lm", "data=files", "logger=none"]
CHATML = ("{%- for m in messages -%}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor -%}"
          "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}")
# Like Qwen3's: only the last answer carries the (empty) think block, so rendering is not incremental
THINKING = ("{%- for m in messages -%}{%- if m.role == 'assistant' and loop.last -%}"
            "{{ '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' + m.content + '<|im_end|>\\n' }}"
            "{%- else -%}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif -%}{%- endfor -%}"
            "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}")


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(disk, "CACHE", tmp_path / "cache")
    monkeypatch.setenv("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def _tokenizer(chat_template=None):
    """A byte-level BPE (any text round-trips through decode) with ChatML's special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    texts = [v for r in ROWS for v in r.values()]
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=600, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       special_tokens=["<pad>", "<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.chat_template = chat_template
    return fast


def _conversation(r, system=True):
    user = r["instruction"] + (f"\n\n{r['input']}" if r["input"] else "")
    return ([{"role": "system", "content": "You are an accounting assistant."}] if system else []) + \
        [{"role": "user", "content": user}, {"role": "assistant", "content": r["output"]}]


def _write(tmp_path, fmt, conversations=None):
    """The test rows in a format's file; conversations (lists of {role, content}) for the list formats."""
    if fmt == "alpaca":
        return ALPACA
    conversations = conversations or [_conversation(r) for r in ROWS]
    role = {"system": "system", "user": "human", "assistant": "gpt"}
    path = tmp_path / f"{fmt}.jsonl"
    with open(path, "w") as f:
        for turns in conversations:
            row = ({"conversations": [{"from": role[t["role"]], "value": t["content"]} for t in turns]}
                   if fmt == "sharegpt" else {"messages": turns})
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def _load(path, fmt, tokenizer, *overrides):
    cfg = compose(*CHAT, f"data.train_file={path}", f"data.format={fmt}", *overrides)
    train, _, info = tokenize.tokenize_files(cfg, tokenizer)
    return cfg, train, info


def _answers(labels) -> list[list[int]]:
    """The runs of labelled positions: one per answer."""
    runs, current = [], []
    for t in list(labels) + [-100]:
        if t != -100:
            current.append(int(t))
        elif current:
            runs, current = runs + [current], []
    return runs


def _decode(tok, ids) -> str:
    return tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


@pytest.mark.parametrize("template", ["plain", "chat_template"])
@pytest.mark.parametrize("fmt", ["alpaca", "sharegpt", "messages"])
def test_each_format_labels_exactly_the_answers(fmt, template, tmp_path):
    tok = _tokenizer(CHATML if template == "chat_template" else None)
    _, train, info = _load(_write(tmp_path, fmt), fmt, tok)
    assert info["format"] == {"name": fmt, "template": template} and len(train) == len(ROWS)
    end = "<|im_end|>\n" if template == "chat_template" else "</s>"  # the answer's end-of-turn is learnt too
    for row, r in zip(train, ROWS):
        messages = _conversation(r, system=fmt != "alpaca")
        rendered = tok.apply_chat_template(messages, chat_template=formats.template(tok), tokenize=False)
        assert _decode(tok, row["input_ids"]) == rendered  # the template's text, every token of it
        assert [_decode(tok, run) for run in _answers(row["labels"])] == [r["output"] + end]
        assert all(t == -100 or t == i for t, i in zip(row["labels"], row["input_ids"]))  # aligned: the model shifts
        assert row["length"] == len(row["input_ids"]) == len(row["labels"])
    if template == "plain":  # as the README says: bos, the system prompt, Alpaca's headers, eos after the answer
        system = "" if fmt == "alpaca" else "You are an accounting assistant.\n\n"
        assert rendered == f"<s>{system}### Instruction:\n{messages[-2]['content']}\n\n### Response:\n{r['output']}</s>"


@pytest.mark.parametrize("template", [None, CHATML, THINKING], ids=["plain", "chatml", "thinking"])
def test_only_assistant_turns_of_a_multi_turn_conversation_carry_labels(template, tmp_path):
    tok = _tokenizer(template)
    turns = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Translate to Korean."},
             {"role": "assistant", "content": "소모품"}, {"role": "user", "content": "And communication costs?"},
             {"role": "assistant", "content": "통신비"}, {"role": "user", "content": "Thanks."}]  # a question left open
    _, train, _ = _load(_write(tmp_path, "messages", [turns] * 3), "messages", tok)
    row = train[0]
    answers = [_decode(tok, run) for run in _answers(row["labels"])]
    if template is None:
        assert answers == ["소모품</s>", "통신비</s>"]
    elif template == CHATML:
        assert answers == ["소모품<|im_end|>\n", "통신비<|im_end|>\n"]
    else:  # an earlier answer as the whole conversation renders it, without the last answer's think block
        assert answers == ["소모품<|im_end|>\n", "<think>\n\n</think>\n\n통신비<|im_end|>\n"]
    whole = tok.apply_chat_template(turns[:5], chat_template=formats.template(tok), tokenize=False)
    assert _decode(tok, row["input_ids"]) == whole and "Thanks." not in whole  # nothing after the last answer


def test_truncation_keeps_labels_aligned_and_drops_rows_without_an_answer(tmp_path, caplog):
    tok = _tokenizer(CHATML)
    long_prompt = {"instruction": "다음 지출의 계정과목을 고르세요. " * 20, "input": "", "output": "접대비"}
    long_answer = {"instruction": "Say it", "input": "", "output": "Travel and transportation expenses. " * 20}
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [ROWS[12], long_prompt, long_answer, ROWS[13]]))
    with caplog.at_level(logging.WARNING):
        _, train, _ = _load(path, "alpaca", tok, "data.max_length=48")
    assert len(train) == 3  # the long prompt left no answer token within 48
    assert "train: 1 of 4 rows have no answer tokens within data.max_length=48" in caplog.text and "first: row 1" in caplog.text
    cut = train[1]
    assert cut["length"] == 48 and len(cut["labels"]) == 48
    answer = _decode(tok, _answers(cut["labels"])[0])
    assert long_answer["output"].startswith(answer) and len(answer) > 10  # the answer's head, where it belongs
    assert all(t == -100 or t == i for t, i in zip(cut["labels"], cut["input_ids"]))
    with pytest.raises(ConfigError, match=r"^data.max_length=8: no train row has an answer token within it"):
        _load(path, "alpaca", tok, "data.max_length=8")


@pytest.mark.parametrize("padding", ["dynamic", "grouped", "buckets", "max_length", "longest", "packed"])
def test_every_padding_strategy_carries_the_answer_labels(padding, tmp_path):
    tok = _tokenizer(CHATML)
    cfg = compose(*CHAT, f"data.train_file={ALPACA}", "data.format=alpaca", f"padding={padding}", "data.max_length=128")
    train, _, _ = prepare.rows(cfg, None, tok)
    rows = [train[i] for i in range(4)]
    batch = collate.build_collator(cfg, tok.pad_token_id)(rows)
    labels, ids = batch["labels"], batch["input_ids"]
    assert labels.shape == ids.shape and ((labels == -100) | (labels == ids)).all()
    want = [r["output"] + "<|im_end|>\n" for r in ROWS[:4]]
    if padding == "packed":  # one row: each sequence's answer, and boundaries where each sequence starts
        assert [_decode(tok, run) for run in _answers(labels[0])] == want
        lengths = [r["length"] for r in rows]
        assert batch["cu_seq_lens_q"][:5].tolist() == [0, *torch.tensor(lengths).cumsum(0).tolist()]
        assert batch["position_ids"][0, lengths[0]] == 0
        assert batch["pack_stats"]["loss"] == int((labels != -100).sum()) == sum(len(tok(w)["input_ids"]) for w in want)
    else:
        assert [_decode(tok, run) for row in labels for run in _answers(row)] == want
        assert (labels[batch["attention_mask"] == 0] == -100).all()


def test_throughput_counts_every_real_token_and_the_loss_only_the_answers(tmp_path):
    tok = _tokenizer(CHATML)
    for padding in ("dynamic", "packed"):
        cfg = compose(*CHAT, f"data.train_file={ALPACA}", "data.format=alpaca", f"padding={padding}")
        train, _, _ = prepare.rows(cfg, None, tok)
        rows = [train[i] for i in range(4)]
        counter = TokenCounter("causal_lm")
        start = counter.snapshot()
        counter.add(collate.build_collator(cfg, tok.pad_token_id)(rows))
        counts = window_tokens(start, counter.snapshot())
        answers = sum(1 for r in rows for t in r["labels"] if t != -100)
        assert counts["real"] == sum(r["length"] for r in rows)  # prompts are computed: tokens processed
        assert counts["loss"] == answers < counts["real"] / 2, padding


def test_the_tokenised_cache_is_keyed_on_the_format_and_the_template(tmp_path):
    both = tmp_path / "both.jsonl"  # a file every format of these reads: text and alpaca columns
    both.write_text("".join(json.dumps({"text": r["instruction"], **r}, ensure_ascii=False) + "\n" for r in ROWS))
    plain, chat = _tokenizer(), _tokenizer(CHATML)
    hits = [_load(both, fmt, tok)[2]["tokenize"]["train"]["cache_hit"]
            for fmt, tok in (("text", plain), ("alpaca", plain), ("alpaca", chat), ("alpaca", chat))]
    assert hits == [False, False, False, True]


def test_bad_turns_name_the_row_and_what_is_wrong(tmp_path):
    tok = _tokenizer(CHATML)
    path = tmp_path / "bad.jsonl"
    path.write_text('{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}\n'
                    '{"conversations": [{"from": "human", "value": "hi"}, {"from": "bot", "value": "yo"}]}\n')
    with pytest.raises(ConfigError, match=rf"^data.format=sharegpt: {path} row 1: conversations turn 1: from 'bot' "
                                          r"is not one of system, human, gpt, user, assistant$"):
        _load(path, "sharegpt", tok)
    nulls = tmp_path / "null.csv"
    nulls.write_text("instruction,input,output\nSay hi,,hi\n,,empty instruction\n")
    with pytest.raises(ConfigError, match=rf"^data.format=alpaca: {nulls} row 1: instruction is empty \(null/NaN\)$"):
        _load(nulls, "alpaca", tok)


def test_a_config_error_from_a_tokenising_worker_comes_back_whole():
    exc = pickle.loads(pickle.dumps(ConfigError("data.format", "messages", "row 3: no")))  # data.num_proc > 1
    assert isinstance(exc, ConfigError) and str(exc) == "data.format=messages: row 3: no"


@pytest.mark.parametrize("args,message", [
    ([f"data.train_file={ACCOUNTS}", "data.format=alpaca", *CHAT],
     f"config error: data.format=alpaca: needs the columns instruction, output (and optionally input); {ACCOUNTS} has: text, label"),
    ([f"data.train_file={ALPACA}", "data.format=messages", *CHAT],
     f"config error: data.format=messages: needs the column messages; {ALPACA} has: instruction, input, output"),
    (["data=files", f"data.train_file={ALPACA}", "data.format=alpaca"],
     "config error: data.format=alpaca: instruction and chat data train a causal LM: add task=causal_lm (task is classification"),
], ids=["alpaca-columns", "messages-columns", "not-causal-lm"])
def test_wrong_data_for_the_format_is_one_line_and_exit_2(args, message, tmp_path):
    proc = cli(*args, "logger=none", f"hydra.run.dir={tmp_path}")
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(message), proc.stderr[-3000:]


def test_alpaca_trains_a_causal_lm_from_the_command_line(tmp_path):
    """The fallback tokenizer (random-init tiny model: no chat template) and the plain template, end to end."""
    proc = cli(*CHAT, *QUICK, f"data.train_file={ALPACA}", "data.format=alpaca", "trainer.max_steps=3",
               f"hydra.run.dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = read_report(tmp_path)
    assert rep["status"] == "ok" and rep["data"]["format"] == {"name": "alpaca", "template": "plain"}
    assert rep["data"]["lengths"]["rows"] == len(ROWS)
    tp = rep["throughput"]
    assert 0 < tp["loss_tokens_per_s"] < tp["real_tokens_per_s"] / 2  # the prompts are computed, not scored


def test_a_model_directorys_chat_template_renders_the_data_packed(tmp_path):
    from transformers import AutoModelForCausalLM, Qwen3Config

    model_dir = tmp_path / "chat-model"
    tok = _tokenizer(CHATML)
    tok.save_pretrained(model_dir)
    conf = Qwen3Config(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                       num_key_value_heads=1, head_dim=16, vocab_size=len(tok), pad_token_id=0, bos_token_id=1,
                       eos_token_id=2, tie_word_embeddings=True)
    AutoModelForCausalLM.from_config(conf).save_pretrained(model_dir)
    rep = run(compose(*CHAT, *QUICK, "model=auto", f"model.name_or_path={model_dir}", f"data.train_file={_write(tmp_path, 'sharegpt')}",
                      "data.format=sharegpt", "padding=packed", "data.max_length=128", "batch.tokens=512"), tmp_path / "run")
    assert rep["status"] == "ok", rep["error"]
    assert rep["data"]["format"] == {"name": "sharegpt", "template": "chat_template"}
    assert 0 < rep["tokens"]["loss"] < rep["tokens"]["real"] / 2  # packed: the answers scored, every token computed

