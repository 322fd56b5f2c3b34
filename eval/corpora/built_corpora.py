"""The evaluation corpora made from files on this machine, not committed: man pages and package READMEs.

`python -m eval.corpora build manpages` (or `readmes`) builds one into the cache where the golden files that
say `corpus: build:manpages` find it (`needle.evaluation.golden.built_corpus`); from Python,
`build("manpages", dest) -> Path`.

manpages
    The English man pages of sections 1 and 8 (`/usr/share/man/man1`, `/usr/share/man/man8`; the
    localized folders such as `/usr/share/man/de/` are not read) that belong to an installed Debian
    package (`/var/lib/dpkg/status`, `/var/lib/dpkg/info/*.list`). Symbolic links and `.so` stubs are
    left out (the page they point to is taken once). The pages are sorted by package and path; one
    package gives at most PER_PACKAGE pages (google-cloud-cli alone ships more than 16,000 pages, which
    would otherwise be the whole corpus), and the corpus at most MAX_PAGES. Each page is rendered to
    plain text by `man -l` (MANWIDTH=100, no justification, no hyphenation; `groff -man -Tutf8` when
    man-db is missing), overstrike and escape sequences stripped, and written as `<section>/<name>.md`
    with the page's NAME line as its `# title` and its sections as `##` headings.

readmes
    The long descriptions (the body after the headers) of the METADATA files of the Python packages in
    the project's virtualenv (`.venv/lib/python3*/site-packages/*.dist-info`, or BUILD_SITE_PACKAGES),
    when the description is markdown or reStructuredText (no Description-Content-Type means
    reStructuredText, as the core metadata specification says) and longer than MIN_README characters:
    one `<name>.md` per package, the description as it is under a small frontmatter. The project's own
    package (its README changes with every commit) is left out.

A page already in DEST is not rendered again, so a second run is quick (delete DEST to take up new
versions). The build ends by writing DEST/.manifest.txt, the corpus' files sorted: a hidden file, which
Needle does not index, and the mark of a finished build. `eval/corpora/lists/<name>.txt` is the list taken
on the machine the golden sets (`eval/golden/manpages.yml`, `readmes.yml`) were written on: a build that
differs from it says how, since a question whose page is missing cannot be answered. Standard library and
Needle's golden loader only.
"""

from __future__ import annotations

import email.parser
import gzip
import os
import re
import shutil
import subprocess
from pathlib import Path

from needle.evaluation.golden import BUILT_MANIFEST

MAX_PAGES = 4000
PER_PACKAGE = 200
MAN_SECTIONS = ("1", "8")
DPKG = Path("/var/lib/dpkg")
WIDTH = 100
MIN_README = 4000
ROOT = Path(__file__).resolve().parents[2]
LISTS = Path(__file__).resolve().parent / "lists"

_OVERSTRIKE = re.compile(r".\x08")
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b.")
_SAFE = re.compile(r"[^A-Za-z0-9._+@-]")


# ----------------------------------------------------------------------------------------- manpages


def installed_packages() -> list[str]:
    """Names (with `:arch` where dpkg keeps them so) of the packages dpkg reports as installed."""
    status = (DPKG / "status").read_text(encoding="utf-8", errors="replace")
    names = []
    for block in status.split("\n\n"):
        fields = dict(re.findall(r"^(Package|Status|Architecture): (.*)$", block, re.M))
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            names.append(fields["Package"])
    return sorted(set(names))


def _list_files() -> dict[str, Path]:
    """Package name (without `:arch`) -> its dpkg file list."""
    lists: dict[str, Path] = {}
    for candidate in sorted((DPKG / "info").glob("*.list")):
        lists.setdefault(candidate.name[: -len(".list")].split(":")[0], candidate)
    return lists


