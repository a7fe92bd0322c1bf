"""Notes are typed: each said once, decided on by kind, stored and exported as their text."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest

from perflab import notes as said
from perflab.model import ResultSet
from perflab.notes import Note, NoteKind, Notes, kind_of
from perflab.storage import Store

pytestmark = pytest.mark.unit


def test_a_note_is_its_text_and_its_kind() -> None:
    n = said.counter_error("EACCES")
    assert n == "counters could not be opened: EACCES" and n.kind is NoteKind.COUNTER_ERROR
    assert kind_of("a note someone stored") is NoteKind.TEXT
    for back in (copy.deepcopy(n), pickle.loads(pickle.dumps(n))):
        assert back == n and back.kind is NoteKind.COUNTER_ERROR
    assert json.loads(json.dumps(Notes([n]))) == [str(n)]


def test_each_note_is_said_once_and_once_kinds_once_per_result() -> None:
    notes = Notes()
    assert notes.add(said.multiplexed("cycles", "50%"))
    assert not notes.add(said.multiplexed("cycles", "50%"))  # the same words again
    assert notes.add(said.multiplexed("instructions", "50%"))  # another counter
    assert notes.add(said.leftover("a", ["pid 11 sleep (in another session)"]))
    # A second leftover says nothing new.
    assert not notes.add(said.leftover("b", ["pid 12 sleep (in another process group)"]))
    notes += [said.interrupted(), said.ended_unfinished(7)]
    assert notes.of(NoteKind.INTERRUPTED) == [said.interrupted()]
    assert [kind_of(n) for n in notes] == [NoteKind.MULTIPLEXED, NoteKind.MULTIPLEXED,
                                           NoteKind.LEFTOVER, NoteKind.INTERRUPTED]


def test_stored_notes_read_back_as_their_text(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'r.db'}")
    rs = ResultSet(kind="stat", status="complete", notes=["an old note"])
    rs.notes.add(said.primary("task_clock (CPU-bound)"))
    back = store.load(store.save(rs))
    assert back.notes == ["an old note", "primary metric: task_clock (CPU-bound)"]
    assert isinstance(back.notes, Notes) and not back.notes.has(NoteKind.PRIMARY)
    back.notes.add(Note(NoteKind.TEXT, "an old note"))  # what it said is not said again
    assert len(back.notes) == 2
