"""Model: loading, description, tokenizer, generation (plain, streamed,
threaded) and the three-line example."""
import os
import subprocess
import sys
import threading

import pytest

import veloxquant as vq

PROMPT = "The capital of France is"


def test_three_lines_print_paris(model):
    cache = vq.KVCacheBuilder.for_model(
        model, vq.KVCacheConfig(keys="turboquant_rvq:bits=4", values="kivi:bits=4"))
    text = model.generate(PROMPT, cache=cache, max_tokens=16, temperature=0)
    assert text.startswith(" Paris")
    s = cache.stats()
    assert 0 < s["accounted_bytes"] < s["fp16_bytes"]
    cache.close()


def test_three_lines_example_script(repo):
    script = os.path.join(repo, "examples", "python", "three_lines.py")
    out = subprocess.run([sys.executable, script], stdout=subprocess.PIPE, check=True,
                         cwd=repo).stdout.decode()
    assert out.startswith(" Paris")
    assert "KV cache:" in out


def test_python_equals_c_example(repo):
    """The Python three lines print what examples/three_lines.c prints."""
    c_bin = os.path.join(repo, os.environ.get("VQ_BUILD", "build"), "examples", "three_lines")
    if not os.access(c_bin, os.X_OK):
        pytest.skip(f"{c_bin} not built (make examples)")
    script = os.path.join(repo, "examples", "python", "three_lines.py")
    py = subprocess.run([sys.executable, script], stdout=subprocess.PIPE, check=True, cwd=repo).stdout
    c = subprocess.run([c_bin], stdout=subprocess.PIPE, check=True, cwd=repo).stdout
    assert py == c


def test_info(model):
    info = model.info
    assert info["arch"] == "llama"
    assert info["n_layers"] == 30 and info["n_vocab"] > 1000
    li = model.layer_info(0)
    assert li["head_dim"] == info["head_dim"] and li["n_kv_heads"] == info["n_kv_heads"]
    assert li["window"] == 0 and li["rope_base"] == info["rope_base"]
    with pytest.raises(ValueError):
        model.layer_info(info["n_layers"])
    again = vq.Model.load(model.path)
    assert again.fingerprint == model.fingerprint != 0
    again.close()


def test_tokenize_round_trip(model):
    text = "Hello, world! Ünïcödé text."
    toks = model.tokenize(text, add_bos=False)
    assert toks and all(isinstance(t, int) for t in toks)
    assert model.detokenize(toks) == text
    assert b"".join(model.token_piece(t) for t in toks).decode() == text


def test_generate_greedy_is_deterministic_and_streams_the_same(model):
    a = model.generate(PROMPT, max_tokens=12, temperature=0, stop_at_eog=False)
    b = model.generate(PROMPT, max_tokens=12, temperature=0, stop_at_eog=False)
    assert a == b and a.startswith(" Paris")
    gen = model.generate(PROMPT, max_tokens=12, temperature=0, stop_at_eog=False, stream=True)
    pieces = list(gen)
    assert len(pieces) > 1 and "".join(pieces) == a == gen.text
    assert gen.stats["n_generated"] == 12 == len(gen.tokens)
    assert gen.stats["n_prompt"] == len(model.tokenize(PROMPT))


def test_sampling_uses_the_seed(model):
    a = model.generate(PROMPT, max_tokens=10, temperature=1.0, seed=7, stop_at_eog=False)
    b = model.generate(PROMPT, max_tokens=10, temperature=1.0, seed=7, stop_at_eog=False)
    assert a == b


def test_stream_stops_early(model):
    with model.generate(PROMPT, max_tokens=64, temperature=0, stop_at_eog=False, stream=True) as gen:
        first = next(gen)
        assert first
    assert len(gen.tokens) < 64


def test_generate_in_threads(model):
    """Two threads generate on one model at once (the GIL is released in C)
    and get what one thread gets alone."""
    want = model.generate(PROMPT, max_tokens=8, temperature=0, threads=1)
    got = [None, None]

    def run(i):
        got[i] = model.generate(PROMPT, max_tokens=8, temperature=0, threads=1)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [want, want]


def test_load_errors(tmp_path):
    with pytest.raises(OSError, match="not installed"):
        vq.Model.load("no-such-model")
    with pytest.raises(OSError):
        vq.Model.load(str(tmp_path / "missing.gguf"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 60)
    with pytest.raises(ValueError):
        vq.Model.load(str(bad))
    with pytest.raises(TypeError):
        vq.Model()


def test_closed_model_refuses(model):
    m = vq.Model.load(model.path)
    m.close()
    m.close()  # idempotent
    assert m.closed
    with pytest.raises(ValueError, match="closed"):
        m.generate(PROMPT, max_tokens=1)


def test_generate_rejects_foreign_cache(model):
    with pytest.raises(TypeError):
        model.generate(PROMPT, cache="keys=q4_0", max_tokens=1)


def test_generate_reports_c_errors(model):
    with pytest.raises(vq.VeloxQuantError, match="do not fit"):
        model.generate(PROMPT * 4, max_tokens=4, max_context=8)


def test_stream_and_codec_example_runs(repo):
    script = os.path.join(repo, "examples", "python", "stream_and_codec.py")
    out = subprocess.run([sys.executable, script], stdout=subprocess.PIPE, check=True,
                         cwd=repo).stdout.decode()
    assert "[40 tokens" in out and "saved and loaded" in out and "B/token" in out


def test_generate_from_token_ids(model):
    text = model.generate(PROMPT, max_tokens=8, temperature=0)
    assert model.generate(model.tokenize(PROMPT), max_tokens=8, temperature=0) == text
    with pytest.raises(ValueError):
        model.generate([], max_tokens=1)
    with pytest.raises(ValueError):
        model.generate([10 ** 9], max_tokens=1)  # token id out of range


def test_prompt_cache_is_cache(model):
    a = vq.KVCacheBuilder.for_model(model, vq.KVCacheConfig(keys="q8_0", values="q8_0"))
    model.generate(PROMPT, prompt_cache=a, max_tokens=2, temperature=0)
    assert a.stats()["tokens"] > 0
    with pytest.raises(TypeError):
        model.generate(PROMPT, cache=a, prompt_cache=vq.KVCacheBuilder.for_model(
            model, vq.KVCacheConfig()), max_tokens=1)
    a.close()