def _is_stub(path: Path) -> bool:
    """A page that only sources another one (`.so man1/foo.1`)."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as handle:
            head = handle.read(2048).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return True
    lines = [ln for ln in head.splitlines() if ln.strip() and not ln.startswith(('.\\"', "'\\\"", '.\\\\"'))]
    return bool(lines) and lines[0].startswith(".so ") and len(lines) <= 2


def select_manpages() -> list[tuple[str, Path, str]]:
    """(package, page file, output path) of the pages taken, in output order."""
    sections = "|".join(MAN_SECTIONS)
    pattern = re.compile(rf"^/usr/share/man/man({sections})/([^/]+)$")
    by_package: dict[str, list[tuple[Path, str]]] = {}
    lists = _list_files()
    for package in installed_packages():
        listing = lists.get(package)
        if listing is None:
            continue
        for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
            match = pattern.match(line)
            if match:
                by_package.setdefault(package, []).append((Path(line), match.group(1)))
    taken: list[tuple[str, Path, str]] = []
    seen: set[str] = set()
    for package in sorted(by_package):
        count = 0
        for path, section in sorted(set(by_package[package])):
            if count >= PER_PACKAGE:
                break
            if path.is_symlink() or not path.is_file() or _is_stub(path):
                continue
            out = f"{section}/{page_name(path, section)}.md"
            if out in seen:
                continue
            seen.add(out)
            taken.append((package, path, out))
            count += 1
    taken.sort(key=lambda item: item[2])
    return taken[:MAX_PAGES]


def page_name(path: Path, section: str) -> str:
    stem = path.name[:-3] if path.name.endswith(".gz") else path.name
    name, _, ext = stem.rpartition(".")
    if not name:
        name, ext = stem, ""
    if ext != section:  # `openssl-cmds.1ssl`: keep the suffix so it cannot meet `openssl-cmds.1`
        name = stem
    return _SAFE.sub("_", name)


def render_manpage(path: Path) -> str:
    env = dict(os.environ, MANWIDTH=str(WIDTH), COLUMNS=str(WIDTH), LANG="C.UTF-8", LC_ALL="C.UTF-8")
    env.pop("MAN_KEEP_FORMATTING", None)
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    if shutil.which("man"):
        command = ["man", "--no-hyphenation", "--no-justification", "-E", "UTF-8", "-P", "cat", "-l", str(path)]
        done = subprocess.run(command, env=env, capture_output=True, timeout=120, check=False)
        text = done.stdout.decode("utf-8", errors="replace")
    else:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        command = ["groff", "-t", "-man", "-Tutf8", "-P-c", f"-rLL={WIDTH}n", "-rHY=0"]
        done = subprocess.run(command, input=raw, env=env, capture_output=True, timeout=120, check=False)
        text = done.stdout.decode("utf-8", errors="replace")
    text = _ESCAPES.sub("", text)
    while _OVERSTRIKE.search(text):
        text = _OVERSTRIKE.sub("", text)
    return text


def manpage_markdown(text: str, fallback_title: str) -> str:
    lines = [ln.rstrip() for ln in text.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and re.search(r"\(\w+\)\s*$", lines[0]):  # CHOWN(1)   User Commands   CHOWN(1)
        lines.pop(0)
    if lines and not lines[-1][0].isspace() and re.search(r"\S\s{3,}\S.*\(\w+\)\s*$", lines[-1]):
        lines.pop()  # the footer: source, date, NAME(1)
    title = ""
    body: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line and not line[0].isspace():  # a section heading (.SH)
            if line.strip() == "NAME" and not title:
                j = i + 1
                parts = []
                while j < len(lines) and (not lines[j] or lines[j][0].isspace()):
                    if lines[j].strip():
                        parts.append(lines[j].strip())
                    elif parts:
                        break
                    j += 1
                title = " ".join(parts)
                i = j
                continue
            body.append("## " + line.strip())
        elif re.match(r"^ {3}\S", line):  # a subsection heading (.SS)
            body.append("### " + line.strip())
        else:
            stripped = line[7:] if line.startswith(" " * 7) else line.lstrip()
            if stripped.startswith("#"):
                stripped = "\\" + stripped
            body.append(stripped)
        i += 1
    out = "\n".join(body)
    out = re.sub(r"\n{3,}", "\n\n", out).strip("\n")
    return f"# {title or fallback_title}\n\n{out}\n"


def build_manpages(dest: Path) -> list[str]:
    pages = select_manpages()
    total = len(pages)
    written: list[str] = []
    failed = 0
    for number, (_package, path, out) in enumerate(pages, 1):
        target = dest / out
        if target.exists():
            written.append(out)
        else:
            try:
                text = render_manpage(path)
            except (subprocess.SubprocessError, OSError):
                text = ""
            if len(text.strip()) < 40:
                failed += 1
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                fallback = out.split("/", 1)[1][: -len(".md")]
                tmp = target.with_suffix(".tmp")
                tmp.write_text(manpage_markdown(text, fallback), encoding="utf-8")
                tmp.replace(target)
                written.append(out)
        if number % 200 == 0 or number == total:
            print(f"manpages: {number}/{total} pages ({len(written)} written or kept, {failed} failed)", flush=True)
    return written


# ------------------------------------------------------------------------------------------ readmes


def site_packages() -> Path:
    override = os.environ.get("BUILD_SITE_PACKAGES")
    if override:
        return Path(override)
    found = sorted((ROOT / ".venv" / "lib").glob("python3*/site-packages"))
    if not found:
        raise SystemExit(f"no virtualenv at {ROOT / '.venv'}: run `make demo` first or set BUILD_SITE_PACKAGES")
    return found[-1]


def _slug(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_name() -> str:
    """The `name` of pyproject.toml's [project] table (read with a regex: tomllib is 3.11+)."""
    try:
        text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return ""
    table = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = re.search(r"^name\s*=\s*[\"']([^\"']+)[\"']", table.group(1), re.M) if table else None
    return _slug(found.group(1)) if found else ""


