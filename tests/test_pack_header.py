"""The pack writer's ustar header is the one ``tarfile`` writes, byte for byte (histmig/verbs/pack/bundle.py)."""
import tarfile

from hypothesis import given, strategies as st

from histmig.verbs.pack.bundle import ustar_header


def tarfile_header(name: str, size: int, mode: int, mtime: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.type = size, mode, mtime, tarfile.REGTYPE
    info.uname = info.gname = ""
    return info.tobuf(tarfile.USTAR_FORMAT, "ascii", "strict")


names = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=100)
paths = st.lists(st.text(st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters="/"),
                         min_size=1, max_size=60), min_size=1, max_size=8).map("/".join)


@given(names, st.integers(0, 8 ** 11 - 1), st.integers(0, 0o7777), st.integers(0, 8 ** 11 - 1))
def test_same_bytes_as_tarfile(name, size, mode, mtime):
    assert ustar_header(name, size, mode, mtime) == tarfile_header(name, size, mode, mtime)


@given(paths, st.integers(0, 8 ** 11 - 1))
def test_long_names_split_as_tarfile_splits_them(name, size):
    try:
        want = tarfile_header(name, size, 0o600, 1)
    except ValueError:                 # too long for ustar: tarfile writes a PAX header instead
        want = None
    assert ustar_header(name, size, 0o600, 1) == want


def test_the_rest_left_to_tarfile():
    assert ustar_header("x" * 101, 1, 0o600, 0) is None            # no "/" to split at: tarfile's PAX
    assert ustar_header("café", 1, 0o600, 0) is None                # PAX header: tarfile's
    assert ustar_header("big", 8 ** 11, 0o600, 0) is None           # over 8 GiB: tarfile's


def test_a_typical_member():
    name = "files/codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-0199a000-0000-7000-8000-000000000000.jsonl"
    assert ustar_header(name, 412_345, 0o644, 1_767_000_000) == tarfile_header(name, 412_345, 0o644, 1_767_000_000)
