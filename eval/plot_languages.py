"""Plot the language measurements: detectors by text length, and hit@3 per language before and after.

    python -m eval.plot_languages

Reads eval/results/language_detection-both.json (`python -m eval.language_detection --scifact-limit 1000
--no-index-cost --out eval/results/language_detection-both.json`: both detectors in one run),
eval/results/multilingual.json (`python -m eval.multilingual`) and, when present,
eval/results/multilingual-main.json (`python -m eval.multilingual --baseline` run on the code before);
writes eval/results/languages.png.
"""

from __future__ import annotations

import argparse
import json
import sys

from eval.demo_data import REPO
from eval.result_files import RESULTS, pyplot, save_figure


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m eval.plot_languages", description=__doc__.split("\n")[0]).parse_args(argv)
    plt = pyplot()
    detection = json.loads((RESULTS / "language_detection-both.json").read_text(encoding="utf-8"))
    after = json.loads((RESULTS / "multilingual.json").read_text(encoding="utf-8"))
    before_file = RESULTS / "multilingual-main.json"
    before = json.loads(before_file.read_text(encoding="utf-8")) if before_file.exists() else None

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    # Detectors: accuracy and clearly-wrong share per set.
    ax = axes[0]
    sets = list(detection["sets"])
    names = list(detection["detectors"])
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        rows = detection["detectors"][name]["sets"]
        xs = [j + i * width for j in range(len(sets))]
        ax.bar(xs, [rows[s]["accuracy"] if s in rows else 0 for s in sets], width, label=f"{name} accuracy")
    ax.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(sets))])
    ax.set_xticklabels(
        [s.replace("chatterbot ", "chat ").replace(" letters", "") for s in sets], rotation=20, fontsize=8
    )
    ax.set_ylim(0, 1.05)
    ax.set_title("Language told right (21 languages; scifact: first 1,000)")
    ax.legend(fontsize=8, loc="lower right")

    # hit@3 per language: search and query, before (main) and after.
    for ax, pipeline in zip(axes[1:], ("search", "query"), strict=True):
        languages = [*after["mixed"][pipeline], "english-only"]
        values_after = [after["mixed"][pipeline][lang]["hit@3"] for lang in languages[:-1]] + [
            after["english-only"][pipeline]["hit@3"]
        ]
        xs = list(range(len(languages)))
        if before is not None:
            values_before = [before["mixed"][pipeline][lang]["hit@3"] for lang in languages[:-1]] + [
                before["english-only"][pipeline]["hit@3"]
            ]
            ax.bar([x - 0.2 for x in xs], values_before, 0.4, label="before (main)", color="#bbbbbb")
            ax.bar([x + 0.2 for x in xs], values_after, 0.4, label="py3langid rule", color="#3a7dc9")
        else:
            ax.bar(xs, values_after, 0.6, label="py3langid rule", color="#3a7dc9")
        ax.set_xticks(xs)
        ax.set_xticklabels(languages, rotation=20, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"`{pipeline}` hit@3 per question language")
        ax.legend(fontsize=8, loc="lower right")
    out = save_figure(fig, RESULTS / "languages.png")
    print(f"wrote {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
