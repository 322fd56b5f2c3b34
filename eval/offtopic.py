"""Generate questions about subjects that neither evaluation corpus covers, for the confidence's false-positive rate.

    python -m eval.offtopic --check needle/demo/notes --check ../shared/datasets/scifact/corpus.jsonl

writes `eval/golden/offtopic.yml`: 100 `train` and 100 `test` questions, each about one subject of
`SUBJECTS` put into one of `TEMPLATES` (questions and claims, as people and SciFact phrase them), picked
with a fixed seed, so the same command writes the same file. Train and test share no subject. With
`--check`, the word naming each subject is first looked for (whole word, any case) in each corpus given (a
folder of notes or a BEIR `corpus.jsonl`); a subject found anywhere stops the run, naming where.
`needle eval calibration --offtopic eval/golden/offtopic.yml` runs them: nothing relevant exists, so a
confident top result is a false one.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

import yaml

from eval.demo_data import OFFTOPIC

SEED = 17
PER_SPLIT = 100

# Hobbies, crafts, sports, arts, animals and trades far from both corpora (biomedical abstracts; notes on
# software, cooking, running, money and travel): each subject and the word that names it, which --check
# looks for in each corpus (a modifier such as "tuning" may occur elsewhere; the subject itself may not).
SUBJECTS = {
    "medieval heraldry": "heraldry",
    "falconry": "falconry",
    "origami cranes": "origami",
    "bonsai trees": "bonsai",
    "archery ranges": "archery",
    "harpsichord tuning": "harpsichord",
    "bagpipe reeds": "bagpipe",
    "opera librettos": "librettos",
    "ballet pointe work": "ballet",
    "tango embellishments": "tango",
    "flamenco rhythms": "flamenco",
    "ukulele chords": "ukulele",
    "banjo rolls": "banjo",
    "accordion bellows": "accordion",
    "cello bowing": "cello",
    "lacrosse": "lacrosse",
    "curling stones": "curling",
    "croquet hoops": "croquet",
    "badminton smashes": "badminton",
    "snooker safety shots": "snooker",
    "dressage tests": "dressage",
    "rodeo bull riding": "rodeo",
    "archery fletching": "fletching",
    "javelin throwing": "javelin",
    "pole vaulting": "vaulting",
    "bobsleigh": "bobsleigh",
    "windsurfing": "windsurfing",
    "kitesurfing": "kitesurfing",
    "canoe portages": "canoe",
    "sailing dinghies": "sailing",
    "blacksmith anvils": "blacksmith",
    "calligraphy nibs": "calligraphy",
    "bookbinding": "bookbinding",
    "quilting": "quilting",
    "crochet amigurumi": "amigurumi",
    "macrame": "macrame",
    "pottery wheels": "pottery",
    "woodturning": "woodturning",
    "marquetry": "marquetry",
    "taxidermy": "taxidermy",
    "perfume making": "perfume",
    "tapestry weaving": "tapestry",
    "watchmaking": "watchmaking",
    "chess openings": "chess",
    "backgammon": "backgammon",
    "mahjong": "mahjong",
    "crossword setting": "crossword",
    "sudoku": "sudoku",
    "tarot reading": "tarot",
    "ventriloquism": "ventriloquism",
    "juggling": "juggling",
    "puppetry": "puppetry",
    "circus trapeze acts": "trapeze",
    "philately": "philately",
    "numismatics": "numismatics",
    "vinyl records": "vinyl",
    "kabuki theatre": "kabuki",
    "haiku": "haiku",
    "sonnets": "sonnet",
    "gothic cathedrals": "cathedrals",
    "viking longships": "longship",
    "samurai swords": "samurai",
    "roman aqueducts": "aqueducts",
    "aztec calendars": "aztec",
    "pirate ships": "pirates",
    "medieval jousting": "jousting",
    "gladiator fights": "gladiators",
    "glacier crevasses": "crevasse",
    "tornado chasing": "tornado",
    "meteor showers": "meteor",
    "cave stalactites": "stalactites",
    "coral atolls": "atoll",
    "orchid hybrids": "orchids",
    "cactus care": "cactus",
    "tulip bulbs": "tulips",
    "topiary": "topiary",
    "beekeeping": "beekeeping",
    "alpaca shearing": "alpaca",
    "llama trekking": "llama",
    "goldfish ponds": "goldfish",
    "parrot talking": "parrot",
    "owl calls": "owl",
    "dolphin echolocation": "dolphin",
    "penguin colonies": "penguin",
    "kangaroo pouches": "kangaroo",
    "giraffe necks": "giraffe",
    "zebra stripes": "zebra",
    "flamingo plumage": "flamingo",
    "peacock feathers": "peacock",
    "tractor pulling contests": "tractor",
    "vintage motorcycles": "motorcycles",
    "hot air ballooning": "ballooning",
    "paragliding": "paragliding",
    "submarine periscopes": "submarine",
    "zeppelin airships": "zeppelin",
    "steam locomotives": "locomotives",
    "typewriter repair": "typewriter",
    "sundials": "sundial",
    "hourglasses": "hourglass",
    "trombone slides": "trombone",
    "bassoon reeds": "bassoon",
    "clarinet embouchure": "clarinet",
    "harp strings": "harp",
    "xylophone mallets": "xylophone",
    "didgeridoo breathing": "didgeridoo",
    "polka dancing": "polka",
    "waltz steps": "waltz",
    "karaoke nights": "karaoke",
    "yodeling": "yodeling",
    "surfing big waves": "surfing",
    "snowboarding tricks": "snowboarding",
    "gymnastics routines": "gymnastics",
    "trampoline parks": "trampoline",
    "rugby scrums": "rugby",
    "cricket bowling": "cricket",
    "baseball pitching": "baseball",
    "softball leagues": "softball",
    "hurling": "hurling",
    "skydiving": "skydiving",
    "rowing regattas": "regatta",
    "kayaking rapids": "kayaking",
    "mountaineering expeditions": "mountaineering",
    "spelunking": "spelunking",
    "geocaching": "geocaching",
    "birdwatching": "birdwatching",
    "stargazing with a telescope": "telescope",
    "frisbee golf": "frisbee",
    "billiards": "billiards",
    "darts": "darts",
    "poker tournaments": "poker",
    "roulette": "roulette",
    "renaissance frescoes": "frescoes",
    "impressionism": "impressionism",
    "cubism": "cubism",
    "surrealism": "surrealism",
    "graffiti art": "graffiti",
    "mime artists": "mime",
    "circus clowns": "clowns",
    "stage magicians": "magician",
    "cowboys and lassos": "lasso",
    "windmills": "windmills",
    "dragons in folklore": "dragons",
    "unicorns": "unicorn",
    "mermaids": "mermaid",
    "alchemy": "alchemy",
    "astrology": "astrology",
    "numerology": "numerology",
    "terrariums": "terrarium",
    "ferrets as pets": "ferret",
    "tortoise care": "tortoise",
    "chameleons": "chameleon",
    "platypus": "platypus",
    "koalas": "koala",
    "wombats": "wombat",
    "walrus tusks": "walrus",
    "narwhals": "narwhal",
    "lobster fishing": "lobster",
    "seahorses": "seahorse",
    "starfish": "starfish",
}

TEMPLATES = [
    "What is the history of {s}?",
    "How do beginners get started with {s}?",
    "What are the most common mistakes with {s}?",
    "Which tools do I need for {s}?",
    "Why did {s} become popular?",
    "What changed in {s} over the last century?",
    "How much does it cost to take up {s}?",
    "Mastering {s} takes years of practice.",
    "The first written record of {s} dates from the eighteenth century.",
    "Experts disagree about the best approach to {s}.",
]

_WORD = re.compile(r"[a-z]+")


def generate(seed: int = SEED, per_split: int = PER_SPLIT) -> dict[str, list[str]]:
    """
    The questions, reproducibly: the subjects shuffled and halved (train, test), then `per_split` distinct
    (subject, template) pairs drawn per half.

    :returns: `{"train": [...], "test": [...]}`.
    :raises ValueError: When a half has too few subjects for `per_split` distinct questions.
    """
    rng = random.Random(seed)
    subjects = sorted(SUBJECTS)
    rng.shuffle(subjects)
    halves = {"train": subjects[: len(subjects) // 2], "test": subjects[len(subjects) // 2 :]}
    out: dict[str, list[str]] = {}
    for split, chosen in halves.items():
        pairs = [(s, t) for s in chosen for t in TEMPLATES]
        if len(pairs) < per_split:
            raise ValueError(f"{split}: {len(pairs)} questions possible, {per_split} asked for")
        picked = rng.sample(pairs, per_split)
        out[split] = [t.format(s=s) for s, t in picked]
    return out


def corpus_words(path: Path) -> set[str]:
    """Every lower-cased word of a notes folder or a BEIR `corpus.jsonl`."""
    words: set[str] = set()
    if path.is_dir():
        texts = (p.read_text(encoding="utf-8", errors="replace") for p in path.rglob("*") if p.is_file())
    else:
        texts = (
            f"{row.get('title', '')} {row.get('text', '')}" for row in map(json.loads, path.open(encoding="utf-8"))
        )
    for text in texts:
        words.update(_WORD.findall(text.lower()))
    return words


def check(paths: list[Path]) -> list[str]:
    """Subjects whose naming word occurs in one of the corpora, and where."""
    found = []
    for path in paths:
        words = corpus_words(path)
        found += [f"{subject!r}: '{key}' in {path}" for subject, key in SUBJECTS.items() if key in words]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.offtopic", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="append", type=Path, default=[], help="a corpus the subjects must be absent from"
    )
    parser.add_argument("--out", type=Path, default=OFFTOPIC)
    args = parser.parse_args(argv)
    problems = check(args.check)
    if problems:
        print("subjects found in a corpus:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    questions = generate()
    header = (
        "# Questions about subjects absent from the demo notes and from SciFact, written by `python -m eval.offtopic`\n"
        f"# (seed {SEED}; train and test share no subject). Nothing in either corpus answers them: a confident\n"
        "# top result is a false one. `needle eval calibration --offtopic eval/golden/offtopic.yml` runs them.\n"
    )
    body = yaml.safe_dump({"version": 1, "seed": SEED, **questions}, sort_keys=False, allow_unicode=True, width=120)
    args.out.write_text(header + body, encoding="utf-8")
    print(f"wrote {sum(map(len, questions.values()))} questions to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
