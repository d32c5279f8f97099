"""Instruction and chat data for causal LM fine-tuning, as axolotl and LLaMA-Factory users write it
(data.format, with data=files and task=causal_lm):

    alpaca    columns instruction, input (optional), output: the prompt is the instruction (and the input
              after a blank line), the response the output
    sharegpt  column conversations: a list of {from: system|human|gpt, value}
    messages  column messages: a list of {role: system|user|assistant, content}

Each row becomes a conversation of {role, content} turns, rendered by the tokenizer's chat template, or by
PLAIN_TEMPLATE where it has none, and tokenised with labels on the assistant turns only: every other token
(system prompt, user turns, the template's headers) is -100, so the loss is on the responses.

Finding the assistant turns: the template renders the conversation up to each assistant turn with the
generation prompt (what the model sees before it answers) and with the turn itself; the difference is the
answer as the template writes it, end-of-turn token included. Most templates render incrementally (each
render a prefix of the next) and then that is exact. Some write an earlier turn differently once more turns
follow (Qwen3 drops an earlier answer's empty <think></think>): the answer's text and its end-of-turn are
then found in the whole conversation after its prompt. The pieces are tokenised one by one and concatenated,
as generation sees them: the prompt alone, then the answer's tokens.
"""
from __future__ import annotations

import math

from ..config.errors import ConfigError

# format -> (the columns it needs, the ones it may have)
COLUMNS = {"alpaca": (("instruction", "output"), ("input",)), "sharegpt": (("conversations",), ()),
           "messages": (("messages",), ())}
# list formats -> (column, role key, text key, {role name: role})
TURNS = {"sharegpt": ("conversations", "from", "value",
                      {"system": "system", "human": "user", "gpt": "assistant", "user": "user", "assistant": "assistant"}),
         "messages": ("messages", "role", "content", {"system": "system", "user": "user", "assistant": "assistant"})}
# For tokenizers without a chat template (the offline fallback BPE, base models): Alpaca's headers, the system
# prompt as a first paragraph, turns a blank line apart. An answer ends with eos, so the model learns to stop.
PLAIN_TEMPLATE = (
    "{{- bos_token or '' -}}"
    "{%- for m in messages -%}"
    "{%- if not loop.first %}{{ '\\n\\n' }}{% endif -%}"
    "{%- if m.role == 'system' -%}{{ m.content }}"
    "{%- elif m.role == 'user' -%}{{ '### Instruction:\\n' + m.content }}"
    "{%- else -%}{{ '### Response:\\n' + m.content + (eos_token or '') }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '\\n\\n### Response:\\n' }}{%- endif -%}")


def template(tokenizer) -> str | None:
    """The template a conversation is rendered with: None for the tokenizer's own (apply_chat_template's
    default), else PLAIN_TEMPLATE."""
    return None if getattr(tokenizer, "chat_template", None) else PLAIN_TEMPLATE


def _is_empty(value) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))  # an empty CSV cell reads as NaN


def _bad_text(value, optional: bool) -> str | None:
    """Why an alpaca cell is not text, or None."""
    if isinstance(value, str) or optional and _is_empty(value):
        return None
    return "is empty (null/NaN)" if _is_empty(value) else f"is {type(value).__name__} {value!r}, not text"


def _bad_turns(turns, role_key: str, text_key: str, roles: dict) -> str | None:
    """Why a cell is not a list of turns, or None."""
    if not isinstance(turns, list):
        return f"is {type(turns).__name__} {str(turns)[:40]!r}, not a list of {{{role_key}, {text_key}}} turns"
    for j, turn in enumerate(turns):
        if not isinstance(turn, dict) or role_key not in turn or text_key not in turn:
            return f"turn {j} is {str(turn)[:60]!r}, not {{{role_key}, {text_key}}}"
        if turn[role_key] not in roles:
            return f"turn {j}: {role_key} {turn[role_key]!r} is not one of {', '.join(roles)}"
        if not isinstance(turn[text_key], str):
            return f"turn {j}: {text_key} is {type(turn[text_key]).__name__} {str(turn[text_key])[:40]!r}, not text"
    return None


