"""KVCacheConfig, KVCacheBuilder.for_model and KVCache: config errors at
construction, stats, save/load, and memory returned when a cache is freed."""
import gc

import pytest

import veloxquant as vq

PROMPT = "The capital of France is"
LONG = "The capital of France is Paris. It lies on the Seine. " * 12
CFG = dict(keys="q4_0:rot=1", values="kivi:bits=4")


def test_config_kwargs_equal_text():
    a = vq.KVCacheConfig(keys="turboquant_rvq:bits=4", values="kivi:bits=4", residual=32,
                         evict="streaming_llm:sinks=4,window=64")
    b = vq.KVCacheConfig.parse("keys=turboquant_rvq:bits=4 values=kivi:bits=4 residual=32 "
                               "evict=streaming_llm:sinks=4,window=64")
    assert a == b
    assert str(a).startswith("keys=turboquant_rvq:bits=4 values=kivi:bits=4 residual=32")
    assert vq.KVCacheConfig.parse(str(a)) == a
    assert str(vq.KVCacheConfig(bits=[4] * 30, keys="q4_0")).count("4,4,4") > 0


@pytest.mark.parametrize("text, fragment", [
    ("keys=q9_0", "unknown codec method 'q9_0'"),
    ("keys=kivi:bits=7", "bits=7 out of range"),
    ("values=turboquant_rvq:bitz=1", "unknown parameter 'bitz'"),
    ("residual=-1", "residual=-1 out of range"),
    ("evict=nope", "unknown policy 'nope'"),
    ("keys=fp16 keys=fp16", "keys"),
    ("colour=blue", "colour"),
])
def test_bad_config_raises_at_construction(text, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(")):
        vq.KVCacheConfig.parse(text)


def test_bad_config_kwargs_and_no_leak():
    before = vq.live_handles().get("cache_config", 0)
    with pytest.raises(ValueError, match="cache config: keys"):
        vq.KVCacheConfig(keys="kivi:bits=9")
    assert vq.live_handles().get("cache_config", 0) == before


def test_missing_calibration_file():
    with pytest.raises(OSError, match="calibration file"):
        vq.KVCacheConfig(keys="vecinfer:sub_dim=8,bits=8,calib=/no/such/file.vqc")


def test_calibrated_codec_without_file_needs_calibration(model):
    cfg = vq.KVCacheConfig(keys="vecinfer:sub_dim=8,bits=8")
    with pytest.raises(vq.NeedsCalibrationError, match="calibrate"):
        vq.KVCacheBuilder.for_model(model, cfg)


def _sum(layers, key):
    return sum(layer[key] for layer in layers)


def test_stats_follow_generation(model):
    info = model.info
    with vq.KVCacheBuilder.for_model(model, vq.KVCacheConfig(**CFG)) as cache:
        s0 = cache.stats()
        assert s0["tokens"] == 0 and s0["accounted_bytes"] == 0
        assert len(s0["layers"]) == info["n_layers"] == cache.n_layers
        gen = model.generate(PROMPT, cache=cache, max_tokens=6, temperature=0, stop_at_eog=False,
                             stream=True)
        list(gen)
        s = cache.stats()
        # every position but the last sampled token is held, per layer and KV head
        positions = gen.stats["n_prompt"] + gen.stats["n_generated"] - 1
        assert s["tokens"] == positions * info["n_layers"] * info["n_kv_heads"]
        assert s["fp16_bytes"] == s["tokens"] * info["head_dim"] * 2 * 2
        for key in ("tokens", "fp16_bytes", "accounted_bytes", "resident_bytes"):
            assert _sum(s["layers"], key) == s[key]
        assert s["keys"]["accounted_bytes"] + s["values"]["accounted_bytes"] == s["accounted_bytes"]
        assert 0 < s["accounted_bytes"] < s["fp16_bytes"]
        assert s["resident_bytes"] > 0
        assert cache.codec_spec(0, "keys") == "q4_0:rot=1,qbits=8"  # keys' default, named
        cache.reset()
        assert cache.stats()["tokens"] == 0


def test_reserve_makes_pages_ahead(model):
    with vq.KVCacheBuilder.for_model(model, vq.KVCacheConfig(**CFG)) as cache:
        free0 = cache.stats()["pool_free_bytes"]
        cache.reserve(300)
        free1 = cache.stats()["pool_free_bytes"]
        assert free1 > free0
        model.generate(PROMPT, cache=cache, max_tokens=4, temperature=0)
        s = cache.stats()
        # the generation's pages came from the reservation: nothing new made
        assert s["resident_bytes"] - s["residual_bytes"] + s["pool_free_bytes"] == free1
        with pytest.raises(ValueError):
            cache.reserve(-1)
        with pytest.raises(ValueError):
            cache.reserve(2**31)


def test_generation_continues_in_the_cache(model):
    cache = vq.KVCacheBuilder.for_model(model, vq.KVCacheConfig(**CFG))
    model.generate(PROMPT, cache=cache, max_tokens=4, temperature=0)
    t1 = cache.stats()["tokens"]
    model.generate(" And", cache=cache, max_tokens=4, temperature=0)
    assert cache.stats()["tokens"] > t1
    cache.close()


# CFG, and a quality plan's form: keys packed before RoPE, whose file
# carries the model's RoPE (cache format version 4)
SAVE_CFGS = [vq.KVCacheConfig(**CFG),
             vq.KVCacheConfig.parse("keys=kivix:bits=4,group=16,outliers=8 values=kivix:bits=3,group=64 "
                                    "residual=8 sinks=4 prerope=1")]


@pytest.mark.parametrize("cfg", SAVE_CFGS, ids=["q4_0-kivi4", "prerope-plan"])
def test_save_load_continues_identically(model, tmp_path, cfg):
    path = tmp_path / "prompt.vqc"
    a = vq.KVCacheBuilder.for_model(model, cfg)
    # about 50 tokens: more than sinks + residual + a group, so keys get packed
    model.generate(PROMPT + " Paris. " + "The quick brown fox jumps over the lazy dog. " * 4, cache=a,
                   max_tokens=6, temperature=0)
    a.save(path)
    b = vq.KVCache.load(path, model)
    sa, sb = a.stats(), b.stats()
    for key in ("tokens", "fp16_bytes", "accounted_bytes"):
        assert sa[key] == sb[key]
    ta = model.generate(" It is", cache=a, max_tokens=8, temperature=0, stop_at_eog=False)
    tb = model.generate(" It is", cache=b, max_tokens=8, temperature=0, stop_at_eog=False)
    assert ta == tb and ta
    a.close()
    b.close()


def test_load_errors(model, other_model, tmp_path):
    with pytest.raises(OSError):
        vq.KVCache.load(tmp_path / "missing.vqc", model)
    path = tmp_path / "c.vqc"
    with vq.KVCacheBuilder.for_model(model, vq.KVCacheConfig(**CFG)) as c:
        model.generate(PROMPT, cache=c, max_tokens=2, temperature=0)
        c.save(path)
    with pytest.raises(ValueError):
        vq.KVCache.load(path, other_model)  # another model's cache
    data = path.read_bytes()
    cut = tmp_path / "cut.vqc"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        vq.KVCache.load(cut, model)
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x55
    bad = tmp_path / "bad.vqc"
    bad.write_bytes(bytes(flipped))
    with pytest.raises(ValueError):
        vq.KVCache.load(bad, model)


def test_cache_in_use_cannot_be_closed(model):
    cache = vq.KVCacheBuilder.for_model(model, vq.KVCacheConfig(**CFG))
    gen = model.generate(PROMPT, cache=cache, max_tokens=64, temperature=0, stop_at_eog=False,
                         stream=True)
    next(gen)
    with pytest.raises(RuntimeError, match="in use"):
        cache.close()
    gen.close()
    cache.close()
    assert cache.closed
    with pytest.raises(ValueError, match="closed"):
        cache.stats()


def _filled_cache(model):
    cache = vq.KVCacheBuilder.for_model(model, vq.KVCacheConfig(**CFG))
    model.generate(LONG, cache=cache, max_tokens=4, temperature=0)
    return cache


@pytest.mark.parametrize("how", ["close", "garbage collection"])
def test_freed_cache_returns_its_bytes(model, how):
    """The C heap grows by at least the cache's resident bytes while it is
    held and gives them back when it is freed (close or GC)."""
    if vq.heap_in_use() == 0:
        pytest.skip("no glibc mallinfo2 here")
    model.generate("warm up", max_tokens=2)
    gc.collect()
    before = vq.heap_in_use()
    handles = vq.live_handles().get("cache", 0)
    cache = _filled_cache(model)
    s = cache.stats()
    held = vq.heap_in_use() - before
    assert s["resident_bytes"] > 100_000
    assert held >= s["resident_bytes"]
    if how == "close":
        cache.close()
    else:
        del cache
    gc.collect()
    assert vq.live_handles().get("cache", 0) == handles
    left = vq.heap_in_use() - before
    assert left < held * 0.05, (held, left)


def test_cache_of_another_model_is_refused_by_generate(model, other_model):
    with vq.KVCacheBuilder.for_model(other_model, vq.KVCacheConfig(**CFG)) as cache:
        with pytest.raises(ValueError):
            model.generate(PROMPT, cache=cache, max_tokens=2)
