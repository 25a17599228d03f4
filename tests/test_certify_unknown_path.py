"""`certify` on a path that holds nothing trajkit reads exits 2 (issue 14, item 1)."""

from __future__ import annotations

import base64

from conftest import run_cli

# A 1x1 PNG: a real file of a format no reader claims.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")


def test_certify_png_exits_2(tmp_path):
    img = tmp_path / "img.png"
    img.write_bytes(PNG)
    r = run_cli("certify", str(img))
    assert r.returncode == 2
    assert r.stdout == ""
    assert f"trajkit: {img}: no known format" in r.stderr


def test_certify_empty_folder_exits_2(tmp_path):
    r = run_cli("certify", str(tmp_path), "--json")
    assert r.returncode == 2
    assert r.stdout == ""
    assert "no known format" in r.stderr