def check(ds, fmt: str, path: str) -> None:
    """One line for rows this format can't read: missing columns (with the ones the file has), a cell that is
    not text, a turn that is not {role, content} with a known role. Streamed in batches: memory stays flat."""
    need, may = COLUMNS[fmt]
    if any(c not in ds.column_names for c in need):
        optional = f" (and optionally {', '.join(may)})" if may else ""
        raise ConfigError("data.format", fmt, f"needs the column{'s' * (len(need) > 1)} {', '.join(need)}{optional}; "
                                              f"{path} has: {', '.join(ds.column_names)}")
    columns = list(need) + [c for c in may if c in ds.column_names]
    start = 0
    for batch in ds.select_columns(columns).iter(batch_size=10_000):
        for column in columns:
            for row, value in enumerate(batch[column], start):
                problem = _bad_text(value, column in may) if fmt == "alpaca" else _bad_turns(value, *TURNS[fmt][1:])
                if problem:
                    raise ConfigError("data.format", fmt, f"{path} row {row}: {column} {problem}")
        start += len(batch[columns[0]])


def conversations(batch: dict, fmt: str) -> list[list[dict]]:
    """A batch of checked rows as conversations of {role, content} turns."""
    if fmt == "alpaca":
        inputs = batch.get("input") or [None] * len(batch["instruction"])
        return [[{"role": "user", "content": ins if _is_empty(inp) else f"{ins}\n\n{inp}"},
                 {"role": "assistant", "content": out}]
                for ins, inp, out in zip(batch["instruction"], inputs, batch["output"])]
    column, role_key, text_key, roles = TURNS[fmt]
    return [[{"role": roles[t[role_key]], "content": t[text_key]} for t in turns] for turns in batch[column]]


def texts(batch: dict, fmt: str) -> list[str]:
    """Each row's text, for training the fallback tokenizer."""
    return ["\n".join(t["content"] for t in turns) for turns in conversations(batch, fmt)]


def pieces(render, messages: list[dict]) -> list[tuple[str, bool]]:
    """The rendered conversation in order as (text, is_answer) pieces: their concatenation is the template's
    rendering of the conversation up to its last answer (a question after it teaches nothing). No answer: []."""
    answers = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if not answers:
        return []
    messages = messages[: answers[-1] + 1]
    whole = render(messages, False)
    out, cursor = [], 0
    for i in answers:
        prompt = render(messages[:i], True) if i else ""
        turn = render(messages[: i + 1], False)
        if turn.startswith(prompt) and whole.startswith(turn) and len(prompt) >= cursor:
            start, end = len(prompt), len(turn)  # an incremental template: exact
        else:  # the turn reads differently inside the whole conversation: find its text and end-of-turn there
            content = messages[i]["content"]
            content = content if content in turn else content.strip()  # templates often strip the answer
            if content not in turn:
                raise ValueError(f"assistant turn {i} ({content[:40]!r}) is not in its rendering")
            after = turn[turn.rfind(content) + len(content):]  # the end-of-turn the template writes after it
            begin = len(prompt) if whole.startswith(prompt) and len(prompt) >= cursor else cursor
            start = whole.find(content + after, begin)
            if start < 0:
                raise ValueError(f"assistant turn {i} ({content[:40]!r}) is not in the conversation as rendered")
            end = start + len(content + after)
        out += [(whole[cursor:start], False), (whole[start:end], True)]
        cursor = end
    out.append((whole[cursor:], False))
    return [(text, answer) for text, answer in out if text]


def encoder(tokenizer, fmt: str, path: str, max_length: int):
    """The datasets.map function (batched, with indices) of this format: input_ids, labels (-100 off the
    answers) and length. A row with no answer token within max_length gets no tokens (length 0): nothing to
    learn from it, and load_files drops it with a warning."""
    import jinja2

    chat_template = template(tokenizer)

    def render(messages, prompt: bool) -> str:
        return tokenizer.apply_chat_template(messages, chat_template=chat_template, add_generation_prompt=prompt,
                                             tokenize=False)

    def encode(batch, indices):
        rows = []
        for row, messages in zip(indices, conversations(batch, fmt)):
            try:
                rows.append(pieces(render, messages))
            except (jinja2.TemplateError, ValueError) as exc:  # e.g. "roles must alternate user/assistant"
                raise ConfigError("data.format", fmt, f"{path} row {row}: the tokenizer's chat template: {exc}") from None
        flat = [text for row in rows for text, _ in row]
        ids = iter(tokenizer(flat, add_special_tokens=False)["input_ids"] if flat else [])
        out = {"input_ids": [], "labels": [], "length": []}
        for row in rows:
            input_ids, labels = [], []
            for _, answer in row:
                piece = next(ids)
                input_ids += piece
                labels += piece if answer else [-100] * len(piece)
            input_ids, labels = input_ids[:max_length], labels[:max_length]
            if all(x == -100 for x in labels[1:]):  # a causal LM never scores the first position
                input_ids, labels = [], []
            out["input_ids"].append(input_ids)
            out["labels"].append(labels)
            out["length"].append(len(input_ids))
        return out

    return encode
