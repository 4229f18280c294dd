"""validate / ppl / needle: the CLI's dictionaries, from Python."""
import json
import subprocess

import pytest

import veloxquant as vq

Q4 = "keys=q4_0:rot=1 values=q4_0:rot=1"


def test_cli_is_bundled():
    out = subprocess.run([vq.cli_path(), "codecs", "--head-dim", "64", "--json"],
                         stdout=subprocess.PIPE, check=True).stdout
    assert json.loads(out)


def test_validate(model):
    r = vq.validate(model, arms="fp16,q4_0-rot", max_tokens=4)
    assert r["schema"] == "veloxquant.validate/1"
    assert [a["name"] for a in r["arms"]] == ["fp16", "q4_0-rot"]
    fp16, q4 = r["arms"]
    assert q4["generated_tokens"] == 4
    assert q4["compressed_key_bytes"] < fp16["compressed_key_bytes"]
    assert "kl_vs_fp16" in q4


def test_validate_custom_arms(model, tmp_path):
    r = vq.validate("smollm2-135m", arms={"fp16": "keys=fp16 values=fp16",
                                          "mine": vq.KVCacheConfig(keys="q8_0", values="q8_0")},
                    max_tokens=3, quality=False, out_dir=tmp_path)
    assert [a["name"] for a in r["arms"]] == ["fp16", "mine"]
    assert r["arms"][1]["cache"].startswith("keys=q8_0 values=q8_0")
    assert (tmp_path / "smollm2-135m" / "results.json").is_file()


def test_ppl_equals_cli_json(model, wikitext):
    r = vq.ppl(model, wikitext, ctx=64, chunks=2, caches=[Q4], threads=1)
    cli = json.loads(subprocess.run(
        [vq.cli_path(), "ppl", "--model", model.path, "--file", str(wikitext), "--ctx", "64",
         "--chunks", "2", "--threads", "1", "--cache", Q4, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout)
    assert r == cli
    cfg = r["configs"][0]
    assert r["ppl"] > 1 and cfg["ppl"] > 1
    assert cfg["dppl"] == pytest.approx(cfg["ppl"] - r["ppl"], abs=1e-3)
    # q4_0 codes are 4.5 b/e; the cache's slot index and bookkeeping add a
    # little on top (docs/cache.md), never less
    assert 4.5 <= cfg["bits_per_element"] < 4.75


def test_needle(model):
    r = vq.needle(model, ctx=128, caches=[vq.KVCacheConfig.parse(Q4)], depths=[0, 1], seeds=1)
    assert r["ctx"] == 128 and r["depths"] == [0, 1]
    assert [c["cache"] for c in r["configs"]][0] == "keys=fp16 values=fp16"
    assert all(len(c["per_depth"]) == 2 and c["trials"] == 2 for c in r["configs"])


def test_bad_options_raise(model):
    with pytest.raises(ValueError, match="needle"):
        vq.needle(model, ctx=10)
    with pytest.raises(vq.VeloxQuantError):
        vq.ppl(model, "/no/such/file.txt", ctx=64)
