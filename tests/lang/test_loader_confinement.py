"""Imports stay inside the policy sources: each way out is refused, unread, with its message.

A policy may come from anyone who can edit a ConfigMap, and the scheduler can read its
service-account token. Every row builds a small tree on disk (a policy directory ``policies/``
beside an ``outside/`` directory holding a secret), loads it the way ``--policy`` does or the
way a ConfigMap source does, and checks the diagnostics verbatim — and that no rendered
diagnostic quotes the secret.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from policyengine.diagnostics import render
from policyengine.lang.loader import load, load_texts, shipped_policies_dir

SECRET = "eyJhbGciOiJSUzI1NiIsImtpZCI6InNlY3JldCJ9.token-text"
HINT = (
    "import a .sched file of the policy sources by a path relative to this file, or a shipped "
    "policy by name ("
    + ", ".join(sorted(p.name for p in shipped_policies_dir().glob("*.sched")))
    + ")"
)
ABSOLUTE = "an import names a file relative to the importing file, not an absolute path"
OUT = "it leads out of the policy sources"
LINK_OUT = "it is a symbolic link to a file outside the policy sources"
NOT_SCHED = "only .sched files can be imported"
LINK_NOT_SCHED = "it is a symbolic link to a file that is not a .sched file"


@dataclass(frozen=True)
class Layout:
    """Files (path → text) and symbolic links (path → target) below ``tmp_path``."""

    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)

    def build(self, root: Path) -> None:
        secret = root / "outside" / "secret.sched"
        secret.parent.mkdir(parents=True)
        secret.write_text(SECRET + "\n")
        (root / "outside" / "token").write_text(SECRET + "\n")
        for name, text in self.files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for name, target in self.links.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target.replace("{root}", str(root)), path)


def importing(path: str) -> dict[str, str]:
    return {"policies/main.sched": f'import "{path}"\npolicy "p" {{ }}\n'}


REFUSED_IMPORTS = [
    ("absolute path", importing("{root}/outside/token"), {}, "{root}/outside/token", ABSOLUTE),
    (
        "absolute .sched",
        importing("{root}/outside/secret.sched"),
        {},
        "{root}/outside/secret.sched",
        ABSOLUTE,
    ),
    ("etc passwd", importing("/etc/passwd"), {}, "/etc/passwd", ABSOLUTE),
    ("dot-dot", importing("../outside/secret.sched"), {}, "../outside/secret.sched", OUT),
    (
        "dot-dot deep",
        importing("sub/../../outside/secret.sched"),
        {},
        "sub/../../outside/secret.sched",
        OUT,
    ),
    (
        "symlink out",
        importing("lib.sched"),
        {"policies/lib.sched": "{root}/outside/secret.sched"},
        "lib.sched",
        LINK_OUT,
    ),
    (
        "symlinked directory out",
        importing("shared/secret.sched"),
        {"policies/shared": "{root}/outside"},
        "shared/secret.sched",
        LINK_OUT,
    ),
    ("not a .sched file", importing("notes.txt"), {}, "notes.txt", NOT_SCHED),
    (
        "symlink to a non-.sched file",
        {**importing("notes.sched"), "policies/notes.txt": SECRET},
        {"policies/notes.sched": "notes.txt"},
        "notes.sched",
        LINK_NOT_SCHED,
    ),
]


@pytest.mark.parametrize(
    ("files", "links", "written", "why"),
    [row[1:] for row in REFUSED_IMPORTS],
    ids=[row[0] for row in REFUSED_IMPORTS],
)
def test_an_import_out_of_a_policy_directory_is_refused(
    files: dict[str, str], links: dict[str, str], written: str, why: str, tmp_path: Path
) -> None:
    files = {name: text.replace("{root}", str(tmp_path)) for name, text in files.items()}
    Layout(files, links).build(tmp_path)
    main = str(tmp_path / "policies" / "main.sched")
    unit = load([main])  # the file alone: a directory would refuse its links as entries too
    shown = written.replace("{root}", str(tmp_path))
    rendered = [render(d, unit.sources.get(d.span.file)) for d in unit.diagnostics]
    assert rendered == [
        f'{main}:1:1: error PE002: import "{shown}" is refused: {why}\n'
        f'    import "{shown}"\n'
        f"    {'^' * (len(shown) + 9)}\n"
        f"    hint: {HINT}"
    ]
    assert not any(SECRET in text for text in rendered)
    assert sorted(unit.sources) == [main]  # nothing else was read


def test_a_file_linked_out_of_a_policy_directory_is_not_read(tmp_path: Path) -> None:
    Layout(
        {"policies/main.sched": 'policy "p" { }\n'},
        {"policies/evil.sched": "{root}/outside/secret.sched"},
    ).build(tmp_path)
    unit = load([tmp_path / "policies"])
    evil = tmp_path / "policies" / "evil.sched"
    assert [render(d, unit.sources.get(d.span.file)) for d in unit.diagnostics] == [
        f"{evil}:1:1: error PE002: {evil} is not read: {LINK_OUT}\n"
        f"    hint: copy the file into the policy directory {tmp_path / 'policies'}, or pass its "
        "own directory as another --policy"
    ]
    assert sorted(unit.sources) == [str(tmp_path / "policies" / "main.sched")]


def test_links_inside_a_policy_directory_keep_working(tmp_path: Path) -> None:
    """A mounted ConfigMap: every key is a link through ``..data`` to a dated directory."""
    Layout(
        {
            "policies/..2026_12_04_00_00_00.1/main.sched": 'import "lib.sched"\npolicy "p" { use lib }\n',
            "policies/..2026_12_04_00_00_00.1/lib.sched": "library lib { filter f { true } }\n",
        },
        {
            "policies/..data": "..2026_12_04_00_00_00.1",
            "policies/main.sched": "..data/main.sched",
            "policies/lib.sched": "..data/lib.sched",
        },
    ).build(tmp_path)
    for given in ([tmp_path / "policies"], [tmp_path / "policies" / "main.sched"]):
        unit = load(given)
        assert unit.ok, unit.diagnostics
        assert [lib.name for lib in unit.libraries] == ["lib"]


def test_imports_beside_a_file_named_on_its_own_stay_in_its_directory(tmp_path: Path) -> None:
    Layout(
        {
            "policies/main.sched": 'import "lib.sched"\nimport "../outside/secret.sched"\npolicy "p" { use lib }\n',
            "policies/lib.sched": "library lib { filter f { true } }\n",
        }
    ).build(tmp_path)
    unit = load([tmp_path / "policies" / "main.sched"])
    assert [(d.code, d.span.line, d.message) for d in unit.diagnostics] == [
        ("PE002", 2, f'import "../outside/secret.sched" is refused: {OUT}')
    ]


CONFIGMAP = "kube-system/policies"
CONFIGMAP_ROWS = [
    ("token", "/var/run/secrets/kubernetes.io/serviceaccount/token", ABSOLUTE),
    ("dot-dot", "../../../etc/secret.sched", OUT),
    ("not sched", "other.txt", NOT_SCHED),
]


@pytest.mark.parametrize(
    ("written", "why"), [row[1:] for row in CONFIGMAP_ROWS], ids=[row[0] for row in CONFIGMAP_ROWS]
)
def test_an_import_out_of_the_configmap_keys_is_refused(written: str, why: str) -> None:
    texts = {f"{CONFIGMAP}/main.sched": f'import "{written}"\npolicy "p" {{ }}\n'}
    unit = load_texts(texts)
    assert [(d.code, d.message) for d in unit.diagnostics] == [
        ("PE002", f'import "{written}" is refused: {why}')
    ]
    assert sorted(unit.sources) == sorted(texts)


def test_configmap_keys_import_each_other_and_the_shipped_policies() -> None:
    texts = {
        f"{CONFIGMAP}/main.sched": (
            'import "lib.sched"\nimport "../other/more.sched"\nimport "kube-default.sched"\n'
            'policy "p" { use lib\n use more\n use kube }\n'
        ),
        f"{CONFIGMAP}/lib.sched": "library lib { filter f { true } }\n",
        "kube-system/other/more.sched": "library more { filter g { true } }\n",
    }
    unit = load_texts(texts)
    assert unit.ok, unit.diagnostics
    assert {lib.name for lib in unit.libraries} >= {"lib", "more", "kube"}


def test_a_configmap_key_never_reads_a_file_beside_its_name(tmp_path: Path) -> None:
    """In-memory names are not paths: a file on disk where the name points is not read."""
    (tmp_path / "lib.sched").write_text(SECRET)
    unit = load_texts({str(tmp_path / "main.sched"): 'import "lib.sched"\npolicy "p" { }\n'})
    assert [d.code for d in unit.diagnostics] == ["PE210"]
    assert str(tmp_path / "lib.sched") not in unit.sources


def test_a_very_long_refused_path_is_shown_cut() -> None:
    written = "/" + "a" * 5000 + ".sched"
    unit = load_texts({"cm/main.sched": f'import "{written}"\npolicy "p" {{ }}\n'})
    (diagnostic,) = unit.diagnostics
    assert diagnostic.message == f'import "{written[:119]}…" is refused: {ABSOLUTE}'


@pytest.mark.parametrize(
    "written",
    ["a" * 5000 + ".sched", "a\\u0000b.sched", "kube-def" + "\\u00ff" * 300 + ".sched"],
    ids=["too long", "nul byte", "too long for a shipped name"],
)
def test_an_import_the_system_cannot_look_up_is_unknown(written: str, tmp_path: Path) -> None:
    main = tmp_path / "main.sched"
    main.write_text(f'import "{written}"\npolicy "p" {{ }}\n')
    for unit in (load([main]), load_texts({"cm/main.sched": main.read_text()})):
        assert [d.code for d in unit.diagnostics] == ["PE210"]


def test_a_policy_path_too_long_to_look_up_cannot_be_read(tmp_path: Path) -> None:
    unit = load([tmp_path / ("a" * 5000)])
    (diagnostic,) = unit.diagnostics
    assert diagnostic.code == "PE001"
    assert diagnostic.message.endswith(": file name too long")
