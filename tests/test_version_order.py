"""The order of a repo's versions (`db.version_order`): PEP 440's, then the other names."""

from __future__ import annotations

import pytest

from db.version_order import NOT_A_VERSION, in_version_order, version_key


@pytest.mark.parametrize(("older", "newer"), [
    pytest.param("v0.20.0", "v0.25.0", id="minor"),
    pytest.param("v0.9.0", "v0.10.0", id="numbers-not-text"),
    pytest.param("v0.9.9", "v1.0.0", id="major"),
    pytest.param("v0.23.0", "v0.23.1rc0", id="release-before-next-pre-release"),
    pytest.param("v0.23.1rc0", "v0.23.1", id="pre-release-before-its-release"),
    pytest.param("v0.23.1rc0", "v0.23.1rc1", id="pre-release-number"),
    pytest.param("v0.23.1rc9", "v0.23.1rc10", id="pre-release-number-not-text"),
    pytest.param("1.0a1", "1.0b1", id="alpha-before-beta"),
    pytest.param("1.0b2", "1.0rc1", id="beta-before-rc"),
    pytest.param("1.0alpha2", "1.0a3", id="alpha-spelled-out"),
    pytest.param("1.0c1", "1.0rc2", id="c-is-rc"),
    pytest.param("1.0.dev0", "1.0a0", id="dev-before-pre-release"),
    pytest.param("v0.26.0-dev", "v0.26.0rc0", id="dev-without-number"),
    pytest.param("1.0rc1.dev0", "1.0rc1", id="dev-of-a-pre-release"),
    pytest.param("1.0", "1.0.post1", id="post-release-after-release"),
    pytest.param("1.0.post1", "1.0.1", id="post-release-before-next"),
    pytest.param("1.0.post1.dev0", "1.0.post1", id="dev-of-a-post-release"),
    pytest.param("1.0", "1.0-1", id="implicit-post-release"),
    pytest.param("1.0", "1.0+cu118", id="local-after-public"),
    pytest.param("1.0+abc", "1.0+1", id="local-number-after-text"),
    pytest.param("1.9", "1!0.1", id="epoch"),
    pytest.param("0.23.1", "v0.23.2", id="v-optional"),
    pytest.param("v9999.0", "main", id="name-after-every-number"),
    pytest.param("v1.0", "release-1.0", id="prefix-that-is-not-v"),
    pytest.param("1.0", "1.0-final", id="suffix-that-is-no-part"),
    pytest.param("1." + "9" * 5000, "1.1" + "0" * 5000, id="more-digits-than-int-reads"),
    pytest.param("1." + "1" * 5000, "1." + "1" * 4999 + "2", id="a-last-digit-of-5000"),
    pytest.param("1.0rc" + "9" * 5000, "1.0", id="a-pre-release-number-of-5000-digits"),
])
def test_older_version_sorts_first(older: str, newer: str) -> None:
    assert version_key(older) < version_key(newer)


@pytest.mark.parametrize(("first", "second"), [
    pytest.param("v0.20.0", "0.20.0", id="v-prefix"),
    pytest.param("1.0", "1.0.0", id="trailing-zeros"),
    pytest.param("V1.0RC1", "1.0rc1", id="case"),
    pytest.param("1.0-rc-1", "1.0rc1", id="separators"),
    pytest.param("1.0rc", "1.0rc0", id="implicit-zero"),
    pytest.param("1.0.post", "1.0.post0", id="implicit-post-zero"),
    pytest.param("1.0" + "0" * 5000, "1", id="a-zero-of-5000-digits"),
    pytest.param("1.0" + "7" * 5000, "1." + "7" * 5000, id="a-leading-zero-of-5000-digits"),
    pytest.param("v٠.٢٠.٠", "0.20.0", id="digits-of-another-script"),
])
def test_spellings_of_one_version_sort_together(first: str, second: str) -> None:
    assert version_key(first) == version_key(second)


@pytest.mark.parametrize("name", [
    pytest.param("main", id="branch"),
    pytest.param("deadbeef", id="commit"),
    pytest.param("9767703351", id="commit-of-digits-only"),
    pytest.param("12345a6789", id="commit-that-reads-as-an-alpha"),
    pytest.param("4b530f17c5d8e9a1b2c3d4e5f60718293a4b5c6d", id="whole-commit-sha"),
    pytest.param("v", id="v-alone"),
    pytest.param("1.", id="trailing-dot"),
    pytest.param("1..2", id="empty-part"),
    pytest.param("1.0-", id="trailing-dash"),
    pytest.param("v0.20.0\n", id="newline"),
])
def test_names_that_are_not_versions(name: str) -> None:
    assert version_key(name) == NOT_A_VERSION


def test_in_version_order_keeps_the_other_names_as_given() -> None:
    given = ["main", "v0.25.0", "feature/x", "v0.23.1rc0", "v0.20.0", "nightly", "v0.23.0"]
    assert in_version_order(given) == [
        "v0.20.0", "v0.23.0", "v0.23.1rc0", "v0.25.0", "main", "feature/x", "nightly",
    ]
