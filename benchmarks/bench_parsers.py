"""Benchmark: every judge-answer parser on hostile answers of 10, 20, 40 and 80 KB.

An answer is whatever the model sent back: truncated, looping or adversarial text must not stall a run, so every
parser has to finish in time linear in the answer's length. For each parser and hostile input this prints the
fastest of a few repeats at each size (as timeit advises: noise only ever adds time), the ratio per doubling,
time(2n) / time(n), and the fitted ratio per doubling, 2 ** (least-squares slope of log time on log size over all
sizes): about 2 for a parser linear in its input, about 4 for a quadratic one. One step between two sizes can jump
when the machine stalls or the input outgrows a CPU cache; the fitted ratio uses every size, so one jump moves it
little. Garbage collection is off while timing (as in ``timeit``).

Run: ``.venv/bin/python benchmarks/bench_parsers.py [--sizes 10 20 40 80] [--repeats 5] [--parser json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import time
from collections.abc import Callable

import numpy as np

from recjudge_utils.answer_formats import arena_verdicts, saer_fields
from recjudge_utils.answer_formats.json_levels import levels_parser
from recjudge_utils.answer_formats.parsing import ParseError, extract_label, parse_json_object

Maker = Callable[[int], str]


def fill(unit: str, n: int) -> str:
    """``unit`` repeated to exactly ``n`` characters."""
    return (unit * (n // len(unit) + 1))[:n]


def deep_nesting(n: int) -> str:
    """A balanced object nested about n/6 levels deep: too deep for the JSON decoder and for Python's parser."""
    k = n // 6
    return '{"a":' * k + "1" + "}" * k


#: Hostile answers every parser gets; n is the length in characters.
COMMON: dict[str, Maker] = {
    "unbalanced_braces": lambda n: "{" * n,
    "nested_keys": lambda n: fill('{"a":', n),
    "deep_nesting": deep_nesting,
    "quotes": lambda n: fill('{"', n),
    "mixed_quotes": lambda n: fill("{\"'\\{'", n),
    "unclosed_fence": lambda n: "```" + "a" * (n - 3),
    "many_fences": lambda n: fill("```json\n{", n),
    "literals": lambda n: "{" + fill("true, null, ", n - 1),
    "prose": lambda n: fill("I don't think {it's} a \"good\" fit for 'them'; ", n),
    "brackets": lambda n: "[" * n,
}

#: Hostile answers aimed at one parser's own checks.
SPECIFIC: dict[str, dict[str, Maker]] = {
    "arena_pairwise": {
        "verdict_blanks": lambda n: '{"accuracy": "tie' + " " * n + 'x", "overall": "Tie"}',
        "fenced_verdict_words": lambda n: fill("a wins ", n) + '```json\n{"accuracy": "Tie", "overall": "Tie"}```',
    },
    "arena_absolute": {
        "long_number": lambda n: '{"score": "0.' + "1" * n + '"}',
        "long_integer": lambda n: '{"score": 1' + "0" * n + "}",
    },
    "saer_pointwise": {
        "flagged_parens": lambda n: "REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: " + "(" * n,
        "flagged_item_blanks": lambda n: "REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: item" + " " * n + "x",
        "flagged_digits": lambda n: "REASONING: x\nCATEGORY: Good Match\nFLAGGED ITEMS: " + fill("1234567, ", n),
        "repeated_field": lambda n: (
            "REASONING: x\nCATEGORY: Good" + "*" * (n // 2) + " Match\n" + fill("CATEGORY: Good Match\n", n // 2)
        ),
    },
    "saer_pairwise": {
        "repeated_field": lambda n: (
            "REASONING: x\nVERDICT: Set" + "*" * (n // 2) + " 1\n" + fill("VERDICT: Set 1\n", n // 2)
        ),
        "field_prefixes": lambda n: fill(">*_#- " * 20 + "VERDICT\n", n),
    },
    "extract_label": {
        "label_blanks": lambda n: "4" + " " * n + "x",
        "label_fraction": lambda n: "4" + " " * (n // 2) + "/" + " " * (n // 2) + "x",
        "label_digits": lambda n: "1" * n + ".5",
    },
}

#: name -> parser of one answer (ParseError is the expected outcome on hostile input)
PARSERS: dict[str, Callable[[str], object]] = {
    "parse_json_object": parse_json_object,
    "arena_pairwise": arena_verdicts.make_pairwise_parser(("accuracy",)),
    "arena_absolute": arena_verdicts.parse_absolute,
    "levels": levels_parser(("score",)),
    "saer_pointwise": saer_fields.parse_pointwise,
    "saer_pairwise": saer_fields.parse_pairwise,
    "extract_label": lambda value: extract_label(value, ("1", "2", "3", "4", "5")),
}


def hostile_inputs(parser: str) -> dict[str, Maker]:
    """The common hostile inputs plus the ones aimed at ``parser``."""
    return {**COMMON, **SPECIFIC.get(parser, {})}


def outcome(parse: Callable[[str], object], text: str) -> str:
    """``ok``, ``ParseError``, or the name of any other exception (a crash: the bug this benchmark looks for)."""
    try:
        parse(text)
    except ParseError:
        return "ParseError"
    except Exception as exc:  # reported, not hidden
        return f"CRASH {type(exc).__name__}"
    return "ok"


def _run(parse: Callable[[str], object], text: str, loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        with contextlib.suppress(ParseError):
            parse(text)
    return time.perf_counter() - start


def time_per_call(parse: Callable[[str], object], text: str, repeats: int, min_time: float = 0.02) -> float:
    """Fastest over ``repeats`` of the time of one call, looping fast calls until a timing lasts ``min_time``."""
    loops = 1
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while (elapsed := _run(parse, text, loops)) < min_time and loops < 1 << 16:
            loops *= 2
        times = [elapsed / loops] + [_run(parse, text, loops) / loops for _ in range(repeats - 1)]
    finally:
        if gc_was_enabled:
            gc.enable()
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 40, 80], help="input sizes in KB (doubling)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--parser", action="append", choices=sorted(PARSERS), help="only these parsers")
    args = ap.parse_args()
    sizes = [kb * 1000 for kb in args.sizes]
    ratio_heads = [f"x{b // 1000}/{a // 1000}" for a, b in itertools.pairwise(sizes)]
    head = f"{'parser':<18} {'input':<22} " + " ".join(f"{s // 1000:>7}KB" for s in sizes)
    print(head + "  " + " ".join(f"{h:>7}" for h in ratio_heads) + "  fitted  outcome")
    print(" " * 42 + "(ms per call)")
    worst = worst_fit = 0.0
    for name, parse in PARSERS.items():
        if args.parser and name not in args.parser:
            continue
        for input_name, make in hostile_inputs(name).items():
            texts = [make(n) for n in sizes]
            times = [time_per_call(parse, text, args.repeats) for text in texts]
            ratios = [b / a for a, b in itertools.pairwise(times)]
            fitted = 2 ** float(np.polyfit(np.log(sizes), np.log(times), 1)[0])
            worst, worst_fit = max([worst, *ratios]), max(worst_fit, fitted)
            cells = " ".join(f"{t * 1e3:9.3f}" for t in times)
            print(f"{name:<18} {input_name:<22} {cells}  " + " ".join(f"{r:7.2f}" for r in ratios), end="")
            print(f"  {fitted:6.2f}", end="")
            print(f"  {outcome(parse, texts[-1])}", flush=True)
    print(
        f"\nworst fitted ratio per doubling: {worst_fit:.2f}; worst single step: {worst:.2f} (linear ~2, quadratic ~4)"
    )


if __name__ == "__main__":
    main()
