"""Crash points (mlprep.grading.crashes): code killed right after each of its file-system calls, in a forked
child, and a writer that writes half of its bytes before it crashes; what each crash leaves on disk."""

import io
import os
import shutil
import tempfile

import pytest

from mlprep.grading import IN_FOLDER, crash_points, folder_files, half_written, in_child, restore_folder, scratch_folder


def atomic(path, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def remove_then_rename(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.remove(path)
    os.rename(path + ".tmp", path)


def copied(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    shutil.copyfile(path + ".tmp", path)


def what_each_kill_leaves(write):
    with scratch_folder() as folder:
        path = os.path.join(folder, "file")
        with open(path, "wb") as f:
            f.write(b"old")
        before = folder_files(folder)
        whole = in_child(lambda: write(path, b"new"), target=path)
        assert whole["ended"] == "returned" and folder_files(folder)["file"] == b"new"
        restore_folder(folder, before)
        left = {}
        for k in crash_points(whole["calls"]):
            assert in_child(lambda: write(path, b"new"), target=path, kill_after=k)["ended"] == "killed"
            left[whole["calls"][k - 1]["text"]] = folder_files(folder).get("file")
            restore_folder(folder, before)
            assert folder_files(folder) == before
        return whole["calls"], left


def test_a_kill_after_each_file_call_shows_which_writes_are_atomic():
    calls, left = what_each_kill_leaves(atomic)
    assert [c["call"] for c in calls] == ["os.open", "open", "os.replace"] and calls[-1]["files"] == [IN_FOLDER, "path"]
    assert set(left.values()) <= {b"old", b"new"}
    _, left = what_each_kill_leaves(remove_then_rename)
    assert left["os.remove(path)"] is None  # killed between the two: nothing at path
    _, left = what_each_kill_leaves(copied)
    assert left["open(path)"] == b""  # the copy's own open of its destination is a call of its own: path truncated


def test_a_run_that_raises_or_exits_is_told_apart_from_a_kill():
    def raising():
        raise ValueError("no")

    assert in_child(raising, target="/nowhere")["ended"] == "raised" and "ValueError: no" in in_child(raising, target="/nowhere")["message"]
    assert in_child(lambda: os._exit(9), target="/nowhere")["ended"] == "ended"


def test_only_the_first_and_last_of_a_run_of_alike_calls_are_crash_points():
    calls = [{"text": t} for t in ["os.open(x)", "os.write(fd)", "os.write(fd)", "os.write(fd)", "os.write(fd)", "os.replace(x, path)"]]
    assert crash_points(calls) == [1, 2, 5, 6]


def test_half_written_writes_half_to_whatever_it_is_given_then_crashes():
    def save(obj, f):
        data = bytes(obj)
        if isinstance(f, str):
            with open(f, "wb") as out:
                out.write(data)
        else:
            f.write(data)

    holder = type("Holder", (), {"save": staticmethod(save)})
    with scratch_folder() as folder:
        path = os.path.join(folder, "f")
        with half_written([(holder, "save")], save, crash="raise", dest=(1, "f")) as record:
            with pytest.raises(OSError, match="No space left"):
                holder.save(b"12345678", path)
            buffer = io.BytesIO()
            with pytest.raises(OSError):
                holder.save(b"abcd", buffer)  # any object with a write method
        assert record["calls"] == 2 and open(path, "rb").read() == b"1234" and buffer.getvalue() == b"ab"
        assert holder.save is save
        with half_written([(holder, "save")], save, crash="raise", at=2):
            holder.save(b"whole", path)  # the first call is the real one
        assert open(path, "rb").read() == b"whole"
