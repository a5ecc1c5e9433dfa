"""The local default model made able to write tool calls, for TRL's ``environment_factory`` in tests (a real
tool-calling model such as Qwen3 cannot be downloaded here)."""

from __future__ import annotations

# Hermes-style tool calls, as Qwen2.5's and Qwen3's templates write them, over the default model's message tokens;
# the tool names alone stand in the system message (a short prompt for a 1024-position model).
TOOL_CHAT_TEMPLATE = (
    "{%- if tools -%}{{ '<|system|>tools:' }}{%- for tool in tools %} {{ tool.function.name }}{%- endfor -%}"
    "{{ '<|end|>' }}{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' -%}"
    "{{ '<|assistant|>' }}{% generation %}{{ message['content'] }}"
    "{%- for call in message.get('tool_calls') or [] -%}"
    "{{ '<tool_call>' }}{{ {'name': call['function']['name'], 'arguments': call['function']['arguments']} | tojson }}"
    "{{ '</tool_call>' }}{%- endfor -%}{{ '<|end|>' }}{% endgeneration %}"
    "{%- elif message['role'] == 'tool' -%}"
    "{{ '<|user|><tool_response>' + message['content'] + '</tool_response><|end|>' }}"
    "{%- else -%}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|assistant|>' }}{%- endif -%}"
)
# transformers' response parsing (TRL's parse_response reads it) for that template, as TRL writes Qwen3's.
TOOL_RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|assistant|>",
    "fields": {
        "tool_calls": {"open": "<tool_call>", "close_pattern": r"</tool_call>\s*", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close_pattern": r"<\|end\|>\s*", "content": "text"},
    },
}


def tool_calling(model, tokenizer):
    """The default model and tokenizer made able to write tool calls: the tool-call tags and JSON words as tokens,
    the template and response parsing above."""
    new = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "name", "arguments", "take", "tools"]
    tokenizer.add_tokens([w for w in new if w not in tokenizer.get_vocab()])
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    tokenizer.chat_template = TOOL_CHAT_TEMPLATE
    tokenizer.response_template = TOOL_RESPONSE_TEMPLATE
    return model, tokenizer
