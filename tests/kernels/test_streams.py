"""Random streams (:mod:`engine.kernels.resample`): the built-in table keeps its numbers, a stream a plugin's kind
names needs no registration and draws the same in every process, independently of the built-in streams."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib

import numpy as np
import pytest
from conftest import REPO

from engine.kernels.resample import STREAMS, replicate_generator, stream_id


def test_built_in_streams_keep_their_numbers():
    assert {name: stream_id(name) for name in STREAMS} == STREAMS  # stores written before stay reproducible


def test_a_new_stream_is_numbered_from_its_name_outside_the_table():
    for name in ("leave_one_out", "my_kind", "tasks2"):
        assert stream_id(name) == 2**32 + zlib.crc32(name.encode())  # the documented rule, computed here
        assert stream_id(name) not in STREAMS.values()


def test_a_new_stream_draws_the_same_in_another_process_and_differs_from_the_built_ins():
    here = replicate_generator(7, 3, stream="leave_one_out").integers(0, 1000, size=8).tolist()
    code = ("import json; from engine.kernels.resample import replicate_generator; "
            "print(json.dumps(replicate_generator(7, 3, stream='leave_one_out').integers(0, 1000, size=8).tolist()))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # the number must not depend on Python's string hashing
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == here
    ss = np.random.SeedSequence(7, spawn_key=(2**32 + zlib.crc32(b"leave_one_out"), 3))
    assert np.random.default_rng(ss).integers(0, 1000, size=8).tolist() == here
    assert replicate_generator(7, 3, stream="tasks").integers(0, 1000, size=8).tolist() != here


@pytest.mark.parametrize("bad", ["", None, 3])
def test_a_stream_is_a_non_empty_name(bad):
    with pytest.raises(ValueError, match="non-empty name"):
        stream_id(bad)