def readme_of(metadata: Path) -> tuple[str, str] | None:
    """(file name, markdown text) of a package's long description, or None when it is not taken."""
    raw = metadata.read_text(encoding="utf-8", errors="replace")
    message = email.parser.Parser().parsestr(raw)
    content_type = (message.get("Description-Content-Type") or "text/x-rst").strip().lower()
    if content_type.startswith("text/markdown"):
        kind = "markdown"
    elif content_type.startswith("text/x-rst"):
        kind = "rst"
    else:
        return None
    payload = message.get_payload()
    description = payload if isinstance(payload, str) else ""
    if not description.strip() and message.get("Description"):
        # Metadata 1.x: the description is a header whose continuation lines start with 8 spaces or "|".
        lines = str(message.get("Description")).splitlines()
        description = "\n".join([lines[0]] + [re.sub(r"^(        |\s*\|)", "", ln) for ln in lines[1:]])
    description = description.replace("\r\n", "\n").strip("\n")
    if len(description) <= MIN_README:
        return None
    name = str(message.get("Name", metadata.parent.name.split("-")[0]))
    slug = _slug(name)
    summary = str(message.get("Summary") or "").replace("\n", " ").strip()
    head = ["---", f"title: {name}", f"package: {slug}", f"version: {message.get('Version', '')}", f"format: {kind}"]
    if summary:
        head.append("summary: " + _yaml_scalar(summary))
    head.append("---")
    return f"{slug}.md", "\n".join(head) + "\n\n" + description + "\n"


def _yaml_scalar(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_readmes(dest: Path) -> list[str]:
    metadata_files = sorted(site_packages().glob("*.dist-info/METADATA"))
    total = len(metadata_files)
    own = project_name()
    written: list[str] = []
    for number, metadata in enumerate(metadata_files, 1):
        found = readme_of(metadata)
        if found and found[0] != f"{own}.md":
            out, text = found
            target = dest / out
            if not target.exists():
                target.write_text(text, encoding="utf-8")
            written.append(out)
        if number % 200 == 0 or number == total:
            print(f"readmes: {number}/{total} packages read ({len(written)} taken)", flush=True)
    return written


# ------------------------------------------------------------------------------------------- driver

BUILDERS = {"manpages": build_manpages, "readmes": build_readmes}


def build(name: str, dest: str | Path) -> Path:
    """Build corpus `name` into `dest` (created if missing) and return `dest`."""
    if name not in BUILDERS:
        raise ValueError(f"unknown corpus {name!r}: one of {', '.join(sorted(BUILDERS))}")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / BUILT_MANIFEST).unlink(missing_ok=True)  # unfinished until the list is written again
    (dest / "MANIFEST.txt").unlink(missing_ok=True)  # where builds before wrote it: Needle indexed it as a note
    files = sorted(set(BUILDERS[name](dest)))
    (dest / BUILT_MANIFEST).write_text("".join(f"{f}\n" for f in files), encoding="utf-8")
    print(f"{name}: {len(files)} files in {dest} (list in {dest / BUILT_MANIFEST})", flush=True)
    _compare(name, files)
    return dest


def _compare(name: str, files: list[str]) -> None:
    """Say how this build differs from the recorded list the golden set was written against."""
    recorded_path = LISTS / f"{name}.txt"
    if not recorded_path.is_file():
        return
    recorded = {ln.strip() for ln in recorded_path.read_text(encoding="utf-8").splitlines() if ln.strip()}
    missing = sorted(recorded - set(files))
    extra = sorted(set(files) - recorded)
    if missing or extra:
        print(
            f"{name}: differs from {recorded_path.relative_to(ROOT)}: {len(missing)} missing here, {len(extra)} more here",
            flush=True,
        )
        for f in missing[:20]:
            print(f"  missing: {f}", flush=True)
