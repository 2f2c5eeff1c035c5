"""The ``locale`` keyword: lines ordered in a locale, as ``LC_ALL=<locale> sort`` orders
them, by ``sort``, ``merge_files``, ``Sorter`` and ``LineOrder``; ``None`` is bytewise (C),
``""`` the environment's. Checked against GNU sort in en_US.UTF-8 and sv_SE.UTF-8 (skipped
where the locale is not generated: ``locale -a``).

Run after ``pip install './python[test]'``: ``pytest python/tests/test_locale.py``.
"""

import random
import subprocess

import pytest

import emsort


def _have(name):
    norm = name.lower().replace("utf-8", "utf8")
    return norm in subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower().split()


LOCALES = [pytest.param(n, marks=pytest.mark.skipif(not _have(n), reason=f"{n} not generated"))
           for n in ("en_US.UTF-8", "sv_SE.UTF-8")]

# -k/-t and flags as keywords, and the same as GNU sort's arguments.
OPTIONS = [
    (dict(), []),
    (dict(ignore_case=True), ["-f"]),
    (dict(key="2,2", field_separator=","), ["-t,", "-k2,2"]),
    (dict(key=["2,2f", "1,1nr"], field_separator=",", stable=True), ["-t,", "-k2,2f", "-k1,1nr", "-s"]),
    (dict(key="2,2", field_separator=",", unique=True, dictionary_order=True), ["-t,", "-k2,2", "-u", "-d"]),
    (dict(numeric_sort=True, reverse=True), ["-n", "-r"]),
]


def _words(n, seed):
    """Lines ``number,word,word``: accented letters, mixed case, blanks and punctuation,
    numbers with the locale's separators (``1,5`` is a field pair here, ``1.5`` a decimal)."""
    rng = random.Random(seed)
    letters = "aAbBcCzZåÅäÄöÖéÉèüÜß -'"
    word = lambda: "".join(rng.choice(letters) for _ in range(rng.randint(0, 7)))
    num = lambda: rng.choice([str(rng.randint(-50, 50)), f"{rng.randint(0, 9)}.{rng.randint(0, 9)}", ""])
    return "".join(f"{num()},{word()},{word()}\n" for _ in range(n)).encode()


def _gnu(args, path, locale):
    return subprocess.run(["sort", *args, str(path)], env={"LC_ALL": locale}, capture_output=True,
                          check=True).stdout


@pytest.mark.parametrize("locale", LOCALES)
@pytest.mark.parametrize("opts,gnu", OPTIONS)
def test_sort_in_a_locale_against_gnu_sort(tmp_path, locale, opts, gnu):
    path = tmp_path / "in.txt"
    path.write_bytes(_words(3000, 1))
    out = tmp_path / "out.txt"
    # a small budget: runs, then a merge, in the locale
    emsort.sort(path, out, locale=locale, memory="64K", block_size="4K", **opts)
    want = _gnu(gnu, path, locale)
    assert out.read_bytes() == want
    assert want != _gnu(gnu, path, "C") or opts.get("numeric_sort")  # the locale makes a difference
    lo = emsort.LineOrder(locale=locale, **opts)
    assert lo.sort(path.read_bytes()) == want and lo.locale == locale


@pytest.mark.parametrize("locale", LOCALES)
def test_merge_files_and_sorter_in_a_locale(tmp_path, locale):
    opts, gnu = dict(key="2,2", field_separator=","), ["-t,", "-k2,2"]
    halves = []
    for i, seed in enumerate((2, 3)):
        p = tmp_path / f"h{i}.txt"
        p.write_bytes(_words(1000, seed))
        s = tmp_path / f"s{i}.txt"
        s.write_bytes(_gnu(gnu, p, locale))
        halves.append(s)
    out = tmp_path / "merged.txt"
    emsort.merge_files(halves, out, locale=locale, **opts)
    want = subprocess.run(["sort", "-m", *gnu, *map(str, halves)], env={"LC_ALL": locale}, capture_output=True,
                          check=True).stdout
    assert out.read_bytes() == want
    data = _words(2000, 4)
    with emsort.Sorter(locale=locale, memory="64K", **opts) as s:
        s.push(data)
        s.finish()
        got = b"".join(line + b"\n" for block in s for line in block)
    p = tmp_path / "pushed.txt"
    p.write_bytes(data)
    assert got == _gnu(gnu, p, locale)


@pytest.mark.skipif(not _have("sv_SE.UTF-8"), reason="sv_SE.UTF-8 not generated")
def test_empty_name_is_the_environment_and_none_is_c(tmp_path, monkeypatch):
    path = tmp_path / "in.txt"
    path.write_bytes(_words(2000, 5))
    out = tmp_path / "out.txt"
    monkeypatch.setenv("LC_ALL", "sv_SE.UTF-8")
    emsort.sort(path, out, locale="")
    assert out.read_bytes() == _gnu([], path, "sv_SE.UTF-8")
    assert emsort.LineOrder(locale="").locale == "sv_SE.UTF-8"
    # None (the default) is bytewise whatever the environment says, as Python's sorted
    emsort.sort(path, out)
    assert out.read_bytes() == b"".join(sorted(path.read_bytes().splitlines(keepends=True)))
    emsort.sort(path, out, locale=None)
    assert out.read_bytes() == _gnu([], path, "C")
    assert emsort.LineOrder().locale is None and emsort.LineOrder(locale="C").locale is None
    monkeypatch.setenv("LC_ALL", "C")
    assert emsort.LineOrder(locale="").locale is None


def test_unknown_locale_is_a_value_error_naming_it(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"b\na\n")
    for call in (
        lambda: emsort.sort(path, tmp_path / "out.txt", locale="xx_YY.UTF-8"),
        lambda: emsort.merge_files([path], tmp_path / "out.txt", locale="xx_YY.UTF-8"),
        lambda: emsort.Sorter(locale="xx_YY.UTF-8"),
        lambda: emsort.LineOrder(locale="xx_YY.UTF-8"),
    ):
        with pytest.raises(ValueError, match="xx_YY.UTF-8"):
            call()
    assert not (tmp_path / "out.txt").exists()
    with pytest.raises(TypeError):
        emsort.LineOrder(locale=5)
    with pytest.raises(ValueError, match="locale orders text lines"):
        emsort.sort(path, tmp_path / "out.u32", format="u32", locale="C")
