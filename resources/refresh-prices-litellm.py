#!/usr/bin/env python3
"""Refreshes resources/prices-litellm.tsv from LiteLLM's price table.

LiteLLM's `model_prices_and_context_window.json` (MIT, github.com/BerriAI/litellm) is the
price table the field maintains (ccusage reads it too). cmstore pins the part it needs, the
token rates of chat models, in a small TSV built into the binary; cost is never fetched at
run time. Run this, read the diff, commit it.

    resources/refresh-prices-litellm.py [FILE_OR_URL [LABEL]]

FILE_OR_URL defaults to the file on LiteLLM's main branch; LABEL (say, the LiteLLM version
the file came with) is written in the header as its source. Where GitHub is out of reach, the
same table ships in LiteLLM's wheel on PyPI:

    pip download litellm --no-deps -d /tmp/litellm
    unzip -o /tmp/litellm/litellm-*.whl 'litellm/model_prices_and_context_window_backup.json' -d /tmp/litellm
    resources/refresh-prices-litellm.py /tmp/litellm/litellm/model_prices_and_context_window_backup.json

Rules (docs/usage.md, "Cost"): chat, responses and completion models with both an input and
an output rate; rates in USD per million tokens; a model without a cache-read rate has its
cached input priced as input, without a cache-write rate as input, without a 1-hour write
rate as a 5-minute write. Tiered rates (over 200K or 272K tokens), batch, flex and priority
rates are not taken.
"""

import datetime
import json
import os
import sys
import urllib.request

DEFAULT = (
    "https://raw.githubusercontent.com/BerriAI/litellm/main/"
    "model_prices_and_context_window.json"
)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prices-litellm.tsv")
MODES = {"chat", "responses", "completion"}


def load(source):
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source, timeout=60) as response:
            return json.load(response)
    with open(source, encoding="utf-8") as f:
        return json.load(f)


def per_million(rate):
    # Rates are per token; a million of them, printed without float noise (1.25e-06 -> 1.25).
    return float(f"{rate * 1e6:.9g}")


def rates(entry):
    def number(key):
        value = entry.get(key)
        return value if isinstance(value, (int, float)) and value >= 0 else None

    input_rate, output_rate = number("input_cost_per_token"), number("output_cost_per_token")
    if entry.get("mode") not in MODES or input_rate is None or output_rate is None:
        return None
    write_5m = number("cache_creation_input_token_cost")
    write_5m = input_rate if write_5m is None else write_5m
    write_1h = number("cache_creation_input_token_cost_above_1hr")
    write_1h = write_5m if write_1h is None else write_1h
    read = number("cache_read_input_token_cost")
    read = input_rate if read is None else read
    return [per_million(r) for r in (input_rate, output_rate, write_5m, write_1h, read)]


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    label = sys.argv[2] if len(sys.argv) > 2 else os.path.basename(source)
    table = load(source)
    rows = []
    for model, entry in sorted(table.items()):
        if model == "sample_spec" or not isinstance(entry, dict) or "\t" in model:
            continue
        r = rates(entry)
        if r is not None:
            rows.append([model] + [f"{x:g}" for x in r])
    today = datetime.date.today().isoformat()
    with open(OUT, "w", encoding="utf-8") as out:
        out.write(
            "# Token rates of chat models, USD per million tokens, from LiteLLM's\n"
            "# model_prices_and_context_window.json (MIT License, Copyright (c) 2023 Berri AI: resources/LICENSE-litellm),\n"
            f"# source: {label}. Written by resources/refresh-prices-litellm.py;\n"
            "# do not edit by hand: resources/prices.toml and cmstore.toml's [prices] win.\n"
            f"# as_of: {today}\n"
            "# model\tinput\toutput\tcache_write_5m\tcache_write_1h\tcache_read\n"
        )
        for row in rows:
            out.write("\t".join(row) + "\n")
    print(f"{OUT}: {len(rows)} models from {source}")


if __name__ == "__main__":
    main()
