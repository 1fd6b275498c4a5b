"""Tokens per second of neardup.code.CodeTokenizer on 3,000-line Python and Go files.

Python: the first 3,000 lines of the standard library's typing.py (or what it has);
Go: a 30-line function repeated with fresh names. Best of 3 runs, one core.
Run: .venv/bin/python bench/bench_code_tokenizer.py
"""

import sysconfig
import time
from pathlib import Path

from neardup.code import CodeTokenizer

GO_FUNCTION = '''
// Sum{i} adds the values of a map whose keys pass a filter.
func (s *Store{i}) Sum{i}(ctx context.Context, keep func(string) bool) (int64, error) {{
\tvar total int64
\tfor key, value := range s.values {{
\t\tif !keep(key) {{
\t\t\tcontinue
\t\t}}
\t\tselect {{
\t\tcase <-ctx.Done():
\t\t\treturn 0, fmt.Errorf("sum{i}: %w after %d keys", ctx.Err(), len(s.values))
\t\tdefault:
\t\t}}
\t\ttotal += int64(value) * 3
\t}}
\tif total > 1<<40 {{
\t\treturn 0, errors.New("overflow")
\t}}
\treturn total, nil
}}
'''


def go_source(lines: int) -> str:
    parts, i = ["package store\n"], 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(GO_FUNCTION.format(i=i))
        i += 1
    return "".join(parts)


def python_source(lines: int) -> str:
    path = Path(sysconfig.get_paths()["stdlib"]) / "typing.py"
    return "\n".join(path.read_text().splitlines()[:lines]) + "\n"


def measure(language: str, source: str) -> tuple[int, float]:
    tokenize = CodeTokenizer(language)
    tokenize(source[:200])  # lexer built and cached outside the timing
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        tokens = tokenize(source)
        best = min(best, time.perf_counter() - start)
    return len(tokens), best


if __name__ == "__main__":
    for language, source in [("python", python_source(3000)), ("go", go_source(3000))]:
        count, seconds = measure(language, source)
        lines = source.count("\n")
        print(
            f"{language}: {lines} lines, {len(source) / 1e3:.0f} kB, {count} tokens in "
            f"{seconds:.3f} s = {count / seconds:,.0f} tokens/s, "
            f"{len(source) / seconds / 1e6:.2f} MB/s"
        )
