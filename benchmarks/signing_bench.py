"""CPU per text of signing an extracted article and of its passage keys.

    python benchmarks/signing_bench.py ../shared/data/dev [--texts 600] [--repeat 3]

The first ``--texts`` gold texts of ``truth/extraction.jsonl`` (article text
as extraction gives it, without the HTML). For each text, in this process:
``sign_text`` with the default settings (tokenise, shingle, MinHash, band
keys, passage keys; no Redis) and ``passages.passage_keys`` alone. CPU time is
``time.process_time``; each pass runs ``--repeat`` times and the fastest
counts (the one least disturbed by other work on the machine). Run it at two
commits to compare them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.passages import passage_keys
from newsfold.plugin.sign.signing import sign_text


def load_texts(dev_dir: Path, limit: int) -> list[str]:
    """The first ``limit`` non-empty gold texts."""
    texts = []
    with open(dev_dir / "truth" / "extraction.jsonl", encoding="utf-8") as fh:
        for line in filter(str.strip, fh):
            text = json.loads(line).get("text") or ""
            if text.strip():
                texts.append(text)
            if len(texts) >= limit:
                break
    return texts


def per_text_ms(func, texts: list[str], repeat: int) -> float:
    """CPU milliseconds per text of ``func`` over all texts, the fastest of ``repeat`` passes."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for text in texts:
            func(text)
        best = min(best, time.process_time() - start)
    return 1000 * best / len(texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dev_dir", type=Path, help="a folder with truth/extraction.jsonl")
    parser.add_argument("--texts", type=int, default=600, help="gold texts used (default 600)")
    parser.add_argument("--repeat", type=int, default=3, help="passes; the fastest counts (default 3)")
    args = parser.parse_args(argv)
    if not (args.dev_dir / "truth" / "extraction.jsonl").is_file():
        parser.error(f"no truth/extraction.jsonl in {args.dev_dir}")
    if args.texts < 1 or args.repeat < 1:
        parser.error("--texts and --repeat must be at least 1")
    texts = load_texts(args.dev_dir, args.texts)
    if not texts:
        parser.error(f"no gold text in {args.dev_dir}")
    settings = Settings()
    for text in texts[:20]:  # imports and caches warm up outside the figures
        sign_text(text, settings=settings)
    sign = per_text_ms(lambda text: sign_text(text, settings=settings), texts, args.repeat)
    keys = per_text_ms(passage_keys, texts, args.repeat)
    print(f"{len(texts)} gold texts, mean {sum(map(len, texts)) / len(texts):,.0f} characters, best of {args.repeat}")
    print(f"sign_text       {sign:6.2f} CPU ms a text")
    print(f"passage_keys    {keys:6.2f} CPU ms a text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
