import hashlib

import numpy as np
import pytest

from ml.embeddings import (
    Embedder,
    InMemoryStore,
    bundled_model_path,
    default_model_path,
    get_embedder,
    model_fingerprint,
)

TEXTS = [
    "There is a small pleural effusion on the left.",
    "A little fluid has collected around the left lung.",
    "The heart and lungs look normal.",
]


@pytest.fixture
def counted(monkeypatch):
    """Wrap the shared MiniLM's encode() to count the texts the model really sees."""
    calls: list[list[str]] = []

    def install(embedder: Embedder) -> list[list[str]]:
        model = embedder.model
        original = model.encode

        def spy(texts, **kwargs):
            calls.append(list(texts))
            return original(texts, **kwargs)

        monkeypatch.setattr(model, "encode", spy)
        return calls

    return install


def test_bundled_minilm_vectors_are_normalised_and_match_sentence_transformers():
    embedder = Embedder()
    assert embedder.model_id.startswith("all-MiniLM-L6-v2@")
    vectors = embedder(TEXTS)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    reference = embedder.model.encode(TEXTS, normalize_embeddings=True)
    np.testing.assert_allclose(vectors, reference, atol=1e-5)
    # The paraphrase is closer to its source than the unrelated sentence is.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_a_second_call_encodes_only_new_texts(counted):
    embedder = Embedder(model_id="minilm-test-lru")
    calls = counted(embedder)
    first = embedder([TEXTS[0], TEXTS[1], TEXTS[0]])
    assert calls == [[TEXTS[0], TEXTS[1]]]  # a repeated text is encoded once
    second = embedder([TEXTS[1], TEXTS[0], TEXTS[2]])
    assert calls == [[TEXTS[0], TEXTS[1]], [TEXTS[2]]]
    assert embedder([TEXTS[2], TEXTS[0]]).shape == (2, 384)
    assert len(calls) == 2 and embedder.encoded_texts == 3
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(second[0], first[1])


def test_persistent_store_is_keyed_by_sha256_of_model_id_and_text(counted):
    store = InMemoryStore()
    Embedder(model_id="minilm-test-store", store=store)(TEXTS)
    expected_keys = {hashlib.sha256(f"minilm-test-store\n{t}".encode()).hexdigest() for t in TEXTS}
    assert set(store.vectors) == expected_keys

    # A new process (a new Embedder, empty LRU) reads the store and encodes nothing.
    again = Embedder(model_id="minilm-test-store", store=store)
    calls = counted(again)
    vectors = again(TEXTS)
    assert calls == [] and again.encoded_texts == 0
    key = hashlib.sha256(f"minilm-test-store\n{TEXTS[1]}".encode()).hexdigest()
    np.testing.assert_array_equal(vectors[1], store.vectors[key])

    # Another model id shares nothing with it.
    other = Embedder(model_id="another-model", store=store)
    other([TEXTS[0]])
    assert other.encoded_texts == 1


def test_lru_evicts_the_least_recently_used(counted):
    embedder = Embedder(model_id="minilm-test-evict", cache_size=2)
    calls = counted(embedder)
    embedder([TEXTS[0]])
    embedder([TEXTS[1]])
    embedder([TEXTS[0]])  # refreshes TEXTS[0]
    embedder([TEXTS[2]])  # evicts TEXTS[1]
    embedder([TEXTS[0]])
    embedder([TEXTS[1]])
    assert calls == [[TEXTS[0]], [TEXTS[1]], [TEXTS[2]], [TEXTS[1]]]


def test_empty_input_and_single_string():
    embedder = get_embedder()
    assert embedder([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder("one text")


def test_fingerprint_changes_with_the_weights(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"\0" * (4 << 20))
    before = model_fingerprint(tmp_path)
    weights = bytearray((tmp_path / "model.safetensors").read_bytes())
    weights[-10] = 1  # a change inside the sampled tail of a large file
    (tmp_path / "model.safetensors").write_bytes(bytes(weights))
    assert model_fingerprint(tmp_path) != before


def test_model_path_comes_from_the_setting(settings, tmp_path, monkeypatch):
    monkeypatch.delenv("RADLAY_EMBEDDING_MODEL", raising=False)
    settings.RADLAY_EMBEDDING_MODEL = ""
    assert default_model_path() == bundled_model_path()
    settings.RADLAY_EMBEDDING_MODEL = str(tmp_path)
    assert default_model_path() == tmp_path
    with pytest.raises(FileNotFoundError, match="never downloads"):
        Embedder(tmp_path / "missing")
