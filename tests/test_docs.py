"""The documentation site: the CLI reference equals the parser, `mkdocs build --strict` passes, and the
tutorial's commands run as written.

Executed documentation
----------------------
A fenced block is *runnable* when its info string is ``bash`` and the line just before its opening fence
is the HTML comment ``<!-- run -->`` (invisible on the site)::

    <!-- run -->
    ```bash
    .venv/bin/pgx-corpus build --pubmed-xml data/demo/pubmed/demo.xml --sample all --out out/demo
    ```

Blocks that are only shown (they need the network, a service, root, or run until stopped) use ``sh``,
``text``, ``ini``, ``cron`` ...; a ``bash`` block without the marker is an error, so a runnable-looking
block cannot silently stop being run.  :func:`test_tutorial_runs_verbatim` runs the runnable blocks of each
page of :data:`RUNNABLE_PAGES`, in order, each with ``bash -euo pipefail``, in a fresh temporary directory
that looks like a clone for the commands (``data/demo`` copied, ``.venv`` and ``luigi.cfg`` linked to the
project's), with this checkout's ``pipeline`` first on ``PYTHONPATH``.  Every block must exit 0, and a
``find`` that matches nothing fails the test (the examples must match the demo data).

Covers: pipeline.cli, pipeline.cli.build_commands, pipeline.cli.exitcodes, pipeline.cli.reference
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.cli.exitcodes import ExitCode
from pipeline.cli.reference import cli_reference

PROJECT = Path(__file__).resolve().parents[1]
CLI_PAGE = PROJECT / "docs" / "reference" / "cli.md"
#: pages whose runnable blocks are executed: the README's tour and the tutorial
RUNNABLE_PAGES = ("README.md", "docs/tutorial.md")
RUN_MARKER = "<!-- run -->"
_FENCE = re.compile(r"^(?P<marker><!-- run -->\n)?```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)


def runnable_blocks(page: str) -> list[str]:
    """The runnable blocks of a Markdown page, in order (see the module docstring).

    Raises AssertionError for a ``bash`` block without the marker or a marked block that is not ``bash``."""
    blocks = []
    for m in _FENCE.finditer(page):
        info = m.group("info").strip().split()
        lang = info[0] if info else ""
        line = page.count("\n", 0, m.start()) + 1
        if m.group("marker"):
            assert lang == "bash", f"line {line}: a block marked {RUN_MARKER} must be a bash block"
            blocks.append(m.group("body"))
        else:
            assert lang != "bash", f"line {line}: a bash block must be marked {RUN_MARKER} (or use sh to show it)"
    return blocks


def test_cli_reference_equals_the_parser() -> None:
    """A renamed or added option changes the generated page: regenerate it with
    `python -m pipeline.cli.reference > docs/reference/cli.md`."""
    assert CLI_PAGE.read_text(encoding="utf-8") == cli_reference(cli.make_parser())


def test_every_option_is_on_the_reference_page() -> None:
    page = CLI_PAGE.read_text(encoding="utf-8")
    stack = [cli.make_parser()]
    missing = []
    while stack:
        parser = stack.pop()
        for action in parser._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                stack.extend(action.choices.values())
            missing.extend(f"{parser.prog} {flag}" for flag in action.option_strings
                           if flag.startswith("--") and f"`{flag}`" not in page and flag != "--help")
    assert missing == []


def test_exit_code_page_lists_the_table() -> None:
    page = (PROJECT / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {code.value} | `{code.name}` |" in page


@pytest.mark.slow  # mkdocs build --strict of the whole site (20 s of CPU)
def test_site_builds_strict(tmp_path: Path) -> None:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=PROJECT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    # autorefs leaves a link it cannot resolve inside a docstring's Args/Returns table as literal text,
    # without the warning --strict counts: look for it in the pages
    unresolved = [f"{page.relative_to(tmp_path / 'site')}: {match}"
                  for page in sorted((tmp_path / "site").rglob("*.html"))
                  for match in re.findall(r"\]\[pipeline\.[\w.]*\]", page.read_text(encoding="utf-8"))]
    assert not unresolved, "cross-references to no rendered object:\n" + "\n".join(unresolved)


def test_runnable_blocks_convention() -> None:
    page = "text\n<!-- run -->\n```bash\necho one\n```\n\n```sh\nshown only\n```\n"
    assert runnable_blocks(page) == ["echo one\n"]
    with pytest.raises(AssertionError, match="must be marked"):
        runnable_blocks("```bash\necho unmarked\n```\n")


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_runnable_blocks_are_written_for_a_fresh_shell(page: str) -> None:
    blocks = runnable_blocks((PROJECT / page).read_text(encoding="utf-8"))
    assert blocks, f"{page} has no runnable block"
    for block in blocks:
        assert not re.search(r"<[A-Za-z_ -]+>", block), f"placeholder in {page}:\n{block}"
        for line in block.splitlines():
            assert not re.match(r"\s*(\(cd [^)]*&& )?pgx-corpus\b", line), f"bare pgx-corpus in {page}: {line}"


def _written_outputs(page: str) -> set[str]:
    """The ``--out`` directories that a page's runnable commands other than ``build`` write."""
    outs = set()
    for block in runnable_blocks((PROJECT / page).read_text(encoding="utf-8")):
        for command in block.replace("\\\n", " ").splitlines():
            words = shlex.split(command.strip().lstrip("("), comments=True) if command.strip() else []
            if "--out" in words and not any(w == "build" for w in words[1:3]):
                outs.add(words[words.index("--out") + 1])
    return outs


