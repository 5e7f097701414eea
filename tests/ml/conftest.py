import pytest
import torch
from transformers.utils import logging as transformers_logging

from ml.inference import clear_model_cache

transformers_logging.disable_progress_bar()


@pytest.fixture
def fresh_model_cache():
    """Tests that mutate a loaded model (its generation_config, its tokenizer) must not leak it."""
    clear_model_cache()
    yield
    clear_model_cache()


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny models gain nothing from intra-op threads, and on a busy 2-core CI machine OpenMP's
    spinning threads slow them down many times over."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
