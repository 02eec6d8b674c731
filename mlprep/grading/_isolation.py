"""Linux namespaces around a sandbox: the learner's code sees no process but its own and can write
nowhere but its own scratch folder.

The learner's code runs as the same user as mlprep, so without this it could signal `mlprep grade`,
write a passing grade into the progress store, edit a grader, or delete the user's attempts. With
it (unprivileged user namespaces; Linux 5.12+ for mount_setattr), and the bank's references and
graders and mlprep's data folder are out of its sight (an empty tmpfs over each):

    fork server --fork--> A: unshare(user, pid, mount) --fork--> B: pid 1 of the new pid namespace
        B: bind-mount its scratch folder, make every other mount read-only (recursively), mount a
           /proc that shows only its own namespace, then unshare(user, mount) once more, which locks
           those read-only flags: the learner's code, root in its own namespace, cannot undo them.
        A: waits for B and passes B's wait status on to the judge.

When B ends, the kernel kills everything left in its pid namespace. Where user namespaces are not
allowed (some distributions restrict them), or a GPU present would not work inside them,
`available()` says so and the sandbox runs without them: the time and memory limits, the
process-group kill and the cleanup of leftover processes still hold.
"""

from __future__ import annotations

import ctypes
import os
import tempfile

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_BIND = 0x1000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_PRIVATE = 1 << 18
MOUNT_ATTR_RDONLY = 0x1
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (added after the tables were unified)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


libc = ctypes.CDLL(None, use_errno=True)  # also the fork server's prctl calls


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _unshare(flags: int, what: str) -> None:
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(flags), what)
    # Map our own ids onto themselves, so files keep their owners as seen from inside.
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as control:
            control.write(text)


def _mount_setattr(path: str, flags: int, attr: _MountAttr, what: str) -> None:
    _check(libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), flags, ctypes.byref(attr), ctypes.sizeof(attr)), what)


def enter_namespaces() -> None:
    """In A: new user, pid and mount namespaces; A's next child is pid 1 of the new pid namespace."""
    _unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS, "unshare(user, pid, mount)")


def seal(workdir: str, hidden: tuple[str, ...] = ()) -> None:
    """In B: everything read-only except `workdir`, the folders `hidden` out of sight (an empty read-only
    tmpfs over each: the bank's references and graders, mlprep's data folder), a private /proc, then lock
    it all."""
    _check(libc.mount(workdir.encode(), workdir.encode(), None, MS_BIND, None), "bind-mount the scratch folder")
    _mount_setattr("/", AT_RECURSIVE, _MountAttr(attr_set=MOUNT_ATTR_RDONLY, propagation=MS_PRIVATE), "make / read-only")
    _mount_setattr(workdir, 0, _MountAttr(attr_clr=MOUNT_ATTR_RDONLY), "make the scratch folder writable")
    for folder in hidden:
        if os.path.isdir(folder):
            _check(libc.mount(b"none", folder.encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, b"size=4k"), f"hide {folder}")
    # Best effort: without it the learner still cannot signal anything outside (pids are namespaced).
    libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    # A mount namespace owned by a new, less privileged user namespace gets its mounts' flags locked.
    _unshare(CLONE_NEWUSER | CLONE_NEWNS, "unshare(user, mount) to lock the mounts")


def available() -> bool:
    """Whether the whole set-up works here: tried in a throwaway pair of processes, and checked by
    writing inside the scratch folder (must work) and outside it (must not)."""
    try:
        return _probe()
    except (OSError, AttributeError):  # not Linux, or no such system calls
        return False


def _cuda_usable() -> bool:
    """Where there is an NVIDIA GPU, whether CUDA still works inside the namespaces (if not, the
    sandboxes run without them rather than lose their GPU scenarios). Run only in the probe's
    throwaway process: CUDA must never be initialised in the fork server itself."""
    if not os.path.exists("/dev/nvidiactl"):
        return True
    try:
        import torch
    except ImportError:
        return True  # nothing here could use the GPU anyway
    if not torch.cuda.is_available():
        return False
    try:
        torch.ones(1, device="cuda").sum().item()
        return True
    except RuntimeError:
        return False


def _probe() -> bool:
    with tempfile.TemporaryDirectory(prefix="mlprep-probe-") as outside, tempfile.TemporaryDirectory(prefix="mlprep-probe-") as workdir:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                enter_namespaces()
                inner = os.fork()
                if inner == 0:
                    ok = 1
                    try:
                        seal(workdir)
                        with open(os.path.join(workdir, "inside"), "w"):
                            pass
                        try:
                            with open(os.path.join(outside, "outside"), "w"):
                                pass
                        except OSError:
                            ok = 0 if _cuda_usable() else 1  # read-only, as it must be; and a GPU still works
                    finally:
                        os._exit(ok)
                _, status = os.waitpid(inner, 0)
                code = os.waitstatus_to_exitcode(status)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0 and not os.listdir(outside)