def test_tour_and_tutorial_write_apart() -> None:
    """A user who follows the README's tour and then the tutorial in one clone is not refused for an
    existing output (a build into the same --out is a rebuild, not a refusal)."""
    tour, tutorial = (_written_outputs(page) for page in RUNNABLE_PAGES)
    assert tour and tutorial
    assert tour.isdisjoint(tutorial), tour & tutorial


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_tutorial_runs_verbatim(page: str, tmp_path: Path) -> None:
    """Every runnable block of the page, in order, in a fresh directory with the demo data."""
    venv = PROJECT / ".venv"
    assert (venv / "bin" / "pgx-corpus").exists(), f"{venv}/bin/pgx-corpus is missing: run `make setup` first"
    work = tmp_path / "clone"
    (work / "data").mkdir(parents=True)
    shutil.copytree(PROJECT / "data" / "demo", work / "data" / "demo")
    (work / ".venv").symlink_to(venv)
    (work / "luigi.cfg").symlink_to(PROJECT / "luigi.cfg")
    env = dict(os.environ, PYTHONPATH=str(PROJECT))
    env.pop("LUIGI_CONFIG_PATH", None)
    for n, block in enumerate(runnable_blocks((PROJECT / page).read_text(encoding="utf-8")), 1):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600)
        where = f"{page}, runnable block {n}:\n{block}\nexit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\n" \
                f"stderr:\n{proc.stderr[-3000:]}"
        assert proc.returncode == 0, where
        assert not re.search(r"^0 of \d+ sentences match", proc.stdout, re.M), f"a find matches nothing: {where}"


#: commands the how-to guides describe from their issue while they are being written; when one exists,
#: check its page against it and remove it from here (the test below fails to remind you)
PENDING_COMMANDS: dict[tuple[str, str], str] = {}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def documented_invocations() -> list[tuple[str, list[str]]]:
    """(page, argv) of every `.venv/bin/pgx-corpus ...` line in a code block of the site (continuation
    lines joined, the shell's comments, redirections and substitutions left out)."""
    out = []
    for page in [PROJECT / "README.md", *sorted((PROJECT / "docs").rglob("*.md"))]:
        if page == CLI_PAGE:
            continue
        for m in _FENCE.finditer(page.read_text(encoding="utf-8")):
            body = re.sub(r"\\\n\s*", " ", m.group("body"))
            for line in body.splitlines():
                for cmd in re.findall(r"\.venv/bin/pgx-corpus\s+(.*)", line):
                    lexer = shlex.shlex(re.sub(r"\$\([^)]*\)", "X", cmd), posix=True, punctuation_chars=True)
                    lexer.whitespace_split = True
                    argv = []
                    for token in lexer:  # up to the first shell operator (|, >, ;, &&, a closing parenthesis)
                        if set(token) <= set("|&;<>()"):
                            break
                        argv.append(token)
                    out.append((str(page.relative_to(PROJECT)), argv))
    return out


