"""Shared fixtures: the default models, found as the C library finds them
($VQ_MODELS, else the repository's models/ directory), loaded once."""
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if not os.environ.get("VQ_MODELS") and os.path.isdir(os.path.join(REPO, "models")):
    os.environ["VQ_MODELS"] = os.path.join(REPO, "models")

import veloxquant as vq  # noqa: E402

DEFAULT_MODEL = "smollm2-135m"
OTHER_MODEL = "gemma3-270m"


def model_file(name):
    return os.path.join(os.environ.get("VQ_MODELS", "models"), name + ".gguf")


def _require(name):
    if not os.path.isfile(model_file(name)):
        pytest.fail(f"{model_file(name)} missing: run `bash scripts/fetch-model.sh {name}` "
                    "(make test fetches it)")


@pytest.fixture(scope="session")
def model():
    _require(DEFAULT_MODEL)
    with vq.Model.load(DEFAULT_MODEL) as m:
        yield m


@pytest.fixture(scope="session")
def other_model():
    _require(OTHER_MODEL)
    with vq.Model.load(OTHER_MODEL) as m:
        yield m


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture
def wikitext(tmp_path):
    """A small text file for ppl: the start of the shared WikiText-2 test
    split when it is there, else a paragraph written here."""
    src = os.path.join(REPO, "..", "shared", "data", "wikitext-2-test.txt")
    p = tmp_path / "text.txt"
    if os.path.isfile(src):
        with open(src, encoding="utf-8") as f:
            p.write_text(f.read(4000), encoding="utf-8")
    else:
        p.write_text(("The tower is 324 metres tall, about the same height as an 81-storey "
                      "building, and the tallest structure in Paris. ") * 40, encoding="utf-8")
    return p