def parse_error(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The parser's error for ``argv`` run in the current directory, or None when it parses."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1]
    return None


def test_documented_commands_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every command line shown on the site parses with the real parser: the command exists, its options
    and their values are accepted, its positional arguments are all there.  The examples name the reader's
    directories: each one a parser wants to exist is made (under a temporary directory) and the line
    parsed again, so a wrong option behind it is still found."""
    monkeypatch.chdir(tmp_path)
    parser = cli.make_parser()  # one parser for every line (parsing leaves it as it was)
    problems = []
    seen_pending = set()
    for page, argv in documented_invocations():
        if tuple(argv[:2]) in PENDING_COMMANDS:
            seen_pending.add(tuple(argv[:2]))
            continue
        argv = [f"root{word}" if word.startswith("/") else word for word in argv]
        message = parse_error(parser, argv)
        for _ in range(10):
            missing = re.search(r"error: argument [^:]+: (.*): (?:not a directory|no such file or directory)$",
                                message or "")
            if missing is None:
                break
            Path(missing.group(1)).mkdir(parents=True)
            message = parse_error(parser, argv)
        if message is not None:
            problems.append(f"{page}: pgx-corpus {' '.join(argv)}: {message}")
    assert problems == []
    assert seen_pending == set(PENDING_COMMANDS), "a pending command is no longer shown: update PENDING_COMMANDS"
    campaign = _subparsers(_subparsers(cli.make_parser())["campaign"])
    landed = [f"campaign {name}: check {page} against it, then remove it from PENDING_COMMANDS"
              for (_, name), page in PENDING_COMMANDS.items() if name in campaign]
    assert landed == []


def test_luigi_cfg_points_to_pages_that_exist() -> None:
    """luigi.cfg's comments send the reader to documentation pages: each one exists."""
    text = (PROJECT / "luigi.cfg").read_text(encoding="utf-8")
    assert "README \"" not in text, "luigi.cfg names a README section: point to a docs page instead"
    pages = re.findall(r"docs/[\w/.-]+\.md", text)
    assert pages
    assert [p for p in pages if not (PROJECT / p).is_file()] == []


def test_front_pages_link_every_page() -> None:
    """The site's front page links every explanation and reference page of the navigation (the API pages
    through their index), and the how-to index links every how-to guide."""
    nav = re.findall(r":\s*((?:explanation|reference|how-to)/[\w/.-]+\.md)\s*$",
                     (PROJECT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    assert nav
    front = (PROJECT / "docs" / "index.md").read_text(encoding="utf-8")
    howto = (PROJECT / "docs" / "how-to" / "index.md").read_text(encoding="utf-8")
    missing = [page for page in nav if page.startswith(("explanation/", "reference/"))
               and (not page.startswith("reference/api/") or page == "reference/api/index.md")
               and f"]({page})" not in front]
    missing += [page for page in nav if page.startswith("how-to/") and page != "how-to/index.md"
                and f"]({page.removeprefix('how-to/')})" not in howto]
    assert missing == []


def test_no_page_runs_a_one_process_build_with_several_workers() -> None:
    """The benchmarks page measures `--workers 2` in one build as slower than one worker: the Makefile and
    the pages recommend a second process (a `pgx-corpus worker` through `--scheduler-host`) instead."""
    sources = [PROJECT / "Makefile", PROJECT / "README.md",
               *(p for p in sorted((PROJECT / "docs").rglob("*.md")) if p.name != "cli.md")]
    offending = []
    for path in sources:
        text = path.read_text(encoding="utf-8").replace("\\\n", " ")
        for line in text.splitlines():
            workers = re.search(r"--workers[ =](\d+)", line)
            if "pgx-corpus build" in line and workers and int(workers.group(1)) > 1 \
                    and "--scheduler-host" not in line:
                offending.append(f"{path.relative_to(PROJECT)}: {line.strip()}")
    assert offending == []


def _leaf_commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    subs = _subparsers(parser)
    if not subs:
        return [prefix]
    return [leaf for name, sub in sorted(subs.items()) for leaf in _leaf_commands(sub, (*prefix, name))]


def test_every_command_is_shown_in_a_guide() -> None:
    """Each command has a how-to (or tutorial, or README) example, not only its reference entry."""
    guided = [argv for page, argv in documented_invocations()
              if page.startswith(("docs/how-to/", "docs/tutorial.md", "README.md"))]

    def shows(argv: list[str], leaf: tuple[str, ...]) -> bool:  # `campaign users DIR list`: words in order
        words = iter(argv)
        return argv[:1] == list(leaf[:1]) and all(word in words for word in leaf)

    missing = [" ".join(leaf) for leaf in _leaf_commands(cli.make_parser())
               if not any(shows(argv, leaf) for argv in guided)]
    assert missing == []
